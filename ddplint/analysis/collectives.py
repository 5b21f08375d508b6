"""The catalogue of collective operations: calls every rank of a group must make.

Kept as data in one place; DDP001 documents it and other rules (collective
checkpoint APIs are not "unguarded saves") consult it. A call is a
collective when:

* it resolves to one of `COLLECTIVE_FUNCTIONS` under one of
  `COLLECTIVE_MODULES` (``torch.distributed.barrier``, ``deepspeed.comm.
  all_reduce``, ...) or to one of `COLLECTIVE_QUALNAMES` (distributed
  checkpointing, FSDP full-parameter gathering, accelerate's utilities);
* it is a method whose name alone is unambiguous (`wait_for_everyone`), or
  a method of an object that the code makes recognisable: an accelerate
  ``accelerator``, a DeepSpeed ``engine``, a Lightning ``strategy`` or
  module (``self.all_gather``, ``self.log(..., sync_dist=True)``);
* it is an implicit collective of a wrapped model: the forward of a model
  assigned from ``DistributedDataParallel(...)`` (outside ``no_grad``), its
  ``.backward()``, and ``.state_dict()`` of an FSDP-wrapped model.

Point-to-point operations (send/recv/isend/irecv/batch_isend_irecv) are
deliberately absent: calling them on some ranks only is their purpose.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from ddplint.analysis.calls import truth
from ddplint.analysis.catalogue import covering_needles
from ddplint.analysis.names import last_name
from ddplint.analysis.rank import SELECTING, Guard, GuardKind, RankAnalysis, polarity
from ddplint.analysis.rank_sets import RankSets
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

COLLECTIVE_FUNCTIONS = frozenset(
    {
        "barrier", "monitored_barrier", "all_reduce", "reduce", "broadcast", "broadcast_object_list",
        "all_gather", "all_gather_object", "all_gather_into_tensor", "gather", "gather_object",
        "scatter", "scatter_object_list", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
        "all_to_all_single", "new_group", "new_subgroups", "all_reduce_coalesced",
        "all_gather_coalesced", "_all_gather_base", "_reduce_scatter_base",
    }
)  # fmt: skip

COLLECTIVE_MODULES = (
    "torch.distributed",
    "torch.distributed.distributed_c10d",
    "torch.distributed.nn",
    "torch.distributed.nn.functional",
    "deepspeed.comm",
    "deepspeed.comm.comm",
    "ignite.distributed",
)

COLLECTIVE_QUALNAMES = frozenset(
    {
        "torch.distributed.checkpoint.save", "torch.distributed.checkpoint.load",
        "torch.distributed.checkpoint.async_save",
        "torch.distributed.checkpoint.save_state_dict", "torch.distributed.checkpoint.load_state_dict",
        "torch.distributed.checkpoint.state_dict_saver.save",
        "torch.distributed.checkpoint.state_dict_loader.load",
        "torch.distributed.checkpoint.state_dict.get_model_state_dict",
        "torch.distributed.checkpoint.state_dict.get_state_dict",
        "torch.distributed.checkpoint.state_dict.get_optimizer_state_dict",
        "torch.distributed.checkpoint.state_dict.set_model_state_dict",
        "torch.distributed.checkpoint.state_dict.set_state_dict",
        "torch.distributed.fsdp.FullyShardedDataParallel.summon_full_params",
        "torch.distributed.fsdp.FullyShardedDataParallel.full_optim_state_dict",
        "torch.distributed.fsdp.FullyShardedDataParallel.optim_state_dict",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel.summon_full_params",
        "accelerate.utils.wait_for_everyone", "accelerate.utils.gather", "accelerate.utils.gather_object",
        "accelerate.utils.broadcast", "accelerate.utils.broadcast_object_list", "accelerate.utils.reduce",
        "accelerate.utils.pad_across_processes",
        "torch_xla.core.xla_model.rendezvous", "torch_xla.core.xla_model.all_reduce",
        "torch_xla.core.xla_model.mesh_reduce", "torch_xla.core.xla_model.all_gather",
        "torch_xla.core.xla_model.reduce_scatter",
    }
)  # fmt: skip

#: Methods that are collectives on any receiver.
UNAMBIGUOUS_METHODS = frozenset({"wait_for_everyone"})
ACCELERATOR_METHODS = frozenset(
    {"gather", "gather_for_metrics", "reduce", "pad_across_processes", "save_state", "load_state", "backward"}
)
ENGINE_METHODS = frozenset({"save_checkpoint", "load_checkpoint"})
STRATEGY_METHODS = frozenset({"barrier", "broadcast", "reduce", "all_gather"})

DDP_CLASSES = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
FSDP_CLASSES = frozenset(
    {
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    }
)
ACCELERATOR_CLASSES = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
#: FSDP2: shards the module in place and returns it.
FULLY_SHARD = frozenset(
    {"torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard",
     "torch.distributed.fsdp.fully_shard.fully_shard"}
)  # fmt: skip
#: mpi4py communicator methods that every process of the communicator must call.
MPI_COLLECTIVES = frozenset(
    {
        "bcast", "Bcast", "allreduce", "Allreduce", "reduce", "Reduce", "gather", "Gather", "allgather",
        "Allgather", "scatter", "Scatter", "alltoall", "Alltoall", "barrier", "Barrier", "Allgatherv", "Gatherv",
    }
)  # fmt: skip
#: Horovod's collectives (`import horovod.torch as hvd`).
HOROVOD_COLLECTIVES = frozenset(
    {
        "allreduce", "allreduce_", "allgather", "broadcast", "broadcast_", "broadcast_parameters",
        "broadcast_optimizer_state", "broadcast_object", "alltoall", "join", "barrier", "grouped_allreduce",
    }
)  # fmt: skip
_HOROVOD = ("horovod.torch", "horovod.tensorflow", "horovod")


def _last(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


_DCP = "torch.distributed.checkpoint."
_FSDP = "torch.distributed.fsdp."
_GENERIC = (_DCP, _FSDP)
_TORCH_LIBRARIES = ("torch.distributed", "import distributed", "deepspeed", "accelerat", "xla", "ignite", "lightning")

#: The families of collectives, as the text prefilter sees them: the names a
#: call or an import of one spells out (a function's own name always is),
#: then the texts without which those names are not collectives (one of each
#: group: the library, the receiver).
COLLECTIVE_FAMILIES: tuple[tuple[frozenset[str], tuple[tuple[str, ...], ...]], ...] = (
    (COLLECTIVE_FUNCTIONS | {_last(q) for q in COLLECTIVE_QUALNAMES if not q.startswith(_GENERIC)}, (_TORCH_LIBRARIES,)),
    # Generic method and function names, in a module that names their class or package.
    (frozenset(_last(q) for q in COLLECTIVE_QUALNAMES if q.startswith(_FSDP)), (("FullyShardedDataParallel", "FSDP"),)),
    (
        frozenset(_last(q) for q in COLLECTIVE_QUALNAMES if q.startswith(_DCP)),
        (("distributed.checkpoint", "distributed import checkpoint"),),
    ),
    # A receiver named `accelerator` or built from `Accelerator()`.
    (ACCELERATOR_METHODS | UNAMBIGUOUS_METHODS, (("accelerator", "Accelerator"),)),
    # `model_engine.save_checkpoint(...)`, `self.engine.load_checkpoint(...)`.
    (ENGINE_METHODS, (tuple(f"engine.{method}" for method in sorted(ENGINE_METHODS)),)),
    (STRATEGY_METHODS | {"sync_dist"}, (("strategy", "sync_dist"),)),
    (MPI_COLLECTIVES, (("MPI",),)),
    (HOROVOD_COLLECTIVES, (("horovod",),)),
)  # fmt: skip

NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})


#: Collectives that every rank of the job enters, whatever group they create.
_GLOBAL = frozenset({"new_group", "new_subgroups", "new_subgroups_by_enumeration"})
_GROUP_KEYWORDS = frozenset({"group", "process_group", "pg"})


def on_subgroup(call: cst.Call) -> bool:
    """Whether `call` names a process group other than the default one.

    Collectives on a sub-group are entered by that group's members only, and
    code selects the members with rank tests (``if rank in ranks:``); which
    ranks a group holds is not visible statically, so such calls are not
    judged.
    """
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _GROUP_KEYWORDS:
            value = arg.value
            if isinstance(value, cst.Name) and value.value == "None":
                return False
            return last_name(value) != "WORLD"
    return False


def in_lazy_initialization(stack: Sequence[cst.CSTNode]) -> bool:
    """Whether the node on top of `stack` runs once, to create a cached value:
    inside ``if _GROUP is None:`` (DeepSpeed's ``_clone_world_group()``), so a
    helper around it does not perform the collective on every call."""
    for node, child in zip(stack, stack[1:]):
        if isinstance(node, cst.If) and child is node.body:
            test = node.test
            if (
                isinstance(test, cst.Comparison)
                and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Is)
                and isinstance(test.comparisons[0].comparator, cst.Name)
                and test.comparisons[0].comparator.value == "None"
            ):
                return True
    return False


def performing_functions(
    direct: Iterable[cst.FunctionDef], calls: Iterable[tuple[cst.FunctionDef | None, Iterable[cst.FunctionDef]]]
) -> set[cst.FunctionDef]:
    """The module functions that perform a collective on every call: those in
    `direct` (a collective in their own body, under no rank guard) and, to a
    fixed point, the callers of those; `calls` are (caller, targets) of the
    calls that run whenever their caller runs (the call graph's references
    under no rank guard). detectron2's `comm.synchronize()` returns early in
    a one-process run and calls `dist.barrier()` otherwise: it performs one."""
    found = set(direct)
    pending = [(caller, tuple(targets)) for caller, targets in calls if caller is not None]
    changed = True
    while changed:
        changed = False
        for caller, targets in pending:
            if caller not in found and any(t in found for t in targets):
                found.add(caller)
                changed = True
    return found


def collective_name(call: cst.Call, ctx: ModelView) -> str | None:
    """How to show `call` if it is an explicit collective, else None."""
    func = call.func
    if on_subgroup(call) and last_name(func) not in _GLOBAL:
        return None
    names = ctx.qualified_names(func)
    for name in names:
        if name is None:
            continue
        module, _, function = name.rpartition(".")
        if (function in COLLECTIVE_FUNCTIONS and module in COLLECTIVE_MODULES) or name in COLLECTIVE_QUALNAMES:
            return _shown(call, ctx)
    for name in names:
        if name and name.startswith(_HOROVOD) and name.rsplit(".", 1)[-1] in HOROVOD_COLLECTIVES:
            return _shown(call, ctx)
    if not isinstance(func, cst.Attribute):
        return None
    method, receiver = func.attr.value, func.value
    if method in MPI_COLLECTIVES and _is_communicator(receiver, ctx):
        return _shown(call, ctx)
    if method in UNAMBIGUOUS_METHODS:
        return _shown(call, ctx)
    if method in ACCELERATOR_METHODS and _is_accelerator(receiver, ctx):
        return _shown(call, ctx)
    if method in ENGINE_METHODS and "engine" in (last_name(receiver) or ""):
        return _shown(call, ctx)
    if method in STRATEGY_METHODS and last_name(receiver) == "strategy":
        return _shown(call, ctx)
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        if method == "all_gather":
            return _shown(call, ctx)
        if method == "log" and any(
            a.keyword is not None and a.keyword.value == "sync_dist" and _is_true(a.value) for a in call.args
        ):
            return "self.log(..., sync_dist=True)"
    return None


def wrapped_model_collective(
    call: cst.Call, ctx: ModelView, wrapped: Callable[[str], str | None]
) -> str | None:
    """The implicit collective of calling or checkpointing a wrapped model.

    `wrapped` tells which wrapper ("DDP"/"FSDP"), if any, ``self.<attr>`` was
    assigned; plain names are looked up in their bindings.
    """
    func = call.func
    kind = _wrapper_kind(func, ctx, wrapped)
    if kind == "DDP" and not _under_no_grad(ctx.stack, ctx):
        return f"the forward of DDP-wrapped `{ctx.module.code_for_node(func)}` (buffer broadcast, gradient sync)"
    if kind == "FSDP":  # its forward all-gathers the parameters, under no_grad too
        return f"the forward of FSDP-sharded `{ctx.module.code_for_node(func)}` (all-gathers its parameters, even under no_grad)"
    if isinstance(func, cst.Attribute) and func.attr.value == "state_dict":
        if _wrapper_kind(func.value, ctx, wrapped) == "FSDP":
            return f"`{ctx.module.code_for_node(func)}()` of an FSDP-wrapped model (gathers the shards)"
    return None


def wrapper_of(value: cst.CSTNode, ctx: ModelView) -> str | None:
    """"DDP"/"FSDP" if `value` is a call constructing that wrapper (over the
    default process group: a sub-group's members are selected by rank), or
    sharding a model in place (`fully_shard(model)`, DeepSpeed's engine)."""
    if isinstance(value, cst.Call) and not on_subgroup(value):
        names = ctx.qualified_names(value.func)
        if names and names <= DDP_CLASSES:
            return "DDP"
        if names and names <= FSDP_CLASSES | FULLY_SHARD:
            return "FSDP"
    return None


def _wrapper_kind(node: cst.BaseExpression, ctx: ModelView, wrapped: Callable[[str], str | None]) -> str | None:
    if isinstance(node, cst.Name):
        values = ctx.values_of(node)
        if not values:
            return None
        kinds = {wrapper_of(v, ctx) for v in values}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return wrapped(node.attr.value)
    return None


def _under_no_grad(stack: Sequence[cst.CSTNode], ctx: ModelView) -> bool:
    for node in stack:
        if isinstance(node, cst.With):
            for item in node.items:
                call = item.item
                if isinstance(call, cst.Call) and ctx.qualified_names(call.func) & NO_GRAD_CONTEXTS:
                    return True
        elif isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                expr = decorator.decorator
                expr = expr.func if isinstance(expr, cst.Call) else expr
                if ctx.qualified_names(expr) & NO_GRAD_CONTEXTS:
                    return True
    return False


def _is_communicator(receiver: cst.BaseExpression, ctx: ModelView) -> bool:
    """`MPI.COMM_WORLD` (through any alias or a name bound to it)."""

    def names_world(node: cst.BaseExpression) -> bool:
        return any(n and n.startswith("mpi4py.MPI.COMM_WORLD") for n in ctx.qualified_names(node))

    if names_world(receiver):
        return True
    values = ctx.values_of(receiver) if isinstance(receiver, cst.Name) else ()
    return any(isinstance(v, cst.BaseExpression) and names_world(v) for v in values)


def _is_accelerator(receiver: cst.BaseExpression, ctx: ModelView) -> bool:
    if last_name(receiver) in ("accelerator", "accelerate"):
        return True
    if isinstance(receiver, cst.Name):
        return any(
            isinstance(v, cst.Call) and ctx.qualified_names(v.func) & ACCELERATOR_CLASSES
            for v in ctx.values_of(receiver)
        )
    return False


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _shown(call: cst.Call, ctx: ModelView) -> str:
    return f"`{ctx.module.code_for_node(call.func)}()`"


# ---------------------------------------------------------------- balance and chains


@dataclass(frozen=True)
class Balance:
    """Whether every rank enters a guard's collectives equally often.

    Built from (guards, collective) pairs: for each branch of each guard, the
    collectives written in it, in order (`collective` is the last link of a
    chain, so a helper and the collective it calls compare equal).
    """

    sequences: Mapping[tuple[int, int], list[str]]
    owners: Mapping[int, Guard]
    sets: RankSets

    @classmethod
    def of(cls, entries: Iterable[tuple[Iterable[Guard], str]], rank: RankAnalysis) -> Balance:
        sequences: dict[tuple[int, int], list[str]] = defaultdict(list)
        owners: dict[int, Guard] = {}
        for guards, collective in entries:
            for guard in guards:
                sequences[(id(guard.owner), guard.branch)].append(collective)
                owners.setdefault(id(guard.owner), guard)
        return cls(sequences, owners, RankSets(rank))

    def branches(self, guard: Guard) -> list[list[str]]:
        return [self.sequences.get((id(guard.owner), b), []) for b in range(guard.branches)]

    def even(self, guard: Guard) -> bool:
        """Every branch of the guard (the implicit ``else`` too) performs the
        same collectives in the same order: rank 0 broadcasts, the others receive."""
        if guard.kind is not GuardKind.BRANCH or guard.branches < 2:
            return False
        branches = self.branches(guard)
        return bool(branches[0]) and all(b == branches[0] for b in branches)

    def balanced(self, guard: Guard) -> bool:
        """`even`, or the zero-first idiom of complementary guards in one block."""
        if guard.kind is not GuardKind.BRANCH:
            return False
        branches = self.branches(guard)
        return all(b == branches[0] for b in branches) or self._has_complement(guard, branches)

    def _polarity(self, guard: Guard) -> tuple[str, bool] | None:
        """(subject, positive) of the guard's rank test, through an alias
        (`is_leader = rank == 0`) and past conjuncts the same on every rank."""
        if guard.shape is not None:
            leaf = self.sets.rank_leaf(guard.shape)
            if leaf is not None:
                inner = polarity(leaf[0])  # type: ignore[arg-type]
                if inner is not None:
                    return inner[0], inner[1] == leaf[1]
        return polarity(guard.test)

    def _has_complement(self, guard: Guard, branches: list[list[str]]) -> bool:
        """The zero-first idiom: `if rank != 0: barrier()` ... `if rank == 0: barrier()`."""
        mine = self._polarity(guard)
        if guard.branches != 2 or branches[1] or mine is None:
            return False
        for other in self.owners.values():
            if other.owner is guard.owner or other.scope is not guard.scope or other.branches != 2:
                continue
            theirs = self._polarity(other) if other.kind is GuardKind.BRANCH else None
            if theirs is not None and theirs[0] == mine[0] and theirs[1] != mine[1]:
                if self.branches(other) == [branches[0], []]:
                    return True
        return False


@dataclass(frozen=True, eq=False)
class Performer:
    """A call that is a collective (`direct`, its chain) or may run one: a
    call of module functions (`targets`), shown as `shown`."""

    node: cst.CSTNode
    function: cst.FunctionDef | None
    guards: tuple[Guard, ...]
    shown: str
    direct: tuple[str, ...] | None = None
    targets: tuple[cst.FunctionDef, ...] = ()
    #: Runs once, to create a cached value (`in_lazy_initialization`): not on every call.
    lazy: bool = False


#: (parameter, the truth of the argument that turns the helper's collectives off).
Switch = tuple[str, bool]
_ROUNDS = 4


class CollectiveChains:
    """The module functions that perform a collective on every call, with
    the chain of calls to it, and the switches that turn helpers off.

    A call counts for its function when every rank guard around it is
    *even*: each branch performs the same collectives (`Balance.even`), so
    a helper where rank 0 sends and the others receive is a collective on
    every call (`fetch_blob()` under ``if rank == 0:`` hangs). A helper whose
    every collective runs under ``if <parameter>:`` (directly, or by handing
    the parameter to such a helper: ``save(sync)`` -> ``if sync: barrier()``)
    has that parameter as its switch, and a call that passes a literal
    turning it off (``fetch("weights", False)``, a default left standing)
    performs nothing. Balance and switches depend on the chains and the
    chains on them: solved in a few rounds, to a fixed point.
    """

    def __init__(
        self,
        performers: Sequence[Performer],
        rank: RankAnalysis,
        bind: Callable[[cst.Call, cst.FunctionDef], Mapping[str, cst.BaseExpression]],
    ) -> None:
        self.performers = performers
        self.rank = rank
        self.bind = bind
        self.chains: dict[cst.FunctionDef, tuple[str, ...]] = {}
        self.switches: dict[cst.FunctionDef, Switch] = {}
        self._solve()

    def chain(self, performer: Performer) -> tuple[str, ...] | None:
        """What the call does collectively, as (call, ..., collective), or None."""
        return self._chain(performer, self.chains, self.switches)

    def every_call(self, guards: Iterable[Guard], balance: Balance) -> bool:
        """No rank guard among `guards` lets some ranks skip the collectives."""
        return all(
            balance.even(g) for g in guards if g.kind in SELECTING and self.rank.is_rank_dependent(g.deps)
        )  # fmt: skip

    def _chain(self, performer: Performer, chains: Mapping, switches: Mapping) -> tuple[str, ...] | None:
        if performer.direct is not None:
            return performer.direct
        for target in performer.targets:
            if target in chains and not self._switched_off(performer, target, switches):
                return (performer.shown, *chains[target])
        return None

    def _switched_off(self, performer: Performer, target: cst.FunctionDef, switches: Mapping) -> bool:
        switch = switches.get(target)
        if switch is None or not isinstance(performer.node, cst.Call):
            return False
        return truth(self.bind(performer.node, target).get(switch[0])) is switch[1]

    def _solve(self) -> None:
        for _ in range(_ROUNDS):
            balance = Balance.of(
                ((p.guards, chain[-1]) for p in self.performers if (chain := self.chain(p)) is not None), self.rank
            )
            counting = [
                p for p in self.performers
                if p.function is not None and not p.lazy and self.every_call(p.guards, balance)
            ]  # fmt: skip
            chains: dict[cst.FunctionDef, tuple[str, ...]] = {}
            for p in counting:
                if p.direct is not None:
                    chains.setdefault(p.function, p.direct)  # type: ignore[arg-type]
            changed = True
            while changed:
                changed = False
                for p in counting:
                    if p.function not in chains:
                        chain = self._chain(p, chains, self.switches)
                        if chain is not None:
                            chains[p.function] = chain  # type: ignore[index]
                            changed = True
            switches = self._switches(counting, chains)
            if chains == self.chains and switches == self.switches:
                return
            self.chains, self.switches = chains, switches

    def _switches(self, counting: Sequence[Performer], chains: Mapping) -> dict[cst.FunctionDef, Switch]:
        found: dict[cst.FunctionDef, Switch | None] = {}
        for p in counting:
            if p.function not in chains or self._chain(p, chains, self.switches) is None:
                continue
            switch = self._switch_of(p, chains)
            if found.get(p.function, switch) != switch:  # type: ignore[arg-type]
                switch = None  # collectives under different switches (or none): always on
            found[p.function] = switch  # type: ignore[index]
        return {f: s for f, s in found.items() if s is not None}

    def _switch_of(self, performer: Performer, chains: Mapping) -> Switch | None:
        """The parameter of the performer's function that decides whether it
        runs: tested by a guard around it (``if sync:``, ``if not sync: return``),
        or handed on as the switch of the helper it calls."""
        function = performer.function
        assert function is not None
        params = _parameters(function)
        for guard in performer.guards:
            if guard.kind is not GuardKind.BRANCH or self.rank.is_rank_dependent(guard.deps):
                continue
            if guard.branch == 0:
                value = True
            elif guard.branches == 2:
                value = False
            else:
                continue
            for name, required in _required(guard.test, value):
                if name in params:
                    return name, not required
        if isinstance(performer.node, cst.Call):
            for target in performer.targets:
                if target in chains and target in self.switches:
                    name, off = self.switches[target]
                    given = self.bind(performer.node, target).get(name)
                    negated = isinstance(given, cst.UnaryOperation) and isinstance(given.operator, cst.Not)
                    if negated:
                        given = given.expression  # type: ignore[union-attr]
                    if isinstance(given, cst.Name) and given.value in params:
                        return given.value, off != negated
        return None


def _parameters(function: cst.FunctionDef) -> frozenset[str]:
    params = function.params
    return frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))


def _required(test: cst.BaseExpression, value: bool) -> list[tuple[str, bool]]:
    """(name, truth) pairs that `test` having truth `value` implies:
    ``sync and ready`` true implies `sync` true; ``not sync or solo`` false
    implies `sync` true."""
    if isinstance(test, cst.Name):
        return [(test.value, value)]
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _required(test.expression, not value)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) and value:
            return _required(test.left, True) + _required(test.right, True)
        if isinstance(test.operator, cst.Or) and not value:
            return _required(test.left, False) + _required(test.right, False)
    return []
