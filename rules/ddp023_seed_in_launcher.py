"""DDP023 seed-in-launcher."""

from __future__ import annotations

from ddplint.analysis.guards import Runs, Site
from ddplint.analysis.seeding import process_local_settings
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class SeedInLauncher(Rule):
    """
    ## What it does

    Flags seeding and determinism settings made in the launcher process, the
    code that starts the workers with `torch.multiprocessing.spawn`
    (`mp.spawn(main_worker, ...)`), `start_processes` or `xmp.spawn`, on the
    path that launches them: `torch.manual_seed`, `np.random.seed`,
    `random.seed`, framework and conventional seeding helpers,
    `torch.backends.cudnn.deterministic`/`benchmark = ...` and
    `torch.use_deterministic_algorithms(...)`.

    Not flagged: setting a cuDNN flag to `False` (the default every worker
    starts with); the same calls in the worker, in a branch that does not
    launch (`else: main_worker(args.gpu, ngpus, args)`), or at module level
    outside the `if __name__ == "__main__":` block (every spawned worker
    imports the module again and runs those).

    ## Why is this bad?

    `mp.spawn` starts each worker as a fresh interpreter: random generator
    states and cuDNN flags set in the parent do not carry over. The run
    believes it is seeded and deterministic, and is neither: every worker
    starts from fresh entropy and cuDNN picks its algorithms freely, so a
    result cannot be reproduced — the seed "does nothing".

    ## Example

    ```python
    def main():
        args = parser.parse_args()
        torch.manual_seed(args.seed)
        cudnn.deterministic = True
        mp.spawn(main_worker, nprocs=ngpus, args=(ngpus, args))
    ```

    ## Use instead

    ```python
    def main_worker(gpu, ngpus, args):
        rank = args.node_rank * ngpus + gpu
        torch.manual_seed(args.seed + rank)
        cudnn.deterministic = True
        ...
    ```

    ## References

    - [torch.multiprocessing.spawn](https://pytorch.org/docs/stable/multiprocessing.html#spawning-subprocesses)
    - [PyTorch: Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    """

    code = "DDP023"
    name = "seed-in-launcher"
    severity = Severity.WARNING
    summary = "A seed or cuDNN flag set in the mp.spawn parent never reaches the workers."
    requires = frozenset({"rank"})
    tokens = ("spawn", "start_processes")
    tags = ("reproducibility", "correctness")

    def trigger_Call(self, node: cst.Call | cst.Assign) -> bool:
        return bool(process_local_settings(node, self.ctx))

    def check_Call(self, node: cst.Call | cst.Assign, site: Site) -> None:
        execution = self.ctx.rank.execution
        if execution.runs(site) is not Runs.LAUNCHER:
            return
        workers = sorted({w.name.value for w in execution.launched_workers()})
        worker = f"`{workers[0]}`" if len(workers) == 1 else "the worker"
        for part, shown in process_local_settings(node, self.ctx):
            self.report(
                part,
                f"{shown} runs in the launcher process that starts the workers: spawned workers begin with "
                f"fresh random state and cuDNN flags, so it never reaches them; set it inside {worker}, "
                "seeding with `seed + rank`",
            )

    trigger_Assign, check_Assign = trigger_Call, check_Call
