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


from ddplint.knowledge import (
    BACKEND_DEPENDENT,
    FULL_STATE_DICT,
    FULL_STATE_DICT_CONFIG,
    FULL_STATE_DICT_SAFE,
    STATE_DICT_OPTIONS,
    STATE_DICT_TYPE_SETTERS,
    BUFFERED_LAYERS,
    BUFFERLESS_LAYERS,
    FSDP_CLASSES,
    FABRIC,
    FABRIC_STRATEGY_WORDS,
    FABRIC_WRAPPERS,
    FRAMEWORK_COLLECTIVES,
    FRAMEWORK_TYPES,
    MODULE_CONTAINERS,
)
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.tree import descendants
from ddplint.analysis.receivers import class_types, framework_types
from ddplint.analysis.values import truthiness
from ddplint.analysis.calls import truth
from ddplint.analysis.conditions import polarity
from ddplint.analysis.autograd import under_no_grad
from ddplint.analysis.guards import SELECTING, Guard, GuardKind, RankView
from ddplint.analysis.rank_sets import RankSets
from ddplint.analysis.rewrite import ProposedFix, keywords_fix
from ddplint.analysis.wrappers import DDP, FSDP, wrapper_kind
from ddplint.lazy import cst
from ddplint.model import Applicability
from ddplint.solver import closure, solve

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

ACCELERATOR_CLASSES = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
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
    # `trainer.save_checkpoint(...)` (Lightning), `trainer.save_model()` (Hugging Face), `fabric.save(...)`:
    # in a module that imports the framework and names the receiver or its class.
    *(
        (
            frozenset(m for key, m in FRAMEWORK_COLLECTIVES if key == framework.key),
            (framework.packages, tuple(sorted(framework.names | {c.rsplit(".", 1)[-1] for c in framework.classes}))),
        )
        for framework in FRAMEWORK_TYPES
    ),
    (HOROVOD_COLLECTIVES, (("horovod",),)),
)  # fmt: skip



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
    return closure(direct, ((caller, tuple(targets)) for caller, targets in calls if caller is not None))


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
    if method in _FRAMEWORK_METHODS:
        key = _framework_method(call, ctx)
        if key is not None:
            why = FRAMEWORK_COLLECTIVES[key, method]
            return f"{_shown(call, ctx)} ({why})" if why else _shown(call, ctx)
    if isinstance(receiver, cst.Name) and receiver.value == "self":
        if method == "all_gather":
            return _shown(call, ctx)
        if method == "log" and any(
            a.keyword is not None and a.keyword.value == "sync_dist" and _is_true(a.value) for a in call.args
        ):
            return "self.log(..., sync_dist=True)"
    return None


_FRAMEWORK_METHODS = frozenset(method for _, method in FRAMEWORK_COLLECTIVES)


def _framework_method(call: cst.Call, ctx: ModelView) -> str | None:
    """The framework type whose collective method `call` calls, if its
    receiver holds one (`receivers.framework_types`)."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    for key in sorted(framework_types(func.value, ctx)):
        if (key, method) in FRAMEWORK_COLLECTIVES:
            return key
    return None


def backend_dependence(call: cst.Call, ctx: ModelView) -> tuple[str, str, str] | None:
    """For a collective that is one under DeepSpeed, FSDP or Megatron-LM only
    (accelerate's `save_state`, the Hugging Face Trainer's `save_model`):
    (the backends, what gathers there, the remedy), as a message says them."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    if ("accelerate", method) in BACKEND_DEPENDENT and _is_accelerator(func.value, ctx):
        return BACKEND_DEPENDENT["accelerate", method]
    if method in _FRAMEWORK_METHODS:
        key = _framework_method(call, ctx)
        return BACKEND_DEPENDENT.get((key, method)) if key is not None else None
    return None


