"""RT001 shm-capacity."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status
from ddplint.runtime.context import RankContext
from ddplint.runtime.host import GIB, gib, shm_free

DEFAULT_REQUIRED_GIB = 16


class ShmCapacity(Check):
    """
    ## What it does

    Checks the free space of `/dev/shm` against what the data loaders need:
    `--shm-gib`, else `local_world_size × num_workers × prefetch_factor ×
    batch_bytes` when `--batch-bytes` and `--num-workers` are given, else
    16 GiB. A missing
    `/dev/shm` is a failure.

    ## Why is this bad?

    DataLoader workers hand every batch to the main process through shared
    memory. When `/dev/shm` fills up (Docker's default is 64 MiB), workers
    die with `Bus error` or `unable to write to file </torch_...>` in the
    middle of an epoch.

    ## Example

    ```sh
    docker run --gpus all my-image torchrun train.py  # /dev/shm is 64 MiB
    ```

    ## Use instead

    ```sh
    docker run --gpus all --shm-size=32g my-image torchrun train.py
    # or --ipc=host; on Kubernetes, an emptyDir volume with medium: Memory at /dev/shm
    ```

    ## References

    - [PyTorch Docker: use --ipc=host or --shm-size](https://github.com/pytorch/pytorch#docker-image)
    """

    code = "RT001"
    name = "shm-capacity"
    severity = Severity.ERROR
    advice = "enlarge /dev/shm (docker run --shm-size, a memory-backed emptyDir) or lower num_workers / prefetch_factor"
    summary = "Free /dev/shm below what the DataLoader workers need."
    tags = ("memory", "data-loading")

    def run(self, ctx: RankContext) -> CheckResult:
        options = ctx.options
        if options.shm_gib is not None:
            required, basis = options.shm_gib * GIB, "--shm-gib"
        elif options.batch_bytes is not None and options.num_workers is not None:
            required = ctx.info.local_world_size * options.num_workers * options.prefetch_factor * options.batch_bytes
            basis = "local ranks × workers × prefetch × batch bytes"
        else:
            required, basis = DEFAULT_REQUIRED_GIB * GIB, "default"
        free = shm_free()
        if free is None:
            return self.result(Status.FAIL, "/dev/shm does not exist", required_bytes=required)
        status = Status.PASS if free >= required else Status.FAIL
        verb = "≥" if status is Status.PASS else "<"
        return self.result(
            status, f"/dev/shm free {gib(free)} {verb} required {gib(required)} ({basis})",
            free_bytes=free, required_bytes=required,
        )  # fmt: skip
