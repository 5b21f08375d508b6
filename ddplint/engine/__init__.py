"""The per-file pipeline: bytes -> text -> CPython check -> prefilter ->
LibCST parse (once) -> one walk with every enabled rule -> findings.

Everything here is a pure function of its arguments (no global state, no
I/O), so files can be linted in parallel and their results cached.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from typing import Iterator
import libcst as cst

from ddplint.config.settings import Settings
from ddplint.engine.context import FileContext, PendingFinding
from ddplint.analysis.rewrite import ProposedFix
from ddplint.engine.fixes import resolve_fix
from ddplint.engine.prefilter import TextScan, applicable, summary_worthy
from ddplint.engine.positions import comments, resolve_positions, to_span
from ddplint.engine.source import SourceError, SourceProblem, decode_source, python_ast
from ddplint.engine.suppression import Suppressions
from ddplint.engine.walker import Walker
from ddplint.model import Finding, Fix, Notice, NoticeLevel, Related, Span
from ddplint.project.facts import ALONE, NO_FACTS, FileFacts, ProjectRole
from ddplint.project.collector import SummaryCollector
from ddplint.project.summary import ModuleSummary, imports_summary, text_outside_classes
from ddplint.result import FileResult
from ddplint.rule import Rule, all_rules

SYNTAX_ERROR = "DDP000"
_DEEP_RECURSION = 10_000
_TOO_DEEP = "nested too deeply for ddplint's analysis (Python accepts it); not linted"

__all__ = ["FileResult", "check_bytes", "check_source", "lint_source"]


def lint_source(path: str, text: str, settings: Settings | None = None) -> list[Finding]:
    """The findings for one file's source text (suppressed ones included)."""
    return list(check_source(path, text, settings or Settings.all_rules()).findings)


def check_bytes(
    path: str,
    data: bytes,
    settings: Settings,
    prefilter: bool = True,
    project: ProjectRole = ALONE,
) -> FileResult:
    """Lint a file's raw bytes, decoding them per PEP 263 first."""
    if len(data) > settings.max_file_size:
        note = f"{_size(len(data))} is above max-file-size ({_size(settings.max_file_size)}); not linted"
        return FileResult(notices=(Notice(path, note, NoticeLevel.WARNING),))
    try:
        text = decode_source(data)
    except SourceError as exc:
        return FileResult(_syntax_findings(path, exc.problem, settings, ""))
    return check_source(path, text, settings, prefilter, project)


def _size(count: int) -> str:
    return f"{count / 10**6:.1f} MB" if count >= 10**6 else f"{count / 10**3:.1f} kB"


def check_source(
    path: str,
    text: str,
    settings: Settings,
    prefilter: bool = True,
    project: ProjectRole = ALONE,
) -> FileResult:
    """Lint one file's text with the rules `settings` enables, in the role
    the whole-project analysis gives it (see `ProjectRole`)."""
    facts = project.facts
    tree = python_ast(text, path)
    if isinstance(tree, SourceProblem):
        return FileResult(_syntax_findings(path, tree, settings, text))
    every_rule = _visitor_rules(settings.rules)
    scan = TextScan(text)
    rules = applicable(every_rule, scan, settings.rank_names, bool(facts)) if prefilter else every_rule
    imports, lines, walk_for_summary = None, {}, False
    if project.summarize:
        imports, lines = imports_summary(tree)
        if project.importer:  # only a module that imports linted ones has facts to filter by use
            imports = dataclasses.replace(imports, uses=None)  # read by the index where it matters
        # A module importing facts may pass them on (`def should_log(): return am_leader()`).
        # A module parsed for its summary alone is parsed only if its functions may hold facts.
        outside_classes = None if rules else functools.partial(text_outside_classes, text, tree)
        walk_for_summary = project.imported and (
            bool(facts) or summary_worthy(scan, settings.rank_names, outside_classes)
        )
        with_facts = every_rule if not prefilter else (
            applicable(every_rule, scan, settings.rank_names, True) if project.importer else rules
        )
        # Rules that only facts could enable are not run now (without facts they
        # find nothing, as the prefilter guarantees); the walk then cannot tell
        # which imported names they would consult, so any fact re-lints the file.
        unrun = bool(set(with_facts) - set(rules))
        if (rules or not with_facts) and not (project.imported and not walk_for_summary) and not unrun:
            imports = dataclasses.replace(imports, consulted=())  # filled in by the walk
    if not rules and not walk_for_summary:
        return FileResult(summary=imports)
    with _recursion_limit(_DEEP_RECURSION):
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            note = f"LibCST cannot parse this file, which CPython accepts; not linted ({exc.message})"
            return FileResult(notices=(Notice(path, note, NoticeLevel.WARNING),), summary=imports)
        except RecursionError:
            return FileResult(notices=(Notice(path, _TOO_DEEP, NoticeLevel.WARNING),), summary=imports)
        return _lint_module(path, text, module, settings, rules, facts, imports, lines, walk_for_summary)


