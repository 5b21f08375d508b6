"""The per-file pipeline: bytes -> text -> CPython check -> prefilter ->
LibCST parse (once) -> one walk with every enabled rule -> findings.

Everything here is a pure function of its arguments (no global state, no
I/O), so files can be linted in parallel and their results cached. This
module runs the steps before LibCST on CPython alone; `ddplint.engine.lint`,
the LibCST half, is imported only for a file that some rule applies to.
"""

from __future__ import annotations

import ast
import dataclasses
import functools

from ddplint.config.settings import Settings
from ddplint.rule import all_rules_settings
from ddplint.engine.findings import make_finding
from ddplint.engine.noqa import UNUSED_NOQA, unused_noqa
from ddplint.engine.notebook import NOTEBOOK_SUFFIX, NotebookError, read_notebook
from ddplint.engine.prefilter import TextScan, applicable, missed_requirements, summary_worthy
from ddplint.engine.source import SourceError, SourceProblem, decode_source, python_ast, syntax_problem
from ddplint.model import Finding, Notice, NoticeLevel
from ddplint.project.outline import outline_tree
from ddplint.project.facts import REPLACEABLE
from ddplint.project.role import ALONE, ProjectRole
from ddplint.project.summary import ModuleSummary, imports_summary
from ddplint.reading import shape_notice, too_large_note
from ddplint.result import FileResult
from ddplint.rule import Rule, all_rules

SYNTAX_ERROR = "DDP000"

__all__ = ["FileResult", "check_bytes", "check_source", "lint_source", "read_layout"]


def lint_source(path: str, text: str, settings: Settings | None = None) -> list[Finding]:
    """The findings for one file's source text (suppressed ones included)."""
    return list(check_source(path, text, settings or all_rules_settings()).findings)


def check_bytes(
    path: str,
    data: bytes,
    settings: Settings,
    prefilter: bool = True,
    project: ProjectRole = ALONE,
) -> FileResult:
    """Lint a file's raw bytes, decoding them per PEP 263 first."""
    if path.endswith(NOTEBOOK_SUFFIX):
        return _check_notebook(path, data, settings, prefilter, project)
    if len(data) > settings.max_file_size:
        note = too_large_note(len(data), settings.max_file_size)
        return FileResult(notices=(Notice(path, note, NoticeLevel.WARNING),))
    try:
        text = decode_source(data)
    except SourceError as exc:
        return FileResult(_syntax_findings(path, exc.problem, settings, ""))
    return check_source(path, text, settings, prefilter, project)


def _check_notebook(
    path: str, data: bytes, settings: Settings, prefilter: bool, project: ProjectRole
) -> FileResult:
    """Lint a notebook's code cells as one module; positions in the cells."""
    if len(data) > settings.max_file_size:
        return FileResult(notices=(Notice(path, too_large_note(len(data), settings.max_file_size), NoticeLevel.WARNING),))
    try:
        notebook = read_notebook(data)
    except NotebookError as exc:
        return FileResult(notices=(Notice(path, str(exc), NoticeLevel.ERROR),))
    result = check_source(path, notebook.text, settings, prefilter, project)
    return dataclasses.replace(result, findings=tuple(notebook.finding(f) for f in result.findings))


def read_layout(text: str, path: str) -> tuple[ModuleSummary, ast.Module | None] | SourceProblem:
    """What the whole-project analysis reads of a module's text (its
    `imports_summary`), from CPython's tree of its outline (a fraction of the
    whole tree); where it has none, from the whole tree, returned too (it
    places findings), or the error `compile()` gives instead."""
    outline = outline_tree(text)
    if outline is not None:
        return imports_summary(outline), None
    tree = python_ast(text, path)
    return tree if isinstance(tree, SourceProblem) else (imports_summary(tree), tree)


