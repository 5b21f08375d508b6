"""Human-readable output: ``path:line:col: CODE message`` and a summary.

The line format is flake8's and Ruff's, so editors' and CI systems' problem
matchers read it unchanged. Colour is added only when asked (a TTY without
``NO_COLOR``/``--no-color``).
"""

from __future__ import annotations

from collections import Counter

from ddplint.model import Applicability, Finding, Severity
from ddplint.paths import printable
from ddplint.reporters.options import RenderOptions
from ddplint.report import Report

_COLORS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.NOTE: "36"}


def _paint(text: str, code: str, enabled: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if enabled else text


def format_finding(finding: Finding, color: bool = False) -> str:
    """One finding as a ``path:line:col: CODE message`` line."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""  # Ruff's notebook positions
    where = _paint(f"{finding.path}:{cell}{finding.span.line}:{finding.span.column}:", "1", color)
    code = _paint(finding.rule, "1;" + _COLORS[finding.severity], color)
    return f"{where} {code} {finding.message}"


def plural(count: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def summary(report: Report) -> str:
    """The one-line summary of a run."""
    active = report.active
    files = plural(report.files, "file")
    if not active:
        line = f"No findings in {files}."
    else:
        by_severity = Counter(f.severity for f in active)
        parts = ", ".join(
            plural(by_severity[s], s.value) for s in (Severity.ERROR, Severity.WARNING, Severity.NOTE)
            if by_severity[s]
        )
        with_findings = len({f.path for f in active})
        line = f"Found {plural(len(active), 'finding')} ({parts}) in {with_findings} of {files}."
    line += _fixable(active)
    suppressed = len(report.findings) - len(active)
    if suppressed:
        line += f" {suppressed} suppressed by noqa."
    unlinted = len({n.path for n in report.notices})
    if unlinted:
        line += f" {plural(unlinted, 'path')} could not be linted."
    return line


def _fixable(active: list[Finding]) -> str:
    """" 2 fixable with `--fix` (1 more with `--unsafe-fixes`)." or nothing."""
    kinds = Counter(f.fix.applicability for f in active if f.fix is not None and f.fix.edits)
    safe, unsafe = kinds[Applicability.SAFE], kinds[Applicability.UNSAFE]
    if not safe and not unsafe:
        return ""
    more = f" ({unsafe} more with `--fix --unsafe-fixes`)" if unsafe else ""
    return f" {safe} fixable with `--fix`{more}." if safe else f" {unsafe} fixable with `--fix --unsafe-fixes`."


def statistics(report: Report) -> list[str]:
    """Per-rule counts, most frequent first."""
    counts = Counter((f.rule, f.name, f.severity.value) for f in report.active)
    return [
        f"{count:>5}  {rule}  {name} [{severity}]"
        for (rule, name, severity), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def render(report: Report, options: RenderOptions) -> str:
    """The whole text report (empty with ``quiet`` and no findings)."""
    lines = statistics(report) if options.statistics else [
        format_finding(f, options.color) for f in report.active
    ]
    if not options.quiet:
        lines.append(summary(report))
    return printable("".join(line + "\n" for line in lines))
