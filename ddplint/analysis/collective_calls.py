"""Which calls of a module perform a collective, and which ranks reach them.

A call performs a collective when it is one (`collective_name`, a wrapped
model's forward or backward, a prepared DataLoader's pass, a helper imported
from another linted module that performs one) or when it calls a function of
the module that does, directly or through others, on every call
(`CollectiveChains`): its *chain* shows how, ``(call, ..., collective)``.
The sites are recorded during the walk (`record`, from a rule's trigger)
and solved together after it (`reach`): who reaches a collective depends on
every other collective of the module (branches that all perform the same
collectives are even, `Balance`), and a rank-dependent ``break``/``return``
in a loop guards the loop's next pass.

`skipping_guard` then answers the question a rank-branch rule asks: the
first guard around the site that lets some ranks skip the collective.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ddplint.analysis.callgraph import enclosing_loops
from ddplint.analysis.calls import bind_to, literal_arguments, switched_off
from ddplint.knowledge import (
    FRAMEWORK_COLLECTIVES,
    GATHERING_BACKEND_WORDS,
    IMPLICIT_COLLECTIVE_TOKENS,
    LOADER_PREPARERS,
    PER_PROCESS_READS,
)
from ddplint.analysis.collectives import (
    COLLECTIVE_FUNCTIONS,
    HOROVOD_COLLECTIVES,
    MPI_COLLECTIVES,
    Balance,
    CollectiveChains,
    Performer,
    WrappedModel,
    backend_dependence,
    collective_name,
    in_lazy_initialization,
    parameter_forward,
    under_no_grad,
    wrapped_model,
    wrapped_model_collective,
    wrapper_of,
)
from ddplint.analysis.conditions import excludes
from ddplint.analysis.guards import Guard, GuardKind
from ddplint.analysis.names import last_name
from ddplint.lazy import cst
from ddplint.paths import message_path
from ddplint.project.facts import Fact

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: Names (last components) without which a file calls no collective: the prefilter's needles.
COLLECTIVE_TOKENS = (
    *sorted(COLLECTIVE_FUNCTIONS), *sorted(MPI_COLLECTIVES), *sorted(HOROVOD_COLLECTIVES), *sorted(LOADER_PREPARERS),
    *sorted({method for _, method in FRAMEWORK_COLLECTIVES}), *IMPLICIT_COLLECTIVE_TOKENS,
)  # fmt: skip

_BACKEND_WORDS = re.compile("(?i)" + "|".join(GATHERING_BACKEND_WORDS))


@dataclass(frozen=True, eq=False)
class CollectiveSite:
    """A call (or a loop over a prepared DataLoader) that is, or may turn out to be, a collective."""

    node: cst.CSTNode
    shown: str
    guards: tuple[Guard, ...]
    #: Guards around the definitions of enclosing functions (balance only).
    outer: tuple[Guard, ...]
    function: cst.FunctionDef | None
    #: For calls of module functions: the functions it may call, or a method name.
    targets: tuple[cst.FunctionDef, ...] = ()
    method: str | None = None
    backward: bool = False
    #: For calls of a helper imported from another linted module: what it does.
    imported: Fact | None = None
    #: Inside ``if <cached> is None:``: runs once, not on every call of its function.
    lazy: bool = False
    #: Walk order, to tell a backward before the model is wrapped from one after.
    order: int = 0
    #: An enclosing `if` whose test reads per-process state (a file, the clock): (test, what).
    varying: tuple | None = None
    #: The loops around it within its function, innermost first (loop-carried exits).
    loops: tuple[cst.CSTNode, ...] = ()
    #: For calls of module functions: the wrapped models passed, by argument index.
    models: tuple[tuple[int, WrappedModel], ...] = ()
    #: Inside ``torch.no_grad()`` (so is the callee's body).
    no_grad: bool = False
    #: A call of its function's parameter (``work()``): it runs the module
    #: functions handed to it (`CallGraph.handed_to`).
    param: cst.Param | None = None


@dataclass(frozen=True)
class Reached:
    """A site that performs a collective: how (`chain`), and who reaches it."""

    site: CollectiveSite
    #: (call, ..., collective): the calls down to the collective performed.
    chain: tuple[str, ...]
    #: Its guards with the loop-carried exits added.
    guards: tuple[Guard, ...]
    #: (backends, what gathers, remedy) when the collective is real only under some backends.
    backend: tuple[str, str, str] | None = None

    @property
    def shown(self) -> str:
        """The call, and the calls it goes through, for a message."""
        chain = self.chain
        return chain[0] if len(chain) == 1 else f"{chain[0]} (which calls {' → '.join(chain[1:])})"


@dataclass
class CollectiveCalls:
    """The collective sites of a module (recorded during the walk) and, after
    it, which of them perform a collective and which guards let ranks skip it.
    Needs the rank analysis."""

    ctx: ModelView
    sites: dict[cst.CSTNode, CollectiveSite] = field(default_factory=dict)
    #: (function, walk order) of each DDP wrap.
    ddp_wraps: list = field(default_factory=list)
    #: How backend-dependent collectives are shown (`accelerator.save_state()`) -> what gathers.
    backend_dependent: dict = field(default_factory=dict)
    #: Functions -> (parameter, under no_grad, shown) of each call of a parameter in their body.
    forwards: dict = field(default_factory=lambda: defaultdict(list))
    _reached: dict | None = None
    _balance: Balance | None = None

    # ------------------------------------------------------------ during the walk

    def record(self, node: cst.CSTNode) -> bool:
        """Note a call or a `for` loop being visited; whether it may perform a collective."""
        site = self._call(node) if isinstance(node, cst.Call) else self._loop(node)
        if site is not None:
            self.sites[node] = site
        return site is not None

    def _call(self, node: cst.Call) -> CollectiveSite | None:
        ctx = self.ctx
        if wrapper_of(node, ctx) == "DDP":
            self.ddp_wraps.append((ctx.enclosing_function(), len(self.sites)))
        func = node.func
        shown = collective_name(node, ctx) or wrapped_model_collective(node, ctx, self._wrapped)
        if shown is not None and (gathers := backend_dependence(node, ctx)) is not None:
            self.backend_dependent[shown] = gathers
        extra: dict = {}
        if shown is None and ctx.facts:
            fact = ctx.facts.first(ctx.imported_callees(func))
            if fact is not None and fact.collective and not switched_off(fact.switch, literal_arguments(node)):
                where = f"{message_path(fact.path)}:{fact.line}"
                shown, extra = f"`{ctx.module.code_for_node(func)}()` from {where}", {"imported": fact}
        if shown is None:
            if isinstance(func, cst.Attribute) and func.attr.value == "backward" and not node.args:
                shown, extra = f"`{ctx.module.code_for_node(func)}()`", {"backward": True}
            elif isinstance(func, cst.Name):
                targets = tuple(v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef))
                if not targets:
                    if (forwarded := parameter_forward(node, ctx)) is not None:
                        self.forwards[forwarded[0]].append((forwarded[1], under_no_grad(ctx.stack, ctx), func.value))
                    param = ctx.rank.graph.called_parameter(func)
                    if param is None:
                        return None
                    shown, extra = f"`{func.value}()`", {"param": param}
                else:
                    shown, extra = f"`{func.value}()`", {"targets": targets, "models": self._models(node)}
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                shown, extra = f"`self.{func.attr.value}()`", {"method": func.attr.value, "models": self._models(node)}
            else:
                return None
        inner, outer = ctx.rank.guards()
        return CollectiveSite(
            node, shown, inner, outer, ctx.enclosing_function(), **extra, lazy=in_lazy_initialization(ctx.stack),
            order=len(self.sites), varying=self._varying_condition(), loops=enclosing_loops(ctx.stack),
            no_grad=under_no_grad(ctx.stack, ctx),
        )  # fmt: skip

    def _loop(self, node: cst.For) -> CollectiveSite | None:
        """Iterating a DataLoader that accelerate prepared: each new pass
        synchronises the RNG state from rank 0 (a broadcast)."""
        loader, ctx = node.iter, self.ctx
        if not isinstance(loader, cst.Name) or not any(
            isinstance(v, cst.Call) and last_name(v.func) in LOADER_PREPARERS
            and "accelerat" in ctx.module.code_for_node(v.func).lower()
            for v in ctx.values_of(loader)
        ):  # fmt: skip
            return None
        shown = f"iterating `{loader.value}`, a DataLoader accelerate prepared (it broadcasts the RNG state each pass)"
        inner, outer = ctx.rank.guards()
        return CollectiveSite(loader, shown, inner, outer, ctx.enclosing_function(), order=len(self.sites))

    def _varying_condition(self) -> tuple | None:
        """An `if` (without `else`) around the node, within its function, whose
        test reads state that can differ between processes without naming the
        rank: the filesystem (`os.path.exists`, `glob`, `listdir`) or the clock."""
        stack = self.ctx.stack
        for node, child in zip(reversed(stack[:-1]), reversed(stack[1:])):
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                return None
            if isinstance(node, cst.If) and child is node.body and node.orelse is None:
                what = self._per_process_read(node.test)
                if what is not None:
                    return node.test, what
        return None

    def _per_process_read(self, test: cst.CSTNode) -> str | None:
        todo = [test]
        while todo:
            current = todo.pop()
            if isinstance(current, cst.Call):
                for name in self.ctx.qualified_names(current.func):
                    if name in PER_PROCESS_READS:
                        return PER_PROCESS_READS[name]
            todo.extend(c for c in current.children if isinstance(c, (cst.BaseExpression, cst.Arg)))
        return None

    def _wrapped(self, attribute: str) -> tuple[cst.CSTNode, ...]:
        """The wrapping values ``self.<attribute>`` is assigned in this module
        (others, such as ``None`` in ``__init__``, left out)."""
        values = self.ctx.rank.attribute_values.get(attribute) or ()
        return tuple(v for v in values if wrapper_of(v, self.ctx) is not None)

    def _models(self, call: cst.Call) -> tuple[tuple[int, WrappedModel], ...]:
        """The wrapped models a call of a module function passes, by argument index."""
        found = []
        for index, arg in enumerate(call.args):
            if not arg.star and (model := wrapped_model(arg.value, self.ctx, self._wrapped)) is not None:
                found.append((index, model))
        return tuple(found)

    # ------------------------------------------------------------ after the walk

    def reach(self, node: cst.CSTNode) -> Reached | None:
        """What the recorded call (or loop) `node` performs collectively, or None (final after the walk)."""
        if self._reached is None:
            self._solve()
        return self._reached.get(node)  # type: ignore[union-attr]

    def _solve(self) -> None:
        rank = self.ctx.rank
        # A rank-dependent `break`/`return` in a loop guards its next iteration.
        sites = {
            node: replace(site, guards=site.guards + carried) if (carried := rank.carried_exits(site.loops, site.guards)) else site
            for node, site in self.sites.items()
        }  # fmt: skip
        performers = [self._performer(site) for site in sites.values()]
        solved = CollectiveChains(performers, rank, rank.graph.bound)
        self._reached = {}
        for (node, site), p in zip(sites.items(), performers):
            chain = solved.chain(p) or self._forwarded(site)
            if chain and site.param is not None and len(p.targets) == 1:  # `work()` (which calls `report()` → ...)
                chain = (chain[0], f"`{p.targets[0].name.value}()`", *chain[1:])
            if chain:
                self._reached[node] = Reached(site, chain, site.guards, self.backend_dependent.get(chain[-1]))
        self._balance = Balance.of(
            (((*r.guards, *r.site.outer), r.chain[-1]) for r in self._reached.values()), rank
        )

    def skipping_guard(self, reached: Reached) -> Guard | None:
        """The first rank-dependent guard around `reached` that lets some ranks
        skip its collective: not balanced by the same collectives on the other
        side, not an exit the site's own branch excludes, not a test that also
        admits the backends under which the collective is real."""
        rank = self.ctx.rank
        for guard in reached.guards:
            if not rank.is_rank_dependent(guard.deps) or self._balance.balanced(guard):  # type: ignore[union-attr]
                continue
            if guard.exit is not None and _correlated(guard, reached.guards):
                continue  # `if not use_fsdp and not is_rank0: return` ... `if use_fsdp: broadcast()`
            if reached.backend is not None and self._admits_backend(guard.test):
                continue  # `if is_main_process or distributed_type == DEEPSPEED:`: the maintainers' fix
            return guard
        return None

    def varying(self, reached: Reached) -> tuple | None:
        """(test, what it reads) of an `if` around the site whose test reads
        per-process state (a file, the clock) when no rank guard picks its ranks."""
        site = reached.site
        return site.varying if site.varying is not None and not self.ctx.rank.selects_ranks(site.guards) else None

    def _admits_backend(self, test: cst.CSTNode) -> bool:
        """Whether an operand of an ``or`` in `test` names the backends that
        make the collective real (DeepSpeed, FSDP, Megatron-LM)."""
        todo = [test]
        while todo:
            node = todo.pop()
            if isinstance(node, cst.BooleanOperation):
                if isinstance(node.operator, cst.Or) and any(
                    _BACKEND_WORDS.search(self.ctx.module.code_for_node(o)) for o in (node.left, node.right)
                ):
                    return True
                todo += [node.left, node.right]
        return False

    def _direct(self, site: CollectiveSite) -> tuple[str, ...] | None:
        if site.backward:
            return (f"{site.shown} (the gradient all-reduce of DDP)",) if self._wrapped_before(site) else None
        if site.imported is not None:
            return (site.shown, *site.imported.collective)
        return None if site.targets or site.method or site.param else (site.shown,)

    def _wrapped_before(self, site: CollectiveSite) -> bool:
        """A DDP wrap in another function, or earlier in the site's own: a
        backward before ``model = DDP(model)`` all-reduces nothing."""
        return any(function is not site.function or order < site.order for function, order in self.ddp_wraps)

    def _performer(self, site: CollectiveSite) -> Performer:
        direct = None if site.targets or site.method or site.param else self._direct(site)
        return Performer(site.node, site.function, site.guards, site.shown, direct, self._targets(site), site.lazy)

    def _forwarded(self, site: CollectiveSite) -> tuple[str, ...] | None:
        """A call passing a wrapped model to a helper that calls it: (call, that forward)."""
        for target in self._targets(site):
            forward = self._forward(site, target)
            if forward is not None:
                return (site.shown, forward)
        return None

    def _forward(self, site: CollectiveSite, target: cst.FunctionDef) -> str | None:
        """A wrapped model the call passes to a parameter the callee calls
        (``score(ddp_model, batches)`` → ``net(x)``): that forward."""
        if not site.models or target not in self.forwards:
            return None
        bound = bind_to(site.node, target)  # type: ignore[arg-type]
        passed = dict(site.models)
        for parameter, no_grad, shown in self.forwards[target]:
            arg = bound.explicit.get(parameter)
            index = next((i for i, a in enumerate(site.node.args) if a is arg), None)  # type: ignore[attr-defined]
            if index in passed:
                forward = passed[index].forward(shown, no_grad or site.no_grad)
                if forward is not None:
                    return forward
        return None

    def _targets(self, site: CollectiveSite) -> tuple[cst.FunctionDef, ...]:
        if site.param is not None:
            return self.ctx.rank.graph.handed_to(site.param)
        if site.method is not None:
            return tuple(self.ctx.rank.functions.get(site.method, ()))
        return site.targets


def _correlated(exit_guard: Guard, guards: tuple[Guard, ...]) -> bool:
    """Whether the site's own branch excludes the exit: it runs only where
    the exit's condition is false (so no rank that reaches it has left)."""
    return any(
        g is not exit_guard and g.kind is GuardKind.BRANCH and g.branch == 0 and g.exit is None
        and excludes(g.test, exit_guard.test)
        for g in guards
    )  # fmt: skip
