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

from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from ddplint.analysis.catalogue import covering_needles
from ddplint.analysis.names import last_name
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