@dataclass(frozen=True)
class WrappedModel:
    """A model wrapped for data parallelism, as a call of it synchronises.

    `kind` is "DDP" (its forward broadcasts the buffers and arms the
    gradient all-reduce) or "FSDP" (its forward all-gathers the parameters,
    under ``no_grad`` too); `syncs_buffers` whether a DDP forward broadcasts
    buffers under ``no_grad``: unless `broadcast_buffers=False` or a module
    visibly without buffers is seen (measured: rank 0's ``no_grad`` forward of
    a DDP(Linear + BatchNorm1d) waits for the other ranks)."""

    kind: str
    syncs_buffers: bool = True

    def forward(self, shown: str, no_grad: bool) -> str | None:
        """How a forward of it is shown as a collective, or None if it is none."""
        if self.kind == "FSDP":
            return f"the forward of FSDP-sharded `{shown}` (all-gathers its parameters, even under no_grad)"
        if not no_grad:
            return f"the forward of DDP-wrapped `{shown}` (buffer broadcast, gradient sync)"
        if self.syncs_buffers:
            return (
                f"the forward of DDP-wrapped `{shown}` (under no_grad too, DDP broadcasts the module's "
                "buffers from rank 0 first; `broadcast_buffers=False` turns that off)"
            )
        return None


def wrapped_model_collective(
    call: cst.Call, ctx: ModelView, wrapped: Callable[[str], tuple[cst.CSTNode, ...]]
) -> str | None:
    """The implicit collective of calling or checkpointing a wrapped model.

    `wrapped` gives the values ``self.<attr>`` is assigned in the module;
    plain names are looked up in their bindings.
    """
    func = call.func
    model = wrapped_model(func, ctx, wrapped, called=True)
    if model is not None:
        return model.forward(ctx.module.code_for_node(func), under_no_grad(ctx.stack, ctx))
    if isinstance(func, cst.Attribute) and func.attr.value == "state_dict":
        model = wrapped_model(func.value, ctx, wrapped)
        if model is not None and model.kind == "FSDP":
            return f"`{ctx.module.code_for_node(func)}()` of an FSDP-wrapped model (gathers the shards)"
    return None


def wrapper_of(value: cst.CSTNode, ctx: ModelView) -> str | None:
    """"DDP"/"FSDP" if `value` is a call constructing that wrapper (over the
    default process group: a sub-group's members are selected by rank), or
    sharding a model in place (`fully_shard(model)`, DeepSpeed's engine), or
    Fabric's `setup_module(model)` (the strategy's wrapper)."""
    model = _wrapping(value, ctx, called=False)
    return model.kind if model is not None else None


def wrapped_model(
    node: cst.BaseExpression,
    ctx: ModelView,
    wrapped: Callable[[str], tuple[cst.CSTNode, ...]] | None = None,
    called: bool = False,
) -> WrappedModel | None:
    """The wrapped model `node` holds here, when all its values agree: a
    name bound to ``DDP(...)``, ``fabric.setup_module(...)``; ``self.<attr>``
    through `wrapped`. `called`: the expression is called, so a value of
    ``fabric.setup(model, optimizer)`` unpacked into it is the model."""
    if isinstance(node, cst.Name):
        values = ctx.values_of(node)
    elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        values = wrapped(node.attr.value) if wrapped is not None else ()
    else:
        return None
    if not values:
        return None
    models = {_wrapping(v, ctx, called) for v in values}
    if len(models) != 1:
        kinds = {m.kind if m is not None else None for m in models}
        if len(kinds) == 1 and None not in kinds:  # two DDP wraps, one with buffers
            return WrappedModel(kinds.pop(), any(m.syncs_buffers for m in models if m is not None))
        return None
    return models.pop()


def _wrapping(value: cst.CSTNode, ctx: ModelView, called: bool) -> WrappedModel | None:
    if not isinstance(value, cst.Call) or on_subgroup(value):
        return None
    kind = wrapper_kind(value, ctx)
    if kind == DDP:
        return WrappedModel(DDP, _syncs_buffers(value, ctx))
    if kind == FSDP:
        return WrappedModel(FSDP)
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in FABRIC_WRAPPERS:
        one = func.attr.value == "setup_module" or called or len([a for a in value.args if a.keyword is None]) == 1
        if one and FABRIC in framework_types(func.value, ctx):
            kind = _fabric_kind(func.value, ctx)
            module = value.args[0].value if value.args else None
            if kind == "DDP":
                return WrappedModel("DDP", module is None or module_has_buffers(module, ctx) is not False)
            if kind == "FSDP":
                return WrappedModel("FSDP")
    return None


