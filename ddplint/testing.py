"""Testing ddplint, and rules written for it: a snippet's findings, and what
the semantic model knows about it with no rule involved.

    from ddplint.testing import lint, model_of

    findings = lint(source, select=["DDP006"])       # [Finding, ...]
    model = model_of(source)
    model.runs(12)                                   # Runs.ONE: who runs line 12
    model.per_rank(7)                                # the value assigned on line 7 differs per rank

`tests/semantic/` holds snippets annotated ``# runs: one`` and
``# per-rank: yes`` that `tests/test_semantic.py` checks this way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, TypeVar

import libcst as cst

from ddplint.analysis.decisions import LOCAL
from ddplint.analysis.guards import Runs, Site
from ddplint.analysis.scope import ScopeMark
from ddplint.analysis.semantic import OPTIONAL_ANALYSES
from ddplint.config.selection import Selection, resolve
from ddplint.config.settings import Settings
from ddplint.engine import check_source
from ddplint.engine.positions import resolve_positions
from ddplint.engine.walker import Walker
from ddplint.model import Finding
from ddplint.project.facts import NO_FACTS, FileFacts
from ddplint.engine.context import FileContext

__all__ = ["ModelOf", "lint", "model_of", "walk_snippet"]

P = TypeVar("P")
T = TypeVar("T")


def lint(source: str, select: Iterable[str] | None = None, path: str = "snippet.py", preview: bool = True) -> list[Finding]:
    """The findings for `source`: the rules on by default (preview ones too,
    unless `preview` is False), or exactly the `select`ed codes and prefixes."""
    layers = (Selection(select=tuple(select)),) if select is not None else ()
    rules = resolve(layers, preview=preview)
    settings = Settings(rules=frozenset(rules), preview=preview)
    return list(check_source(path, source, settings, prefilter=False).findings)


@dataclass
class _Recorder:
    """Takes the model's view of every statement during the walk."""

    ctx: FileContext
    sites: dict[cst.CSTNode, Site] = field(default_factory=dict)
    #: Where the walk was at each statement, to ask about its values there.
    positions: dict[cst.CSTNode, tuple[tuple[cst.CSTNode, ...], ScopeMark]] = field(default_factory=dict)

    def _record(self, node: cst.CSTNode) -> None:
        self.sites[node] = self.ctx.rank.site(node)
        self.positions[node] = (tuple(self.ctx.stack), self.ctx.scopes.mark())

    visit_SimpleStatementLine = _record
    visit_If = _record
    visit_For = _record
    visit_While = _record
    visit_With = _record
    visit_Try = _record
    visit_FunctionDef = _record
    visit_ClassDef = _record


