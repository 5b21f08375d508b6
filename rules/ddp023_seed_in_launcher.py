"""DDP023 seed-in-launcher."""

from __future__ import annotations

from ddplint.analysis.rank import Site
from ddplint.analysis.seeding import CUDNN_FLAGS, DETERMINISM_CALLS, seed_call
from ddplint.analysis.execution import Runs
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

_CUDNN = "torch.backends.cudnn."


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

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sites: list[tuple[Site, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if seed_call(node, ctx) or ctx.qualified_names(node.func) & DETERMINISM_CALLS:
            self.sites.append((ctx.rank.site(node), f"`{ctx.module.code_for_node(node.func)}(...)`"))

    def visit_Assign(self, node: cst.Assign) -> None:
        ctx = self.ctx
        for target in node.targets:
            names = ctx.qualified_names(target.target) if isinstance(target.target, cst.Attribute) else frozenset()
            if any(n and n.startswith(_CUDNN) and n[len(_CUDNN):] in CUDNN_FLAGS for n in names):
                if isinstance(node.value, cst.Name) and node.value.value == "False":
                    continue  # the default a spawned worker starts with anyway
                shown = f"`{ctx.module.code_for_node(target.target)} = ...`"
                self.sites.append((ctx.rank.site(target.target), shown))

    def finish(self) -> None:
        execution = self.ctx.rank.execution
        workers = sorted({w.name.value for w in execution.launched_workers()})
        worker = f"`{workers[0]}`" if len(workers) == 1 else "the worker"
        for site, shown in self.sites:
            if execution.runs(site) is not Runs.LAUNCHER:
                continue
            self.report(
                site.node,
                f"{shown} runs in the launcher process that starts the workers: spawned workers begin with "
                f"fresh random state and cuDNN flags, so it never reaches them; set it inside {worker}, "
                "seeding with `seed + rank`",
                statement=site.statement,
            )