def _fabric_kind(receiver: cst.BaseExpression, ctx: ModelView) -> str | None:
    """How a Fabric's strategy wraps: "FSDP", "DDP" (also the default of a
    multi-process run), None for DeepSpeed and XLA."""
    values = ctx.values_of(receiver) if isinstance(receiver, cst.Name) else ()
    kinds = set()
    for value in values:
        strategy = None
        if isinstance(value, cst.Call):
            strategy = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "strategy"), None)
        text = ctx.module.code_for_node(strategy).lower() if strategy is not None else "ddp"
        kinds.add(next((kind for word, kind in FABRIC_STRATEGY_WORDS if word in text), "DDP"))
    if not values:
        kinds.add("DDP")
    return kinds.pop() if len(kinds) == 1 else None


def _syncs_buffers(wrap: cst.Call, ctx: ModelView) -> bool:
    """Whether a DDP wrap broadcasts buffers before a forward: not with
    ``broadcast_buffers=False``, nor over a module visibly without buffers."""
    for arg in wrap.args:
        if arg.keyword is not None and arg.keyword.value == "broadcast_buffers":
            if truthiness(arg.value, ctx) is False:
                return False
    module = next((a.value for a in wrap.args if a.keyword is None or a.keyword.value == "module"), None)
    return module is None or module_has_buffers(module, ctx) is not False


def module_has_buffers(node: cst.BaseExpression, ctx: ModelView, depth: int = 0) -> bool | None:
    """True if the module `node` builds certainly has buffers (a BatchNorm),
    False if it is visibly built from layers without any, None if unknown.

    Followed: names' values, ``torch.nn`` layers and containers, ``.to()`` /
    ``.cuda()``, classes of the module (their ``register_buffer`` calls and
    the layers their methods assign)."""
    if depth > 6:
        return None
    if isinstance(node, cst.Name):
        values = ctx.values_of(node)
        if not values:
            return None
        answers = {module_has_buffers(v, ctx, depth + 1) if isinstance(v, cst.BaseExpression) else None for v in values}
        return True if True in answers else (False if answers == {False} else None)
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda", "cpu", "float", "half", "bfloat16"):
        return module_has_buffers(func.value, ctx, depth + 1)
    if last_name(func) == "convert_sync_batchnorm":
        inner = node.args[0].value if node.args else None
        return None if inner is None else (True if module_has_buffers(inner, ctx, depth + 1) else None)
    torch_layer = {q.rsplit(".", 1)[-1] for q in ctx.qualified_names(func) if q and q.startswith("torch.nn.")}
    if torch_layer & BUFFERED_LAYERS:
        return True
    if torch_layer & BUFFERLESS_LAYERS:
        return False
    if torch_layer & MODULE_CONTAINERS:
        answers = {module_has_buffers(a.value, ctx, depth + 1) for a in node.args if not a.star}
        answers |= {None} if any(a.star for a in node.args) else set()
        return True if True in answers else (False if answers <= {False} else None)
    classes = [v for v in ctx.values_of(func) if isinstance(v, cst.ClassDef)] if isinstance(func, cst.Name) else []
    if len(classes) == 1 and not class_types(func, ctx):
        return _class_has_buffers(classes[0], ctx, depth)
    return None


def _class_has_buffers(cls: cst.ClassDef, ctx: ModelView, depth: int) -> bool | None:
    """A module class of this file: True if it registers a buffer or assigns
    a layer with buffers; False if it derives from ``nn.Module`` only and
    every layer its methods assign is visibly without buffers."""
    bases = [ctx.qualified_names(b.value) for b in cls.bases]
    plain = bool(bases) and all(b and b <= {"torch.nn.Module", "torch.nn.modules.module.Module"} for b in bases)
    answers: set[bool | None] = set()
    for node in _walk(cls.body):
        if isinstance(node, cst.Call) and last_name(node.func) == "register_buffer":
            return True
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            if any(isinstance(t.target, cst.Attribute) for t in node.targets):
                answers.add(_layer_buffers(node.value, ctx, depth))
    if True in answers:
        return True
    return False if plain and answers <= {False} else None


def _layer_buffers(call: cst.Call, ctx: ModelView, depth: int) -> bool | None:
    """Buffers of a layer assigned inside a class body (names there are not in scope)."""
    torch_layer = {q.rsplit(".", 1)[-1] for q in ctx.qualified_names(call.func) if q and q.startswith("torch.nn.")}
    if not torch_layer:
        name = last_name(call.func) or ""
        if name in BUFFERED_LAYERS:
            return True
        return None
    if torch_layer & BUFFERED_LAYERS:
        return True
    if torch_layer & BUFFERLESS_LAYERS:
        return False
    if torch_layer & MODULE_CONTAINERS:
        answers = {_layer_buffers(a.value, ctx, depth + 1) if isinstance(a.value, cst.Call) else None for a in call.args}
        return True if True in answers else (False if answers <= {False} else None)
    return None


