"""Gradient accumulation: how a loop's micro-batches meet the optimizer step.

A loop's body is read as iterations: `iteration_calls` gives each call with
the compound statements between the loop and it, so a question can tell a
call that runs on every iteration from one under ``if (i + 1) % k == 0:``
(`gated`) or inside ``with model.no_sync():`` (`no_sync_of`).
`micro_batches` names the shape of a training loop: the backward passes that
run on every iteration and the optimizer steps that follow them, in the loop
(every iteration, or gated to every k-th) or after it in the enclosing loop
(``for micro in range(k): ... loss.backward()`` then ``optimizer.step()``).
`wrapper_kind` asks the value flow (`model.origins`: assignments,
``self.model`` attributes, helper returns, parameters) whether an expression
may hold a DDP-wrapped model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from ddplint.knowledge import ACCUMULATION_TEST, BACKWARD_CHAIN_METHODS, MANUAL_REDUCE, SYNC_CONTROLS
from ddplint.analysis.collectives import wrapper_of
from ddplint.analysis.loops import is_step
from ddplint.analysis.tree import children
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_PERIODIC = re.compile(ACCUMULATION_TEST)


@dataclass(frozen=True)
class Reached:
    """A call of a loop body and the compound statements around it within the loop, outermost first."""

    call: cst.Call
    path: tuple[cst.CSTNode, ...]


@dataclass(frozen=True)
class MicroBatches:
    """A training loop's backward passes (those on every iteration) and the steps after them."""

    loop: cst.CSTNode
    backwards: tuple[Reached, ...]
    #: Optimizer steps of the loop, or of the enclosing loop when this one takes none.
    steps: tuple[Reached, ...]
    #: Whether the steps come every k-th iteration only (gated, or after the loop): accumulation.
    accumulates: bool


def iteration_calls(loop: cst.CSTNode) -> list[Reached]:
    """The calls of `loop`'s body (nested blocks, not nested functions), in source order."""
    found: list[Reached] = []
    todo: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(loop.body, ())]  # type: ignore[attr-defined]
    while todo:
        node, path = todo.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call):
            found.append(Reached(node, path))
        inner = (*path, node) if isinstance(node, (cst.If, cst.With, cst.For, cst.While, cst.Try)) else path
        todo.extend((child, inner) for child in reversed(children(node)))
    return found


def periodic(test: cst.BaseExpression) -> bool:
    """A test of a step counter or accumulation boundary (`(i + 1) % k == 0`, `is_accumulating`)."""
    return _PERIODIC.search(cst.Module([]).code_for_node(test)) is not None


def gated(reached: Reached) -> cst.If | None:
    """The step-count test `reached` runs under within its loop, if any."""
    return next((n for n in reached.path if isinstance(n, cst.If) and periodic(n.test)), None)


