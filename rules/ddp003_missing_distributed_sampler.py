"""DDP003 missing-distributed-sampler."""

from __future__ import annotations

from ddplint.analysis.data import is_dataloader, unsampled_training_loader
from ddplint.analysis.guards import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.paths import is_test_file
from ddplint.rule import Rule


class MissingDistributedSampler(Rule):
    """
    ## What it does

    In a module that wraps a model in `DistributedDataParallel`/FSDP
    (`fully_shard` too) or calls `init_process_group`, flags a training
    `DataLoader(...)` that gets no `sampler` and no `batch_sampler` (by
    keyword, by position, or in a literal `**kwargs` dict). A loader is a
    training loader when it shuffles (`shuffle=True`) or when its variable
    or its dataset is named like one (`train_loader`, `train_dataset`).

    Not flagged: any sampler or batch sampler, even one the linter cannot
    see; an `IterableDataset` (of the module, a streaming Hugging Face
    dataset, `split_dataset_by_node`'s): a DataLoader refuses a sampler for
    one, and whether it splits itself by rank is DDP030's question; evaluation
    loaders (`val_`, `eval_`, `test_` names without `train`); loaders built
    under a rank guard, or where only a one-process run builds them (the
    `else` of `if args.distributed:`, `if not dist.is_initialized():`);
    modules that hand their loaders to
    `accelerator.prepare(...)` and Lightning's `*_dataloader` hooks (both
    insert a `DistributedSampler` themselves); `**kwargs` that cannot be
    resolved.

    ## Why is this bad?

    Without a `DistributedSampler`, every rank iterates the whole dataset
    in the same order: N GPUs compute N copies of each batch, an epoch takes
    as long as on one GPU, and the gradient average is over identical
    samples. Nothing fails; the job just does 1/N of the work it appears to.

    ## Example

    ```python
    model = DDP(model, device_ids=[local_rank])
    loader = DataLoader(train_set, batch_size=32, shuffle=True)
    ```

    ## Use instead

    ```python
    model = DDP(model, device_ids=[local_rank])
    sampler = DistributedSampler(train_set, shuffle=True)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    # ... and call sampler.set_epoch(epoch) at the start of every epoch
    ```

    ## Fix safety

    No automatic fix: adding a `DistributedSampler` changes how many steps an
    epoch has and needs `set_epoch` calls (DDP002); the message says what to
    write.

    ## References

    - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    """

    code = "DDP003"
    name = "missing-distributed-sampler"
    severity = Severity.WARNING
    summary = "A training DataLoader without a DistributedSampler: every rank sees the whole dataset."
    requires = frozenset({"rank", "data"})
    tokens = ("DataLoader",)
    tags = ("correctness", "performance", "data-loading")

    def trigger_Call(self, node: cst.Call) -> bool:
        return is_dataloader(node, self.ctx)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx = self.ctx
        if not ctx.data.loaders_need_sampler or is_test_file(ctx.path) or ctx.one_process_group:
            return  # a test compares ranks on the same data on purpose
        if site.single_process or ctx.rank.selects_ranks(site.guards):
            return  # a one-process run, or some ranks only: not every rank's loader
        shown = unsampled_training_loader(node, ctx)
        if shown is not None:
            self.report(
                node,
                f"this training DataLoader over `{shown}` has no sampler, so every rank iterates the whole "
                "dataset in the same order; pass `sampler=DistributedSampler(dataset)` (and call "
                "`sampler.set_epoch(epoch)` each epoch)",
            )
