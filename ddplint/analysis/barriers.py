"""Where every rank waits for the others: barriers, and what acts as one.

`synchronises(call, ctx)` says whether a call makes every rank that reaches
it wait for the others: a barrier, any other collective, a set-up call that
is one (`accelerator.prepare`, `DDP(model)`, `deepspeed.initialize`), a helper
named for one (detectron2's `comm.synchronize()`), or a helper of another
module of the project that performs one. `Barriers` is a walker analysis
(``requires = {"rank", "barriers"}``, `ctx.barriers`) that keeps those calls,
and the calls of the module's own functions, in walk order, so that after
the walk a rule can ask which waits lie between two calls of a function
(the zero-first idiom: one rank writes, every rank waits, then all read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from ddplint.analysis.calls import literal_arguments, switched_off
from ddplint.knowledge import BARRIER_HELPERS, BARRIER_NAMES, NOT_BARRIERS, PLAIN_BARRIERS, SYNCING_SETUP
from ddplint.analysis.collectives import (
    COLLECTIVE_FUNCTIONS, collective_name, in_lazy_initialization, on_subgroup, performing_functions, wrapper_of,
)  # fmt: skip
from ddplint.analysis.guards import Runs
from ddplint.analysis.names import last_name
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.guards import Site
    from ddplint.analysis.view import ModelView


def synchronises(node: cst.Call, ctx: ModelView) -> bool:
    """Whether every rank that reaches `node` waits there for the others (not
    `torch.cuda.synchronize()`, which waits for the GPU only)."""
    name = last_name(node.func)
    if name in BARRIER_NAMES | SYNCING_SETUP:
        return True
    if ctx.facts:  # a helper of another module of the project that performs a collective
        fact = ctx.facts.first(ctx.imported_callees(node.func))
        if fact is not None and fact.collective:
            return not switched_off(fact.switch, literal_arguments(node))
    if name in BARRIER_HELPERS:
        return not ctx.qualified_names(node.func) & NOT_BARRIERS
    if name in COLLECTIVE_FUNCTIONS and on_subgroup(node) and _distributed(ctx.qualified_names(node.func)):
        return True  # a group's collective orders its members (Megatron's data-parallel all_reduce "barrier")
    return collective_name(node, ctx) is not None or wrapper_of(node, ctx) is not None


@dataclass(frozen=True)
class _Wait:
    site: Site
    #: A barrier by name (`PLAIN_BARRIERS`); a collective inside `if _GROUP is None:` (runs once, not every call).
    plain: bool = False
    lazy: bool = False
    #: For a call of the module's own function (a wait if it performs a collective on every call):
    #: the functions it may run, or the method name of a `self.<name>()` call.
    targets: tuple[cst.FunctionDef, ...] | None = None
    method: str | None = None


class Barriers:
    """The module's waits for every rank, and its calls of its own functions, in walk order."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self._calls: list[_Wait] = []
        #: Each call visited -> how many entries preceded it.
        self._position: dict[cst.Call, int] = {}
        self._performing: set[cst.FunctionDef] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        self._position[node] = len(self._calls)
        func = node.func
        if synchronises(node, ctx):
            lazy = in_lazy_initialization(ctx.stack)
            self._calls.append(_Wait(ctx.rank.site(node), last_name(func) in PLAIN_BARRIERS, lazy))
        elif isinstance(func, cst.Name):
            targets = tuple(v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef))
            if targets:
                self._calls.append(_Wait(ctx.rank.site(node), targets=targets))
        elif isinstance(func, cst.Attribute) and last_name(func.value) in ("self", "cls"):
            self._calls.append(_Wait(ctx.rank.site(node), targets=(), method=func.attr.value))

    def waits_at(self, node: cst.Call) -> bool:
        """Whether `node` itself synchronises every rank (`synchronises`)."""
        index = self._position.get(node, -1)
        return 0 <= index < len(self._calls) and self._calls[index].site.node is node and self._calls[index].targets is None

    def waits(
        self, function: cst.FunctionDef | None, before: cst.Call, after: cst.Call | None = None, plain: bool = False
    ) -> list[Site]:
        """The calls of `function` where every rank waits, walked after `after`
        (from the start when None) and before `before` (after the walk): those
        that synchronise, and calls of the module's functions that perform a
        collective on every call (`wait_all_ranks()` calling `dist.barrier()`);
        with `plain`, only the barriers by name."""
        start = 0 if after is None else self._position[after]
        found = []
        for wait in self._calls[start : self._position[before]]:
            if wait.site.function is not function or (plain and not wait.plain):
                continue
            if wait.targets is None or (not plain and self._performs(wait)):
                found.append(wait.site)
        return found

    def zero_first(self, node: cst.Call, site: Site, firsts: Iterable[Site]) -> bool:
        """Whether `node` (at `site`) runs in the zero-first idiom, written out
        (after the walk): the other ranks wait at a barrier of its function
        before it (`if local_rank != 0: dist.barrier()`), or one of `firsts`
        (earlier calls doing the same) ran on one rank, or one per node, and a
        barrier followed (the others find its result)."""
        rank = self.ctx.rank
        if any(rank.runs(b) is Runs.ALL_BUT_ONE for b in self.waits(site.function, node, plain=True)):
            return True
        ones = [s for s in firsts if s.function is site.function and rank.runs(s) in (Runs.ONE, Runs.PER_NODE)]
        return any(self.waits(site.function, node, after=s.node, plain=True) for s in ones)

    def _performs(self, call: _Wait) -> bool:
        if self._performing is None:
            rank = self.ctx.rank
            direct = {
                w.site.function for w in self._calls
                if w.targets is None and w.site.function is not None and not w.lazy and not rank.selects_ranks(w.site.guards)
            }  # fmt: skip
            calls = [(r.function, rank.targets_of(r)) for r in rank.references if not r.launch and not rank.selects_ranks(r.guards)]
            self._performing = performing_functions(direct, calls)
        targets = call.targets or tuple(self.ctx.rank.functions.get(call.method or "", ()))
        return any(t in self._performing for t in targets)


def _distributed(names: frozenset) -> bool:
    """A function of `torch.distributed` (or DeepSpeed's `deepspeed.comm`)."""
    return any(n and n.startswith(("torch.distributed.", "deepspeed.comm.")) for n in names)
