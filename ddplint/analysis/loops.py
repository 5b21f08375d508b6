"""Training loops: loops whose body (nested blocks included) takes an
optimisation step, i.e. calls ``.backward(...)`` or ``optimizer.step()`` /
``scaler.step(optimizer)``.

A walker analysis for rules that ``require`` ``"loops"``: when it meets such
a call it marks every loop around it, up to the enclosing function, so a
rule can ask whether the node it visits is inside a training loop (once the
walk is over, since the step may come after the node).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.analysis.autograd import LoopBody
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants, names_in
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_STEPPERS = ("optim", "scaler")


def is_step(call: cst.Call) -> bool:
    """``x.backward(...)``, ``accelerator.backward(loss)``, ``optimizer.step()``."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value == "backward":
        return True
    if func.attr.value == "step":
        receiver = (last_name(func.value) or "").lower()
        return any(word in receiver for word in _STEPPERS) or receiver == "opt"
    return False


class TrainingLoops:
    """Walker analysis: which loops of the module are training loops."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self._training: set[int] = set()
        self._bodies: dict[int, LoopBody] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if is_step(node):
            for loop in self.enclosing_loops():
                self._training.add(id(loop))

    def enclosing_loops(self) -> tuple[cst.CSTNode, ...]:
        """The loops around the node being visited, innermost first, within its function."""
        loops = []
        stack = self.ctx.stack
        for node, child in zip(reversed(stack[:-1]), reversed(stack[1:])):
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                break
            if isinstance(node, (cst.For, cst.While)) and child is node.body:
                loops.append(node)
        return tuple(loops)

    def is_training_loop(self, loop: cst.CSTNode) -> bool:
        """Whether `loop` takes an optimisation step (final after the walk)."""
        return id(loop) in self._training

    def body(self, loop: cst.For | cst.While) -> LoopBody:
        """What `loop`'s body back-propagates and re-binds (`autograd.LoopBody`, built on first ask)."""
        found = self._bodies.get(id(loop))
        if found is None:
            found = self._bodies[id(loop)] = LoopBody.of(loop)
        return found


def bound_in_loop(expr: cst.BaseExpression, loop: cst.For) -> bool:
    """Whether the name at the root of `expr` (`loader` of `loader.sampler`)
    gets a value inside `loop`'s body (then code put first in the body may
    run before it exists); true when `expr` has no such name."""
    root = expr
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return True
    for node in descendants(loop.body):
        target = node.target if isinstance(node, (cst.AssignTarget, cst.For, cst.AnnAssign, cst.NamedExpr)) else None
        if target is not None and root.value in names_in(target):
            return True
    return False
