"""DDP026 gradient-accumulation-sync."""

from __future__ import annotations

from ddplint.analysis.accumulation import (
    forwards_of,
    gated,
    is_backward,
    is_optimizer_step,
    iteration_calls,
    micro_batches,
    no_sync_of,
    unconditional_no_sync,
    wrapper_kind,
)
from ddplint.analysis.catalogue import MANUAL_REDUCE, SYNC_CONTROLS
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class GradientAccumulationSync(Rule):
    """
    ## What it does

    Checks how DDP's gradient all-reduce meets gradient accumulation:

    - a loop that back-propagates every micro-batch through a model wrapped
      in `DistributedDataParallel` (or Fabric's DDP `setup_module`) but steps
      the optimizer only every k-th iteration (`if (i + 1) % k == 0:`, or
      after an inner `for micro in range(k):` loop), with no `no_sync`,
      `require_backward_grad_sync`, `accelerator.accumulate` or
      `fabric.no_backward_sync` anywhere in the module (a warning);
    - `with model.no_sync():` around the backward only, when the forward of
      `model` ran before it, outside the context (a warning: it has no effect);
    - the micro-batch that steps the optimizer running inside `no_sync`:
      every backward of the loop inside an unconditional
      `with model.no_sync():`, or `optimizer.step()` inside it, with no
      gradients reduced by hand in the function (an error).

    The wrapped model is followed through assignments, `self.model`
    attributes, helper returns and parameters. Not flagged: `no_sync` around
    forward and backward of the non-stepping micro-batches, nanoGPT's
    `model.require_backward_grad_sync = (micro_step == n - 1)` before the
    forward, accelerate and Lightning accumulation, DeepSpeed engines, loops
    that step on every iteration, models not visibly wrapped in DDP.

    ## Why is this bad?

    DDP all-reduces the gradients during every backward whose forward ran
    with sync enabled (the forward arms the reducer). Accumulating k
    micro-batches without `no_sync` all-reduces k times for one step: k-1
    wasted all-reduces, up to twice as slow. `no_sync` entered after the
    forward changes nothing, the forward already armed the reducer. And a
    step whose micro-batches all ran inside `no_sync` uses gradients that
    were never reduced: each rank steps with its own, and the replicas
    drift apart without an error.

    ## Example

    ```python
    model = DDP(model, device_ids=[local_rank])
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## Use instead

    ```python
    model = DDP(model, device_ids=[local_rank])
    for i, (x, y) in enumerate(loader):
        stepping = (i + 1) % accum == 0
        with model.no_sync() if not stepping else contextlib.nullcontext():
            loss = criterion(model(x), y) / accum
            loss.backward()
        if stepping:
            optimizer.step()
            optimizer.zero_grad()
    ```

    ## References

    - [DistributedDataParallel.no_sync](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync)
    """

    code = "DDP026"
    name = "gradient-accumulation-sync"
    severity = Severity.WARNING
    summary = "DDP gradient accumulation without `no_sync`, or `no_sync` that has no effect or skips the stepping micro-batch."
    preview = True
    requires = frozenset({"loops"})
    distributed_only = True
    tokens = ("backward",)
    context_tokens = ("DistributedDataParallel", "DDP", "no_sync", "setup_module")
    tags = ("performance", "correctness")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.controlled = False
        #: Findings a loop decided, reported when the walk reaches their node (id -> message, severity).
        self.pending: dict[int, tuple[str, Severity]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        self.controlled = any(word in self.ctx.source for word in SYNC_CONTROLS)

    def visit_For(self, node: cst.For | cst.While) -> None:
        shape = micro_batches(node, self.ctx.loops.enclosing_loops())
        if shape is None:
            return
        syncing = [r for r in shape.backwards if unconditional_no_sync(r) is None]
        if not syncing:
            self._unreduced(unconditional_no_sync(shape.backwards[0]))  # type: ignore[arg-type]
        elif shape.accumulates and not self.controlled:
            every = [r for r in iteration_calls(node) if gated(r) is None]
            forward = next(forwards_of(every, self.ctx), None)
            if forward is not None:
                shown = self.ctx.module.code_for_node(forward[1])
                self.pending[id(syncing[0].call)] = (
                    f"DDP all-reduces the gradients of `{shown}` in every backward, but the optimizer steps only "
                    "every k-th micro-batch: k-1 of k all-reduces are wasted; run the non-stepping micro-batches' "
                    f"forward and backward inside `{shown}.no_sync()`",
                    Severity.WARNING,
                )

    visit_While = visit_For

    def visit_Call(self, node: cst.Call) -> None:
        self._emit(node)

    def visit_With(self, node: cst.With) -> None:
        model = no_sync_of(node)
        if model is None:
            return
        inside = iteration_calls(node)
        if any(is_optimizer_step(r.call) for r in inside):
            self._unreduced(node)
        if self._emit(node):
            return
        shown = self.ctx.module.code_for_node(model)
        if not any(is_backward(r.call) for r in inside) or shown in self.ctx.module.code_for_node(node.body):
            return
        loops = self.ctx.loops.enclosing_loops()
        scope = loops[0] if loops else self.ctx.enclosing_function()
        if scope is None or wrapper_kind(model, self.ctx) != "DDP":
            return
        outside = [r for r in iteration_calls(scope) if node not in r.path]
        if any(self.ctx.module.code_for_node(m) == shown for _, m in forwards_of(outside, self.ctx)):
            self.report(
                node,
                f"`{shown}.no_sync()` wraps only the backward: the forward of `{shown}` ran outside it and "
                "already armed DDP's all-reduce, so this backward still reduces the gradients; put the forward "
                "inside the `no_sync` block too",
            )

    def _emit(self, node: cst.CSTNode) -> bool:
        found = self.pending.pop(id(node), None)
        if found is not None:
            self.report(node, found[0], severity=found[1] if found[1] is not self.severity else None)
        return found is not None

    def _unreduced(self, node: cst.With) -> None:
        function = self.ctx.enclosing_function()
        text = self.ctx.module.code_for_node(function or self.ctx.module)
        if any(word in text for word in MANUAL_REDUCE):
            return
        shown = self.ctx.module.code_for_node(no_sync_of(node))  # type: ignore[arg-type]
        self.pending[id(node)] = (
            f"the micro-batch before `optimizer.step()` runs inside `{shown}.no_sync()` too: its gradients are "
            "never all-reduced, each rank steps with its own and the replicas drift apart; leave the stepping "
            "micro-batch outside `no_sync`",
            Severity.ERROR,
        )
