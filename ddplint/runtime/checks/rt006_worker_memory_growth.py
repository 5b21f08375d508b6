"""RT006 worker-memory-growth."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status, count
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import MIB, gib, memory_available
from ddplint.runtime.probes.loader import call_with_supported
from ddplint.runtime.probes.workers import probe_workers

#: Workers of the probe when --num-workers is not given.
DEFAULT_WORKERS = 2
#: Growth per worker below this is start-up noise, not a trend.
NOISE_PER_WORKER = 4 * MIB
#: The last third of the probe still adds at least this share of the growth.
SUSTAINED_SHARE = 0.2


class WorkerMemoryGrowth(Check):
    """
    ## What it does

    With `--dataset module:factory`, calls `factory()` (passing
    `batch_size=` if it accepts it) and iterates the dataset it returns
    through a real `DataLoader` with `--num-workers` workers (default 2) and
    `--prefetch-factor`, for one epoch or `--timeout` seconds, sampling the
    workers' private memory (USS) about 40 times. Flags sustained growth:
    more than 4 MiB per worker, with the last third of the probe still
    adding at least a fifth of it. Reports the growth in MiB per 1,000
    samples and its projection to one epoch on this node.

    ## Why is this bad?

    Workers are forked from the training process and share its memory
    until they write to it. Reading a Python object writes its reference
    count, so a Dataset that holds lists or dicts of Python objects is
    copied page by page into every worker as an epoch proceeds
    (pytorch/pytorch#13246): memory grows with every sample until the host's
    OOM killer ends the job, hours in. A cache filled in `__getitem__`
    grows the same way.

    ## Example

    ```sh
    ddplint doctor --dataset mypkg.data:build_train_dataset --num-workers 8
    # RT006: workers grew 310 MiB (0.26 MiB per 1k samples), 2.3 GiB per epoch on this node
    ```

    ## Use instead

    ```sh
    # hold the samples in NumPy arrays or tensors (see DDP005), then re-run the probe
    ddplint doctor --dataset mypkg.data:build_train_dataset --num-workers 8
    ```

    ## References

    - [pytorch/pytorch#13246: DataLoader workers' memory grows with Python lists](https://github.com/pytorch/pytorch/issues/13246)
    - [torch.utils.data: multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
    """

    code = "RT006"
    name = "worker-memory-growth"
    severity = Severity.WARNING
    summary = "DataLoader workers' memory keeps growing while they read the dataset."
    tags = ("memory", "data-loading", "probe")
    per_rank = False

    def run(self, ctx: RankContext) -> CheckResult:
        factory = ctx.factories.get("dataset")
        if factory is None:
            return self.result(Status.SKIP, "pass --dataset module:factory to probe the workers' memory")
        workers = DEFAULT_WORKERS if ctx.options.num_workers is None else ctx.options.num_workers
        if workers < 1:
            return self.result(Status.SKIP, "--num-workers 0: no workers to measure")
        dataset = call_with_supported(factory, batch_size=ctx.options.batch_size)
        probe = probe_workers(
            dataset, workers=workers, batch_size=ctx.options.batch_size,
            prefetch_factor=ctx.options.prefetch_factor, window=ctx.options.timeout,
        )  # fmt: skip
        curve = probe.curve
        if len(curve.values) < 3:
            return self.result(Status.SKIP, f"only {probe.samples} samples in {probe.seconds:.0f} s: too few to measure")
        growth, rate = curve.total_growth, curve.rate_per(1000)
        epoch = int(rate * probe.dataset_length / 1000) if probe.dataset_length else None
        node = epoch * ctx.info.local_world_size if epoch is not None else None
        measured = {
            "workers": workers, "samples": probe.samples, "seconds": round(probe.seconds, 2),
            "growth_bytes": growth, "mib_per_1k_samples": round(rate / MIB, 3),
            "epoch_projection_bytes": epoch, "node_projection_bytes": node, "curve_mib": curve.points(),
        }  # fmt: skip
        described = f"{workers} workers grew {growth / MIB:.1f} MiB over {probe.samples} samples ({rate / MIB:.3f} MiB per 1k samples)"
        sustained = growth > NOISE_PER_WORKER * workers and curve.last_third_growth >= SUSTAINED_SHARE * growth
        if not sustained:
            return self.result(Status.PASS, f"{described}: no sustained growth", **measured)
        if node is not None:
            available = memory_available()
            described += f", {gib(node)} per epoch on this node ({count(ctx.info.local_world_size, 'rank')})"
            if node > available:
                described += f", more than the {gib(available)} available"
        return self.result(Status.FAIL, f"{described}: {curve.sketch()}", **measured)
