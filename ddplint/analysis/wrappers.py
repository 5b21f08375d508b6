"""Models and their wrappers: the model's "models" service.

Which expressions hold a wrapped model (`DistributedDataParallel(...)`, FSDP's
class or `fully_shard(...)`, `DataParallel(...)`, accelerate's
`prepare(...)`, the conditional ``DDP(m) if ddp else m``), through names,
``self.<attr>`` assignments anywhere in the module, and the values a save
reads; which hold the bare module (``model.module``, ``unwrap_model(model)``
and names bound to them); which calls run the bare module's forward around
its wrapper; in what order a function builds an optimizer, shards, wraps and
converts each model (wrap order); and whether the module handles the
``module.`` prefix a wrapper gives its state dict's keys.

A walker analysis for rules that ``require`` ``"models"``: what depends on
the names bound at a point (a parameter, a name bound to ``model.module``)
is noted during the walk. Ask after it (deferred checks restore the names of
the node they check): attributes assigned further down are known then.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.knowledge import (
    BARE_MODULE,
    DATA_PARALLEL,
    DDP_CLASSES,
    KEEPS_PARAMETERS,
    LOADED_INTO_KEYWORDS,
    MODEL_COPY_WORDS,
    MOVING_METHODS,
    NOT_FORWARD_PREFIXES,
    NOT_FORWARD_SUFFIXES,
    NOT_FORWARDS,
    OPTIMIZER_NAMES,
    PARAMETER_METHODS,
    SHARDING_WRAPPERS,
    STATE_DICT_SAVES,
    SYNC_BATCHNORM_CONVERSION,
    UNWRAP_CALLS,
    WRAPPED_KEY_PREFIX,
    WRAPPER_CALL_NAMES,
)
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: What a wrapper call constructs (`wrapper_kind`).
DDP, FSDP, DP = "DDP", "FSDP", "DataParallel"
#: The steps of a wrap order (`Models.step`): an optimizer built from the
#: model's parameters, sharding (FSDP), wrapping in DDP, SyncBatchNorm conversion.
OPTIMIZER, SHARD, WRAP, CONVERT = "optimizer", "shard", "ddp", "convert"


@dataclass(frozen=True)
class Bypass:
    """A forward of the bare module around its wrapper."""

    #: The called expression, as written (`model.module`, `raw_model.forward`).
    shown: str
    #: The wrapper, as written (`model`, `self.model`); "" for a name bound to the bare module.
    receiver: str
    #: Whether the receiver is known to hold a wrapper (not only a parameter
    #: or an attribute never assigned one, which a caller may set to one).
    known: bool


@dataclass(frozen=True)
class WrapStep:
    """One step of a function's wrap order on one model."""

    kind: str
    #: The model, as written (`model`, `self.model`; `model.cuda()` is `model`).
    model: str
    call: cst.Call
    function: cst.FunctionDef | None


def wrapper_kind(value: cst.CSTNode, ctx: ModelView) -> str | None:
    """DDP, FSDP (FSDP1's class or `fully_shard`) or DP (`DataParallel`)
    when `value` is a call constructing that wrapper: every qualified name
    of what it calls is that wrapper's; else None."""
    if not isinstance(value, cst.Call):
        return None
    names = ctx.qualified_names(value.func)
    return next((kind for kind, known in _KINDS if names and names <= known), None)


_KINDS = ((DDP, DDP_CLASSES), (FSDP, SHARDING_WRAPPERS), (DP, DATA_PARALLEL))


