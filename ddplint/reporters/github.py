"""GitHub Actions workflow commands: one annotation per finding.

``::error file=…,line=…,col=…,endLine=…,endColumn=…,title=CODE name::message``;
GitHub shows them on the pull request's diff without code scanning.
"""

from __future__ import annotations

from ddplint.model import Finding, Severity
from ddplint.paths import printable
from ddplint.reporters.options import RenderOptions
from ddplint.report import Report

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    """The workflow command for one finding (a runtime finding: no file)."""
    span = finding.span
    if not finding.located:
        title = _escape_property(f"{finding.rule} {finding.name}")
        return f"::{_COMMAND[finding.severity]} title={title}::{_escape_data(finding.message)}"
    properties = ",".join(
        f"{key}={_escape_property(str(value))}"
        for key, value in (
            ("file", finding.path),
            ("line", span.line),
            ("col", span.column),
            ("endLine", span.end_line),
            ("endColumn", span.end_column),
            ("title", f"{finding.rule} {finding.name}" + (f" (cell {finding.cell})" if finding.cell is not None else "")),
        )
    )
    return f"::{_COMMAND[finding.severity]} {properties}::{_escape_data(finding.message)}"


def render(report: Report, options: RenderOptions) -> str:
    """Every active finding as an annotation line."""
    return printable("".join(annotation(f) + "\n" for f in report.active))
