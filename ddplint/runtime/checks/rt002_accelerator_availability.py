"""RT002 accelerator-availability."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status, count
from ddplint.runtime.context import RankContext


class AcceleratorAvailability(Check):
    """
    ## What it does

    Checks that CUDA is available and that the node has at least as many
    visible GPUs as local ranks. With `--backend gloo` on a machine without
    CUDA it is a note (a CPU rehearsal), not a failure.

    ## Why is this bad?

    A job that finds no GPU, or fewer GPUs than ranks (a wrong
    `CUDA_VISIBLE_DEVICES`, a container started without `--gpus`), either
    fails at the first `.cuda()` or puts several ranks on one GPU, where
    NCCL hangs or runs out of memory.

    ## Example

    ```sh
    CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 4 train.py
    ```

    ## Use instead

    ```sh
    CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc-per-node 4 train.py
    ```

    ## References

    - [CUDA environment variables](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars)
    """

    code = "RT002"
    name = "accelerator-availability"
    severity = Severity.ERROR
    advice = "give every local rank its own GPU: check CUDA_VISIBLE_DEVICES, nvidia-smi and that torch was built with CUDA, or use --backend gloo"
    summary = "CUDA unavailable, or fewer visible GPUs than local ranks."
    tags = ("hardware",)

    def run(self, ctx: RankContext) -> CheckResult:
        import torch

        local = ctx.info.local_world_size
        ranks = count(local, "local rank")
        if not torch.cuda.is_available():
            if ctx.backend == "gloo":
                return self.result(Status.NOTE, "no CUDA device: a CPU run with gloo", gpus=0, local_ranks=local)
            return self.result(
                Status.FAIL, f"CUDA is not available but the backend is {ctx.backend}", gpus=0, local_ranks=local
            )
        gpus = torch.cuda.device_count()
        names = sorted({torch.cuda.get_device_name(i) for i in range(gpus)})
        measured = {"gpus": gpus, "local_ranks": local, "models": names}
        if gpus < local:
            return self.result(Status.FAIL, f"{count(gpus, 'visible GPU')} for {ranks}", **measured)
        return self.result(Status.PASS, f"{count(gpus, 'GPU')} ({', '.join(names)}) for {ranks}", **measured)
