"""Applying fixes to one file's text until no rule proposes another.

Pure, like the rest of the engine: text in, fixed text and the findings of
the fixed text out. Each pass applies every applicable fix whose edits do
not overlap an earlier one's, then lints again (a fix can make another
possible, or change what the next one must edit); after `MAX_PASSES` the
file is reported as not converging. A pass whose result Python rejects
leaves the file as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ddplint.config.settings import Settings
from ddplint.engine import check_source
from ddplint.result import FileResult
from ddplint.engine.source import syntax_problem
from ddplint.model import Applicability, Finding, Notice, NoticeLevel
from ddplint.project.role import ALONE, ProjectRole
from ddplint.textedit import LineIndex, apply_edits, disjoint

MAX_PASSES = 10


@dataclass(frozen=True)
class FixOutcome:
    """What fixing one file did."""

    text: str
    #: Findings fixed (a finding's fix counts once, however many edits it has).
    applied: int
    #: The lint of `text` (the fixed text, or the original when nothing held).
    result: FileResult
    #: The codes of the findings fixed, one per fix.
    rules: tuple[str, ...] = ()


def applicable(finding: Finding, unsafe: bool) -> bool:
    """Whether `--fix` (with `--unsafe-fixes` when `unsafe`) applies the finding's fix."""
    fix = finding.fix
    if fix is None or not fix.edits or finding.suppressed is not None:
        return False
    return fix.applicability is Applicability.SAFE or (unsafe and fix.applicability is Applicability.UNSAFE)


def fix_source(
    path: str,
    text: str,
    settings: Settings,
    unsafe: bool = False,
    project: ProjectRole = ALONE,
    first: FileResult | None = None,
) -> FixOutcome:
    """Apply the fixes `settings`' rules propose to `text`, pass after pass.

    `first` is the lint of `text` when the caller has it already.
    """
    original = first if first is not None else check_source(path, text, settings, project=project)
    project = replace(project, layout=None)  # the fixed text's imports are its own
    result, current, rules = original, text, []
    for _ in range(MAX_PASSES):
        chosen = _non_overlapping([f for f in result.findings if applicable(f, unsafe)], current)
        if not chosen:
            return FixOutcome(current, len(rules), result, tuple(rules))
        fixed = apply_edits(current, [edit for finding in chosen for edit in finding.fix.edits])  # type: ignore[union-attr]
        if fixed == current:  # a fix that changes nothing: nothing more will change
            return FixOutcome(current, len(rules), result, tuple(rules))
        problem = syntax_problem(fixed, path)
        if problem is not None:
            rules = ", ".join(sorted({f.rule for f in chosen}))
            return FixOutcome(text, 0, _with_notice(original, path, f"fixes for {rules} produced code Python rejects "
                              f"(line {problem.span.line}: {problem.message}); file left unchanged, please report this"))
        current = fixed
        rules += [f.rule for f in chosen]
        result = check_source(path, current, settings, project=project)
    why = f"fixes did not converge after {MAX_PASSES} passes ({len(rules)} applied), please report this"
    return FixOutcome(current, len(rules), _with_notice(result, path, why), tuple(rules))


def _non_overlapping(findings: list[Finding], text: str) -> list[Finding]:
    """The findings whose fixes can be applied together, in report order."""
    index = LineIndex(text)
    taken: list[tuple[int, int]] = []
    chosen = []
    for finding in findings:
        ranges = [index.range(e.span) for e in finding.fix.edits]  # type: ignore[union-attr]
        if disjoint(taken + ranges):
            taken += ranges
            chosen.append(finding)
    return chosen


def _with_notice(result: FileResult, path: str, why: str) -> FileResult:
    return result.with_notice(Notice(path, why, NoticeLevel.WARNING))