@dataclass
class ModelOf:
    """The semantic model of one snippet after its walk, asked by line."""

    model: FileContext
    #: The statements starting on each line (a compound statement's header line).
    statements: dict[int, tuple[cst.CSTNode, Site]]
    #: Where the walk was at each of them (names resolve as they did there).
    positions: dict[cst.CSTNode, tuple[tuple[cst.CSTNode, ...], ScopeMark]] = field(default_factory=dict)

    def _at(self, line: int) -> tuple[cst.CSTNode, Site]:
        if line not in self.statements:
            raise KeyError(f"no statement starts on line {line}")
        return self.statements[line]

    def runs(self, line: int) -> Runs:
        """Who runs the statement on `line` in a distributed job."""
        return self.model.rank.runs(self._at(line)[1])

    def repeated(self, line: int) -> bool:
        """Whether the statement on `line` runs again and again (a training or epoch loop)."""
        return self.model.rank.execution.repeated(self._at(line)[1])

    def per_rank(self, line: int) -> bool:
        """Whether the value on `line` (an assignment's value, a return's, an
        expression statement's) differs between ranks."""
        node, value = self._value(line)
        if node not in self.positions:
            return self.model.rank.expression_is_rank_dependent(value)
        return self._where(node, lambda: self.model.rank.expression_is_rank_dependent(value))

    def on_cpu(self, line: int) -> bool:
        """Whether the tensor on `line` (an assignment's value, an expression
        statement's) certainly lives on the CPU (`Devices.on_cpu`, asked where
        the line is)."""
        node, value = self._value(line)
        return self._where(node, lambda: self.model.devices.on_cpu(value))

    def _value(self, line: int) -> tuple[cst.CSTNode, cst.BaseExpression]:
        """The statement on `line` and the value it assigns, returns or is."""
        node, _ = self._at(line)
        body = node.body[0] if isinstance(node, cst.SimpleStatementLine) and node.body else node
        value = getattr(body, "value", None)
        if value is None:
            raise ValueError(f"line {line} holds no value")
        return node, value

    def _where(self, node: cst.CSTNode, ask: Callable[[], T]) -> T:
        """`ask()` with the model placed back where the walk was at `node`
        (its stack, and the names bound there)."""
        stack, mark = self.positions[node]
        self.model.stack[:] = stack
        try:
            with self.model.scopes.restored(mark):
                return ask()
        finally:
            self.model.stack.clear()

    def unreduced(self, line: int) -> bool:
        """Whether the condition of the `if`/`while` on `line` (or the value
        assigned there) reads a per-rank value: a loss or metric of the rank's
        own batch that no collective made the same on every rank."""
        node, site = self._at(line)
        values = self.model.per_rank_values
        if isinstance(node, (cst.If, cst.While)):
            value, ask = node.test, lambda v: values.unreduced(v, site.function) is not None
        else:
            body = node.body[0] if isinstance(node, cst.SimpleStatementLine) and node.body else node
            value, ask = getattr(body, "value", None), lambda v: values.value_state(v, site.function) == LOCAL
        if value is None or site.function is None:
            raise ValueError(f"line {line} holds no value in a function")
        return self._where(node, lambda: ask(value))


def walk_snippet(
    source: str,
    probe: Callable[[FileContext], P] | None = None,
    requires: Iterable[str] = (),
    settings: Settings | None = None,
    path: str = "t.py",
    as_analysis: bool = False,
    facts: FileFacts = NO_FACTS,
) -> tuple[FileContext, P | None]:
    """`source` walked once with the analyses `requires` names and the visitor
    `probe(ctx)` builds, which asks them during the walk (run as a rule, or
    with `as_analysis` among the analyses); an error in any is raised, not
    reported. `facts` are what the whole-project analysis would know of its
    imports and callers. Returns the model and the visitor."""
    module = cst.parse_module(source)
    stack: list[cst.CSTNode] = []
    settings = settings or Settings(rules=frozenset())
    ctx = FileContext(path, source, module, settings, stack, requires=requires, facts=facts)
    visitor = probe(ctx) if probe is not None else None
    visitors = [visitor] if visitor is not None else []

    def fail(owner: object, exc: BaseException) -> None:
        raise exc

    if as_analysis:
        Walker((*ctx.analyses, *visitors), (), fail, stack).walk(module)
    else:
        Walker(ctx.analyses, visitors, fail, stack).walk(module)
    return ctx, visitor


def model_of(source: str, path: str = "snippet.py", facts: FileFacts = NO_FACTS) -> ModelOf:
    """The model of `source` with every analysis, after the walk (answers are
    final); `facts` as `walk_snippet` takes them."""
    settings = Settings(rules=frozenset(), preview=True)
    ctx, recorder = walk_snippet(source, _Recorder, OPTIONAL_ANALYSES, settings, path, as_analysis=True, facts=facts)
    assert recorder is not None
    module = ctx.module
    positions = resolve_positions(module)
    statements: dict[int, tuple[cst.CSTNode, Site]] = {}
    for node, site in recorder.sites.items():
        line = positions[node].start.line
        if isinstance(node, cst.FunctionDef | cst.ClassDef) and node.decorators:
            line = positions[node.name].start.line  # the `def` line, not the first decorator's
        statements.setdefault(line, (node, site))
    return ModelOf(ctx, statements, recorder.positions)
