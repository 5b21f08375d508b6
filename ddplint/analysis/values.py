"""What can be known for certain about an expression's value without running it.

Every function answers `None` for "not certain"; rules flag only on
certain answers. Names are followed through their bindings in the current
scope (see `ScopeTracker.values_of`) when every binding agrees, and
parameters to what every call site of their function passes.

The module-wide value service (`flow.ValueFlow`, asked as `model.origins`)
follows values across the module's functions, methods and classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar

from ddplint.analysis.calls import truth
from ddplint.analysis.names import last_name
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

T = TypeVar("T")

_MAX_DEPTH = 8


def _through_names(
    node: cst.CSTNode, ctx: ModelView, literal: Callable[[cst.CSTNode], T | None], depth: int = 0
) -> T | None:
    """`literal(node)`, or the common answer of all of a Name's bound values."""
    if isinstance(node, cst.Name) and node.value not in ("True", "False", "None"):
        values = ctx.values_of(node)
        if not values or depth >= _MAX_DEPTH:
            return None
        answers = {_through_names(v, ctx, literal, depth + 1) for v in values}
        if len(answers) == 1:
            return answers.pop()
        return None
    if isinstance(node, cst.Param):
        # what every call site of the function passes (or leaves to the default);
        # a call the module cannot see leaves the parameter itself: no answer
        answers = {literal(v) for v in ctx.flow.parameter_values(node)}
        return answers.pop() if len(answers) == 1 else None
    return literal(node)


def truthiness(node: cst.CSTNode, ctx: ModelView) -> bool | None:
    """True/False if `node` is certainly truthy/falsy, else None."""
    return _through_names(node, ctx, truth)


def _literal_int(node: cst.CSTNode) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


def int_value(node: cst.CSTNode, ctx: ModelView) -> int | None:
    """The integer `node` certainly holds, else None."""
    return _through_names(node, ctx, _literal_int)


def is_none_literal(node: cst.CSTNode) -> bool:
    """Whether `node` is the literal ``None``."""
    return isinstance(node, cst.Name) and node.value == "None"


def certainly_none(node: cst.CSTNode, ctx: ModelView) -> bool:
    """Whether every value `node` can hold here is ``None``."""
    return _through_names(node, ctx, lambda n: True if is_none_literal(n) else None) is True


def may_be_not_none(node: cst.CSTNode, ctx: ModelView, depth: int = 0) -> bool:
    """Whether some path certainly gives `node` a value other than ``None``.

    ``DistributedSampler(ds) if distributed else None`` is such a value: on
    the distributed path it is not None. A call of an unknown function is
    not (it may return None); a constructor call is.
    """
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, cst.IfExp):
        return may_be_not_none(node.body, ctx, depth + 1) or may_be_not_none(node.orelse, ctx, depth + 1)
    if isinstance(node, cst.Name):
        if node.value in ("True", "False"):
            return True
        if node.value == "None":
            return False
        return any(may_be_not_none(v, ctx, depth + 1) for v in ctx.values_of(node))
    if isinstance(node, cst.Call):
        return is_constructor_call(node, ctx)
    return isinstance(
        node,
        (cst.BaseNumber, cst.BaseString, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.BaseComp, cst.Lambda),
    )


def certainly_not_none(node: cst.CSTNode, ctx: ModelView, depth: int = 0) -> bool:
    """Whether every path gives `node` a value other than ``None`` (a
    constructor call, a literal, a name only ever bound to such values)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, cst.IfExp):
        return certainly_not_none(node.body, ctx, depth + 1) and certainly_not_none(node.orelse, ctx, depth + 1)
    if isinstance(node, cst.Name) and node.value not in ("True", "False", "None"):
        values = ctx.values_of(node)
        return bool(values) and all(certainly_not_none(v, ctx, depth + 1) for v in values)
    return may_be_not_none(node, ctx, depth)


def is_constructor_call(node: cst.Call, ctx: ModelView) -> bool:
    """Whether `node` instantiates a class (which never returns None).

    A class defined in the module, or a callee named in CapWords, the
    convention for classes (``DistributedSampler``, ``MySampler``).
    """
    if any(isinstance(v, cst.ClassDef) for v in ctx.values_of(node.func)):
        return True
    qualnames = ctx.qualified_names(node.func)
    if qualnames and None not in qualnames:  # `DS` imported as DistributedSampler
        names = {q.rpartition(".")[2] for q in qualnames}
    else:
        names = {last_name(node.func) or ""}
    return all(isinstance(n, str) and n[:1].isupper() and not n.isupper() for n in names)