def check_source(
    path: str,
    text: str,
    settings: Settings,
    prefilter: bool = True,
    project: ProjectRole = ALONE,
) -> FileResult:
    """Lint one file's text with the rules `settings` enables, in the role
    the whole-project analysis gives it (see `ProjectRole`)."""
    too_costly = shape_notice(path, text, settings)
    if too_costly is not None:  # time and memory grow with the lines and tokens (LibCST's most): bound them
        return FileResult(notices=(too_costly,))
    facts = project.facts
    # The summary's imports: from the first lint of the same bytes (which also compiled
    # them), else from CPython's tree of the module's outline (`outline_tree`).
    tree, imports = None, project.layout if project.summarize else None
    if imports is None:
        problem = syntax_problem(text, path)
        if problem is not None:
            return FileResult(_syntax_findings(path, problem, settings, text))
        if project.summarize:
            read = read_layout(text, path)
            if isinstance(read, SourceProblem):
                return FileResult(_syntax_findings(path, read, settings, text))
            imports, tree = read
            if project.layout_only:  # its attribute uses are read where the index needs them
                return FileResult(summary=dataclasses.replace(imports, uses=None))
    every_rule = _visitor_rules(settings.rules)
    scan = TextScan(text)
    # Other modules call its functions on many ranks, or it tests its rank with a
    # project helper of any name (`first_in_job()`): distributed code.
    per_rank = bool(facts.callers) or facts.rank_helper
    rules = applicable(every_rule, scan, settings.rank_names, facts.meets, per_rank) if prefilter else every_rule
    walk_for_summary = False
    if imports is not None:
        if project.importer:  # only a module that imports linted ones has facts to filter by use
            imports = dataclasses.replace(imports, uses=None)  # read by the index where it matters
            if per_rank or scan.distributed:  # its per-rank calls make its callees per-rank
                imports = dataclasses.replace(imports, per_rank_calls=None)  # filled in by the walk
        # A module importing facts may pass them on (`def should_log(): return am_leader()`).
        # A module parsed for its summary alone is parsed only if its functions or methods may hold facts.
        walk_for_summary = project.imported and (bool(facts.facts) or summary_worthy(scan, settings.rank_names))
        with_facts = every_rule if not prefilter else (
            applicable(every_rule, scan, settings.rank_names, REPLACEABLE, per_rank) if project.importer else rules
        )
        # What the lint consulted matters only where facts can come (a module importing linted ones).
        if project.importer and not (project.imported and not walk_for_summary):
            # Rules that only facts could enable are not run now (without facts they find
            # nothing, as the prefilter guarantees): facts that can meet what their text
            # misses re-lint the file (`ModuleSummary.unrun`).
            unrun = tuple(missed_requirements(r, scan, settings.rank_names) for r in with_facts if r not in rules)
            imports = dataclasses.replace(imports, consulted=(), unrun=unrun)  # filled in by the walk
    calls = imports is not None and imports.per_rank_calls is None  # who runs its calls of linted helpers
    if not rules and not walk_for_summary and not calls:  # nothing to suppress: every judged directive is unused
        return FileResult(unused_noqa(path, text, settings), summary=imports)
    from ddplint.engine.lint import lint_text  # LibCST: only for a file some rule applies to

    return lint_text(path, text, settings, rules, facts, imports, walk_for_summary, tree)


def _syntax_findings(
    path: str, problem: SourceProblem, settings: Settings, text: str
) -> tuple[Finding, ...]:
    if SYNTAX_ERROR not in settings.rules:
        return ()
    rule = _rules_by_code()[SYNTAX_ERROR]
    message = f"{problem.message} (the file cannot be parsed, so no other rule ran)"
    return (make_finding(rule, settings, message, path, problem.span, text.splitlines()),)


@functools.lru_cache(maxsize=None)
def _rules_by_code() -> dict[str, type[Rule]]:
    return {rule.code: rule for rule in all_rules()}


@functools.lru_cache(maxsize=64)
def _visitor_rules(codes: frozenset[str]) -> tuple[type[Rule], ...]:
    """The enabled rules that run in the walk (DDP000 comes from the parser, DDP100 from the suppressions)."""
    by_code = _rules_by_code()
    return tuple(by_code[c] for c in sorted(codes) if c in by_code and c not in (SYNTAX_ERROR, UNUSED_NOQA))
