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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sarif_om as om
from jschema_to_python.to_json import to_json

from ddplint import __version__
from ddplint.docs import REPOSITORY, help_uri, rule_markdown
from ddplint.measured import sarif_precision
from ddplint.model import Finding, Notice, NoticeLevel, Severity, Span
from ddplint.paths import project_root, relative_uri
from ddplint.reporters import RenderOptions
from ddplint.reporters.fingerprint import fingerprints
from ddplint.rule import all_rules
from ddplint.report import Report

#: GitHub code scanning accepts at most this many results per run.
MAX_RESULTS = 25_000

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

    def physical(self, path: str, span: Span) -> om.PhysicalLocation:
        return om.PhysicalLocation(
            artifact_location=self.artifact(path),
            region=om.Region(
                start_line=span.line,
                start_column=span.column,
                end_line=span.end_line,
                end_column=span.end_column,
            ),
        )


def _descriptor(rule: Any) -> om.ReportingDescriptor:
    """A rule's (or runtime check's) entry in `tool.driver.rules`."""
    markdown = rule_markdown(rule)
    return om.ReportingDescriptor(
        id=rule.code,
        name=rule.name,
        short_description=om.MultiformatMessageString(text=rule.summary),
        full_description=om.MultiformatMessageString(
            text=rule.docs.what_it_does, markdown=rule.docs.what_it_does
        ),
        help=om.MultiformatMessageString(text=markdown, markdown=markdown),
        help_uri=help_uri(rule),
        default_configuration=om.ReportingConfiguration(level=rule.severity.value),
        properties={
            "tags": list(dict.fromkeys(["pytorch", "distributed", *rule.tags])),
            "precision": sarif_precision(rule.code),
            "problem.severity": _PROBLEM_SEVERITY[rule.severity],
        },
    )


def _result(finding: Finding, index: int, fingerprint: str, locator: _Locator) -> om.Result:
    if not finding.located:  # a runtime finding: about the machine, measured values attached
        return om.Result(
            rule_id=finding.rule,
            rule_index=index,
            level=finding.severity.value,
            message=om.Message(text=finding.message),
            partial_fingerprints={FINGERPRINT_KEY: fingerprint},
            properties=dict(finding.properties) or None,
        )
    related = [
        om.Location(id=i, physical_location=locator.physical(r.path, r.span), message=om.Message(text=r.message))
        for i, r in enumerate(finding.related, start=1)
    ]
    return om.Result(
        rule_id=finding.rule,
        rule_index=index,
        level=finding.severity.value,
        message=om.Message(text=finding.message),
        locations=[om.Location(physical_location=locator.physical(finding.path, finding.span))],
        related_locations=related or None,
        partial_fingerprints={FINGERPRINT_KEY: fingerprint},
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
) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict.

    `catalogue` is what `tool.driver.rules` lists: the static rules by
    default, the runtime checks for `ddplint doctor`, whose environment
    record goes into `invocation_properties`.
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
        results=[_result(f, index[f.rule], p, locator) for f, p in zip(findings, prints)],
        invocations=[
            om.Invocation(
                execution_successful=not any(n.internal for n in notices),
                tool_execution_notifications=[_notification(n, locator) for n in notices] or None,
                properties=invocation_properties,
            )
        ],
        automation_details=om.RunAutomationDetails(id=options.sarif_category) if options.sarif_category else None,
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
    return json.dumps(build_log(report, options), indent=2) + "\n"