def _walk(node: cst.CSTNode):
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        todo.extend(current.children)


def parameter_forward(call: cst.Call, ctx: ModelView) -> tuple[cst.FunctionDef, str] | None:
    """(function, parameter) when `call` calls a parameter of its enclosing
    function (``def score(net, xs): ... net(x)``): what it does depends on
    what each call site passes (a DDP-wrapped model makes it a forward)."""
    func = call.func
    if not isinstance(func, cst.Name):
        return None
    values = ctx.values_of(func)
    function = ctx.enclosing_function()
    if function is None or not values or not all(isinstance(v, cst.Param) for v in values):
        return None
    params = function.params
    own = (*params.posonly_params, *params.params, *params.kwonly_params)
    if not all(any(v is p for p in own) for v in values):
        return None
    return function, func.value


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
    def of(cls, entries: Iterable[tuple[Iterable[Guard], str]], rank: RankView) -> Balance:
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
        rank: RankView,
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
            chains = self._chains(counting)
            switches = self._switches(counting, chains)
            if chains == self.chains and switches == self.switches:
                return
            self.chains, self.switches = chains, switches

    def _chains(self, counting: Sequence[Performer]) -> dict[cst.FunctionDef, tuple[str, ...]]:
        """Each function of `counting` -> the chain of its performer (in walk
        order, round after round) first found to reach a collective."""
        chains: dict[cst.FunctionDef, tuple[str, ...]] = {}
        for p in counting:
            if p.direct is not None:
                chains.setdefault(p.function, p.direct)  # type: ignore[arg-type]

        def chain(p: Performer, known: Mapping) -> tuple[str, ...] | None:
            if p.function in chains:
                return None  # its function's chain is known (`chains` is `known` by function)
            found = self._chain(p, chains, self.switches)
            if found is not None:
                chains[p.function] = found  # type: ignore[index]
            return found

        solve(counting, chain)
        return chains

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


# ---------------------------------------------------------------- full state dicts


@dataclass(frozen=True)
class FullGather:
    """A full state dict requested so that every rank gathers the whole model
    on its GPU: the request, the config call (`FullStateDictConfig(...)`,
    `StateDictOptions(...)`, None when no config is passed) and the keywords
    it lacks (`offload_to_cpu`, `rank0_only`; `cpu_offload`)."""

    request: cst.Call
    config: cst.Call | None
    missing: tuple[str, ...]

    @property
    def shown(self) -> str:
        return ", ".join(f"{k}=True" for k in self.missing)

    @property
    def changes_other_ranks(self) -> bool:
        """Adding what is missing leaves the other ranks an empty dict (`rank0_only`)."""
        return "rank0_only" in self.missing

    @property
    def fix(self) -> ProposedFix | None:
        """The fix that adds the missing keywords to the config call (unsafe
        when it changes what the other ranks get); None with no config call."""
        unsafe = Applicability.UNSAFE if self.changes_other_ranks else Applicability.SAFE
        return keywords_fix(self.config, self.missing, unsafe) if self.config else None


def full_state_dict_gather(call: cst.Call, ctx: ModelView) -> FullGather | None:
    """`FSDP.state_dict_type(m, StateDictType.FULL_STATE_DICT[, cfg])` (and
    `set_state_dict_type`) without `FullStateDictConfig(offload_to_cpu=True,
    rank0_only=True)`, or `StateDictOptions(full_state_dict=True)` without
    `cpu_offload=True`. None when it loads (`broadcast_from_rank0=True`, a
    `with FSDP.state_dict_type(...):` block that gathers no state dict), and
    when the config cannot be read (a name bound elsewhere). Asked where the
    walk is at `call`."""
    names = ctx.qualified_names(call.func)
    if names & STATE_DICT_TYPE_SETTERS and _loads_only(ctx.stack):
        return None
    if names & STATE_DICT_OPTIONS:
        if _literal_keyword(call, "full_state_dict") is not True or _literal_keyword(call, "broadcast_from_rank0") is True:
            return None
        return _full_gather(call, call)
    if not names & STATE_DICT_TYPE_SETTERS:
        return None
    bound = {a.keyword.value if a.keyword else i: a.value for i, a in enumerate(call.args) if not a.star}
    kind = bound.get("state_dict_type", bound.get(1))
    if kind is None or not ctx.qualified_names(kind) & FULL_STATE_DICT:
        return None
    config = bound.get("state_dict_config", bound.get(2))
    if config is None:
        return FullGather(call, None, FULL_STATE_DICT_SAFE["FullStateDictConfig"])
    if isinstance(config, cst.Name):
        values = ctx.values_of(config)
        config = values[0] if len(values) == 1 else None
    if not isinstance(config, cst.Call) or not ctx.qualified_names(config.func) & FULL_STATE_DICT_CONFIG:
        return None
    return _full_gather(call, config)


