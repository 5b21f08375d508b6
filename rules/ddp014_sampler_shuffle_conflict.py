"""DDP014 sampler-shuffle-conflict."""

from __future__ import annotations

from ddplint.analysis.data import loader_conflicts
from ddplint.analysis.names import short_code
from ddplint.analysis.rewrite import ProposedFix, with_arg_value, without_arg
from ddplint.analysis.values import certainly_not_none
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class SamplerShuffleConflict(Rule):
    """
    ## What it does

    Flags a `torch.utils.data.DataLoader(...)` whose arguments PyTorch
    rejects with `ValueError` when the loader is built, exactly as
    `DataLoader.__init__` checks them:

    - `sampler` given together with a truthy `shuffle`;
    - `batch_sampler` given together with `batch_size` other than 1, a
      truthy `shuffle`, a `sampler`, or a truthy `drop_last`;
    - an `IterableDataset` (defined in the module) with `shuffle` other than
      `False`/`None`, or with a `sampler` or `batch_sampler`.

    Arguments are matched by keyword and by position
    (`DataLoader(ds, 32, True, sampler)` passes `shuffle=True`). Only what is
    certain from the code is flagged: `shuffle=True` or a variable that is
    always `True`, never an unknown variable such as `shuffle=args.shuffle`.
    A sampler counts as given when some path certainly passes one, which
    includes the common `sampler = DistributedSampler(ds) if distributed
    else None`: that loader works on one GPU and raises as soon as the job
    runs distributed.

    ## Why is this bad?

    The error is raised at start-up, after the job has waited in the queue
    for its nodes, and in the distributed case only, so a single-GPU test
    run does not catch it. With a `DistributedSampler`, shuffling is the
    sampler's job (`DistributedSampler(dataset, shuffle=True)`), not the
    loader's.

    ## Example

    ```python
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=32, shuffle=True, sampler=sampler)
    ```

    ## Use instead

    ```python
    sampler = DistributedSampler(dataset, shuffle=True) if distributed else None
    loader = DataLoader(dataset, batch_size=32, shuffle=(sampler is None), sampler=sampler)
    ```

    ## Fix safety

    Safe. When the sampler is always given, `--fix` drops `shuffle=` (a
    positional `shuffle` becomes `False`): the sampler shuffles, as
    `DistributedSampler(..., shuffle=True)` does by default. When the
    sampler may be `None` (`DistributedSampler(ds) if distributed else
    None`), `shuffle=True` becomes `shuffle=(sampler is None)`, which keeps
    shuffling on one GPU. Other conflicts (`batch_sampler=`, an
    `IterableDataset`) have no automatic fix.

    ## References

    - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    """

    code = "DDP014"
    name = "sampler-shuffle-conflict"
    severity = Severity.ERROR
    summary = "DataLoader arguments that PyTorch rejects with ValueError at start-up."
    tokens = ("DataLoader",)
    tags = ("correctness", "data-loading")

    def visit_Call(self, node: cst.Call) -> None:
        for conflict in loader_conflicts(node, self.ctx):
            maybe = f" (whenever `{conflict.when}` is not None)" if conflict.when else ""
            fix = None
            if conflict.option == "sampler":
                sampler, ((_, shuffle),) = conflict.given, conflict.conflicts
                message = (
                    f"`DataLoader` gets `sampler={self._code(sampler.value)}` together with "
                    f"`shuffle={self._code(shuffle.value)}`{maybe}: PyTorch raises "
                    "`ValueError: sampler option is mutually exclusive with shuffle`; drop `shuffle=` "
                    "(let the sampler shuffle) or pass `shuffle=(sampler is None)`"
                )
                related = ((shuffle, "`shuffle` is truthy here"), (sampler, "the sampler"))
                fix = self._shuffle_fix(node, sampler, shuffle)
            elif conflict.option == "batch_sampler":
                shown = ", ".join(f"`{self._code(a.value)}` for `{name}`" for name, a in conflict.conflicts)
                message = (
                    f"`DataLoader` gets `batch_sampler=` together with {shown}{maybe}: "
                    "PyTorch raises `ValueError: batch_sampler option is mutually exclusive with "
                    "batch_size, shuffle, sampler, and drop_last`; set those on the batch sampler instead"
                )
                related = tuple((a, "conflicts with `batch_sampler`") for _, a in conflict.conflicts)
            else:
                shown = ", ".join(f"`{name}={self._code(a.value)}`" for name, a in conflict.conflicts)
                message = (
                    f"`{conflict.dataset.name.value}` is an IterableDataset, which takes no shuffle, sampler or "
                    f"batch_sampler, but this `DataLoader` gets {shown}: PyTorch raises `ValueError` at "
                    "start-up; shuffle and shard inside the dataset's `__iter__` instead"
                )
                related = ((conflict.dataset.name, "the IterableDataset"),)
            self.report(node, message, related=related, fix=fix)

    def _shuffle_fix(self, call: cst.Call, sampler: cst.Arg, shuffle: cst.Arg) -> ProposedFix:
        """Let the sampler shuffle: drop `shuffle=` when a sampler is always
        given, else shuffle only when it is not (`shuffle=(sampler is None)`)."""
        if certainly_not_none(sampler.value, self.ctx):
            if shuffle.keyword is not None:
                return ProposedFix("Remove `shuffle=`; the sampler shuffles", ((call, without_arg(call, shuffle)),))
            return ProposedFix("Pass `False` for `shuffle`; the sampler shuffles",
                               ((call, with_arg_value(call, shuffle, cst.Name("False"))),))
        if not isinstance(sampler.value, cst.Name):
            return ProposedFix.display_only("Pass `shuffle=` only when no sampler is given")
        test = cst.parse_expression(f"({sampler.value.value} is None)")
        name = self._code(sampler.value)
        return ProposedFix(f"Shuffle only without a sampler: `shuffle=({name} is None)`",
                           ((call, with_arg_value(call, shuffle, test)),))

    def _code(self, node: cst.CSTNode) -> str:
        return short_code(self.ctx.module, node)
