"""DDP017 forward-bypasses-ddp."""

from __future__ import annotations

from ddplint.analysis.blocks import ends_loops
from ddplint.knowledge import BARE_MODULE, DDP_CLASSES, FSDP_CLASSES, UNWRAP_CALLS, WRAPPER_CALL_NAMES, covering_needles
from ddplint.analysis.autograd import detached, under_no_grad
from ddplint.analysis.guards import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


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
    requires = frozenset({"loops", "models"})
    distributed_only = True
    tokens = covering_needles((BARE_MODULE, *UNWRAP_CALLS))
    context_tokens = (*sorted({n.rsplit(".", 1)[1] for n in DDP_CLASSES | FSDP_CLASSES}), *(f"{n}(" for n in sorted(WRAPPER_CALL_NAMES)))
    tags = ("correctness",)

    def trigger_Call(self, node: cst.Call) -> bool:
        return self.ctx.models.may_bypass(node) and bool(self.ctx.loops.enclosing_loops())

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx = self.ctx
        bypass = ctx.models.bypass(node)
        if bypass is None or under_no_grad(ctx.stack, ctx) or detached(ctx.stack):
            return
        loops = ctx.loops.enclosing_loops()
        training = [loop for loop in loops if ctx.loops.is_training_loop(loop)]
        if not training or (not bypass.known and training[0] is not loops[0]):
            return  # (a receiver of unknown value: in a training step only, not an evaluation loop inside the epoch)
        if bypass.receiver and ctx.models.calls_wrapper(training[0], bypass.receiver):
            message = (
                f"`{bypass.shown}(...)` runs the bare module in a step that also calls `{bypass.receiver}`: "
                "its gradients are all-reduced only because the wrapper's forward armed DDP's reducer, and "
                "with `find_unused_parameters=True` a parameter that only this call reaches fails the "
                "backward; route this forward through the wrapper too"
            )
            self.report(node, message, severity=Severity.WARNING)
        else:
            message = (
                f"`{bypass.shown}(...)` runs the bare module in a training step: DDP's gradient all-reduce "
                "never happens, so every rank steps with its own gradients and the replicas drift apart; "
                "call the wrapper itself"
            )
            self.report(node, message)

    def trigger_Assign(self, node: cst.Assign) -> bool:
        return bool(self.ctx.loops.enclosing_loops())

    def check_Assign(self, node: cst.Assign, site: Site) -> None:
        shown = self.ctx.models.rebound_to_bare(node)
        loops = self.ctx.loops.enclosing_loops()
        if shown and not ends_loops(self.ctx.stack, loops) and any(self.ctx.loops.is_training_loop(l) for l in loops):
            message = (
                f"`{shown}` is rebound to the bare module inside the training loop: every later "
                "forward skips DDP, whose backward hooks then never all-reduce the gradients; unwrap a "
                "copy for saving or evaluation and keep training the wrapper"
            )
            self.report(node, message)
