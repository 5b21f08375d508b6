"""DDP026 gradient-accumulation-sync."""

from __future__ import annotations

from ddplint.analysis.accumulation import NO_EFFECT, UNREDUCED, WASTED, sync_findings
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
    - `with model.no_sync():` around the backward only (`loss.backward()`,
      `scaler.scale(loss).backward()`), when the forward of `model` ran
      before it, outside the context (a warning: it has no effect);
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
        #: Findings decided at a loop, reported when the walk reaches their node: id -> (kind, model shown).
        self.pending: dict[int, tuple[str, str]] = {}

    def visit_For(self, node: cst.For | cst.While | cst.With) -> None:
        for where, kind, model in sync_findings(node, self.ctx):
            self.pending.setdefault(id(where), (kind, self.ctx.module.code_for_node(model)))
        if (found := self.pending.pop(id(node), None)) is not None:
            kind, shown = found
            self.report(node, MESSAGES[kind].format(shown), severity=Severity.ERROR if kind == UNREDUCED else None)

    visit_While = visit_With = visit_Call = visit_For


MESSAGES = {
    WASTED: "DDP all-reduces the gradients of `{0}` in every backward, but the optimizer steps only every k-th "
    "micro-batch: k-1 of k all-reduces are wasted; run the other micro-batches' forward and backward in "
    "`{0}.no_sync()` (Fabric: `fabric.no_backward_sync({0})`)",
    NO_EFFECT: "`{0}.no_sync()` wraps only the backward: the forward of `{0}` ran outside it and already armed DDP's "
    "all-reduce, so this backward still reduces the gradients; put the forward inside the `no_sync` block too",
    UNREDUCED: "the micro-batch before `optimizer.step()` runs inside `{0}.no_sync()` too: its gradients are never "
    "all-reduced, each rank steps with its own and the replicas drift apart; leave the stepping micro-batch outside it",
}
