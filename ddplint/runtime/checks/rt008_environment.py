"""RT008 environment."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.runtime.check import Check, CheckResult, Status
from ddplint.runtime.context import RankContext
from ddplint.runtime.environment import environment_record
from ddplint.runtime.host import gib


class Environment(Check):
    """
    ## What it does

    Records, on every rank, the versions of Python, torch, CUDA, cuDNN, NCCL
    and the NVIDIA driver, the GPU models, the `NCCL_*`, `TORCH_*`,
    `MASTER_*` and `CUDA_VISIBLE_DEVICES` variables, the cores and the
    memory. Always a note: in SARIF the record is the run's
    `invocations[0].properties.environment`, in JSON the `environment` key.

    ## Why is this bad?

    A result without its environment cannot be compared or reproduced: a
    hang that appears after a driver update, an NCCL variable set on one node
    only, a rank with another torch build. Ranks whose records differ are
    shown side by side.

    ## Example

    ```sh
    torchrun --nproc-per-node 8 train.py   # versions known only to the cluster
    ```

    ## Use instead

    ```sh
    torchrun --nproc-per-node 8 -m ddplint doctor --format sarif -o preflight.sarif
    # keep preflight.sarif with the training logs
    ```
    """

    code = "RT008"
    name = "environment"
    severity = Severity.NOTE
    advice = "compare this record with a run that worked: the versions and variables that differ are the first suspects"
    summary = "The record of versions, devices, variables and resources to keep with every result."
    tags = ("reproducibility",)

    def run(self, ctx: RankContext) -> CheckResult:
        record = environment_record()
        gpus = ", ".join(sorted(set(record["gpus"]))) or "no GPU"
        versions = f"Python {record['python']}, torch {record['torch']}, CUDA {record['cuda'] or 'none'}"
        if record["nccl"]:
            versions += f", NCCL {record['nccl']}"
        if record["driver"]:
            versions += f", driver {record['driver']}"
        resources = f"{record['cpus_available']} CPUs, {gib(record['memory_bytes'])}"
        return self.result(Status.NOTE, f"{versions}; {gpus}; {resources}", **record)
