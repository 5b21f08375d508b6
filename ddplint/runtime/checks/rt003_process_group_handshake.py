"""RT003 process-group-handshake."""

from __future__ import annotations

from datetime import timedelta

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status, count
from ddplint.runtime.context import RankContext, bind_device
from ddplint.runtime.deadline import call_with_timeout

#: Extra seconds a step may take beyond `--timeout` before it counts as hung
#: (the backend's own timeout should fire first and say more).
_GRACE = 5.0


class ProcessGroupHandshake(Check):
    """
    ## What it does

    Forms the job's process group the way training will: every rank checks
    in at the rendezvous store (ranks that do not arrive within `--timeout`
    are named), then `init_process_group` with the backend (NCCL on GPU,
    gloo on CPU), an `all_reduce` of every rank's id checked against
    `n(n-1)/2`, and a barrier (`monitored_barrier` on gloo), each with the
    timeout. A rank that cannot reach the store within `--timeout` says
    why (nothing listens there, nothing answers, or something that is not a
    store does), prints its verdict and exits 1, whatever the peer does.

    ## Why is this bad?

    A rank that cannot reach the others (wrong `MASTER_ADDR`, a firewall, a
    node that failed to start, an NCCL interface that cannot route) does not
    fail: the other ranks wait in their first collective until the default
    timeout of 10 to 30 minutes ends the job, often with nothing in the logs
    that names the culprit.

    ## Example

    ```sh
    # rank 1 never starts: every other rank hangs in init_process_group
    torchrun --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 train.py
    ```

    ## Use instead

    ```sh
    torchrun --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 -m ddplint doctor --timeout 60
    # rank 1 of 2 did not arrive within 60 s: fix that node before the real job
    ```

    ## References

    - [torch.distributed: initialization](https://pytorch.org/docs/stable/distributed.html#initialization)
    - [torch.distributed.monitored_barrier](https://pytorch.org/docs/stable/distributed.html#torch.distributed.monitored_barrier)
    """

    code = "RT003"
    name = "process-group-handshake"
    severity = Severity.ERROR
    advice = "start every rank with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE, and make MASTER_PORT on rank 0's host reachable from every node"
    summary = "The process group cannot be formed, returns a wrong all_reduce, or a barrier does not complete."
    tags = ("distributed", "hang")

    def run(self, ctx: RankContext) -> CheckResult:
        rendezvous, world = ctx.rendezvous, ctx.info.world_size
        if rendezvous.error:
            return self.result(Status.FAIL, rendezvous.error, endpoint=rendezvous.endpoint)
        if rendezvous.missing:
            return self.result(
                Status.FAIL, f"{rendezvous.describe_missing()} within {ctx.options.timeout:.0f} s",
                missing_ranks=rendezvous.missing, arrived_ranks=rendezvous.arrived, endpoint=rendezvous.endpoint,
            )  # fmt: skip
        steps = (("init_process_group", _init), ("all_reduce", _all_reduce), ("barrier", _barrier))
        seconds: dict[str, float] = {}
        for step, function in steps:
            outcome = call_with_timeout(lambda run=function: run(ctx), ctx.options.timeout + _GRACE)
            seconds[f"{step}_seconds"] = round(outcome.seconds, 3)
            if not outcome.ok:
                return self.result(Status.FAIL, f"{step} ({ctx.backend}) failed: {outcome.describe()}", **seconds)
            if step == "all_reduce" and outcome.value != world * (world - 1) // 2:
                expected = world * (world - 1) // 2
                return self.result(
                    Status.FAIL, f"all_reduce of the rank ids returned {outcome.value}, expected {expected}",
                    all_reduce_sum=outcome.value, expected_sum=expected, **seconds,
                )  # fmt: skip
        ctx.process_group_ready = True
        barrier = "monitored_barrier" if ctx.backend == "gloo" else "barrier"
        return self.result(
            Status.PASS,
            f"{count(world, 'rank')} on {ctx.backend}: init, all_reduce (sum = n(n-1)/2) and {barrier} "
            f"each within {ctx.options.timeout:.0f} s",
            **seconds,
        )


def _on_gpu(ctx: RankContext) -> bool:
    return ctx.backend == "nccl" and ctx.device.startswith("cuda")


def _init(ctx: RankContext) -> None:
    import torch
    import torch.distributed as dist

    bind_device(ctx.device)
    dist.init_process_group(
        ctx.backend, store=dist.PrefixStore("pg/", ctx.rendezvous.store), rank=ctx.info.rank,
        world_size=ctx.info.world_size, timeout=timedelta(seconds=ctx.options.timeout),
        device_id=torch.device(ctx.device) if _on_gpu(ctx) else None,
    )  # fmt: skip


def _all_reduce(ctx: RankContext) -> int:
    import torch
    import torch.distributed as dist

    bind_device(ctx.device)
    value = torch.tensor([ctx.info.rank], dtype=torch.int64, device=ctx.device if _on_gpu(ctx) else "cpu")
    dist.all_reduce(value)
    return int(value.item())


def _barrier(ctx: RankContext) -> None:
    import torch
    import torch.distributed as dist

    bind_device(ctx.device)
    if ctx.backend == "gloo":
        dist.monitored_barrier(timeout=timedelta(seconds=ctx.options.timeout), wait_all_ranks=True)
        return
    dist.barrier(device_ids=[torch.device(ctx.device).index] if _on_gpu(ctx) else None)
    if _on_gpu(ctx):
        torch.cuda.synchronize()
