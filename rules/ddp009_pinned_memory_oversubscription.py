"""DDP009 pinned-memory-oversubscription."""

from __future__ import annotations

from ddplint.analysis.data import is_dataloader, loader_arguments
from ddplint.analysis.values import truthiness
from ddplint.analysis.workers import excess_workers
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class PinnedMemoryOversubscription(Rule):
    """
    ## What it does

    In distributed code, flags `DataLoader(..., pin_memory=True,
    num_workers=N)` where N is the node's whole core count
    (`os.cpu_count()`, `multiprocessing.cpu_count()`,
    `len(os.sched_getaffinity(0))`, `psutil.cpu_count()`, directly or
    through a variable, `or 1` included) or a literal above
    `max-workers-per-rank` (default 8). A count divided among the local
    ranks (`os.cpu_count() // local_world_size`) or capped
    (`min(8, os.cpu_count())`) is fine, and so is an unknown value.

    ## Why is this bad?

    Every rank on the node starts its own N workers, so the node runs
    `local_world_size × N` worker processes on N cores, and each rank keeps
    `num_workers × prefetch_factor` batches in page-locked (pinned) host
    memory, which the kernel can never swap or reclaim. The pinned total is
    `local_world_size × num_workers × prefetch_factor × batch_bytes`
    (what `ddplint doctor`'s RT005 check computes on the real machine); with
    eight ranks and 64 workers each it exhausts host RAM and the node is
    OOM-killed or thrashes.

    ## Example

    ```python
    loader = DataLoader(ds, batch_size=64, sampler=sampler,
                        num_workers=os.cpu_count(), pin_memory=True)
    ```

    ## Use instead

    ```python
    local_world_size = int(os.environ["LOCAL_WORLD_SIZE"])
    workers = max(1, len(os.sched_getaffinity(0)) // local_world_size)
    loader = DataLoader(ds, batch_size=64, sampler=sampler,
                        num_workers=min(workers, 8), pin_memory=True)
    ```

    ## Options

    `max-workers-per-rank` (default 8): the largest literal `num_workers`
    accepted with `pin_memory=True`.

    ## Fix safety

    No automatic fix: the right worker count depends on the machine's cores and
    memory (`ddplint doctor` measures them, RT003).

    ## References

    - [torch.utils.data: memory pinning](https://pytorch.org/docs/stable/data.html#memory-pinning)
    """

    code = "DDP009"
    name = "pinned-memory-oversubscription"
    severity = Severity.WARNING
    summary = "pin_memory=True with a worker count for the whole node, on every rank."
    distributed_only = True
    tokens = ("pin_memory",)
    tags = ("memory", "performance", "data-loading")

    def visit_Call(self, node: cst.Call) -> None:
        if not is_dataloader(node, self.ctx):
            return
        args = loader_arguments(node, self.ctx)
        pin, workers = args.value("pin_memory"), args.value("num_workers")
        if pin is None or workers is None or truthiness(pin, self.ctx) is not True:
            return
        reason = excess_workers(workers, self.ctx)
        if reason is None:
            return
        self.report(
            node,
            f"`pin_memory=True` with `num_workers={self.ctx.module.code_for_node(workers)}` ({reason}) on every "
            "rank: the node runs local_world_size × num_workers workers and pins local_world_size × "
            "num_workers × prefetch_factor × batch_bytes of host memory; divide the cores among the local "
            f"ranks and keep num_workers ≤ {self.ctx.settings.max_workers_per_rank} (`ddplint doctor` checks the "
            "budget as RT005)",
        )
