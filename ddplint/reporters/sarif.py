"""SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

The log is built from `sarif-om` objects and serialised with
`jschema_to_python.to_json`, then completed where that serialiser falls
short: it drops every value equal to the schema default, so the levels that
code scanning needs explicitly (``warning`` is the default) are put back, and
suppressions are written as plain objects (sarif-om's `Suppression` would
emit an invalid ``state``).

URIs are relative to the repository root (git top-level, else the working
directory) under ``uriBaseId: "%SRCROOT%"``; no absolute path of the machine
appears in the output.

What GitHub code scanning needs beyond the schema (docs/github-code-scanning.md):
every result has a location (`ddplint doctor`'s results, about the machine,
are shown at a file the caller names, see `build_log`); related locations are
linked from the message text as ``(see [the sampler](2))`` (SARIF §3.11.6), the
only way GitHub makes them clickable; and a category is written as
``automationDetails.id = "NAME/"``, since GitHub reads an id without a
trailing ``/`` as a run id in the empty category.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sarif_om as om
from jschema_to_python.to_json import to_json

from ddplint.version import __version__
from ddplint.docs import REPOSITORY, help_uri, rule_markdown
from ddplint.measured import sarif_precision
from ddplint.model import Finding, Notice, NoticeLevel, Severity, Span
from ddplint.paths import project_root, relative_uri
from ddplint.reporters.options import RenderOptions, valid_text
from ddplint.reporters.fingerprint import fingerprints
from ddplint.rule import all_rules
from ddplint.report import Report

#: GitHub code scanning accepts at most this many results per run.
MAX_RESULTS = 25_000

#: GitHub code scanning's limit on a rule's short and full descriptions.
MAX_DESCRIPTION = 1024

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "ddplint/v1"

_PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "recommendation"}


class _Locator:
    """Turns report paths into SARIF artifact locations."""

    def __init__(self, cwd: Path, absolute: bool = False) -> None:
        self.cwd = cwd
        self.root = project_root(cwd)
        self.absolute = absolute

    def artifact(self, path: str) -> om.ArtifactLocation:
        uri, relative = relative_uri(path, self.cwd, self.root, self.absolute)
        return om.ArtifactLocation(uri=uri, uri_base_id=SRCROOT if relative else None)

    def repo_path(self, finding: Finding) -> str:
        return relative_uri(finding.path, self.cwd, self.root)[0]

    def physical(self, path: str, span: Span, file_lines: object = None) -> om.PhysicalLocation:
        if file_lines is not None:  # a notebook's: its lines in the .ipynb file (columns count in the cell, not there)
            start, end = file_lines  # type: ignore[misc]
            return om.PhysicalLocation(artifact_location=self.artifact(path), region=om.Region(start_line=start, end_line=end))
        return om.PhysicalLocation(
            artifact_location=self.artifact(path),
            region=om.Region(
                start_line=span.line,
                start_column=span.column,
                end_line=span.end_line,
                end_column=span.end_column,
            ),
        )


def clip(text: str, limit: int) -> str:
    """`text`, or as many of its words as fit in `limit` characters with "…"."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def _descriptor(rule: Any) -> om.ReportingDescriptor:
    """A rule's (or runtime check's) entry in `tool.driver.rules`."""
    markdown = rule_markdown(rule)
    full = clip(rule.docs.what_it_does, MAX_DESCRIPTION)  # the whole text is in `help`
    return om.ReportingDescriptor(
        id=rule.code,
        name=rule.name,
        short_description=om.MultiformatMessageString(text=rule.summary),
        full_description=om.MultiformatMessageString(text=full, markdown=full),
        help=om.MultiformatMessageString(text=markdown, markdown=markdown),
        help_uri=help_uri(rule),
        default_configuration=om.ReportingConfiguration(level=rule.severity.value),
        properties={
            "tags": list(dict.fromkeys(["pytorch", "distributed", *rule.tags])),
            "precision": sarif_precision(rule.code),
            "problem.severity": _PROBLEM_SEVERITY[rule.severity],
        },
    )


def escape_text(text: str) -> str:
    """Plain text for a SARIF message: literal brackets escaped (§3.11.6), so
    that ``x[0](1)`` in a message is never read as a link."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def linked_message(message: str, related: tuple[str, ...]) -> str:
    """The message with a link to each related location: ``... (see
    [the rank-dependent condition](1) and [the helper](2))``. The link
    targets are the related locations' ids (1, 2, ... in order)."""
    text = escape_text(message)
    if not related:
        return text
    links = [f"[{escape_text(what)}]({i})" for i, what in enumerate(related, start=1)]
    listed = links[0] if len(links) == 1 else ", ".join(links[:-1]) + " and " + links[-1]
    return f"{text} (see {listed})"


def automation_id(category: str) -> str:
    """`automationDetails.id` for a category: GitHub takes what precedes the
    last ``/`` as the category, so ``NAME`` is written ``NAME/``."""
    return category if category.endswith("/") else category + "/"


