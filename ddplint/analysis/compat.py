"""Version-compatibility code: branches that only run on other library versions.

Libraries that support several PyTorch releases keep the old spelling of an
API behind a version test (``if _TORCH_GREATER_EQUAL_2_4: new() else: old()``,
``if digit_version(TORCH_VERSION) < digit_version("1.10")``,
``hasattr(torch, "amp")``) or in the ``except`` clause of a ``try`` that
attempts the new one. Such code is deliberate, and rules about deprecated or
missing APIs must not flag it.
"""

from __future__ import annotations

import re
from typing import Sequence

from ddplint.lazy import cst

_VERSIONISH = re.compile(r"version|greater|less_than|older|newer|_ge_|_lt_|torch_\d|^_?is_torch_", re.IGNORECASE)
_PROBES = frozenset({"hasattr", "getattr", "callable"})


def mentions_version(expr: cst.CSTNode) -> bool:
    """Whether an expression looks like a library version or feature test."""
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Name) and _VERSIONISH.search(node.value):
            return True
        if isinstance(node, cst.Attribute):
            if _VERSIONISH.search(node.attr.value):
                return True
            todo.append(node.value)
        elif isinstance(node, cst.Call):
            if isinstance(node.func, cst.Name) and node.func.value in _PROBES:
                return True
            todo.append(node.func)
            todo.extend(arg.value for arg in node.args)
        elif isinstance(node, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation)):
            todo.extend(_operands(node))
    return False


def _operands(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.Comparison):
        return [node.left, *(c.comparator for c in node.comparisons)]
    if isinstance(node, cst.BooleanOperation):
        return [node.left, node.right]
    return [node.expression]


def in_compat_branch(stack: Sequence[cst.CSTNode], module: cst.Module, replacement_hint: str) -> bool:
    """Whether the innermost node of `stack` runs only for some library versions.

    True inside a branch (not the test) of an ``if``/ternary whose test is a
    version test, and inside an ``except`` clause of a ``try`` whose body
    mentions `replacement_hint` (the new API being attempted first).
    """
    for parent, child in zip(reversed(stack[:-1]), reversed(stack[1:])):
        if isinstance(parent, (cst.If, cst.IfExp)) and child is not parent.test:
            if mentions_version(parent.test):
                return True
        elif isinstance(parent, (cst.Try, cst.TryStar)) and child is not parent.body:
            if isinstance(child, cst.ExceptHandler) and replacement_hint in module.code_for_node(parent.body):
                return True
        elif isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
    return False
