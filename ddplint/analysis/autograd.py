"""Autograd: where a graph is recorded, which values carry one, what a backward back-propagates.

- `under_no_grad(stack, ctx)`: the one question "does autograd record here?"
  (``with torch.no_grad():``, ``inference_mode()``, ``set_grad_enabled(False)``,
  ``@torch.no_grad()`` functions), asked by the rules and analyses that care
  whether a forward or a loss carries a graph (a DDP forward's reducer, a
  loss accumulated with its history);
- `backpropagated(call)`: what a ``.backward`` call back-propagates
  (``loss.backward()``, ``accelerator.backward(loss)``, ``scaler.scale(loss).backward()``);
- `accumulations(node)`: what a statement adds to a variable that outlives it
  (``total += v``, ``losses.append(v)``, ``history[k] = v``);
- `LoopBody`: what a loop's body back-propagates and re-binds, and whether a
  value accumulated there keeps its graph alive across iterations;
- `used_as_tensor(scope, name, besides)`: whether a variable is used as a
  tensor elsewhere (a method, a call, leaving the function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from ddplint.knowledge import (
    BACKWARD_OWNERS,
    DETACHING,
    GRAD_MODE_SETTERS,
    LIST_METHODS,
    LOSS_PRODUCER_WORDS,
    NO_GRAD_CONTEXTS,
    NUMBER_BUILTINS,
    NUMBER_CONVERSIONS,
)
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants
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


def detached(stack: Sequence[cst.CSTNode]) -> bool:
    """Whether the call on top of `stack` is detached at once (`model(x).detach()`): no graph leaves it."""
    return (
        len(stack) >= 3 and isinstance(stack[-2], cst.Attribute) and stack[-2].attr.value == "detach"
        and isinstance(stack[-3], cst.Call) and stack[-3].func is stack[-2]
    )  # fmt: skip


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


def variable(node: cst.BaseExpression | None) -> str | None:
    """The variable an accumulation target lives in, as written: `total`,
    `self.total`, `history[k]` -> `history`; None for other targets."""
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return f"{node.value.value}.{node.attr.value}"
    return None


def accumulations(node: cst.CSTNode) -> list[tuple[str, cst.BaseExpression]]:
    """What a statement or call adds to a variable, as (the variable, the
    value added): `total += v`, `total = total + v`, `xs.append(v)`,
    `history[k] = v` (`variable` names the variable)."""
    found: list[tuple[str | None, cst.BaseExpression]] = []
    if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
        found.append((variable(node.target), node.value))
    elif isinstance(node, cst.Assign):
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                found.append((variable(target.target), node.value))
            elif _adds_to(target.target, node.value):
                found.append((variable(target.target), node.value.right))  # type: ignore[attr-defined]
    elif isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "append" and len(node.args) == 1:
            found.append((variable(func.value), node.args[0].value))
    return [(name, value) for name, value in found if name is not None]


def _adds_to(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """`total = total + v`."""
    name = variable(target)
    return (name is not None and isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add)
            and variable(value.left) == name)  # fmt: skip


def backpropagated(call: cst.Call) -> cst.BaseExpression | None:
    """What a `.backward` call back-propagates: `loss.backward()` its receiver;
    `accelerator.backward(loss)`, `engine.backward(loss)`, `optimizer.backward(loss)`
    their argument; `scaler.scale(loss).backward()` the scaled loss. None for other calls."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "backward"):
        return None
    receiver = func.value
    if isinstance(receiver, cst.Call) and last_name(receiver.func) == "scale" and receiver.args:
        return receiver.args[0].value
    owner = (last_name(receiver) or "").lower()
    if any(word in owner for word in BACKWARD_OWNERS) or owner in ("opt", "model"):
        return call.args[0].value if call.args else None
    return receiver


