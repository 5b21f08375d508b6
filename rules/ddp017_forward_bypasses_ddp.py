"""DDP017 forward-bypasses-ddp."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class _Bypass:
    node: cst.CSTNode
    statement: cst.CSTNode
    loops: tuple[cst.CSTNode, ...]
    shown: str
    rebinding: bool


class ForwardBypassesDdp(Rule):
    """
    ## What it does

    Flags a training forward that goes around a `DistributedDataParallel`
    (or FSDP) wrapper, in a loop that takes optimisation steps:

    - a call of the wrapped module itself, `model.module(x)` or
      `model.module.forward(x)`, outside `torch.no_grad()`;
    - rebinding the training model to its bare module inside the loop,
      `model = model.module` or `model = accelerator.unwrap_model(model)`,
      before later steps.

    Not flagged: `.module` for saving (`model.module.state_dict()`), for
    attributes (`model.module.config`), under `torch.no_grad()`/
    `inference_mode()`/`set_grad_enabled(False)` (evaluation), and outside
    training loops. The wrapper is known from `DDP(...)`,
    `DistributedDataParallel(...)`, FSDP, `accelerator.prepare(...)` and the
    conditional `DDP(model) if ddp else model`.

    ## Why is this bad?

    DDP synchronises gradients through hooks that its own `forward` arms.
    A forward through `model.module` runs the bare model: its backward
    computes local gradients and no all-reduce ever happens. Each rank then
    steps with its own gradients, and the replicas drift apart silently;
    no error, no hang, just N different models after training.

    ## Example

    ```python
    model = DDP(model, device_ids=[local_rank])
    for x, y in loader:
        loss = criterion(model.module(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead

    ```python
    model = DDP(model, device_ids=[local_rank])
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

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

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        target = None
        if isinstance(func, cst.Attribute) and func.attr.value == "module":
            target = func.value  # model.module(x)
        elif (
            isinstance(func, cst.Attribute) and func.attr.value == "forward"
            and isinstance(func.value, cst.Attribute) and func.value.attr.value == "module"
        ):  # fmt: skip
            target = func.value.value  # model.module.forward(x)
        if target is None or self._under_no_grad() or not self._wrapped(target):
            return
        loops = self.ctx.loops.enclosing_loops()
        if loops:
            shown = self.ctx.module.code_for_node(func)
            self.found.append(_Bypass(node, self.ctx.statement(), loops, shown, False))

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Name, cst.Attribute)):
            return
        target = node.targets[0].target
        if isinstance(target, cst.Attribute) and self._wrapper_call(node.value):
            self.wrapped_attributes.add(target.attr.value)
        written = self.ctx.module.code_for_node(target)
        value = node.value
        bare = None
        if isinstance(value, cst.Attribute) and value.attr.value == "module":
            bare = value.value
        elif isinstance(value, cst.Call) and value.args and (_last(value.func) in UNWRAP_CALLS):
            bare = value.args[0].value
        if bare is None or self.ctx.module.code_for_node(bare) != written:
            return
        loops = self.ctx.loops.enclosing_loops()
        if loops and self._wrapped(bare):
            self.found.append(_Bypass(node, self.ctx.statement(), loops, written, True))

    def _wrapped(self, target: cst.BaseExpression) -> bool:
        """Whether `target` may hold a DDP/FSDP wrapper (or an accelerate-prepared model)."""
        if isinstance(target, cst.Attribute):
            return target.attr.value in self.wrapped_attributes
        if not isinstance(target, cst.Name):
            return False
        return any(self._wrapper_call(v) for v in self.ctx.values_of(target))

    def _wrapper_call(self, value: cst.CSTNode) -> bool:
        """`DDP(model)`, `accelerator.prepare(model)`; also the conditional
        wrap `DDP(model) if ddp else model`."""
        if isinstance(value, cst.IfExp):
            return self._wrapper_call(value.body) or self._wrapper_call(value.orelse)
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

    def finish(self) -> None:
        loops = self.ctx.loops
        for bypass in self.found:
            if not any(loops.is_training_loop(loop) for loop in bypass.loops):
                continue
            if bypass.rebinding:
                message = (
                    f"`{bypass.shown}` is rebound to the bare module inside the training loop: every later "
                    "forward skips DDP, whose backward hooks then never all-reduce the gradients; unwrap a "
                    "copy for saving or evaluation and keep training the wrapper"
                )
            else:
                message = (
                    f"`{bypass.shown}(...)` runs the bare module in a training step: DDP's gradient all-reduce "
                    "never happens, so every rank steps with its own gradients and the replicas drift apart; "
                    "call the wrapper itself"
                )
            self.report(bypass.node, message, statement=bypass.statement)


def _last(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