@contextlib.contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    """LibCST and the walker recurse once per nesting level, and real code
    (long ``a + b + ...`` chains) goes deeper than CPython's default 1000;
    the syntax check above keeps CPython's own limit."""
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
    lines: dict[str, int] | None = None,
    symbols: bool = False,
) -> FileResult:
    """One walk; with a `summary` to complete, also what it records: the
    imported names the lint consulted, and (with `symbols`) the facts of the
    module's own functions and classes."""
    walker_stack: list[cst.CSTNode] = []
    requires = {name for rule in rules for name in rule.requires}
    summarize = summary is not None
    if summarize and symbols:  # the facts of its functions; the rules' own questions need no more
        requires.add("rank")
    ctx = FileContext(path, text, module, settings, walker_stack, requires, facts, summarize)
    instances = [rule(ctx) for rule in rules]
    notices: list[Notice] = []
    collector = SummaryCollector(ctx, symbols) if summarize else None
    analyses = ctx.analyses if collector is None else (*ctx.analyses, collector)

    def on_rule_error(rule: Rule, exc: BaseException) -> None:
        notices.append(Notice.internal_error(path, exc, f" in rule {rule.code}"))

    walker = Walker(analyses, instances, on_rule_error, walker_stack)
    try:
        walker.walk(module)
        for instance in list(instances):
            try:
                instance.finish()
            except Exception as exc:  # noqa: BLE001 - one rule's bug must not hide the others
                notices.append(Notice.internal_error(path, exc, f" in rule {instance.code}"))
        pending = [p for p in ctx.pending if ctx.in_distributed_context or not p.rule.distributed_only]
        findings = _finalize(path, text, module, settings, pending) if pending else ()
    except RecursionError:
        return FileResult(notices=(Notice(path, _TOO_DEEP, NoticeLevel.WARNING),), parsed=True)
    if collector is not None and summary is not None:
        if symbols:
            summary = summary.with_symbols(collector.symbols(lines or {}))
        if summary.consulted is not None:
            consulted, called = collector.consulted()
            summary = dataclasses.replace(summary, consulted=consulted, called=called)
    return FileResult(findings, tuple(notices), parsed=True, summary=summary)


def _finalize(
    path: str, text: str, module: cst.Module, settings: Settings, pending: list[PendingFinding]
) -> tuple[Finding, ...]:
    positions = resolve_positions(module)
    suppressions = Suppressions.from_comments(comments(positions))
    lines = text.splitlines()
    findings = []
    def span_of(node: cst.CSTNode) -> Span:
        return to_span(positions[node])

    for item in pending:
        span = span_of(item.node)
        statement = positions[item.statement]
        last = statement.end.line
        if isinstance(item.statement, cst.BaseCompoundStatement):
            last = positions[item.statement.body].start.line  # the header only
        suppressed = suppressions.match(item.rule.code, (span.line, statement.start.line, last))
        related = tuple(
            n if isinstance(n, Related) else Related(path, span_of(n), why) for n, why in map(_pair, item.related)
        )
        message = item.message if isinstance(item.message, str) else item.message(span_of)
        fix = resolve_fix(item.fix, module, text, positions) if isinstance(item.fix, ProposedFix) else item.fix
        findings.append(_make_finding(item.rule, settings, message, path, span, lines, related, fix, suppressed))
    return tuple(sorted(findings, key=lambda f: f.sort_key))


def _pair(related: tuple[cst.CSTNode, str] | Related) -> tuple[cst.CSTNode | Related, str]:
    """(node, why) of this file, or a `Related` location in another file."""
    return (related, related.message) if isinstance(related, Related) else related


def _make_finding(
    rule: type[Rule],
    settings: Settings,
    message: str,
    path: str,
    span: Span,
    lines: list[str],
    related: tuple[Related, ...] = (),
    fix: Fix | None = None,
    suppressed: str | None = None,
) -> Finding:
    return Finding(
        rule=rule.code,
        name=rule.name,
        severity=settings.severity.get(rule.code, rule.severity),
        message=message,
        path=path,
        span=span,
        related=related,
        fix=fix,
        snippet=lines[span.line - 1].strip() if 0 < span.line <= len(lines) else "",
        suppressed=suppressed,
    )


def _syntax_findings(
    path: str, problem: SourceProblem, settings: Settings, text: str
) -> tuple[Finding, ...]:
    if SYNTAX_ERROR not in settings.rules:
        return ()
    rule = _rules_by_code()[SYNTAX_ERROR]
    message = f"{problem.message} (the file cannot be parsed, so no other rule ran)"
    return (_make_finding(rule, settings, message, path, problem.span, text.splitlines()),)


@functools.lru_cache(maxsize=None)
def _rules_by_code() -> dict[str, type[Rule]]:
    return {rule.code: rule for rule in all_rules()}


@functools.lru_cache(maxsize=64)
def _visitor_rules(codes: frozenset[str]) -> tuple[type[Rule], ...]:
    """The enabled rules that run in the walk (DDP000 comes from the parser)."""
    by_code = _rules_by_code()
    return tuple(by_code[c] for c in sorted(codes) if c in by_code and c != SYNTAX_ERROR)
