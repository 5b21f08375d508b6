"""The LibCST half of the per-file pipeline: parse once, one walk with every
enabled rule, positions for the files with findings.

Imported only for a file that some rule applies to (the prefilter and the
summary decide in `ddplint.engine`), so a run whose files none of the rules
can fire on never imports LibCST.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import sys
from typing import Iterator

import libcst as cst

from ddplint.analysis.rewrite import ProposedFix
from ddplint.config.settings import Settings
from ddplint.engine.deferred import DeferredChecks
from ddplint.engine.findings import make_finding
from ddplint.engine.fixes import resolve_fix
from ddplint.engine.noqa import unused_noqa
from ddplint.engine.positions import Positions, to_span
from ddplint.engine.suppression import Suppressions, may_suppress
from ddplint.engine.walker import Walker
from ddplint.lazy import parse_module
from ddplint.model import Finding, Notice, NoticeLevel, Related, Span
from ddplint.project.collector import SummaryCollector
from ddplint.project.facts import NO_FACTS, FileFacts
from ddplint.project.summary import ModuleSummary
from ddplint.result import FileResult
from ddplint.engine.context import FileContext
from ddplint.rule import PendingFinding, Rule

_DEEP_RECURSION = 10_000
_TOO_DEEP = "nested too deeply for ddplint's analysis (Python accepts it); not linted"


def lint_text(
    path: str,
    text: str,
    settings: Settings,
    rules: tuple[type[Rule], ...],
    facts: FileFacts = NO_FACTS,
    summary: ModuleSummary | None = None,
    symbols: bool = False,
    tree: ast.Module | None = None,
) -> FileResult:
    """Parse `text` (which CPython accepts) and lint it with `rules` in one
    walk; `summary`, `symbols` and `tree` as for `_lint_module`."""
    with _recursion_limit(_DEEP_RECURSION):
        try:
            module = parse_module(text)
        except cst.ParserSyntaxError as exc:
            # Valid Python LibCST rejects (its parser's limits, e.g. over 3,000
            # adjacent string literals): the file's findings are lost, so the
            # run must not pass (an error, exit status 1), and the others go on.
            reason = exc.message.splitlines()[0] if exc.message else "parser error"
            note = f"LibCST cannot parse this file, which CPython accepts; not linted ({reason})"
            return FileResult(notices=(Notice(path, note, NoticeLevel.ERROR),), summary=summary)
        except RecursionError:
            return FileResult(notices=(Notice(path, _TOO_DEEP, NoticeLevel.ERROR),), summary=summary)
        return _lint_module(path, text, module, settings, rules, facts, summary, symbols, tree)


@contextlib.contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    """LibCST and the walker recurse once per nesting level, and real code
    (long ``a + b + ...`` chains) goes deeper than CPython's default 1000;
    the syntax check keeps CPython's own limit."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _lint_module(
    path: str,
    text: str,
    module: cst.Module,
    settings: Settings,
    rules: tuple[type[Rule], ...],
    facts: FileFacts = NO_FACTS,
    summary: ModuleSummary | None = None,
    symbols: bool = False,
    tree: ast.Module | None = None,
) -> FileResult:
    """One walk; with a `summary` to complete, also what it records: the
    imported names the lint consulted, and (with `symbols`) the facts of the
    module's own functions and classes. `tree`, CPython's of `text` when the
    caller has it, places the findings' statements."""
    walker_stack: list[cst.CSTNode] = []
    requires = {name for rule in rules for name in rule.requires}
    consulted = summary is not None and summary.consulted is not None
    symbols = summary is not None and symbols
    calls = summary is not None and summary.per_rank_calls is None
    summarize = consulted or symbols or calls  # else the summary is complete: its imports
    if symbols or calls:  # the facts of its functions, who runs its calls; the rules' own questions need no more
        requires.add("rank")
    # Released at the end: the tree is then freed at once, not traversed by the cycle collector.
    with FileContext(path, text, module, settings, walker_stack, requires, facts, summarize) as ctx:
        instances = [rule(ctx) for rule in rules]
        notices: list[Notice] = []
        collector = SummaryCollector(ctx, symbols, consulted, calls) if summarize else None
        analyses = ctx.analyses if collector is None else (*ctx.analyses, collector)

        def on_rule_error(rule: Rule, exc: BaseException) -> None:
            notices.append(Notice.internal_error(path, exc, f" in rule {rule.code}"))

        deferred = DeferredChecks(ctx)
        walker = Walker(analyses, instances, on_rule_error, walker_stack, deferred.record)
        try:
            walker.walk(module)
            deferred.run(walker.active, walker.fail)
            for instance in list(instances):
                if not walker.active(instance):
                    continue
                try:
                    instance.finish()
                except Exception as exc:  # noqa: BLE001 - one rule's bug must not hide the others
                    notices.append(Notice.internal_error(path, exc, f" in rule {instance.code}"))
            pending = [p for p in ctx.pending if ctx.in_distributed_context or not p.rule.distributed_only]
            used: set[tuple[int, str]] = set()
            findings = _finalize(path, text, module, settings, pending, used, tree) if pending else ()
            findings = tuple(sorted((*findings, *unused_noqa(path, text, settings, used)), key=lambda f: f.sort_key))
        except RecursionError:
            return FileResult(notices=(Notice(path, _TOO_DEEP, NoticeLevel.ERROR),), parsed=True)
        if collector is not None and summary is not None:
            if symbols:
                summary = summary.with_symbols(collector.symbols(summary.lines))
                # Callers elsewhere can only take findings away: a module without any needs no relint for
                # them, unless it has none because of them (then the index must go on giving them).
                keep = bool(findings) or bool(facts.called_elsewhere)
                summary = dataclasses.replace(summary, entries=collector.entries() if keep else ())
            if consulted:
                asked, called, quieted, collective = collector.consulted()
                summary = dataclasses.replace(
                    summary, consulted=asked, called=called, quieted=quieted, collective_called=collective
                )
            if calls:
                summary = dataclasses.replace(summary, per_rank_calls=collector.per_rank_calls())
        if summary is not None and ctx.runs("rank") and ctx.in_distributed_context:
            # Which of its functions' runners its lint asked about: facts about others change nothing.
            summary = dataclasses.replace(
                summary, runs_unknown=ctx.rank.execution.unknown_top_level(), distributed_by_text=ctx.distributed_by_text
            )
        return FileResult(findings, tuple(notices), parsed=True, summary=summary)