def _result(
    finding: Finding, index: int, fingerprint: str, locator: _Locator, fallback: str | None
) -> om.Result:
    """A result; one about no file (a runtime finding) is shown at `fallback`."""
    properties = dict(finding.properties)
    file_lines = list(properties.pop("file_lines", ()))  # a notebook finding's lines in the .ipynb, then its related's
    if finding.located:
        where = locator.physical(finding.path, finding.span, file_lines.pop(0) if file_lines else None)
    else:
        where = None
        if fallback is not None:  # its first line: the result is about the file as a whole
            where = om.PhysicalLocation(artifact_location=locator.artifact(fallback), region=om.Region(start_line=1))
    related = [
        om.Location(
            id=i,
            physical_location=locator.physical(r.path, r.span, file_lines.pop(0) if file_lines and r.path == finding.path else None),
            message=om.Message(text=r.message),
        )
        for i, r in enumerate(finding.related, start=1)
    ]
    return om.Result(
        rule_id=finding.rule,
        rule_index=index,
        level=finding.severity.value,
        message=om.Message(text=linked_message(finding.message, tuple(r.message for r in finding.related))),
        locations=[om.Location(physical_location=where)] if where is not None else None,
        related_locations=related or None,
        partial_fingerprints={FINGERPRINT_KEY: fingerprint},
        properties=properties or None,  # a runtime finding's measured values, a notebook finding's cell
    )


def _notification(notice: Notice, locator: _Locator) -> om.Notification:
    location = om.Location(physical_location=om.PhysicalLocation(artifact_location=locator.artifact(notice.path)))
    return om.Notification(
        message=om.Message(text=notice.message),
        level=notice.level.value,
        locations=[location] if notice.path else None,
    )


def _srcroot(locator: _Locator) -> dict[str, Any]:
    base: dict[str, Any] = {"description": {"text": "The repository root (git top-level)."}}
    if locator.absolute:
        base["uri"] = locator.root.as_uri() + "/"
    return base


def build_log(
    report: Report,
    options: RenderOptions,
    catalogue: tuple[Any, ...] | None = None,
    invocation_properties: dict[str, Any] | None = None,
    location: str | None = None,
) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict.

    `catalogue` is what `tool.driver.rules` lists: the static rules by
    default, the runtime checks for `ddplint doctor`, whose environment
    record goes into `invocation_properties`. `location` (a path relative to
    the working directory) is where results about no file are shown, at its
    first line: code scanning rejects a result without a location.
    """
    rules = all_rules() if catalogue is None else catalogue
    index = {rule.code: i for i, rule in enumerate(rules)}
    locator = _Locator(options.cwd, options.absolute_paths)
    findings = report.findings
    notices = list(report.notices)
    if len(findings) > MAX_RESULTS:
        dropped = len(findings) - MAX_RESULTS
        notices.append(
            Notice(".", f"{dropped} results left out: code scanning accepts {MAX_RESULTS} per run", NoticeLevel.WARNING)
        )
        findings = findings[:MAX_RESULTS]
    prints = fingerprints(findings, locator.repo_path)
    run = om.Run(
        tool=om.Tool(
            driver=om.ToolComponent(
                name="ddplint",
                version=__version__,
                semantic_version=__version__,
                information_uri=REPOSITORY,
                rules=[_descriptor(rule) for rule in rules],
            )
        ),
        results=[_result(f, index[f.rule], p, locator, location) for f, p in zip(findings, prints)],
        invocations=[
            om.Invocation(
                execution_successful=not any(n.internal for n in notices),
                tool_execution_notifications=[_notification(n, locator) for n in notices] or None,
                properties=invocation_properties,
            )
        ],
        automation_details=(
            om.RunAutomationDetails(id=automation_id(options.sarif_category)) if options.sarif_category else None
        ),
        column_kind="unicodeCodePoints",
        original_uri_base_ids={SRCROOT: _srcroot(locator)},
    )
    log = json.loads(to_json(om.SarifLog(version="2.1.0", schema_uri=SCHEMA_URI, runs=[run])))
    _restore_defaults(log["runs"][0], rules, findings, notices)
    return log


def _restore_defaults(
    run: dict[str, Any], rules: tuple[Any, ...], findings: list[Finding], notices: list[Notice]
) -> None:
    """Put back what `to_json` dropped as schema defaults, and add suppressions."""
    for descriptor, rule in zip(run["tool"]["driver"]["rules"], rules):
        descriptor["defaultConfiguration"] = {"level": rule.severity.value}
    for result, finding in zip(run.get("results", []), findings):
        result["level"] = finding.severity.value
        if finding.suppressed is not None:
            result["suppressions"] = [{"kind": "inSource", "justification": finding.suppressed}]
    notifications = run["invocations"][0].get("toolExecutionNotifications", [])
    for notification, notice in zip(notifications, notices):
        notification["level"] = notice.level.value
    run.setdefault("results", [])


def render(report: Report, options: RenderOptions) -> str:
    """The SARIF log as indented JSON text."""
    return json.dumps(valid_text(build_log(report, options)), indent=2) + "\n"
