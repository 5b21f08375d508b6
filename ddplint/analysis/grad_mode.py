"""Grad mode: whether autograd records a graph where a node runs.

One question, asked by the rules and analyses that care whether a forward
or a loss carries a graph (a DDP forward's reducer, a loss accumulated with
its history): is the node inside ``with torch.no_grad():`` /
``torch.inference_mode()`` / ``torch.set_grad_enabled(False)``, or in a
function decorated with ``@torch.no_grad()``?
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ddplint.analysis.catalogue import GRAD_MODE_SETTERS, NO_GRAD_CONTEXTS
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView


def under_no_grad(stack: Sequence[cst.CSTNode], ctx: ModelView) -> bool:
    """Whether the innermost node of `stack` runs with autograd off: inside a
    ``with`` of `torch.no_grad()`, `torch.inference_mode()` or
    `torch.set_grad_enabled(False)`, or in a function (or a function around
    it) decorated with `@torch.no_grad()` / `@torch.inference_mode()`."""
    for node in stack:
        if isinstance(node, cst.With):
            if any(isinstance(item.item, cst.Call) and disables_grad(item.item, ctx) for item in node.items):
                return True
        elif isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                expr = decorator.decorator
                if ctx.qualified_names(expr.func if isinstance(expr, cst.Call) else expr) & NO_GRAD_CONTEXTS:
                    return True
    return False


def disables_grad(call: cst.Call, ctx: ModelView) -> bool:
    """Whether a context manager call turns autograd off: `torch.no_grad()`,
    `torch.inference_mode()`, `torch.set_grad_enabled(False)`."""
    names = ctx.qualified_names(call.func)
    if names & NO_GRAD_CONTEXTS:
        return True
    if names & GRAD_MODE_SETTERS and call.args:
        value = call.args[0].value
        return isinstance(value, cst.Name) and value.value == "False"
    return False
