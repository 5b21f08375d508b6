"""RT007 memory-plateau."""

from __future__ import annotations

import math

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import MIB, gib
from ddplint.runtime.probes.loader import call_with_supported
from ddplint.runtime.probes.steps import StepTimeout, probe_steps
from ddplint.runtime.probes.trend import LATER_HALF, MIN_POINTS, Verdict

#: Growth per 1,000 steps that matters (about 100 MiB, or 25 MiB on CUDA,
#: over a 100k-step job); below it, allocator and RSS noise. CUDA's counter
#: is exact; the resident set moves by pages and malloc arenas.
FLOOR_PER_1K_STEPS = {"cuda": MIB // 4, "cpu": 1 * MIB}
#: The least growth over the fitted steps that the measure shows for sure:
#: freed memory the allocator keeps (or fragmentation) can absorb a leak
#: this large without moving the resident set; CUDA's counter is exact.
RESOLUTION = {"cuda": 0, "cpu": 256 * 1024}
#: Enough steps to leave `MIN_POINTS` after the warm-up.
MIN_STEPS = math.ceil(MIN_POINTS / (1 - LATER_HALF))
#: The horizon of the projection in the report.
JOB_STEPS = 100_000


class MemoryPlateau(Check):
    """
    ## What it does

    With `--step module:factory`, calls `factory()` (passing `batch_size=`
    and `device=` if it accepts them) to get a step function, runs it
    `--steps` times (default 100), under `torch.autocast` on a GPU, and
    records memory after each step: `torch.cuda.max_memory_allocated` on a
    GPU, the resident set on the CPU. It then fits the trend
    of the later half of that curve (the first half is warm-up): the
    Theil–Sen slope, reported in MiB per 1,000 steps with one-sided 95 %
    bounds, and the range measured there. It fails when even the lower bound
    exceeds 1 MiB per 1,000 steps (256 KiB on CUDA, whose counter is exact),
    that is about 100 MiB over a 100k-step job, and the growth it implies
    over the fitted steps is at least what the measure resolves (256 KiB of
    resident set). It passes when the upper bound stays below the floor, but
    only over enough steps for a leak at the floor to show: on the CPU that
    takes 500 steps, and a shorter run says "too few steps to judge: use
    --steps 500" instead. Otherwise it notes that the run was too noisy to
    tell (raise `--steps`). A spike or a step change during the warm-up does
    not count: only a consistent slope does. The report has the curve and
    the fitted line (`--html`).

    ## Why is this bad?

    A training step's memory rises over the first steps (optimizer state,
    allocator caches) and then stays flat. If it keeps rising, something
    keeps references across steps: losses accumulated with their graphs
    (DDP013), outputs appended to a list, a cache that never evicts. The job
    runs out of memory hours in, at a step count no short test reaches.

    ## Example

    ```sh
    ddplint doctor --step mypkg.train:make_step --batch-size 64 --steps 500
    # RT007: resident set size keeps growing: 30.16 MiB per 1k steps (at least 28.21 at 95 %),
    #        measured 296.1-303.6 MiB over steps 251-500 (after 250 warm-up), 2.9 GiB over 100k steps
    #        ▁▃▃▃▃▃▄▄▄▄▄▄▄▄▄▅▅▅▅▅▆▇▇▇▇▇▇▇▇███ 293.4 → 303.6 MiB over 500 steps
    ```

    ## Use instead

    ```sh
    # keep losses with .item() or .detach(), do not keep outputs; re-run the probe
    ddplint doctor --step mypkg.train:make_step --batch-size 64 --steps 500
    ```

    ## References

    - [PyTorch FAQ: my model reports "cuda runtime error(2): out of memory"](https://pytorch.org/docs/stable/notes/faq.html)
    - [torch.cuda.max_memory_allocated](https://pytorch.org/docs/stable/generated/torch.cuda.max_memory_allocated.html)
    """

    code = "RT007"
    name = "memory-plateau"
    severity = Severity.WARNING
    advice = "keep no tensors across steps: log losses with .item() or .detach(), and do not keep outputs"
    summary = "Memory of the training step keeps growing after its warm-up instead of reaching a plateau."
    tags = ("memory", "probe")
    per_rank = False

    def run(self, ctx: RankContext) -> CheckResult:
        factory = ctx.factories.get("step")
        if factory is None:
            return self.result(Status.SKIP, "pass --step module:factory to probe the step's memory")
        import torch

        steps = ctx.options.steps
        if steps < MIN_STEPS:
            return self.result(Status.SKIP, f"--steps {steps}: at least {MIN_STEPS} steps are needed to fit a trend")
        step = call_with_supported(factory, batch_size=ctx.options.batch_size, device=torch.device(ctx.device))
        if not callable(step):
            raise TypeError(f"--step {ctx.options.step}: the factory returned {type(step).__name__}, not a step function")
        try:
            probe = probe_steps(step, steps=steps, device=ctx.device, timeout=ctx.options.timeout)
        except StepTimeout as exc:
            return self.result(Status.FAIL, str(exc), steps=steps)
        curve, trend = probe.curve, probe.curve.trend(LATER_HALF)
        if trend is None:  # pragma: no cover - MIN_STEPS steps always leave enough points
            return self.result(Status.SKIP, f"--steps {steps}: too few steps to fit a trend")
        kind = "cuda" if ctx.device.startswith("cuda") else "cpu"
        floor, resolution = FLOOR_PER_1K_STEPS[kind], RESOLUTION[kind]
        per_1k = trend.slopes(MIB, 1000)
        low, high = curve.span(trend.first)
        fitted = steps - int(trend.first) + 1
        measured = {
            "steps": steps, "measure": probe.measure, "warmup_steps": int(trend.first) - 1,
            "mib_per_1k_steps": round(per_1k["slope"], 3), "lower_mib_per_1k_steps": round(per_1k["lower"], 3),
            "upper_mib_per_1k_steps": round(per_1k["upper"], 3), "floor_mib_per_1k_steps": round(floor / MIB, 3),
            "resolution_bytes": resolution, "window_low_bytes": low, "window_high_bytes": high,
            "peak_bytes": max(curve.values), "curve_mib": curve.points(), "curve_unit": "steps", "trend": trend.to_json(MIB, 1000),
        }  # fmt: skip
        window = f"steps {int(trend.first)}-{steps} (after {int(trend.first) - 1} warm-up)"
        span = f"measured {low / MIB:.1f}-{high / MIB:.1f} MiB over {window}"
        verdict = trend.judge(floor / 1000)
        if verdict is Verdict.GROWS and trend.lower * fitted >= resolution:
            job = trend.slope * JOB_STEPS
            return self.result(
                Status.FAIL,
                f"{probe.measure} keeps growing: {per_1k['slope']:.2f} MiB per 1k steps (at least {per_1k['lower']:.2f} "
                f"at 95 %), {span}, {gib(job)} over {JOB_STEPS // 1000}k steps: {curve.sketch()}",
                **measured,
            )  # fmt: skip
        if floor / 1000 * fitted < resolution:  # a leak at the floor would not show yet
            needed = math.ceil(resolution / (floor / 1000) / (1 - LATER_HALF))
            return self.result(
                Status.NOTE,
                f"{probe.measure}: too few steps to judge: use --steps {needed} (a leak of {floor / MIB:g} MiB per 1k "
                f"steps adds {floor / 1000 * fitted / 1024:.0f} KiB over {fitted} steps, which the allocator can hide; "
                f"{per_1k['slope']:+.2f} MiB per 1k steps, {span}): {curve.sketch()}",
                steps_needed=needed, **measured,
            )  # fmt: skip
        if verdict is Verdict.FLAT:
            return self.result(
                Status.PASS,
                f"{probe.measure} flat: {per_1k['slope']:+.2f} MiB per 1k steps (at most {per_1k['upper']:.2f} at 95 %, "
                f"floor {floor / MIB:g}), {span}: {curve.sketch()}",
                **measured,
            )  # fmt: skip
        return self.result(
            Status.NOTE,
            f"{probe.measure}: cannot tell growth from noise in {steps} steps, {per_1k['slope']:+.2f} MiB per 1k steps "
            f"(between {per_1k['lower']:.2f} and {per_1k['upper']:.2f} at 95 %, floor {floor / MIB:g}), {span}; "
            f"raise --steps for a tighter bound: {curve.sketch()}",
            **measured,
        )  # fmt: skip
