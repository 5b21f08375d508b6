"""RT007 memory-plateau."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import MIB
from ddplint.runtime.probes.curve import running_peak, Curve
from ddplint.runtime.probes.loader import call_with_supported
from ddplint.runtime.probes.steps import StepTimeout, probe_steps

#: The last third may add this much (bytes, and share of the peak) and still
#: count as a plateau: allocator noise. CUDA's counter is exact, RSS is not.
TOLERANCE = {"cuda": (1 * MIB, 0.01), "cpu": (16 * MIB, 0.02)}


class MemoryPlateau(Check):
    """
    ## What it does

    With `--step module:factory`, calls `factory()` (passing `batch_size=`
    and `device=` if it accepts them) to get a step function, runs it
    `--steps` times (default 100), under `torch.autocast` on a GPU, and
    records the peak memory after each step: `torch.cuda.max_memory_allocated`
    on a GPU, the resident set on the CPU. Flags when the last third of the
    steps still raises the peak by more than allocator noise (1 MiB and 1 %
    of the peak on CUDA, 16 MiB and 2 % on the CPU); the report has the curve.

    ## Why is this bad?

    A training step's memory rises over the first steps (optimizer state,
    allocator caches) and then stays flat. If it keeps rising, something
    keeps references across steps: losses accumulated with their graphs
    (DDP013), outputs appended to a list, a cache that never evicts. The job
    runs out of memory hours in, at a step count no short test reaches.

    ## Example

    ```sh
    ddplint doctor --step mypkg.train:make_step --batch-size 64 --steps 200
    # RT007: peak still grew 96.0 MiB over the last 67 of 200 steps: 512 → 560 → 610 → 655 → 704 MiB
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
    summary = "Peak memory of the training step has not plateaued after N steps."
    tags = ("memory", "probe")
    per_rank = False

    def run(self, ctx: RankContext) -> CheckResult:
        factory = ctx.factories.get("step")
        if factory is None:
            return self.result(Status.SKIP, "pass --step module:factory to probe the step's memory")
        import torch

        steps = ctx.options.steps
        if steps < 3:
            return self.result(Status.SKIP, f"--steps {steps}: at least 3 steps are needed to see a plateau")
        step = call_with_supported(factory, batch_size=ctx.options.batch_size, device=torch.device(ctx.device))
        if not callable(step):
            raise TypeError(f"--step {ctx.options.step}: the factory returned {type(step).__name__}, not a step function")
        try:
            probe = probe_steps(step, steps=steps, device=ctx.device, timeout=ctx.options.timeout)
        except StepTimeout as exc:
            return self.result(Status.FAIL, str(exc), steps=steps)
        curve = Curve(probe.curve.positions, running_peak(probe.curve.values))
        floor, share = TOLERANCE["cuda" if ctx.device.startswith("cuda") else "cpu"]
        late = curve.last_third_growth
        allowed = max(floor, share * curve.values[-1])
        measured = {"steps": steps, "measure": probe.measure, "last_third_growth_bytes": late,
                    "peak_bytes": curve.values[-1], "tolerance_bytes": int(allowed), "curve_mib": curve.points()}  # fmt: skip
        tail = steps - (2 * steps) // 3
        if late > allowed:
            return self.result(
                Status.FAIL,
                f"peak ({probe.measure}) still grew {late / MIB:.1f} MiB over the last {tail} of {steps} steps: {curve.sketch()}",
                **measured,
            )
        return self.result(
            Status.PASS, f"peak ({probe.measure}) flat over the last {tail} of {steps} steps: {curve.sketch()}", **measured
        )
