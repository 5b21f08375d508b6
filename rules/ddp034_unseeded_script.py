"""DDP034 unseeded-script."""

from __future__ import annotations

import re

from ddplint.knowledge import INIT_PROCESS_GROUP
from ddplint.analysis.guards import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

_TRAINING = re.compile(r"\.backward\(|\boptimi[sz]er\.step\(|\.step\(\)")


class UnseededScript(Rule):
    """
    ## What it does

    Notes a training script that joins the process group and seeds nothing:
    no `torch.manual_seed`, `np.random.seed`, `random.seed`, framework
    `set_seed`/`seed_everything`, or seeding helper of its own
    (`init_seeds(seed + RANK)`, `utils.fix_random_seeds(...)`). One note
    per module, at the first `init_process_group(...)` that every rank runs.

    Off by default (select it with `--select DDP034` or
    `extend-select = ["DDP034"]`): on the ecosystem check most such scripts
    were benchmarks, demos and speed runs where leaving the seed out is
    deliberate (until this round it was DDP024, which now reports the one
    harmful shape of unseeded ranks: a train/validation split drawn on every
    rank). Modules that take no optimisation step, and tools that join
    a process group for one process, are never noted.

    ## Why is this bad?

    Nothing is wrong between the ranks: unseeded, PyTorch, NumPy and
    `random` start from fresh entropy in every process, so each rank draws
    its own stream. But no run can be repeated, and a divergence or a crash
    that shows up once cannot be reproduced.

    ## Example

    ```python
    dist.init_process_group("nccl")
    model = DDP(build_model().cuda(local_rank), device_ids=[local_rank])
    for batch in loader:
        model(batch).loss.backward()
        optimizer.step()
    ```

    ## Use instead

    ```python
    dist.init_process_group("nccl")
    torch.manual_seed(args.seed + dist.get_rank())
    model = DDP(build_model().cuda(local_rank), device_ids=[local_rank])
    for batch in loader:
        model(batch).loss.backward()
        optimizer.step()
    ```

    ## References

    - [PyTorch: Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    """

    code = "DDP034"
    name = "unseeded-script"
    severity = Severity.NOTE
    summary = "A training script that joins the process group and seeds nothing (off by default)."
    requires = frozenset({"rank", "seeds"})
    distributed_only = True
    default_enabled = False
    tokens = tuple(sorted({name.rsplit(".", 1)[-1] for name in INIT_PROCESS_GROUP}))
    tags = ("reproducibility",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.noted = False

    def trigger_Call(self, node: cst.Call) -> bool:
        return bool(self.ctx.qualified_names(node.func) & INIT_PROCESS_GROUP)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx = self.ctx
        if self.noted or ctx.seeds.seeds_anything or _TRAINING.search(ctx.source) is None:
            return  # noted once, seeded, or a tool or benchmark that trains nothing
        if ctx.rank.execution.from_elsewhere(site.function) or not ctx.rank.runs_on_every_rank(site):
            return  # a helper other modules call (the program that may seed is theirs), or not every rank's
        self.noted = True
        self.report(
            node,
            "the process group is initialised but nothing is seeded: runs cannot be reproduced; "
            f"seed each rank with `torch.manual_seed(seed + {ctx.rank_advice.rank(site)})`",
        )
