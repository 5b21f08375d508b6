"""DDP027 unreduced-stop-decision."""

from __future__ import annotations

from ddplint.analysis.callgraph import enclosing_loops
from ddplint.knowledge import LOCAL_VALUE_WORDS
from ddplint.analysis.guards import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class UnreducedStopDecision(Rule):
    """
    ## What it does

    Flags a `break`, `return` or `continue` inside a loop, taken when a
    condition on a value each rank computes from its own batch holds (a
    loss, a metric, an early-stopping object fed one: `if val_loss > best:
    break`, `if torch.isnan(loss): continue`, `if stopper.early_stop:
    break`), when the loop's next pass (or, after a `break`, the code after
    the loop; after a `continue`, the rest of the body) reaches a collective:
    an explicit one, a helper that reduces, or a backward of distributed
    code, also through the module's helpers. The value must be unreduced on
    the way: not passed to `all_reduce`/`broadcast`/`gather` or a reducing
    helper (`reduce_tensor`, `all_reduce_mean`,
    `synchronize_between_processes`), nor returned by a helper that reduces
    or that the linter cannot see.

    Not flagged: reduced or broadcast values, counters, epochs, step limits
    and clocks (not a loss's or a metric's name), exits under a rank guard
    (DDP001's), Lightning modules and callbacks, one-process code.

    ## Why is this bad?

    Each rank's loss is computed on its own batch, so ranks disagree: rank 0
    stops while rank 1 goes on into the next all-reduce (the next backward,
    the barrier of the checkpoint) and waits for rank 0 forever. The job
    hangs until the NCCL watchdog kills it, often hours into training, at
    the first epoch where the ranks' numbers fall on both sides of the line.

    ## Example

    ```python
    def fit(ddp_model, loader, val_loader, optimizer, epochs, tolerance):
        best = float("inf")
        for epoch in range(epochs):
            for x, y in loader:
                F.cross_entropy(ddp_model(x), y).backward()  # DDP all-reduces the gradients
                optimizer.step()
            val_loss = sum(F.cross_entropy(ddp_model(x), y).item() for x, y in val_loader)  # this rank's shard
            if val_loss > best + tolerance:
                break
            best = min(best, val_loss)
    ```

    ## Use instead

    ```python
            val_loss = torch.tensor(sum(F.cross_entropy(ddp_model(x), y).item() for x, y in val_loader))
            dist.all_reduce(val_loss)  # every rank decides on the same number
            if val_loss.item() > best + tolerance:
                break
    ```

    ## References

    - [torch.distributed.all_reduce](https://pytorch.org/docs/stable/distributed.html#torch.distributed.all_reduce)
    """

    code = "DDP027"
    name = "unreduced-stop-decision"
    severity = Severity.ERROR
    summary = "A loop left on one rank's unreduced loss or metric: the other ranks wait in the next collective forever."
    preview = True
    requires = frozenset({"rank"})
    tokens = ("break", "return", "continue")
    #: A loss's or metric's name, a NaN test, an early stopper or an evaluation helper must be in sight.
    context_tokens = (*sorted(LOCAL_VALUE_WORDS), "nan", "finite", "stop", "eval", "valid", "test")
    distributed_only = True
    tags = ("correctness", "deadlock")

    def trigger_Break(self, node: cst.Break) -> bool:
        return bool(enclosing_loops(self.ctx.stack))

    trigger_Continue = trigger_Return = trigger_Break

    def check_Break(self, node: cst.CSTNode, site: Site) -> None:
        if site.single_process or self.ctx.one_process_group or self.ctx.rank.selects_ranks(site.guards):
            return  # one process, or an exit some ranks take: DDP001's
        decision = self.ctx.per_rank_values.unreduced_exit(node, self.ctx.stack, site.function, site.loops)
        if decision is None:
            return
        test, value, collective = self.ctx.module.code_for_node(decision.test), decision.value, decision.collective
        what = (f"ranks where it holds skip {collective}, which the others enter: their collectives no longer match"
                if decision.leave == "continue" else
                f"ranks where it holds leave, and the others enter {collective} and wait for them forever")
        self.report(node, f"`{decision.leave}` depends on `{test}`, and `{value}` holds this rank's own, unreduced number, so "
                    f"ranks decide differently: {what}; all-reduce `{value}` (or broadcast the decision from rank 0) first",
                    related=((decision.test, "the condition on a per-rank value"),))

    check_Continue = check_Return = check_Break
