"""GitLab Code Quality: the JSON report that merge requests show inline.

An array of issues with `description`, `check_name`, `fingerprint`,
`severity` (GitLab's scale) and `location.path`/`location.lines.begin`,
as GitLab's Code Quality documentation specifies.
"""

from __future__ import annotations

import json
from urllib.parse import unquote

from ddplint.model import Severity
from ddplint.paths import project_root, relative_uri
from ddplint.report import Report
from ddplint.reporters.options import RenderOptions, valid_text
from ddplint.reporters.fingerprint import fingerprints

_SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.NOTE: "minor"}


def render(report: Report, options: RenderOptions) -> str:
    """The active findings as a Code Quality report."""
    root = project_root(options.cwd)

    def path_of(finding):
        uri, relative = relative_uri(finding.path, options.cwd, root, options.absolute_paths)
        return unquote(uri, errors="surrogateescape") if relative else finding.path

    active = report.active
    issues = [
        {
            "type": "issue",
            "check_name": f"{f.rule} {f.name}",
            "description": f"{f.rule} {f.message}",
            "categories": ["Bug Risk"],
            "severity": _SEVERITY[f.severity],
            "fingerprint": fingerprint,
            "location": {
                "path": path_of(f),
                "lines": {"begin": f.span.line, "end": f.span.end_line},
            },
        }
        for f, fingerprint in zip(active, fingerprints(active, path_of))
    ]
    return json.dumps(valid_text(issues), indent=2) + "\n"
