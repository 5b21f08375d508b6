"""DDP017 forward-bypasses-ddp."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddplint.analysis.blocks import ends_loops
from ddplint.analysis.collectives import NO_GRAD_CONTEXTS
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    }
)  # fmt: skip
#: Calls that return the bare module of a wrapper.
UNWRAP_CALLS = frozenset({"unwrap_model", "unwrap"})
#: Methods of the bare module that build no training graph: state, devices,
#: modes, generation and saving (`model.module.state_dict()`).
NOT_FORWARDS = frozenset(
    {
        "state_dict", "load_state_dict", "parameters", "named_parameters", "buffers", "named_buffers", "modules",
        "named_modules", "children", "named_children", "save_pretrained", "push_to_hub", "generate", "sample",
        "train", "eval", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "zero_grad", "apply",
        "requires_grad_", "register_buffer", "register_parameter", "register_module", "num_parameters",
        "tie_weights", "resize_token_embeddings", "print_trainable_parameters", "extra_repr", "no_sync",
    }
)  # fmt: skip
#: Name prefixes and suffixes of non-forward methods (setters, switches, hooks, schedules).
NOT_FORWARD_PREFIXES = (
    "set_", "update_", "get_", "reset_", "init_", "load_", "save_", "register_", "log_", "print_", "freeze",
    "unfreeze", "enable_", "disable_", "clip_", "_",
)  # fmt: skip
NOT_FORWARD_SUFFIXES = ("_enable", "_disable", "_")
#: Receivers whose `.module` is a model copy, not a wrapper's module (timm's
#: `ModelEma`, a mean teacher): their forwards are targets, not training.
COPY_WORDS = ("ema", "teacher", "target", "momentum", "average", "swa")

#: `model` of `model.module`: the names whose own calls may be the wrapper's forward.
_RECEIVER = re.compile(r"(\w+)\.module\b")

# What the receiver of a `.module` call is.
_KNOWN, _UNKNOWN = "known", "unknown"


@dataclass(frozen=True)
class _Bypass:
    node: cst.CSTNode
    statement: cst.CSTNode
    loops: tuple[cst.CSTNode, ...]
    shown: str
    rebinding: bool
    #: The wrapper's text (`model`, `self.model`), to find its own forwards in the step.
    receiver: str = ""
    #: `self.<attr>` receivers are resolved in `finish()` (the wrap may come later in the file).
    attribute: str | None = None
    #: A receiver of unknown value (a parameter): reported in a training step only.
    unknown: bool = False


@dataclass(frozen=True)
class _WrapperCall:
    receiver: str
    loops: tuple[cst.CSTNode, ...]


class ForwardBypassesDdp(Rule):
    """
    ## What it does

    Flags a training forward that goes around a `DistributedDataParallel`
    (or FSDP) wrapper, in a loop that takes optimisation steps:

    - a call of the wrapped module itself, `model.module(x)` or
      `model.module.forward(x)`, outside `torch.no_grad()`;
    - a call of a method or child of the wrapped module whose result is
      used, `model.module.encode_image(images)` (CLIP),
      `model.module.backbone(x)`, `model.module.forward_features(x)`;
    - a call of a name bound to the bare module, `raw_model(x)` after
      `raw_model = model.module` (nanoGPT) or
      `unwrapped = accelerator.unwrap_model(model)`;
    - rebinding the training model to its bare module inside the loop,
      `model = model.module` or `model = accelerator.unwrap_model(model)`,
      before later steps.

    The wrapper is known from `DDP(...)`, `DistributedDataParallel(...)`,
    FSDP, `accelerator.prepare(...)`, the conditional `DDP(model) if ddp
    else model` (or `... or model`), and `self.model = DDP(...)` in any
    method of the class, before or after the training loop. A `.module`
    call on a parameter (`def train_one_epoch(model, ...)`, whose caller
    passes the wrapper) in a training step of a module that wraps models is
    reported too.

    Not flagged: `.module` for saving (`model.module.state_dict()`), for
    attributes (`model.module.config`), non-forward methods (`state_dict`,
    `generate`, `train`/`eval`, `set_*`/`update_*`/`get_*`, ...), forwards
    under `torch.no_grad()`/`inference_mode()`/`set_grad_enabled(False)`
    (evaluation) or detached at once, EMA/teacher copies
    (`model_ema.module(x)`), the bare module bound to another name for
    saving or evaluation (DeiT's `model_without_ddp`), and code outside
    training loops. When the same step also calls the wrapper itself
    (`model(a) + model.module(b)`), DDP's reducer is armed and does reduce
    the summed gradients with the default settings; that shape is reported
    as a warning, since with `find_unused_parameters=True` a parameter
    that only the bare call reaches fails the backward ("Expected to mark
    a variable ready only once").

    ## Why is this bad?

    DDP synchronises gradients through hooks that its own `forward` arms.
    A forward through `model.module` runs the bare model: its backward
    computes local gradients and no all-reduce ever happens. Each rank then
    steps with its own gradients, and the replicas drift apart silently;
    no error, no hang, just N different models after training. (FSDP's
    inner module holds only views of its shards: there it usually fails.)

    ## Example

    ```python
    model = DDP(model, device_ids=[local_rank])
    raw_model = model.module
    for x, y in loader:
        loss = criterion(model.module(x), y)  # or raw_model(x)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead

    ```python
    model = DDP(model, device_ids=[local_rank])
    raw_model = model.module  # for saving and evaluation only
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    To call a method other than `forward` through DDP, have `forward`
    dispatch to it (`model(images, mode="image")`).

    ## References

    - [DistributedDataParallel: forward and backward](https://pytorch.org/docs/stable/notes/ddp.html)
    """

    code = "DDP017"
    name = "forward-bypasses-ddp"
    severity = Severity.ERROR
    summary = "A training forward through `.module` of a DDP model: its gradients are never synchronised."
    requires = frozenset({"loops"})
    distributed_only = True
    tokens = ("module", "unwrap_model")
    context_tokens = ("DistributedDataParallel", "DDP(", "FullyShardedDataParallel", "FSDP(", ".prepare(")
    tags = ("correctness",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.found: list[_Bypass] = []
        #: `self.<name>` attributes assigned a wrapper.
        self.wrapped_attributes: set[str] = set()
        #: `self.<name>` attributes assigned anything else (a built model, an EMA copy).
        self.other_attributes: set[str] = set()
        #: ids of values that are a wrapper's bare module (`model.module`, `unwrap_model(model)`).
        self.bare_values: set[int] = set()
        #: Forwards through a wrapper itself, to tell a step that also arms DDP's reducer.
        self.wrapper_calls: list[_WrapperCall] = []
        #: Names written before `.module` in the file.
        self.receivers: frozenset[str] = frozenset()

    # ------------------------------------------------------------ walk

    def visit_Module(self, node: cst.Module) -> None:
        self.receivers = frozenset(_RECEIVER.findall(self.ctx.source))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        target, child = _module_call(func)
        if target is None:
            if self.bare_values or _last(func) in self.receivers:
                loops = self.ctx.loops.enclosing_loops()
                if loops:
                    self._bare_name_call(node, loops)
                    self._note_wrapper_call(func, loops)
            return
        loops = self.ctx.loops.enclosing_loops()
        if not loops:
            return
        if child and (not node.args or self._result_unused()):
            return  # `model.module.reset_memory()`: no forward whose output is used
        if self._under_no_grad() or self._detached() or _is_copy(target):
            return
        shown = self.ctx.module.code_for_node(func)
        receiver = self.ctx.module.code_for_node(target)
        if _self_attribute(target):
            self.found.append(
                _Bypass(node, self.ctx.statement(), loops, shown, False, receiver, attribute=target.attr.value)
            )
            return
        known = self._receiver(target)
        if known is not None:
            self.found.append(_Bypass(node, self.ctx.statement(), loops, shown, False, receiver, unknown=known == _UNKNOWN))

    def _bare_name_call(self, node: cst.Call, loops: tuple[cst.CSTNode, ...]) -> None:
        """`raw_model(x)` or `raw_model.forward(x)` with `raw_model = model.module`."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if not isinstance(func, cst.Name) or not self.bare_values:
            return
        if not any(id(v) in self.bare_values for v in self.ctx.values_of(func)):
            return
        if self._under_no_grad() or self._detached():
            return
        shown = self.ctx.module.code_for_node(node.func)
        self.found.append(_Bypass(node, self.ctx.statement(), loops, shown, False, unknown=True))

    def _note_wrapper_call(self, func: cst.BaseExpression, loops: tuple[cst.CSTNode, ...]) -> None:
        if isinstance(func, cst.Name) and self._wrapped(func):
            self.wrapper_calls.append(_WrapperCall(func.value, loops))
        elif _self_attribute(func):
            self.wrapper_calls.append(_WrapperCall(self.ctx.module.code_for_node(func), loops))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Name, cst.Attribute)):
            return
        target = node.targets[0].target
        value = node.value
        if isinstance(target, cst.Attribute):
            if self._wrapper_call(value):
                self.wrapped_attributes.add(target.attr.value)
            elif not self._parameter(value):
                self.other_attributes.add(target.attr.value)
        written = self.ctx.module.code_for_node(target)
        bare = _bare_of(value)
        if bare is None:
            if isinstance(target, cst.Name) and any(self._known_bare(b) for b in _arms(value)):
                self.bare_values.add(id(value))  # `raw_model = model.module if ddp else model`
            return
        if self.ctx.module.code_for_node(bare) != written:
            if isinstance(target, cst.Name) and self._known_bare(value):
                self.bare_values.add(id(value))  # `raw_model = model.module`: a bypass when called
            return
        loops = self.ctx.loops.enclosing_loops()
        if loops and self._wrapped(bare) and not ends_loops(self.ctx.stack, loops):
            self.found.append(_Bypass(node, self.ctx.statement(), loops, written, True))

    # ------------------------------------------------------------ questions

    def _known_bare(self, value: cst.BaseExpression) -> bool:
        bare = _bare_of(value)
        return bare is not None and self._wrapped(bare)

    def _wrapped(self, target: cst.BaseExpression) -> bool:
        """Whether `target` may hold a DDP/FSDP wrapper (or an accelerate-prepared model)."""
        if isinstance(target, cst.Attribute):
            return target.attr.value in self.wrapped_attributes
        if not isinstance(target, cst.Name):
            return False
        return any(self._wrapper_call(v) for v in self.ctx.values_of(target))

    def _receiver(self, target: cst.BaseExpression) -> str | None:
        """`_KNOWN` for a wrapper, `_UNKNOWN` for a parameter (the caller may
        pass one), None otherwise."""
        if self._wrapped(target):
            return _KNOWN
        if isinstance(target, cst.Name) and target.value not in ("self", "cls") and self._parameter(target):
            return _UNKNOWN
        return None

    def _parameter(self, value: cst.BaseExpression) -> bool:
        """A name whose only value is a parameter of its function."""
        if not isinstance(value, cst.Name):
            return False
        values = self.ctx.values_of(value)
        return bool(values) and all(isinstance(v, cst.Param) for v in values)

    def _wrapper_call(self, value: cst.CSTNode) -> bool:
        """`DDP(model)`, `accelerator.prepare(model)`; also the conditional
        wraps `DDP(model) if ddp else model` and `ddp_model or model`."""
        if isinstance(value, (cst.IfExp, cst.BooleanOperation)):
            return any(self._wrapper_call(arm) for arm in _arms(value))
        return isinstance(value, cst.Call) and bool(
            self.ctx.qualified_names(value.func) & WRAPPERS or _last(value.func) in ("DDP", "FSDP", "prepare")
        )

    def _under_no_grad(self) -> bool:
        """`torch.no_grad()`, `inference_mode()`, `set_grad_enabled(False)`."""
        for node in self.ctx.stack:
            if isinstance(node, cst.With):
                for item in node.items:
                    call = item.item
                    if not isinstance(call, cst.Call):
                        continue
                    names = self.ctx.qualified_names(call.func)
                    if names & NO_GRAD_CONTEXTS:
                        return True
                    if names & {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"} and call.args:
                        value = call.args[0].value
                        if isinstance(value, cst.Name) and value.value == "False":
                            return True
        return False

    def _detached(self) -> bool:
        """`model.module(x).detach()`: no graph leaves the call."""
        stack = self.ctx.stack
        return (
            len(stack) >= 3 and isinstance(stack[-2], cst.Attribute) and stack[-2].attr.value == "detach"
            and isinstance(stack[-3], cst.Call) and stack[-3].func is stack[-2]
        )  # fmt: skip

    def _result_unused(self) -> bool:
        """The call is a statement of its own (`model.module.clamp_weights(x)`)."""
        stack = self.ctx.stack
        return len(stack) >= 2 and isinstance(stack[-2], cst.Expr)

    # ------------------------------------------------------------ report

    def finish(self) -> None:
        loops = self.ctx.loops
        for bypass in self.found:
            if bypass.attribute is not None:
                if bypass.attribute in self.wrapped_attributes:
                    pass
                elif bypass.attribute in self.other_attributes or _is_copy_name(bypass.attribute):
                    continue
                else:
                    bypass = _Bypass(
                        bypass.node, bypass.statement, bypass.loops, bypass.shown, False, bypass.receiver, unknown=True
                    )
            if bypass.unknown:
                if not loops.is_training_loop(bypass.loops[0]):
                    continue  # an evaluation loop nested in the epoch loop
            elif not any(loops.is_training_loop(loop) for loop in bypass.loops):
                continue
            if bypass.rebinding:
                message = (
                    f"`{bypass.shown}` is rebound to the bare module inside the training loop: every later "
                    "forward skips DDP, whose backward hooks then never all-reduce the gradients; unwrap a "
                    "copy for saving or evaluation and keep training the wrapper"
                )
                self.report(bypass.node, message, statement=bypass.statement)
            elif self._mixed(bypass):
                message = (
                    f"`{bypass.shown}(...)` runs the bare module in a step that also calls `{bypass.receiver}`: "
                    "its gradients are all-reduced only because the wrapper's forward armed DDP's reducer, and "
                    "with `find_unused_parameters=True` a parameter that only this call reaches fails the "
                    "backward; route this forward through the wrapper too"
                )
                self.report(bypass.node, message, statement=bypass.statement, severity=Severity.WARNING)
            else:
                message = (
                    f"`{bypass.shown}(...)` runs the bare module in a training step: DDP's gradient all-reduce "
                    "never happens, so every rank steps with its own gradients and the replicas drift apart; "
                    "call the wrapper itself"
                )
                self.report(bypass.node, message, statement=bypass.statement)

    def _mixed(self, bypass: _Bypass) -> bool:
        """The bypass's training loop also runs the wrapper's own forward."""
        if not bypass.receiver:
            return False
        training = [loop for loop in bypass.loops if self.ctx.loops.is_training_loop(loop)]
        return any(
            call.receiver == bypass.receiver and any(loop in call.loops for loop in training[:1])
            for call in self.wrapper_calls
        )


def _module_call(func: cst.BaseExpression) -> tuple[cst.BaseExpression | None, bool]:
    """The wrapper of `w.module(...)`, `w.module.forward(...)` (child False)
    and `w.module.<method or child>(...)` (child True)."""
    if not isinstance(func, cst.Attribute):
        return None, False
    if func.attr.value == "module":
        return func.value, False
    inner = func.value
    if not (isinstance(inner, cst.Attribute) and inner.attr.value == "module"):
        return None, False
    name = func.attr.value
    if name == "forward":
        return inner.value, False
    if name in NOT_FORWARDS or name.startswith(NOT_FORWARD_PREFIXES) or name.endswith(NOT_FORWARD_SUFFIXES):
        return None, False
    return inner.value, True


def _bare_of(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """`w` of `w.module` and of `unwrap_model(w)`."""
    if isinstance(value, cst.Attribute) and value.attr.value == "module":
        return value.value
    if isinstance(value, cst.Call) and value.args and _last(value.func) in UNWRAP_CALLS:
        return value.args[0].value
    return None


def _arms(value: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
    if isinstance(value, cst.IfExp):
        return (value.body, value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return (value.left, value.right)
    return ()


def _self_attribute(node: cst.BaseExpression) -> bool:
    """`self.model`."""
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _is_copy_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in COPY_WORDS)


def _is_copy(target: cst.BaseExpression) -> bool:
    """`model_ema.module`, `self.teacher.module`: an averaged or frozen copy."""
    name = _last(target)
    return name is not None and _is_copy_name(name)


def _last(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None