def conditional_arms(value: cst.CSTNode) -> tuple[cst.BaseExpression, ...]:
    """The values a conditional may give: both arms of ``a if c else b`` and of ``a or b``."""
    if isinstance(value, cst.IfExp):
        return (value.body, value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return (value.left, value.right)
    return ()


def bare_of(value: cst.CSTNode) -> cst.BaseExpression | None:
    """The wrapper whose bare module `value` is: `w` of ``w.module`` and of ``unwrap_model(w)``."""
    if isinstance(value, cst.Attribute) and value.attr.value == BARE_MODULE:
        return value.value
    if isinstance(value, cst.Call) and value.args and last_name(value.func) in UNWRAP_CALLS:
        return value.args[0].value
    return None


def unwraps(value: cst.CSTNode) -> bool:
    """``model.module`` or any call named for unwrapping (``accelerator.unwrap_model(model)``, ``unwrap(m)``)."""
    if isinstance(value, cst.Attribute) and value.attr.value == BARE_MODULE:
        return True
    return isinstance(value, cst.Call) and any(word in (last_name(value.func) or "") for word in UNWRAP_CALLS)


def module_forward(func: cst.BaseExpression) -> tuple[cst.BaseExpression | None, bool]:
    """The wrapper of a call of its bare module: `w` of ``w.module(...)``,
    ``w.module.forward(...)`` (child False) and ``w.module.<method or
    child>(...)`` (child True) unless the method builds no graph (catalogue's
    NOT_FORWARDS: ``state_dict``, ``generate``, ``set_*``, ...)."""
    if not isinstance(func, cst.Attribute):
        return None, False
    if func.attr.value == BARE_MODULE:
        return func.value, False
    inner = func.value
    if not (isinstance(inner, cst.Attribute) and inner.attr.value == BARE_MODULE):
        return None, False
    name = func.attr.value
    if name == "forward":
        return inner.value, False
    if name in NOT_FORWARDS or name.startswith(NOT_FORWARD_PREFIXES) or name.endswith(NOT_FORWARD_SUFFIXES):
        return None, False
    return inner.value, True


def is_model_copy(node: cst.BaseExpression | str) -> bool:
    """A name (or the last name of `node`) that says an averaged or frozen
    copy (`model_ema`, `self.teacher`), not the trained model."""
    name = (node if isinstance(node, str) else last_name(node)) or ""
    return any(word in name.lower() for word in MODEL_COPY_WORDS)


def state_dict_calls(node: cst.BaseExpression, ctx: ModelView, follow: bool = True) -> list[cst.Call]:
    """The ``<model>.state_dict()`` calls a saved object holds: itself, in a
    dict, list or tuple, or (`follow`) through the values of one name."""
    if isinstance(node, cst.Call):
        func = node.func
        return [node] if isinstance(func, cst.Attribute) and func.attr.value == "state_dict" else []
    if isinstance(node, cst.Dict):
        return [c for e in node.elements if isinstance(e, cst.DictElement) for c in state_dict_calls(e.value, ctx, follow)]
    if isinstance(node, (cst.List, cst.Tuple)):
        return [c for e in node.elements for c in state_dict_calls(e.value, ctx, follow)]
    if isinstance(node, cst.Name) and follow:
        return [c for v in ctx.values_of(node) if isinstance(v, cst.BaseExpression) for c in state_dict_calls(v, ctx, False)]
    return []


def _forwarded(func: cst.BaseExpression) -> cst.BaseExpression:
    """`m` of `m.forward` (called), else `func`."""
    return func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func


def _self_attribute(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


class Models:
    """Walker analysis: the module's wrapped models, asked by expression."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        #: Attribute names (any receiver) assigned a wrapper, and those assigned anything else but a parameter.
        self._wrapped_attributes: set[str] = set()
        self._other_attributes: set[str] = set()
        #: ids of values that are a known wrapper's bare module (`raw = model.module`).
        self._bare: set[int] = set()
        #: (class, attribute) -> the values `self.<attribute>` is assigned in the class's methods.
        self._self_values: dict[tuple[int, str], list[cst.BaseExpression]] = defaultdict(list)
        self._steps: dict[int, WrapStep] = {}
        self._order: dict[tuple[int, str], list[WrapStep]] = defaultdict(list)
        self._keys: tuple[bool, frozenset[str]] | None = None
        #: id(save call) -> the `<model>.state_dict()` calls it is the first to write; ids of all those written.
        self._saves: dict[int, list[cst.Call]] = {}
        self._saved: set[int] = set()

    # ------------------------------------------------------------ walk

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        for target in node.targets:
            if _self_attribute(target.target):
                self._self_values[(id(self._enclosing_class()), target.target.attr.value)].append(value)  # type: ignore[attr-defined]
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Attribute):
            if self.wrapper_call(value):
                self._wrapped_attributes.add(target.attr.value)
            elif not self.parameter(value):
                self._other_attributes.add(target.attr.value)
        elif isinstance(target, cst.Name):
            bare = bare_of(value)
            if bare is None and any(self._known_bare(arm) for arm in conditional_arms(value)):
                self._bare.add(id(value))  # `raw_model = model.module if ddp else model`
            elif bare is not None and not (isinstance(bare, cst.Name) and bare.value == target.value):
                if self._known_bare(value):
                    self._bare.add(id(value))  # `raw_model = model.module` (not `model = model.module`)

    def visit_Call(self, node: cst.Call) -> None:
        if node.args and self.ctx.qualified_names(node.func) & STATE_DICT_SAVES:
            written = [c for c in state_dict_calls(node.args[0].value, self.ctx) if id(c) not in self._saved]
            self._saves[id(node)] = written
            self._saved.update(id(c) for c in written)
        step = self._step(node)
        if step is not None:
            self._steps[id(node)] = step
            self._order[(id(step.function), step.model)].append(step)

    def _enclosing_class(self) -> cst.ClassDef | None:
        return next((n for n in reversed(self.ctx.stack) if isinstance(n, cst.ClassDef)), None)

    def _known_bare(self, value: cst.BaseExpression) -> bool:
        bare = bare_of(value)
        return bare is not None and self.holds_wrapper(bare)

    # ------------------------------------------------------------ wrappers

    def wrapper_call(self, value: cst.CSTNode) -> bool:
        """A DDP or FSDP wrapper's construction (`DDP(model)`, also by the
        names `DDP`/`FSDP` unresolved) or accelerate's `prepare(model)`;
        also the conditional wraps ``DDP(model) if ddp else model`` and ``ddp_model or model``."""
        if isinstance(value, (cst.IfExp, cst.BooleanOperation)):
            return any(self.wrapper_call(arm) for arm in conditional_arms(value))
        if not isinstance(value, cst.Call):
            return False
        return wrapper_kind(value, self.ctx) in (DDP, FSDP) or last_name(value.func) in WRAPPER_CALL_NAMES

    def holds_wrapper(self, node: cst.BaseExpression) -> bool:
        """Whether `node` may hold a DDP/FSDP wrapper (or an accelerate-prepared
        model): a name some value of which is one, an attribute (any receiver)
        some assignment in the module gives one."""
        if isinstance(node, cst.Attribute):
            return node.attr.value in self._wrapped_attributes
        return isinstance(node, cst.Name) and any(self.wrapper_call(v) for v in self.ctx.values_of(node))

    def attribute(self, name: str) -> bool | None:
        """Whether attribute `name` holds a wrapper: True when some assignment
        gives it one, False when it is assigned something else (not a
        parameter) or names a model copy, None when unknown (only parameters, or never assigned)."""
        if name in self._wrapped_attributes:
            return True
        if name in self._other_attributes or is_model_copy(name):
            return False
        return None

    def parameter(self, value: cst.BaseExpression) -> bool:
        """A name whose only value is a parameter of its function (a caller may pass a wrapper)."""
        if not isinstance(value, cst.Name):
            return False
        values = self.ctx.values_of(value)
        return bool(values) and all(isinstance(v, cst.Param) for v in values)

    def wrapped(self, receiver: cst.BaseExpression, kinds: frozenset[str] = frozenset({DDP, DP})) -> bool | None:
        """Whether `receiver` (a name, or ``self.<attr>`` as the enclosing
        class assigns it) holds a wrapper of `kinds`: True when every value
        does, False when some do and the rest are models that may be wrapped
        on distributed runs, None when none does or some value is unwrapped (``model.module``)."""
        if isinstance(receiver, cst.Name):
            values = self.ctx.values_of(receiver)
        elif _self_attribute(receiver):
            values = tuple(self._self_values.get((id(self._enclosing_class()), receiver.attr.value), ()))  # type: ignore[attr-defined]
        else:
            return None
        wrappers = [v for v in values if wrapper_kind(v, self.ctx) in kinds]
        if not wrappers:
            return None
        if len(wrappers) == len(values):
            return True
        return None if any(unwraps(v) for v in values) else False

    # ------------------------------------------------------------ bare module

    def holds_bare_module(self, node: cst.BaseExpression) -> bool:
        """A name bound to a known wrapper's bare module (``raw_model = model.module``)."""
        return isinstance(node, cst.Name) and bool(self._bare) and any(id(v) in self._bare for v in self.ctx.values_of(node))

    def may_bypass(self, call: cst.Call) -> bool:
        """Whether `call` may run a bare module (``w.module(...)``, a name bound
        to one): cheap, for a deferred check's trigger; `bypass` answers."""
        return module_forward(call.func)[0] is not None or self.holds_bare_module(_forwarded(call.func))

    def bypass(self, call: cst.Call) -> Bypass | None:
        """The call (the node being checked) as a forward of a bare module
        around its wrapper: ``w.module(x)``, ``w.module.forward(x)``,
        ``w.module.encode(x)`` whose result is used, ``raw(x)`` or
        ``raw.forward(x)`` with ``raw = w.module``. None for model copies
        (`model_ema.module(x)`) and receivers that hold no wrapper."""
        code = self.ctx.module.code_for_node
        target, child = module_forward(call.func)
        if target is None:
            return Bypass(code(call.func), "", False) if self.holds_bare_module(_forwarded(call.func)) else None
        stack = self.ctx.stack
        if child and (not call.args or (len(stack) >= 2 and isinstance(stack[-2], cst.Expr))):
            return None  # `model.module.reset_memory()`: no forward whose output is used
        if is_model_copy(target):
            return None
        shown, receiver = code(call.func), code(target)
        if _self_attribute(target):
            known = self.attribute(target.attr.value)  # type: ignore[attr-defined]
            return None if known is False else Bypass(shown, receiver, bool(known))
        if self.holds_wrapper(target):
            return Bypass(shown, receiver, True)
        if isinstance(target, cst.Name) and target.value not in ("self", "cls") and self.parameter(target):
            return Bypass(shown, receiver, False)
        return None

    def calls_wrapper(self, loop: cst.CSTNode, receiver: str) -> bool:
        """Whether `loop` (in its own function) calls the wrapper `receiver`
        (``model(x)`` for a name holding one, ``self.model(x)``) itself."""
        code = self.ctx.module.code_for_node
        return any(
            isinstance(n, cst.Call) and (_self_attribute(n.func) or (isinstance(n.func, cst.Name) and self.holds_wrapper(n.func)))
            and code(n.func) == receiver
            for n in descendants(loop, into_functions=False)
        )  # fmt: skip

    def rebound_to_bare(self, node: cst.Assign) -> str | None:
        """The wrapper, as written, that `node` rebinds to its own bare module
        (``model = model.module``, ``self.model = unwrap_model(self.model)``)."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Name, cst.Attribute)):
            return None
        written = self.ctx.module.code_for_node(node.targets[0].target)
        bare = bare_of(node.value)
        if bare is None or self.ctx.module.code_for_node(bare) != written or not self.holds_wrapper(bare):
            return None
        return written

    def saved_state_dicts(self, save: cst.Call) -> list[cst.Call]:
        """The ``<model>.state_dict()`` calls whose result `save` (`torch.save`,
        safetensors' `save_file`) writes, as itself, in a dict, list or tuple or
        through one name, and no save before it did (once the walk is past it)."""
        return self._saves.get(id(save), [])

    @staticmethod
    def bare_module(wrapper: cst.BaseExpression) -> cst.Attribute:
        """The expression of `wrapper`'s bare module: ``<wrapper>.module``."""
        return cst.Attribute(value=wrapper, attr=cst.Name(BARE_MODULE))

    def handles_key_prefix(self, receiver: cst.BaseExpression) -> bool:
        """Whether the module handles the ``module.`` prefix of a wrapper's
        state dict keys: it strips it (a short string that is the prefix:
        ``k.replace("module.", "")``), or it loads checkpoints back into
        `receiver` (``model.load_state_dict(...)``, ``load(path, state_dict=model)``)."""
        if self._keys is None:
            strips, loaded = False, set()
            code = self.ctx.module.code_for_node
            for node in descendants(self.ctx.module):
                if isinstance(node, cst.SimpleString) and len(node.value) < 24:
                    strips = strips or node.value.strip("rbuRBU").strip("\"'").startswith(WRAPPED_KEY_PREFIX)
                elif isinstance(node, cst.Call):
                    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "load_state_dict":
                        loaded.add(code(node.func.value))
                    loaded.update(code(a.value) for a in node.args if a.keyword is not None and a.keyword.value in LOADED_INTO_KEYWORDS)
            self._keys = (strips, frozenset(loaded))
        return self._keys[0] or self.ctx.module.code_for_node(receiver) in self._keys[1]

    # ------------------------------------------------------------ wrap order

    def step(self, call: cst.Call) -> WrapStep | None:
        """The wrap-order step `call` takes (after the walk, or once the walk is past it)."""
        return self._steps.get(id(call))

    def steps_around(self, step: WrapStep) -> tuple[list[WrapStep], list[WrapStep]]:
        """The steps on the same model in the same function before and after `step`, in source order."""
        steps = self._order[(id(step.function), step.model)]
        index = steps.index(step)
        return steps[:index], steps[index + 1 :]

    def _step(self, node: cst.Call) -> WrapStep | None:
        ctx = self.ctx
        first = node.args[0].value if node.args and node.args[0].keyword is None else None
        wrapper = wrapper_kind(node, ctx) if first is not None else None
        if wrapper == FSDP and not _keeps_parameters(node):
            kind = SHARD
        elif wrapper == DDP:
            kind = WRAP
        elif first is not None and last_name(node.func) == SYNC_BATCHNORM_CONVERSION:
            kind = CONVERT
        else:
            model = _parameters_of(node)
            if model is None or not _is_optimizer(node, ctx.qualified_names(node.func)):
                return None
            return WrapStep(OPTIMIZER, ctx.module.code_for_node(model), node, ctx.enclosing_function())
        while isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) and first.func.attr.value in MOVING_METHODS:
            first = first.func.value  # `model.cuda()` is `model`
        return WrapStep(kind, ctx.module.code_for_node(first), node, ctx.enclosing_function())


def _keeps_parameters(call: cst.Call) -> bool:
    """FSDP1 with `use_orig_params=True` keeps the original parameter
    objects as views: an optimizer built before still steps them."""
    return any(
        a.keyword is not None and a.keyword.value == KEEPS_PARAMETERS
        and isinstance(a.value, cst.Name) and a.value.value == "True"
        for a in call.args
    )  # fmt: skip


def _parameters_of(call: cst.Call) -> cst.BaseExpression | None:
    """`model` of `model.parameters()` passed as the first argument or `params=`."""
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "params":
            value = arg.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in PARAMETER_METHODS:
                return value.func.value
            return None
    return None


def _is_optimizer(call: cst.Call, names: frozenset) -> bool:
    if any(n and n.startswith("torch.optim.") for n in names):
        return True
    name = last_name(call.func) or ""
    return "optim" in name.lower() or name in OPTIMIZER_NAMES
