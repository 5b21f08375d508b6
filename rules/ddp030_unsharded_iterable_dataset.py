"""DDP030 unsharded-iterable-dataset."""

from __future__ import annotations

from ddplint.analysis.data import is_dataloader, loader_arguments, unsharded_stream
from ddplint.analysis.guards import Site
from ddplint.analysis.sharding import evaluation_loader, framework_shards_loaders
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.paths import is_test_file
from ddplint.rule import Rule


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
    from torch.utils.data import IterableDataset, get_worker_info

    class Lines(IterableDataset):
        def __init__(self, path):
            self.path = path

        def __iter__(self):
            info = get_worker_info()  # splits across workers, not ranks
            for i, line in enumerate(open(self.path)):
                if info is None or i % info.num_workers == info.id:
                    yield encode(line)

    model = DDP(model, device_ids=[local_rank])
    train_loader = DataLoader(Lines("train.txt"), batch_size=32, num_workers=4)
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

    def trigger_Call(self, node: cst.Call) -> bool:
        return is_dataloader(node, self.ctx)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx = self.ctx
        if framework_shards_loaders(ctx.source) or is_test_file(ctx.path) or ctx.one_process_group or site.single_process:
            return  # accelerate or the Hugging Face Trainer split the loaders; tests compare ranks on one stream
        dataset = loader_arguments(node, ctx).value("dataset")
        if dataset is None or evaluation_loader(ctx.stack, dataset):
            return
        why = unsharded_stream(dataset, ctx)
        if why is not None:
            self.report(
                node,
                f"this training DataLoader iterates {why}: every rank trains on the same samples (a sampler "
                "cannot split an IterableDataset); split it by rank inside `__iter__` (`dist.get_rank()`/"
                "`get_world_size()`, combined with `get_worker_info()`) or with `split_dataset_by_node`",
            )