def is_backward(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"


def is_optimizer_step(call: cst.Call) -> bool:
    return is_step(call) and not is_backward(call)


def micro_batches(loop: cst.CSTNode, enclosing: tuple[cst.CSTNode, ...]) -> MicroBatches | None:
    """The shape of `loop` (`enclosing`: the loops around it, innermost first),
    or None when it runs no backward on every iteration or no step follows."""
    reached = iteration_calls(loop)
    backwards = tuple(r for r in reached if is_backward(r.call) and gated(r) is None)
    if not backwards:
        return None
    steps = tuple(r for r in reached if is_optimizer_step(r.call))
    if steps:
        return MicroBatches(loop, backwards, steps, all(gated(r) is not None for r in steps))
    if not enclosing:
        return None
    after = tuple(r for r in iteration_calls(enclosing[0]) if is_optimizer_step(r.call) and loop not in r.path)
    return MicroBatches(loop, backwards, after, True) if after else None


def no_sync_of(node: cst.CSTNode) -> cst.BaseExpression | None:
    """`model` of ``with model.no_sync():`` (a plain call, not a conditional context)."""
    if isinstance(node, cst.With):
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "no_sync":
                return call.func.value
    return None


def unconditional_no_sync(reached: Reached) -> cst.With | None:
    """The ``with X.no_sync():`` around `reached` that no test inside the loop chooses."""
    for node in reached.path:
        if isinstance(node, cst.If):
            return None
        if no_sync_of(node) is not None:
            return node  # type: ignore[return-value]
    return None


def wrapper_kind(node: cst.BaseExpression, ctx: ModelView) -> str | None:
    """"DDP"/"FSDP" when some value `node` may hold is that wrapper
    (``DDP(m) if distributed else m`` reads as DDP)."""
    if not isinstance(node, (cst.Name, cst.Attribute)):
        return None
    kinds = {wrapper_of(origin, ctx) for origin in ctx.origins(node)} - {None}
    return kinds.pop() if len(kinds) == 1 else None


def forwards_of(reached: list[Reached], ctx: ModelView, kind: str = "DDP") -> Iterator[tuple[Reached, cst.BaseExpression]]:
    """Calls that run a `kind`-wrapped model, with the model: ``model(x)``,
    ``model.forward(x)``, or a helper given it (``compute_loss(model, batch)``)."""
    for item in reached:
        call = item.call
        if is_step(call) or no_sync_of_call(call):
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        candidates = [func, *(a.value for a in call.args)]
        for candidate in candidates:
            if isinstance(candidate, (cst.Name, cst.Attribute)) and wrapper_kind(candidate, ctx) == kind:
                yield item, candidate
                break


def no_sync_of_call(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "no_sync"


# ------------------------------------------------------------ the three shapes of DDP026


def unsynced_accumulation(loop: cst.CSTNode, enclosing: tuple[cst.CSTNode, ...], ctx: ModelView) -> tuple[cst.Call, cst.BaseExpression] | None:
    """(a) (the backward, the model): `loop` accumulates micro-batches through
    a DDP-wrapped model and every backward all-reduces (none in ``no_sync``)."""
    shape = micro_batches(loop, enclosing)
    if shape is None or not shape.accumulates or any(unconditional_no_sync(r) for r in shape.backwards):
        return None
    every = [r for r in iteration_calls(loop) if gated(r) is None]
    forward = next(forwards_of(every, ctx), None)
    return (shape.backwards[0].call, forward[1]) if forward is not None else None


def unreduced_no_sync(node: cst.CSTNode, enclosing: tuple[cst.CSTNode, ...]) -> cst.With | None:
    """(c) The ``with X.no_sync():`` that the stepping micro-batch runs in:
    `node` a loop whose backwards all run inside an unconditional one before a
    step, or a ``with X.no_sync():`` around an optimizer step."""
    if isinstance(node, cst.With):
        return node if no_sync_of(node) is not None and any(is_optimizer_step(r.call) for r in iteration_calls(node)) else None
    shape = micro_batches(node, enclosing)
    if shape is None or not all(unconditional_no_sync(r) for r in shape.backwards):
        return None
    return unconditional_no_sync(shape.backwards[0])


def backward_only_no_sync(node: cst.With, scope: cst.CSTNode | None, ctx: ModelView) -> cst.BaseExpression | None:
    """(b) `X` of ``with X.no_sync():`` around a backward, X DDP-wrapped, when
    the body calls nothing but the backward (`scaler.scale(loss).backward()`:
    no helper that may run X) and a forward of X runs elsewhere in `scope`
    (the loop around, else the function): DDP armed the all-reduce in that forward."""
    model = no_sync_of(node)
    inside = iteration_calls(node)
    if model is None or scope is None or not any(is_backward(r.call) for r in inside):
        return None
    if not all(isinstance(r.call.func, cst.Attribute) and r.call.func.attr.value in BACKWARD_CHAIN_METHODS for r in inside):
        return None
    shown = ctx.module.code_for_node(model)
    if shown in ctx.module.code_for_node(node.body) or wrapper_kind(model, ctx) != "DDP":
        return None
    outside = [r for r in iteration_calls(scope) if node not in r.path]
    return model if any(ctx.module.code_for_node(m) == shown for _, m in forwards_of(outside, ctx)) else None


#: The kinds of `sync_findings`.
WASTED, NO_EFFECT, UNREDUCED = "wasted", "no-effect", "unreduced"


def sync_findings(node: cst.CSTNode, ctx: ModelView) -> Iterator[tuple[cst.CSTNode, str, cst.BaseExpression]]:
    """(where, kind, the model) for a loop or ``with`` being visited
    (`ctx.loops` required): WASTED (a), NO_EFFECT (b), UNREDUCED (c). (a) only
    in a module that shows no sync control at all, (c) only in a function that
    reduces no gradients by hand."""
    if not isinstance(node, (cst.For, cst.While, cst.With)):
        return
    loops = ctx.loops.enclosing_loops()  # type: ignore[attr-defined]
    function = ctx.enclosing_function()
    unreduced = unreduced_no_sync(node, loops)
    if unreduced is not None and not any(w in ctx.module.code_for_node(function or node) for w in MANUAL_REDUCE):
        yield unreduced, UNREDUCED, no_sync_of(unreduced)  # type: ignore[misc]
    wasted = None if any(w in ctx.source for w in SYNC_CONTROLS) else unsynced_accumulation(node, loops, ctx)
    if wasted is not None:
        yield wasted[0], WASTED, wasted[1]
    model = backward_only_no_sync(node, loops[0] if loops else function, ctx) if isinstance(node, cst.With) else None
    if model is not None:
        yield node, NO_EFFECT, model
