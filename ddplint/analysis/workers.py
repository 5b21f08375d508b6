"""How many DataLoader workers a `num_workers` value asks for, per rank.

A count written for one process on the whole node (`os.cpu_count()`,
`len(os.sched_getaffinity(0))`) or a number above the configured
`max-workers-per-rank` is too many once every local rank starts that many
workers. Values are followed through the names they are assigned to (all of
them must agree) and `count or default` fallbacks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.knowledge import CPU_COUNTS, CPU_SETS
from ddplint.analysis.values import int_value
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_DEPTH = 6
NODE_CORES = "every core of the node"


def excess_workers(count: cst.BaseExpression, ctx: ModelView, depth: int = 0) -> str | None:
    """Why the worker count `count` is too many for one rank of several on a
    node — `NODE_CORES` for a count of every core, "above max-workers-per-rank
    = N" for a larger number than the settings allow — or None when it is
    fine or unknown."""
    if depth > _DEPTH:
        return None
    if isinstance(count, cst.BooleanOperation) and isinstance(count.operator, cst.Or):
        return excess_workers(count.left, ctx, depth + 1)  # `os.cpu_count() or 1`
    if isinstance(count, cst.Call):
        return NODE_CORES if counts_node_cores(count, ctx) else None
    if isinstance(count, cst.Name):
        values = [v for v in ctx.values_of(count) if isinstance(v, cst.BaseExpression)]
        reasons = {excess_workers(v, ctx, depth + 1) for v in values}
        return reasons.pop() if values and None not in reasons else None
    number = int_value(count, ctx)
    limit = ctx.settings.max_workers_per_rank
    return f"above max-workers-per-rank = {limit}" if number is not None and number > limit else None


def counts_node_cores(call: cst.Call, ctx: ModelView) -> bool:
    """Whether `call` returns every core of the node: `os.cpu_count()`,
    `multiprocessing.cpu_count()`, `len(os.sched_getaffinity(0))`."""
    names = ctx.qualified_names(call.func)
    if names & CPU_COUNTS:
        return True
    return (
        names == {"builtins.len"} and bool(call.args) and isinstance(call.args[0].value, cst.Call)
        and bool(ctx.qualified_names(call.args[0].value.func) & CPU_SETS)
    )  # fmt: skip
