"""DDP018 wrap-order."""

from __future__ import annotations

from ddplint.knowledge import SHARDING_WRAPPERS, SYNC_BATCHNORM_CONVERSION, covering_needles
from ddplint.analysis.guards import Site
from ddplint.analysis.wrappers import CONVERT, OPTIMIZER, SHARD, WRAP
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class WrapOrder(Rule):
    """
    ## What it does

    Flags two orderings within a function:

    - an optimizer built from `model.parameters()` before `model` is
      wrapped in `FullyShardedDataParallel(model)` or sharded with
      `fully_shard(model)`;
    - `nn.SyncBatchNorm.convert_sync_batchnorm(model)` after
      `DistributedDataParallel(model)`.

    Not flagged: an optimizer built after wrapping (from the wrapper's
    parameters), FSDP with `use_orig_params=True` (it keeps the original
    parameters as views), DDP wrapping after the optimizer (DDP keeps the
    parameters), conversion before wrapping. The SyncBatchNorm half is a
    preview variant (a warning, with `--preview`): on current PyTorch the
    converted layers keep their parameters and buffers, so what is lost is
    DDP's construction-time check and logging, not training.

    ## Why is this bad?

    FSDP replaces the module's parameters with flat (or, for `fully_shard`,
    DTensor) parameters. An optimizer built before holds the old tensors,
    which no longer receive gradients: `optimizer.step()` updates nothing
    the model uses, and training silently does not learn (or crashes on a
    device mismatch). `convert_sync_batchnorm` after DDP swaps modules
    inside the wrapper after DDP inspected them at construction: the
    GPU-only check and the logging never see the SyncBatchNorm layers, and
    older PyTorch versions raised at the first forward.

    ## Example

    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model = FSDP(model, auto_wrap_policy=policy)
    ```

    ## Use instead

    ```python
    model = FSDP(model, auto_wrap_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ```

    ## References

    - [FSDP: construct the optimizer after wrapping](https://pytorch.org/docs/stable/fsdp.html)
    - [SyncBatchNorm.convert_sync_batchnorm](https://pytorch.org/docs/stable/generated/torch.nn.SyncBatchNorm.html)
    """

    code = "DDP018"
    name = "wrap-order"
    severity = Severity.ERROR
    summary = "Optimizer built before FSDP replaces the parameters, or SyncBatchNorm converted after DDP."
    requires = frozenset({"models"})
    distributed_only = True
    tokens = covering_needles({n.rsplit(".", 1)[1] for n in SHARDING_WRAPPERS} | {"FSDP", SYNC_BATCHNORM_CONVERSION})
    tags = ("correctness",)

    def trigger_Call(self, node: cst.Call) -> bool:
        step = self.ctx.models.step(node)
        return step is not None and step.kind in (OPTIMIZER, CONVERT)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        step = self.ctx.models.step(node)
        before, after = self.ctx.models.steps_around(step)  # type: ignore[arg-type]
        later = [s.kind for s in after]
        if step.kind == OPTIMIZER and SHARD in later and OPTIMIZER not in later[later.index(SHARD) :]:
            self.report(node, MESSAGES[OPTIMIZER].format(model=step.model))  # (unless rebuilt after wrapping)
        elif step.kind == CONVERT and [s.kind for s in before if s.kind in (WRAP, CONVERT)][-1:] == [WRAP]:
            self.report(node, MESSAGES[CONVERT].format(model=step.model), preview=True, severity=Severity.WARNING)


MESSAGES = {
    OPTIMIZER: "this optimizer holds `{model}`'s parameters from before FSDP wraps it (line below): FSDP replaces "
    "them, so `step()` updates tensors the model no longer uses; build the optimizer after wrapping",
    CONVERT: "`{model}` is already wrapped in DistributedDataParallel: DDP's construction-time checks (GPU-only "
    "SyncBatchNorm, its logging) never saw these layers, and PyTorch documents converting before wrapping; convert first",
}