def _full_gather(request: cst.Call, config: cst.Call) -> FullGather | None:
    needed = FULL_STATE_DICT_SAFE[last_name(config.func) or ""] if last_name(config.func) in FULL_STATE_DICT_SAFE else ()
    missing = tuple(k for k in needed if _literal_keyword(config, k) is False)  # (not `rank0_only=args.flag`)
    return FullGather(request, config, missing) if missing else None


def _literal_keyword(call: cst.Call, keyword: str) -> bool | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            value = arg.value
            return value.value == "True" if isinstance(value, cst.Name) and value.value in ("True", "False") else None
    return False


def fsdp1_model(node: cst.BaseExpression, ctx: ModelView) -> bool:
    """A name bound only to `FullyShardedDataParallel(...)` (FSDP1, whose
    `state_dict()` gathers the full model by default; FSDP2's gives DTensor shards)."""
    values = ctx.values_of(node) if isinstance(node, cst.Name) else ()
    return bool(values) and all(
        isinstance(v, cst.Call) and bool(ctx.qualified_names(v.func) & FSDP_CLASSES) for v in values
    )  # fmt: skip


#: Calls that gather a state dict under a `state_dict_type` setting.
_GATHERING = frozenset({"state_dict", "optim_state_dict", "full_optim_state_dict"})


def _loads_only(stack: Sequence[cst.CSTNode]) -> bool:
    """Inside the items of a `with` whose body gathers no state dict (`model.load_state_dict(...)`)."""
    with_ = next((n for n in reversed(stack) if isinstance(n, cst.With)), None)
    if with_ is None or not any(isinstance(n, cst.WithItem) for n in stack):
        return False
    return not any(isinstance(n, cst.Call) and last_name(n.func) in _GATHERING for n in descendants(with_.body))


def default_full_state_dict(call: cst.Call, ctx: ModelView) -> bool:
    """`model.state_dict()` of an FSDP1 model (`fsdp1_model`) saved with
    `torch.save` (`saved_by_torch_save`) under no `state_dict_type` setting:
    FSDP1's default is a full state dict gathered on every GPU. Asked where
    the walk is at `call`."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "state_dict" and not call.args):
        return False
    if "set_state_dict_type" in ctx.source or not fsdp1_model(func.value, ctx):
        return False
    if any(isinstance(n, cst.With) and any(last_name(getattr(i.item, "func", i.item)) == "state_dict_type" for i in n.items) for n in ctx.stack):
        return False  # inside `with FSDP.state_dict_type(...)`: the request is judged there
    return saved_by_torch_save(ctx.stack)


def saved_by_torch_save(stack: Sequence[cst.CSTNode]) -> bool:
    """Whether the value at the top of `stack` reaches `torch.save`: as (part
    of) its argument, or through a name assigned from it and saved later in
    the function."""
    names: set[str] = set()
    for parent in reversed(stack[:-1]):
        if isinstance(parent, cst.Call) and dotted_name(parent.func) in _TORCH_SAVES:
            return True
        if isinstance(parent, cst.Assign):
            names |= {t.target.value for t in parent.targets if isinstance(t.target, cst.Name)}
        if isinstance(parent, cst.FunctionDef):
            saves = [n for n in descendants(parent.body) if isinstance(n, cst.Call) and dotted_name(n.func) in _TORCH_SAVES]
            return any(isinstance(n, cst.Name) and n.value in names for save in saves for n in descendants(save))
    return False


_TORCH_SAVES = frozenset({"torch.save"})
