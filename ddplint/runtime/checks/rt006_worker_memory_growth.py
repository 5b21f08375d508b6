"""RT006 worker-memory-growth."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status, count
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import MIB, gib, memory_available
from ddplint.runtime.probes.loader import call_with_supported
from ddplint.runtime.probes.trend import LATER_HALF, Verdict
from ddplint.runtime.probes.workers import WorkerProbe, probe_workers

#: Workers of the probe when --num-workers is not given.
DEFAULT_WORKERS = 2
#: Growth per worker over an epoch that matters; below it, page-sized noise.
FLOOR_PER_WORKER = 4 * MIB
#: Growth per worker over the fitted samples that private memory shows for
#: sure: below it, pages touched once (a worker's first imports, buffers,
#: allocator arenas) that an extrapolation to an epoch would turn into a leak.
RESOLUTION_PER_WORKER = 256 * 1024
#: The horizon of that floor for a dataset without a length.
HORIZON_SAMPLES = 1_000_000


class WorkerMemoryGrowth(Check):
    """
    ## What it does

    With `--dataset module:factory`, calls `factory()` (passing
    `batch_size=` if it accepts it) and iterates the dataset it returns
    through a real `DataLoader` with `--num-workers` workers (default 2) and
    `--prefetch-factor`, for one epoch or `--timeout` seconds, sampling the
    workers' private memory (USS) about 40 times over the epoch or the
    window, whichever is shorter. It then fits the trend of the later half
    of the samples (the first half is warm-up): the Theil–Sen slope, in MiB
    per 1,000 samples with one-sided 95 % bounds, and the range measured
    there. It fails when even the lower bound would add more than 4 MiB per
    worker over one epoch (over a million samples for a dataset without a
    length) and the growth it implies over the fitted samples is at least
    256 KiB per worker: growth that persists past the warm-up, not the pages
    a worker touches once, extrapolated to an epoch. It passes when the
    upper bound would not, and otherwise notes that the probe could not
    tell. When too few batches arrive to fit a trend, it says which option
    to change: `--timeout` (the probe's budget) or `--batch-size` (more,
    smaller batches). Reports the growth and its projection to one epoch on this
    node.

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
    # RT006: 8 workers grow 0.260 MiB per 1k samples (at least 0.250 at 95 %) over 40,000 samples,
    #        2.3 GiB per epoch on this node (8 ranks)
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
    advice = "hold the samples in NumPy arrays or tensors instead of Python lists and dicts, and bound any cache filled in __getitem__"
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
        curve, trend = probe.curve, probe.curve.trend(LATER_HALF)
        if trend is None:
            return self.result(Status.NOTE, f"{_read(probe)}: too few to fit a trend; {_more_samples(probe, ctx)}",
                               workers=workers, samples=probe.samples, seconds=round(probe.seconds, 2),
                               curve_mib=curve.points(), curve_unit="samples")  # fmt: skip
        horizon = probe.dataset_length or HORIZON_SAMPLES
        floor = FLOOR_PER_WORKER * workers / horizon  # bytes per sample
        per_1k = trend.slopes(MIB, 1000)
        low, high = curve.span(trend.first)
        span = f"measured {low / MIB:.2f}-{high / MIB:.2f} MiB over samples {int(trend.first):,}-{int(trend.last):,}"
        rise, resolution = trend.lower * (trend.last - trend.first), RESOLUTION_PER_WORKER * workers
        epoch = int(max(trend.slope, 0) * probe.dataset_length) if probe.dataset_length else None
        node = epoch * ctx.info.local_world_size if epoch is not None else None
        measured = {
            "workers": workers, "samples": probe.samples, "seconds": round(probe.seconds, 2),
            "growth_bytes": curve.total_growth, "mib_per_1k_samples": round(per_1k["slope"], 4),
            "lower_mib_per_1k_samples": round(per_1k["lower"], 4), "upper_mib_per_1k_samples": round(per_1k["upper"], 4),
            "floor_mib_per_1k_samples": round(floor * 1000 / MIB, 4), "fitted_from_sample": int(trend.first),
            "epoch_projection_bytes": epoch, "node_projection_bytes": node, "curve_mib": curve.points(), "curve_unit": "samples",
            "trend": trend.to_json(MIB, 1000), "window_low_bytes": low, "window_high_bytes": high,
            "resolution_bytes": resolution,
        }  # fmt: skip
        verdict = trend.judge(floor)
        if verdict is Verdict.FLAT:
            return self.result(
                Status.PASS,
                f"{workers} workers: {per_1k['slope']:+.3f} MiB per 1k samples (at most {per_1k['upper']:.3f} at 95 %, "
                f"floor {floor * 1000 / MIB:.3f}), {span}: no sustained growth",
                **measured,
            )  # fmt: skip
        if verdict is Verdict.GROWS and rise < resolution:  # a warm-up's pages, not a leak yet
            return self.result(
                Status.NOTE,
                f"{workers} workers: growth too small to tell from warm-up, {per_1k['slope']:+.3f} MiB per 1k samples "
                f"(at least {per_1k['lower']:.3f} at 95 %), {span}: at least {rise / 1024:.0f} KiB, less than the "
                f"{resolution // 1024} KiB that would show a leak; {_more_samples(probe, ctx)}",
                **measured,
            )  # fmt: skip
        if verdict is Verdict.UNDECIDED:
            return self.result(
                Status.NOTE,
                f"{workers} workers: cannot tell growth from noise, {per_1k['slope']:+.3f} MiB per 1k samples (between "
                f"{per_1k['lower']:.3f} and {per_1k['upper']:.3f} at 95 %, floor {floor * 1000 / MIB:.3f}), {span}, in "
                f"{_read(probe)}; {_more_samples(probe, ctx)}",
                **measured,
            )  # fmt: skip
        described = (f"{workers} workers grow {per_1k['slope']:.3f} MiB per 1k samples (at least {per_1k['lower']:.3f} "
                     f"at 95 %), {span}")  # fmt: skip
        if node is not None:
            available = memory_available()
            described += f", {gib(node)} per epoch on this node ({count(ctx.info.local_world_size, 'rank')})"
            if node > available:
                described += f", more than the {gib(available)} available"
        return self.result(Status.FAIL, f"{described}: {curve.sketch()}", **measured)


def _read(probe: WorkerProbe) -> str:
    """``12 memory samples over 3,200 samples in 60 s``."""
    return f"{count(len(probe.curve.values), 'memory sample')} over {probe.samples:,} samples in {probe.seconds:.0f} s"


def _more_samples(probe: WorkerProbe, ctx: RankContext) -> str:
    """Which option gives the probe more to fit: a longer budget, or more, smaller batches."""
    if probe.exhausted:
        return f"the epoch ended first: lower --batch-size (now {ctx.options.batch_size}) for more, smaller batches"
    return (f"raise --timeout (now {ctx.options.timeout:g} s, the probe's budget) to read longer, "
            f"or lower --batch-size (now {ctx.options.batch_size})")