def _finalize(
    path: str,
    text: str,
    module: cst.Module,
    settings: Settings,
    pending: list[PendingFinding],
    used: set[tuple[int, str]],
    tree: ast.Module | None,
) -> tuple[Finding, ...]:
    """The findings of `pending`; `used` gets the (line, code) of the directives that suppressed them."""
    positions = Positions(module, text, tree)
    for item in pending:
        positions.hint(item.node, item.statement)
    suppressions = Suppressions.from_source(text) if may_suppress(text) else Suppressions.from_comments((), text)
    lines = text.splitlines()
    findings = []
    def span_of(node: cst.CSTNode) -> Span:
        return to_span(positions[node])

    for item in pending:
        span = span_of(item.node)
        node = item.node
        if isinstance(node, cst.BaseCompoundStatement) and isinstance(node.body, cst.IndentedBlock):
            # a loop, a class, a `with`: its header (`for epoch in range(n):`), not the whole block
            colon = positions[node.body.header].start
            span = Span(span.line, span.column, colon.line, colon.column + 1)
        statement = positions[item.statement]
        last = statement.end.line
        if isinstance(item.statement, cst.BaseCompoundStatement):
            last = _header_end(item.statement, positions, statement.start.line)  # the header only
        suppressed = suppressions.match(item.rule.code, (*_range_lines(item.node, span, positions), statement.start.line, last))
        related = tuple(
            n if isinstance(n, Related) else Related(path, span_of(n), why) for n, why in map(_pair, item.related)
        )
        message = item.message if isinstance(item.message, str) else item.message(span_of)
        fix = resolve_fix(item.fix, module, text, positions) if isinstance(item.fix, ProposedFix) else item.fix
        findings.append(
            make_finding(item.rule, settings, message, path, span, lines, related, fix, suppressed, item.severity)
        )
    used.update(suppressions.used)
    return tuple(sorted(findings, key=lambda f: f.sort_key))


def _range_lines(node: cst.CSTNode, span: Span, positions) -> range:
    """The lines of a finding's range where a `# noqa` counts: all of them
    (a multi-line call's offending argument is on one), but of a compound
    statement its header only (a directive in the body is about the body)."""
    if isinstance(node, (cst.BaseCompoundStatement, cst.BaseSuite, cst.Module)):
        return range(span.line, _header_end(node, positions, span.line) + 1)
    return range(span.line, span.end_line + 1)


def _header_end(node: cst.CSTNode, positions, start: int) -> int:
    """The last line of a compound statement's header (the colon's line),
    never a line of its body; `start` where it has none."""
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock) and body.header in positions:
        return max(positions[body.header].start.line, start)
    if isinstance(body, cst.SimpleStatementSuite) and body in positions:
        return max(positions[body].start.line, start)
    return start


def _pair(related: tuple[cst.CSTNode, str] | Related) -> tuple[cst.CSTNode | Related, str]:
    """(node, why) of this file, or a `Related` location in another file."""
    return (related, related.message) if isinstance(related, Related) else related