@dataclass
class LoopBody:
    """What one loop's body (nested loops included, nested functions not)
    back-propagates and re-binds: the variables whose backward it calls, and
    the values of its plain assignments by name (`x = ...`, not `x = x + v`)."""

    backpropagated: set[str] = field(default_factory=set)
    assigned: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)

    @classmethod
    def of(cls, loop: cst.For | cst.While) -> LoopBody:
        body = cls()
        for node in descendants(loop.body, into_functions=False):
            if isinstance(node, cst.Call):
                name = variable(backpropagated(node))
                if name is not None:
                    body.backpropagated.add(name)
            elif isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name) and not _adds_to(target.target, node.value):
                        body.assigned.setdefault(target.target.value, []).append(node.value)
        return body

    def keeps_graph(self, accumulator: str, value: cst.BaseExpression, ctx: ModelView) -> bool:
        """Whether adding `value` to `accumulator` in this loop keeps an
        autograd graph alive across iterations: `value` carries a loss's graph,
        and the accumulator is neither back-propagated in the loop (gradient
        accumulation) nor re-bound in every iteration."""
        if accumulator in self.backpropagated:
            return False
        if any(not _mentions(v, accumulator) for v in self.assigned.get(accumulator, ())):
            return False
        return self.carries_graph(value, ctx)

    def carries_graph(self, value: cst.BaseExpression, ctx: ModelView, depth: int = 0) -> bool:
        """Whether `value` is a loss tensor with its graph: back-propagated in
        the loop, or named like a loss and assigned there only from model or
        criterion calls (`graph_expression`), or arithmetic on such values."""
        if depth > 4:
            return False
        if isinstance(value, cst.BinaryOperation):
            return self.carries_graph(value.left, ctx, depth + 1) or self.carries_graph(value.right, ctx, depth + 1)
        if isinstance(value, (cst.Attribute, cst.Subscript)):
            return _output_loss(value) and graph_expression(value.value, ctx)
        if not isinstance(value, cst.Name):
            return False
        if value.value in self.backpropagated:
            return True
        if "loss" not in value.value.lower():
            return False
        assigned = self.assigned.get(value.value, ())
        return bool(assigned) and all(graph_expression(v, ctx) for v in assigned)


def graph_expression(value: cst.BaseExpression, ctx: ModelView) -> bool:
    """Whether an assigned value is a loss with history: a model or criterion
    call (`criterion(out, y)`, `F.cross_entropy(...)`, `self.compute_loss(...)`),
    its `.loss`/`["loss"]`, or arithmetic on those; never a detached value."""
    if isinstance(value, cst.BinaryOperation):
        return graph_expression(value.left, ctx) or graph_expression(value.right, ctx)
    if isinstance(value, (cst.Attribute, cst.Subscript)):
        return _output_loss(value) and graph_expression(value.value, ctx)
    if not isinstance(value, cst.Call):
        return isinstance(value, cst.Name) and value.value in LOSS_PRODUCER_WORDS
    names = ctx.qualified_names(value.func)
    if last_name(value.func) in DETACHING or names & NUMBER_CONVERSIONS:
        return False
    if any(n and n.startswith("torch.nn.functional.") for n in names):
        return True
    callee = (last_name(value.func) or "").lower()
    return any(word in callee for word in LOSS_PRODUCER_WORDS) or graph_expression(value.func, ctx)


def _output_loss(node: cst.BaseExpression) -> bool:
    """`outputs.loss` / `outputs["loss"]` (HF model outputs)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "loss"
    key = node.slice[0].slice if isinstance(node, cst.Subscript) and len(node.slice) == 1 else None
    return isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) and key.value.evaluated_value == "loss"


def _mentions(node: cst.CSTNode, name: str) -> bool:
    """Whether `node` reads the variable `name` (`loss` in `loss + w * prior`,
    not in `F.mse_loss(...)` or `prior_loss`)."""
    text = cst.Module([]).code_for_node(node)
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def used_as_tensor(scope: cst.CSTNode, name: str, besides: cst.CSTNode) -> bool:
    """Whether the variable `name` may be used as a tensor in `scope` outside
    `besides`: a method called on it (`total.backward()`, `total.cpu()`), passed
    to a call other than a builtin that takes numbers (`dist.all_reduce(total)`,
    `torch.stack(losses)`), or leaving the function (`return losses`,
    `self.history = losses`), where its users are unknown."""
    todo = [scope]
    while todo:
        node = todo.pop()
        if node is besides:
            continue
        if isinstance(node, cst.Attribute) and variable(node.value) == name:
            if node.attr.value not in LIST_METHODS:
                return True
        elif isinstance(node, cst.Call):
            callee = node.func.value if isinstance(node.func, cst.Name) else None
            if callee not in NUMBER_BUILTINS and any(_holds(a.value, name) for a in node.args):
                return True
        elif isinstance(node, (cst.Return, cst.Yield)) and node.value is not None and _holds(node.value, name):
            return True
        elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None and _holds(node.value, name):
            return True
        todo.extend(node.children)
    return False


def _holds(node: cst.BaseExpression, name: str) -> bool:
    """`name` itself, or in a tuple/list/dict display (`return model, losses`)."""
    if variable(node) == name and not isinstance(node, cst.Subscript):
        return True
    if isinstance(node, (cst.Tuple, cst.List)):
        return any(_holds(e.value, name) for e in node.elements)
    if isinstance(node, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _holds(e.value, name) for e in node.elements)
    return False
