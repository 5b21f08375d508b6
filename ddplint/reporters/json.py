"""Machine-readable output: a JSON array of finding objects, then one
notification object per path that could not be linted (unreadable, broken
symlink, an internal error), as SARIF's ``toolExecutionNotifications``:
``{"kind": "notification", "level", "message", "path", "internal"}``.

The schema is checked by the tests against `docs/json-output.schema.json`;
fields are only ever added. A finding has a ``rule``; a notification has none.
"""

from __future__ import annotations

import json
from typing import Any

from ddplint.model import Finding, Notice, Span
from ddplint.reporters.options import RenderOptions, valid_text
from ddplint.reporters.fingerprint import fingerprints
from ddplint.report import Report


def _span(span: Span) -> dict[str, int]:
    return {"line": span.line, "column": span.column, "end_line": span.end_line, "end_column": span.end_column}


def finding_object(finding: Finding, fingerprint: str) -> dict[str, Any]:
    """One finding as a JSON-ready dict (a runtime finding: no path or positions, its measured values)."""
    if not finding.located:
        return {
            "rule": finding.rule,
            "name": finding.name,
            "severity": finding.severity.value,
            "message": finding.message,
            "path": None,
            "properties": dict(finding.properties),
        }
    fix = finding.fix
    return {
        "rule": finding.rule,
        "name": finding.name,
        "severity": finding.severity.value,
        "message": finding.message,
        "path": finding.path,
        **({"cell": finding.cell} if finding.cell is not None else {}),  # a notebook's: the lines count in it
        **_span(finding.span),
        "related": [{"path": r.path, **_span(r.span), "message": r.message} for r in finding.related],
        "fix": None if fix is None else {
            "title": fix.title,
            "applicability": fix.applicability.value,
            "edits": [{**_span(e.span), "content": e.content} for e in fix.edits],
        },
        "fingerprint": fingerprint,
    }


def notification_object(notice: Notice) -> dict[str, Any]:
    """A path that could not be linted, as SARIF's tool execution notification."""
    return {
        "kind": "notification",
        "level": notice.level.value,
        "message": notice.message,
        "path": notice.path,
        "internal": notice.internal,
    }


def render(report: Report, options: RenderOptions) -> str:
    """The findings as a JSON array (suppressed findings left out), then the notifications."""
    active = report.active
    prints = fingerprints(active, lambda f: f.path)
    items = [finding_object(f, p) for f, p in zip(active, prints)] + [notification_object(n) for n in report.notices]
    return json.dumps(valid_text(items), indent=2) + "\n"
