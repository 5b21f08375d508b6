"""RT004 cpu-oversubscription."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status, count
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import cgroup_cpu_quota, cpus_available


class CpuOversubscription(Check):
    """
    ## What it does

    Checks that `num_workers × local_world_size` DataLoader workers fit the
    CPUs available to the process (its affinity mask, capped by a cgroup CPU
    quota in containers). Without `--num-workers`, only that the ranks
    themselves fit.

    ## Why is this bad?

    Every rank on the node starts its own workers. More workers than cores
    means constant context switches: data loading gets slower, not faster,
    and the GPUs wait for input.

    ## Example

    ```sh
    # 8 ranks × 16 workers on a 64-core node
    torchrun --nproc-per-node 8 train.py --num-workers 16
    ```

    ## Use instead

    ```sh
    torchrun --nproc-per-node 8 train.py --num-workers 7  # (64 cores // 8 ranks) - 1
    ```

    ## References

    - [torch.utils.data: multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
    """

    code = "RT004"
    name = "cpu-oversubscription"
    severity = Severity.WARNING
    advice = "lower the DataLoader's num_workers so that workers × local ranks fit the CPU cores"
    summary = "More DataLoader workers on the node than CPUs available."
    tags = ("performance", "data-loading")

    def run(self, ctx: RankContext) -> CheckResult:
        local = ctx.info.local_world_size
        cpus = cpus_available()
        quota = cgroup_cpu_quota()
        where = f"{cpus} CPUs available" + (f" (cgroup quota {quota})" if quota is not None else "")
        ranks = count(local, "local rank")
        if ctx.options.num_workers is None:  # the ranks alone can still oversubscribe
            if local > cpus:
                return self.result(Status.FAIL, f"{ranks} > {where}", workers=0, cpus=cpus, cgroup_quota=quota)
            return self.result(Status.SKIP, f"pass --num-workers to check the DataLoader workers against {where}")
        workers = ctx.options.num_workers * local
        status = Status.PASS if workers <= cpus else Status.FAIL
        verb = "≤" if status is Status.PASS else ">"
        return self.result(
            status, f"{count(ctx.options.num_workers, 'worker')} × {ranks} = {workers} {verb} {where}",
            workers=workers, cpus=cpus, cgroup_quota=quota,
        )  # fmt: skip
