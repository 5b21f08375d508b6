"""RT007 memory-plateau."""

from __future__ import annotations

import math

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import MIB, gib
from ddplint.runtime.probes.loader import call_with_supported
from ddplint.runtime.probes.steps import StepTimeout, probe_steps
from ddplint.runtime.probes.trend import MIN_POINTS, WARMUP_SHARE, Verdict

#: Growth per 1,000 steps that matters (about 100 MiB, or 25 MiB on CUDA,
#: over a 100k-step job); below it, allocator and RSS noise. CUDA's counter
#: is exact; the resident set moves by pages and malloc arenas.
FLOOR_PER_1K_STEPS = {"cuda": MIB // 4, "cpu": 1 * MIB}
#: Enough steps to leave `MIN_POINTS` after the warm-up.
MIN_STEPS = math.ceil(MIN_POINTS / (1 - WARMUP_SHARE))
#: The horizon of the projection in the report.
JOB_STEPS = 100_000


class MemoryPlateau(Check):
    """
    ## What it does

    With `--step module:factory`, calls `factory()` (passing `batch_size=`
    and `device=` if it accepts them) to get a step function, runs it
    `--steps` times (default 100), under `torch.autocast` on a GPU, and
    records memory after each step: `torch.cuda.max_memory_allocated` on a
    GPU, the resident set on the CPU. It then fits the trend of that curve
    after a warm-up (the first quarter of the steps): the Theil–Sen slope,
    reported in MiB per 1,000 steps with one-sided 95 % bounds. It fails when
    even the lower bound exceeds 1 MiB per 1,000 steps (256 KiB on CUDA,
    whose counter is exact), that is about 100 MiB over a 100k-step job;
    passes when the upper bound stays below that; and otherwise notes that
    the run was too short or too noisy to tell (raise `--steps`). A spike or
    a step change during the warm-up does not count: only a consistent slope
    does. The report has the curve and the fitted line (`--html`).

    ## Why is this bad?

    A training step's memory rises over the first steps (optimizer state,
    allocator caches) and then stays flat. If it keeps rising, something
    keeps references across steps: losses accumulated with their graphs
    (DDP013), outputs appended to a list, a cache that never evicts. The job
    runs out of memory hours in, at a step count no short test reaches.

    ## Example

    ```sh
    ddplint doctor --step mypkg.train:make_step --batch-size 64 --steps 200
    # RT007: resident set size keeps growing: 30.16 MiB per 1k steps (at least 28.21 at 95 %)
    #        over steps 51-200 (after 50 warm-up), 2.9 GiB over 100k steps: 293.4 → 295.4 → 297.6 MiB
    #        ▁▃▃▃▃▃▄▄▄▄▄▄▄▄▄▅▅▅▅▅▆▇▇▇▇▇▇▇▇███ 293.4 → 297.6 MiB over 200 steps
    ```

    ## Use instead

    ```sh
    # keep losses with .item() or .detach(), do not keep outputs; re-run the probe
    ddplint doctor --step mypkg.train:make_step --batch-size 64 --steps 200
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
        curve, trend = probe.curve, probe.curve.trend()
        if trend is None:  # pragma: no cover - MIN_STEPS steps always leave enough points
            return self.result(Status.SKIP, f"--steps {steps}: too few steps to fit a trend")
        floor = FLOOR_PER_1K_STEPS["cuda" if ctx.device.startswith("cuda") else "cpu"]
        per_1k = trend.slopes(MIB, 1000)
        measured = {
            "steps": steps, "measure": probe.measure, "warmup_steps": int(trend.first) - 1,
            "mib_per_1k_steps": round(per_1k["slope"], 3), "lower_mib_per_1k_steps": round(per_1k["lower"], 3),
            "upper_mib_per_1k_steps": round(per_1k["upper"], 3), "floor_mib_per_1k_steps": round(floor / MIB, 3),
            "peak_bytes": max(curve.values), "curve_mib": curve.points(), "curve_unit": "steps", "trend": trend.to_json(MIB, 1000),
        }  # fmt: skip
        window = f"steps {int(trend.first)}-{steps} (after {int(trend.first) - 1} warm-up)"
        verdict = trend.judge(floor / 1000)
        if verdict is Verdict.GROWS:
            job = trend.slope * JOB_STEPS
            return self.result(
                Status.FAIL,
                f"{probe.measure} keeps growing: {per_1k['slope']:.2f} MiB per 1k steps (at least {per_1k['lower']:.2f} "
                f"at 95 %) over {window}, {gib(job)} over {JOB_STEPS // 1000}k steps: {curve.sketch()}",
                **measured,
            )  # fmt: skip
        if verdict is Verdict.FLAT:
            return self.result(
                Status.PASS,
                f"{probe.measure} flat: {per_1k['slope']:+.2f} MiB per 1k steps (at most {per_1k['upper']:.2f} at 95 %, "
                f"floor {floor / MIB:g}) over {window}: {curve.sketch()}",
                **measured,
            )  # fmt: skip
        return self.result(
            Status.NOTE,
            f"{probe.measure}: cannot tell growth from noise in {steps} steps, {per_1k['slope']:+.2f} MiB per 1k steps "
            f"(between {per_1k['lower']:.2f} and {per_1k['upper']:.2f} at 95 %, floor {floor / MIB:g}); "
            f"raise --steps for a tighter bound: {curve.sketch()}",
            **measured,
        )  # fmt: skip
