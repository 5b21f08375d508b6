"""DDP027 unreduced-stop-decision."""

from __future__ import annotations

from ddplint.analysis.callgraph import enclosing_loops
from ddplint.analysis.decisions import following
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
    for epoch in range(epochs):
        train_one_epoch(ddp_model, loader)  # backward: an all-reduce
        val_loss = evaluate(ddp_model, val_loader)  # this rank's shard only
        if val_loss > best + tolerance:
            break
    ```

    ## Use instead

    ```python
    for epoch in range(epochs):
        train_one_epoch(ddp_model, loader)
        val_loss = torch.tensor(evaluate(ddp_model, val_loader), device=device)
        dist.all_reduce(val_loss, op=dist.ReduceOp.AVG)  # every rank decides on the same number
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
    distributed_only = True
    tags = ("correctness", "deadlock")

    def trigger_Break(self, node: cst.Break) -> bool:
        return bool(enclosing_loops(self.ctx.stack))

    trigger_Continue = trigger_Return = trigger_Break

    def check_Break(self, node: cst.CSTNode, site: Site) -> None:
        ctx = self.ctx
        if site.single_process or ctx.one_process_group or ctx.rank.selects_ranks(site.guards):
            return  # one process, or an exit some ranks take: DDP001's
        if _in_lightning(ctx):
            return
        values = ctx.per_rank_values
        loop = site.loops[0]
        for test in _tests_up_to(ctx.stack, loop):
            value = values.unreduced(test, site.function)
            if value is None or ctx.rank.expression_is_rank_dependent(test):
                continue
            if isinstance(node, cst.Continue):
                collective = values.reaches_collective(_rest_of_body(ctx.stack, loop), site.function)
            else:
                collective = values.reaches_collective((loop,), site.function)
                if collective is None and isinstance(node, cst.Break):
                    collective = values.reaches_collective(following(ctx.stack, loop), site.function)
            if collective is not None:
                self._report(node, test, value, collective)
            return

    check_Continue = check_Return = check_Break

    def _report(self, node: cst.CSTNode, test: cst.CSTNode, value: str, collective: str) -> None:
        code = self.ctx.module.code_for_node
        leave = code(node).strip().split()[0]
        what = (
            f"ranks where it holds skip {collective}, which the others enter: their collectives no longer match"
            if leave == "continue"
            else f"ranks where it holds leave, and the others enter {collective} and wait for them forever"
        )
        self.report(
            node,
            f"`{leave}` depends on `{code(test)}`, and `{value}` holds this rank's own, unreduced number, so ranks "
            f"decide differently: {what}; all-reduce `{value}` (or broadcast the decision from rank 0) first",
            related=((test, "the condition on a per-rank value"),),
        )


def _tests_up_to(stack: list[cst.CSTNode], loop: cst.CSTNode) -> list[cst.CSTNode]:
    """The tests of the `if`s around the exit inside the loop, innermost first."""
    index = next(i for i, n in enumerate(stack) if n is loop)
    return [n.test for n in reversed(stack[index + 1 :]) if isinstance(n, cst.If)]


def _rest_of_body(stack: list[cst.CSTNode], loop: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of the loop body after the one holding the exit."""
    index = next(i for i, n in enumerate(stack) if n is loop)
    block, child = stack[index + 1], stack[index + 2]
    body = list(block.body)
    return body[body.index(child) + 1 :] if child in body else []


def _in_lightning(ctx) -> bool:
    """A method of a Lightning module or callback: Lightning decides when to stop."""
    for node in ctx.stack:
        if isinstance(node, cst.ClassDef) and any(
            "lightning" in (q or "") or "Callback" in ctx.module.code_for_node(b.value)
            for b in node.bases for q in ctx.qualified_names(b.value) | {None}
        ):
            return True
    return False
