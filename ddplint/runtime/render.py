"""The doctor's report as text (a checklist), JSON, SARIF or GitHub annotations.

JSON and SARIF reuse the linter's finding objects; SARIF lists the runtime
checks as its rules, shows every result at one file (code scanning needs a
location: see `ddplint.runtime.location`) and carries the environment record
(and the ranks) in ``invocations[0].properties``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ddplint.version import __version__
from ddplint.model import NO_PATH, Notice, NoticeLevel
from ddplint.report import Report
from ddplint.reporters import OutputFormat, RenderOptions
from ddplint.runtime.charts import ASCII_BLOCKS, BLOCKS, Picture, curve_line
from ddplint.runtime.check import CheckResult, Status, all_checks
from ddplint.runtime.report import CheckOutcome, DoctorReport, compact_ranks

_MARKS = {Status.PASS: "✓", Status.FAIL: "✗", Status.NOTE: "!", Status.SKIP: "-", Status.ERROR: "✗"}
_ASCII_MARKS = {Status.PASS: "ok", Status.FAIL: "XX", Status.NOTE: "!!", Status.SKIP: "--", Status.ERROR: "XX"}
#: Marks the one line of advice under a failing check.
_ADVICE = "fix:"
_COLORS = {Status.PASS: "32", Status.FAIL: "31", Status.NOTE: "36", Status.SKIP: "2", Status.ERROR: "31"}


def _marks() -> dict[Status, str]:
    try:
        "".join(_MARKS.values()).encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return _ASCII_MARKS
    return _MARKS


def _blocks() -> str:
    try:
        BLOCKS.encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return ASCII_BLOCKS
    return BLOCKS


def _line(outcome: CheckOutcome, report: DoctorReport, color: bool) -> list[str]:
    marks = _marks()
    status = outcome.status
    mark = f"\x1b[{_COLORS[status]}m{marks[status]}\x1b[0m" if color else marks[status]
    head = f"{mark} {outcome.check.code} {outcome.check.name:<26}"
    if outcome.uniform:
        lines = [f"  {head} {outcome.groups[0][0].summary}", *_curve(outcome.groups[0][0], "    ")]
    else:
        lines = [f"  {head} differs between ranks:"]
        for result, ranks in outcome.groups:
            hosts = ", ".join(sorted({report.hostname(r) for r in ranks}))
            noun = "rank" if len(ranks) == 1 else "ranks"
            lines.append(f"      {marks[result.status]} {noun} {compact_ranks(ranks)} ({hosts}): {result.summary}")
            lines.extend(_curve(result, "        "))
    if status is Status.FAIL:
        lines.append(f"    {'':<33}{_ADVICE} {outcome.check.advice}")
    elif status is Status.ERROR:
        lines.append(f"    {'':<33}{_ADVICE} the check raised: run again with --debug for the traceback")
    return lines


def _legend(marks: dict[Status, str]) -> str:
    """What the marks mean, in the order of the checklist's verdicts."""
    meaning = ((Status.PASS, "passed"), (Status.NOTE, "note (could not tell, or worth knowing)"),
               (Status.SKIP, "skipped"), (Status.FAIL, "problem, or could not run"))  # fmt: skip
    return "  " + "   ".join(f"{marks[status]} {text}" for status, text in meaning)


def _who(report: DoctorReport) -> str:
    """``2 ranks``; a rank's own report of a larger job: ``rank 1 of 2``."""
    if len(report.rows) == 1 and report.world_size > 1:
        return f"rank {report.rows[0].rank} of {report.world_size}"
    return f"{report.world_size} rank{'' if report.world_size == 1 else 's'}"


def _curve(result: CheckResult, indent: str) -> list[str]:
    """A probe's memory curve as a sparkline under its check, aligned with the summaries."""
    picture = Picture.of(result.measured)
    return [] if picture is None else [f"{indent}{'':<33}{curve_line(picture, _blocks())}"]


def render_text(report: DoctorReport, color: bool = False) -> str:
    hosts = sorted({row.hostname for row in report.rows if row.reported})
    lines = [f"ddplint doctor: {_who(report)} on {', '.join(hosts) or '?'} ({report.backend})", ""]
    for outcome in report.outcomes:
        lines.extend(_line(outcome, report, color))
    lines += ["", "  rank  local  host                      device"]
    for row in report.rows:
        local = "-" if row.local_rank is None else str(row.local_rank)
        device = row.device if row.reported else "did not report"
        lines.append(f"  {row.rank:>4}  {local:>5}  {row.hostname:<24}  {device}")
    findings = [f for f in report.findings() if f.severity.value != "note"]
    errors = report.errors()
    lines += ["", _legend(_marks())]
    lines.append("")
    if errors:
        lines.append(f"{len(errors)} check{'s' if len(errors) > 1 else ''} could not run.")
    if findings:
        lines.append(f"{len(findings)} problem{'s' if len(findings) != 1 else ''} found.")
    elif not errors:
        lines.append("No problems found.")
    return "\n".join(lines) + "\n"


def doctor_json(report: DoctorReport, options: RenderOptions) -> dict[str, Any]:
    from ddplint.reporters.json import finding_object

    findings = report.findings()
    return {
        "tool": "ddplint",
        "version": __version__,
        "command": "doctor",
        "world_size": report.world_size,
        "backend": report.backend,
        "ranks": [row.to_json() for row in report.rows],
        "checks": [
            {
                "code": o.check.code, "name": o.check.name, "status": o.status.value,
                **({"advice": o.check.advice} if o.status is Status.FAIL else {}),
                "results": [{**r.to_json(), "ranks": ranks} for r, ranks in o.groups],
            }
            for o in report.outcomes
        ],
        "findings": [finding_object(f, "") for f in findings],
        "environment": report.environment,
    }  # fmt: skip


def render(report: DoctorReport, output_format: OutputFormat, options: RenderOptions) -> str:
    """The report in `output_format` (gitlab is refused earlier: it needs file locations)."""
    if output_format is OutputFormat.TEXT:
        return render_text(report, options.color)
    if output_format is OutputFormat.JSON:
        return json.dumps(doctor_json(report, options), indent=2, default=str) + "\n"
    notices = [Notice(NO_PATH, error, NoticeLevel.ERROR, internal=True) for error in report.errors()]
    findings = Report(findings=report.findings(), notices=notices, files=0)
    if output_format is OutputFormat.GITHUB:
        from ddplint.reporters.github import render as github

        return github(findings, options)
    from ddplint.reporters.sarif import build_log

    properties = {"environment": report.environment, "ranks": [row.to_json() for row in report.rows],
                  "world_size": report.world_size, "backend": report.backend}  # fmt: skip
    log = build_log(findings, options, catalogue=all_checks(), invocation_properties=properties,
                    location=options.sarif_location)  # fmt: skip
    return json.dumps(log, indent=2, default=str) + "\n"

