"""RT005 pinned-memory-budget."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status, count
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import gib, memlock_limit, memory_available

#: Pinned batches may take at most this share of the memory still available.
MAX_SHARE = 0.5


class PinnedMemoryBudget(Check):
    """
    ## What it does

    With `--batch-bytes` and `--num-workers`, computes the host memory that
    pinned batches in flight take on the node, `local_world_size ×
    num_workers × prefetch_factor × batch_bytes`, and checks it against half
    the memory available (the host's, capped by a cgroup limit). On a GPU
    host it also checks each rank's share against `RLIMIT_MEMLOCK`
    (`ulimit -l`) when that is finite. On a rank without a GPU nothing is
    pinned (`pin_memory` needs one), so the check is skipped with a note that
    still shows the figures. Without the two options the check is skipped.

    ## Why is this bad?

    `pin_memory=True` page-locks every prefetched batch: the kernel can
    neither swap nor reclaim that memory. Oversubscribed, the node runs out
    of memory (the OOM killer ends the job) or `cudaHostAlloc` fails. A low
    `RLIMIT_MEMLOCK` (Docker's default is 64 KiB) breaks page-locked
    buffers that are registered for RDMA (NCCL over InfiniBand); NVIDIA's
    containers are meant to run with `--ulimit memlock=-1`.

    ## Example

    ```sh
    ddplint doctor --nproc-per-node 8 --num-workers 16 --prefetch-factor 4 --batch-bytes 512MiB
    ```

    ## Use instead

    ```sh
    # fewer workers or a smaller prefetch factor, or pin_memory=False
    ddplint doctor --nproc-per-node 8 --num-workers 4 --prefetch-factor 2 --batch-bytes 512MiB
    ```

    ## References

    - [torch.utils.data: memory pinning](https://pytorch.org/docs/stable/data.html#memory-pinning)
    """

    code = "RT005"
    name = "pinned-memory-budget"
    severity = Severity.ERROR
    advice = "lower num_workers, prefetch_factor or the batch size, or set pin_memory=False"
    summary = "Pinned batches in flight exceed the host memory budget or RLIMIT_MEMLOCK."
    tags = ("memory", "data-loading")

    def run(self, ctx: RankContext) -> CheckResult:
        options = ctx.options
        if options.batch_bytes is None or options.num_workers is None:
            return self.result(Status.SKIP, "pass --batch-bytes and --num-workers to check the pinned-memory budget")
        pinned = ctx.info.local_world_size * options.num_workers * options.prefetch_factor * options.batch_bytes
        available = memory_available()
        limit = memlock_limit()
        formula = (
            f"{count(ctx.info.local_world_size, 'rank')} × {count(options.num_workers, 'worker')} × {options.prefetch_factor} prefetch "
            f"× {gib(options.batch_bytes)} = {gib(pinned)} pinned"
        )
        measured = {"pinned_bytes": pinned, "available_bytes": available, "memlock_bytes": limit}
        if ctx.device == "cpu":  # DataLoader(pin_memory=True) pins nothing without an accelerator
            return self.result(
                Status.SKIP, f"without CUDA nothing is pinned ({formula} on a GPU host, of {gib(available)} available)",
                **measured,
            )  # fmt: skip
        if pinned > MAX_SHARE * available:
            return self.result(Status.FAIL, f"{formula} > half of the {gib(available)} available", **measured)
        per_rank = options.batch_bytes * options.prefetch_factor * options.num_workers
        if limit is not None and ctx.device.startswith("cuda") and per_rank > limit:
            return self.result(
                Status.FAIL, f"{formula}; {gib(per_rank)} per rank is above RLIMIT_MEMLOCK (ulimit -l) {gib(limit)}",
                **measured,
            )  # fmt: skip
        return self.result(Status.PASS, f"{formula} ≤ half of the {gib(available)} available", **measured)
