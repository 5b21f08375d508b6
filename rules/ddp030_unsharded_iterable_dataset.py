"""DDP030 unsharded-iterable-dataset."""

from __future__ import annotations

import re

from ddplint.analysis.catalogue import HF_TRAINER
from ddplint.analysis.classes import class_of_instance
from ddplint.analysis.data import is_dataloader, loader_arguments, shards_by_rank, streaming_source
from ddplint.analysis.guards import Site
from ddplint.analysis.names import dotted_name, last_name
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.paths import is_test_file
from ddplint.rule import Rule

_EVAL = re.compile(r"(?i)val|eval|test")
#: Text that shows a stream split by node some way the data flow does not follow.
_SPLIT_TEXT = ("split_dataset_by_node", "split_by_node", ".shard(")


class UnshardedIterableDataset(Rule):
    """
    ## What it does

    Flags a `DataLoader` over an `IterableDataset` of the module whose
    methods (and the module functions they call) never read the rank or the
    world size (`dist.get_rank()`, `world_size`, `num_replicas`, `RANK`, a
    `shard_id`, a rank passed to its constructor), or over a Hugging Face
    dataset loaded with `load_dataset(..., streaming=True)` and never passed
    to `split_dataset_by_node`, in distributed code. Splitting the stream by
    `get_worker_info()` only still gives every rank the same stream.

    Not flagged: a stream built from rank-dependent arguments
    (`Stream(files[rank::world_size])`), loaders handed to
    `accelerator.prepare` (accelerate splits them across processes), the
    Hugging Face `Trainer`, webdataset's `split_by_node`, Mosaic's
    `StreamingDataset`, evaluation loaders (`val_`, `eval_`, `test_` names),
    test files.

    ## Why is this bad?

    A `DistributedSampler` cannot split an `IterableDataset` (a DataLoader
    refuses a sampler for one), so the dataset must split itself. One that
    does not gives every rank the same samples in the same order: N GPUs
    compute the same gradients N times, and an "epoch" is N copies of the
    stream. Nothing fails; the job trains as slowly as one GPU would.

    ## Example

    ```python
    class Lines(IterableDataset):
        def __iter__(self):
            info = get_worker_info()  # splits across workers, not ranks
            for i, line in enumerate(open(self.path)):
                if info is None or i % info.num_workers == info.id:
                    yield encode(line)
    ```

    ## Use instead

    ```python
    class Lines(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            workers, worker = (info.num_workers, info.id) if info else (1, 0)
            shards, shard = dist.get_world_size() * workers, dist.get_rank() * workers + worker
            for i, line in enumerate(open(self.path)):
                if i % shards == shard:
                    yield encode(line)
    ```

    For a streaming Hugging Face dataset: `split_dataset_by_node(dataset,
    rank=rank, world_size=world_size)`.

    ## References

    - [torch.utils.data.IterableDataset](https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset)
    - [datasets.distributed.split_dataset_by_node](https://huggingface.co/docs/datasets/package_reference/main_classes#datasets.distributed.split_dataset_by_node)
    """

    code = "DDP030"
    name = "unsharded-iterable-dataset"
    severity = Severity.WARNING
    summary = "An IterableDataset that never reads the rank: every rank trains on the same stream."
    preview = True
    requires = frozenset({"rank", "data"})
    tokens = ("DataLoader",)
    distributed_only = True
    tags = ("correctness", "performance", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.handled = False  # accelerate or the HF Trainer shards the loaders

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if last_name(func) in ("prepare", "prepare_data_loader") and "accelerat" in self.ctx.module.code_for_node(func).lower():
            self.handled = True
        elif HF_TRAINER in self.ctx.qualified_names(func):
            self.handled = True

    def trigger_Call(self, node: cst.Call) -> bool:
        return is_dataloader(node, self.ctx)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx = self.ctx
        if self.handled or is_test_file(ctx.path) or ctx.one_process_group or site.single_process:
            return
        dataset = loader_arguments(node, ctx).value("dataset")
        if dataset is None or _EVAL.search(" ".join(filter(None, (_target(ctx.stack), dotted_name(dataset))))):
            return
        if any(text in ctx.source for text in _SPLIT_TEXT):
            return
        for origin in (dataset, *ctx.origins(dataset)):
            classdef = class_of_instance(origin, ctx)
            if classdef is not None and ctx.data.kind(classdef) == "iterable":
                if not shards_by_rank(classdef, ctx) and not self._rank_arguments(origin):
                    self._report(node, f"`{classdef.name.value}`, an IterableDataset that never reads the rank or the world size")
                return
        source = streaming_source(dataset, ctx)
        if source is not None:
            self._report(node, f"`{ctx.module.code_for_node(source.func)}(..., streaming=True)`, a stream never split by node")

    def _rank_arguments(self, origin: cst.CSTNode) -> bool:
        """`Stream(files[rank::world_size])`: the constructor gets this rank's part."""
        calls = [v for v in (origin, *self.ctx.values_of(origin)) if isinstance(v, cst.Call)]
        return any(self.ctx.rank.expression_is_rank_dependent(a.value) for call in calls for a in call.args)

    def _report(self, node: cst.Call, why: str) -> None:
        self.report(
            node,
            f"this training DataLoader iterates {why}: every rank trains on the same samples "
            "(a sampler cannot split an IterableDataset); split it by rank inside `__iter__` "
            "(`dist.get_rank()`/`get_world_size()`, combined with `get_worker_info()`) or with "
            "`split_dataset_by_node`",
        )


def _target(stack: list[cst.CSTNode]) -> str | None:
    for node in reversed(stack):
        if isinstance(node, cst.Assign):
            return " ".join(filter(None, (dotted_name(t.target) for t in node.targets)))
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return None
    return None
