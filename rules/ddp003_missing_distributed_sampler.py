"""DDP003 missing-distributed-sampler."""

from __future__ import annotations

import re

from ddplint.analysis.catalogue import DDP_CLASSES, SHARDING_WRAPPERS
from ddplint.analysis.data import enclosing_class, is_dataloader, is_stream, loader_arguments
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.rank import Site
from ddplint.analysis.values import truthiness
from ddplint.lazy import cst
from ddplint.paths import is_test_file
from ddplint.model import Severity
from ddplint.rule import Rule

INIT_PROCESS_GROUP = "init_process_group"
LIGHTNING_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})
_TRAIN = re.compile(r"train", re.IGNORECASE)
_EVAL = re.compile(r"val|eval|test", re.IGNORECASE)


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

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.candidates: list[tuple[Site, str]] = []
        self.distributed = False
        self.prepared = False

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        names = ctx.qualified_names(node.func)
        if names & (DDP_CLASSES | SHARDING_WRAPPERS) or last_name(node.func) == INIT_PROCESS_GROUP:
            self.distributed = True
        if last_name(node.func) == "prepare" and isinstance(node.func, cst.Attribute):
            self.prepared |= "accelerat" in (last_name(node.func.value) or "").lower()
        if not is_dataloader(node, ctx):
            return
        function = ctx.enclosing_function()
        if function is not None and function.name.value in LIGHTNING_HOOKS and enclosing_class(ctx) is not None:
            return  # a Lightning hook: the Trainer adds the DistributedSampler
        args = loader_arguments(node, ctx)
        if args.passes("sampler") or args.passes("batch_sampler"):
            return
        dataset = args.value("dataset")
        if dataset is not None and is_stream(dataset, ctx):
            return  # an IterableDataset takes no sampler: whether it splits itself by rank is DDP030's
        names_here = " ".join(filter(None, (self._target(), _name_of(dataset))))
        shuffle = args.value("shuffle")
        training = (shuffle is not None and truthiness(shuffle, ctx) is True) or bool(_TRAIN.search(names_here))
        if not training or (_EVAL.search(names_here) and not _TRAIN.search(names_here)):
            return
        shown = ctx.module.code_for_node(dataset) if dataset is not None else "the dataset"
        self.candidates.append((ctx.rank.site(node), shown))

    def _target(self) -> str | None:
        """The name the loader is assigned to, if any."""
        for node in reversed(self.ctx.stack):
            if isinstance(node, cst.Assign):
                return " ".join(filter(None, (_name_of(t.target) for t in node.targets)))
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return None
        return None

    def finish(self) -> None:
        if not self.distributed or self.prepared or is_test_file(self.ctx.path) or self.ctx.one_process_group:
            return  # a test compares ranks on the same data on purpose
        rank = self.ctx.rank
        for site, shown in self.candidates:
            if site.single_process or rank.selects_ranks(site.guards):
                continue  # a one-process run, or some ranks only: not every rank's loader
            self.report(
                site.node,
                f"this training DataLoader over `{shown}` has no sampler, so every rank iterates the whole "
                "dataset in the same order; pass `sampler=DistributedSampler(dataset)` (and call "
                "`sampler.set_epoch(epoch)` each epoch)",
                statement=site.statement,
            )


def _name_of(node: cst.CSTNode | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, cst.Subscript):
        return cst.Module([]).code_for_node(node)
    return dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
