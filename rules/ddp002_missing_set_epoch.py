"""DDP002 missing-set-epoch."""

from __future__ import annotations

from ddplint.knowledge import DISTRIBUTED_SAMPLER_TEXTS
from ddplint.analysis.data import LoaderIteration, calls_set_epoch, passes_sampler
from ddplint.analysis.loops import bound_in_loop
from ddplint.analysis.names import dotted_name
from ddplint.analysis.rewrite import ProposedFix, insert_before
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule


class MissingSetEpoch(Rule):
    """
    ## What it does

    Flags an epoch loop that iterates a DataLoader whose sampler is a
    shuffling `DistributedSampler` (any alias; `ElasticDistributedSampler`
    too, and the loader ColossalAI's `plugin.prepare_dataloader(...,
    shuffle=True)` builds over one) but never calls
    `set_epoch(<the loop variable>)` on it: not on the
    sampler, not as `loader.sampler.set_epoch(epoch)`,
    `loader.batch_sampler.sampler.set_epoch(epoch)` or `loader.set_epoch`,
    and not in a helper of the module that receives the loader or sampler
    together with the epoch. A constant argument (`set_epoch(0)`) counts as
    missing. The loader may be built in a builder function of the module,
    or returned beside others (`return train_loader, val_loader`), and
    iterated directly (`for b in loader`, `enumerate`, `tqdm`, `zip`,
    `iter`, `with tqdm(loader) as bar: for b in bar`) or in a helper called
    from the epoch loop (`train_one_epoch(...)`). The finding points at the
    epoch loop's `for` line, with the sampler as a related location.

    Not flagged: `DistributedSampler(..., shuffle=False)`; other samplers;
    a loader iterated once with no loop around it; loaders handed to
    `accelerator.prepare(...)`, which sets the epoch itself.

    ## Why is this bad?

    `DistributedSampler` shuffles with a seed derived from its epoch, which
    only `set_epoch` changes. Without it every epoch visits the samples in
    the same order (and every rank the same shard of it), so the model
    trains on an identical sequence each epoch: no error, just worse
    convergence.

    ## Example

    ```python
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            train_step(batch)
    ```

    ## Use instead

    ```python
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            train_step(batch)
    ```

    ## Fix safety

    With `--unsafe-fixes`, the fix inserts `<loader>.sampler.set_epoch(<epoch>)`
    as the first statement of the epoch loop, where the loop variable is a
    plain name, the loader is a name (or attribute) bound outside the loop
    and was given its `sampler=`. It is unsafe because it changes the data
    order of every epoch after the first (the point of the fix, but training
    curves change) and because the loop variable must really count epochs
    (`for epoch in range(start, epochs)`). Anywhere else, and where the loop
    already calls `set_epoch` with the wrong value (the new call would be
    undone), the fix is advice only.

    ## References

    - [DistributedSampler: call set_epoch at the start of each epoch](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    """

    code = "DDP002"
    name = "missing-set-epoch"
    severity = Severity.WARNING
    summary = "A DistributedSampler's epoch is never set: every epoch has the same order."
    tokens = DISTRIBUTED_SAMPLER_TEXTS
    requires = frozenset({"data"})
    tags = ("correctness", "data-loading")

    def finish(self) -> None:
        uses, flagged = self.ctx.data.loaders, set()
        for loader, sampler in uses.shuffling_loaders() if uses is not None else ():
            for iteration in uses.iterations(loader):
                loop = iteration.loops[0] if iteration.loops else None
                if loop is None or id(loop) in flagged or uses.sets_epoch(iteration, loader, sampler):
                    continue
                flagged.add(id(loop))
                variable = self.ctx.module.code_for_node(loop.target)
                self.report(
                    loop,
                    f"this loop iterates a DataLoader with a shuffling DistributedSampler but never calls "
                    f"`set_epoch({variable})` on it, so every epoch uses the same order; call "
                    f"`{uses.sampler_name(sampler, loader, iteration)}.set_epoch({variable})` at the start of each epoch",
                    related=((sampler, "the DistributedSampler"),),
                    statement=loop,
                    fix=self._set_epoch_fix(iteration, loader),
                )

    def _set_epoch_fix(self, iteration: LoaderIteration, loader: cst.Call) -> ProposedFix:
        """Insert `<loader>.sampler.set_epoch(<epoch>)` first in the epoch loop
        (unsafe: review it), when the loop, the loader and its sampler are plain."""
        epoch_loop, iterated = iteration.loops[0], iteration.expr
        title = "Call `set_epoch(epoch)` on the sampler at the start of each epoch"
        body = epoch_loop.body
        plain = (
            isinstance(epoch_loop.target, cst.Name)
            and isinstance(body, cst.IndentedBlock)
            and iterated is not None
            and dotted_name(iterated) is not None
            and passes_sampler(loader)
        )
        if not plain or bound_in_loop(iterated, epoch_loop) or calls_set_epoch(epoch_loop.body):
            return ProposedFix.display_only(title)  # (a wrong `set_epoch(0)` would undo the new call)
        code = f"{self.ctx.module.code_for_node(iterated)}.sampler.set_epoch({epoch_loop.target.value})\n"
        return ProposedFix(title, (insert_before(body.body[0], cst.parse_statement(code)),), Applicability.UNSAFE)
