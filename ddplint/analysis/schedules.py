"""Learning-rate schedules sized against accelerate's `prepare`.

`accelerator.prepare` shards a DataLoader (its `len` becomes the per-process
number of batches) and wraps a scheduler in `AcceleratedScheduler`, whose
`step()` steps the wrapped scheduler once per process (unless
`split_batches=True` or `step_scheduler_with_optimizer=False`). A schedule
sized from `len(train_dataloader)` is therefore right in two combinations
only: the length read before `prepare` with the scheduler prepared (the Hugging
Face examples), or read after it with the scheduler not prepared. These helpers
find, for a scheduler constructor, the `len(...)` reads its step counts come
from (through the assignments of the function before it), and where a name
is prepared in the function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.knowledge import ACCELERATOR, PROCESS_COUNT_WORDS, SCHEDULE_LENGTH_KEYWORDS, SCHEDULER_STEP_KEYWORDS
from ddplint.analysis.receivers import class_types, prepare_call, prepared_arguments
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_DEPTH = 5


@dataclass(frozen=True)
class ScheduleLength:
    """Where a scheduler's step counts come from: the `len(x)` calls, and
    whether any count is visibly scaled by the process count."""

    lengths: tuple[cst.Call, ...]
    scaled: bool


def schedule_arguments(call: cst.Call) -> list[cst.BaseExpression]:
    """The step-count arguments of a scheduler constructor, by keyword."""
    return [a.value for a in call.args if a.keyword is not None and a.keyword.value in SCHEDULE_LENGTH_KEYWORDS]


def schedule_length(call: cst.Call, function: cst.FunctionDef, ctx: ModelView) -> ScheduleLength:
    """The `len(...)` reads the scheduler's step counts depend on, through
    names and attributes (``args.max_train_steps``) assigned in `function`
    before `call`."""
    order = _order(function)
    here = order.get(id(call), len(order))
    assignments = _assignments(function, ctx)
    todo = [(e, 0) for e in schedule_arguments(call)]
    lengths: dict[int, cst.Call] = {}
    scaled = False
    seen: set[str] = set()
    while todo:
        expression, depth = todo.pop()
        text = ctx.module.code_for_node(expression)
        scaled = scaled or any(word in text for word in PROCESS_COUNT_WORDS)
        for node in (expression, *descendants(expression)):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and node.args:
                lengths[id(node)] = node
            elif isinstance(node, (cst.Name, cst.Attribute)) and depth < _DEPTH:
                key = ctx.module.code_for_node(node)
                if key not in seen:
                    seen.add(key)
                    todo += [(v, depth + 1) for v in assignments.get(key, ()) if order.get(id(v), 0) < here]
    return ScheduleLength(tuple(lengths.values()), scaled)


def prepared_before(node: cst.CSTNode, name: cst.BaseExpression, function: cst.FunctionDef, ctx: ModelView) -> bool | None:
    """Whether `name` (``train_dataloader``) was bound to a prepared object
    before `node` in `function`: True, False (prepared only after it), or
    None (the function never prepares it)."""
    order = _order(function)
    text = ctx.module.code_for_node(name)
    at = [order.get(id(call), 0) for call, targets in prepare_bindings(function, ctx) if text in targets]
    if not at:
        return None
    return min(at) < order.get(id(node), 0)


def is_prepared_in(value: cst.BaseExpression, function: cst.FunctionDef, ctx: ModelView) -> bool:
    """Whether `value` (a scheduler call, or the name it is bound to) is
    passed to ``accelerator.prepare(...)`` in `function`."""
    text = ctx.module.code_for_node(value)
    for call, _ in prepare_bindings(function, ctx):
        if any(a.value is value or ctx.module.code_for_node(a.value) == text for a in call.args):
            return True
    return False


def prepare_bindings(function: cst.FunctionDef, ctx: ModelView) -> list[tuple[cst.Call, tuple[str, ...]]]:
    """Each ``accelerator.prepare(...)`` call of `function` with the texts of
    the targets it binds (``a, self.b = accelerator.prepare(a, b)``)."""
    bound: dict[int, tuple[str, ...]] = {}
    calls: list[cst.Call] = []
    for node in descendants(function.body, into_functions=False):
        if isinstance(node, cst.Call) and prepare_call(node, ctx):
            calls.append(node)
        elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            texts: list[str] = []
            for target in (t.target for t in node.targets):
                elements = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
                texts += [ctx.module.code_for_node(e) for e in elements]
            bound[id(node.value)] = tuple(texts)
    return [(call, bound.get(id(call), ())) for call in calls]


def _order(function: cst.FunctionDef) -> dict[int, int]:
    return {id(n): i for i, n in enumerate(descendants(function))}


def _assignments(function: cst.FunctionDef, ctx: ModelView) -> dict[str, list[cst.BaseExpression]]:
    """Target text -> the values assigned to it in `function` (augmented ones included)."""
    table: dict[str, list[cst.BaseExpression]] = {}
    for node in descendants(function.body, into_functions=False):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                table.setdefault(ctx.module.code_for_node(target.target), []).append(node.value)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and node.value is not None:
            table.setdefault(ctx.module.code_for_node(node.target), []).append(node.value)
    return table


def steps_per_process(ctx: ModelView) -> bool:
    """Whether the module's prepared schedulers step once per process per
    call (accelerate's default): no `Accelerator(...)` of the module passes
    `split_batches`, `step_scheduler_with_optimizer`, a dataloader config or
    ``**kwargs`` (each may change it)."""
    for node in descendants(ctx.module):
        if isinstance(node, cst.Call) and ACCELERATOR in class_types(node.func, ctx):
            if any(a.star == "**" or (a.keyword is not None and a.keyword.value in SCHEDULER_STEP_KEYWORDS) for a in node.args):
                return False
    return True


@dataclass(frozen=True)
class MisSized:
    """A schedule whose length does not match how accelerate steps it:
    `read` is the `len(...)`; `early` True when the schedule ends
    `num_processes` times early, False when that much late."""

    read: cst.Call
    early: bool


def mis_sized(call: cst.Call, statement: cst.CSTNode, function: cst.FunctionDef, ctx: ModelView) -> MisSized | None:
    """Whether the scheduler `call` (in `statement`) is sized from a loader's
    length on the wrong side of `prepare`: read after it with the scheduler
    prepared, or before it with the scheduler not prepared. Counts scaled by
    the process count, and modules whose `Accelerator` may step once, are fine."""
    length = schedule_length(call, function, ctx)
    if length.scaled or not length.lengths or not steps_per_process(ctx):
        return None
    targets = [t.target for s in getattr(statement, "body", ()) if isinstance(s, cst.Assign) for t in s.targets]
    prepared = any(is_prepared_in(v, function, ctx) for v in (call, *targets))
    for read in length.lengths:
        loader = read.args[0].value
        after = prepared_before(read, loader, function, ctx)
        if after is None and prepared_arguments(loader, ctx):
            after = True  # a loader prepared elsewhere, passed in
        if after is not None and after == prepared:
            return MisSized(read, early=after)
    return None
