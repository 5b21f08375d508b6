"""Methods and bases through a module's class hierarchy, resolved by a given
name lookup (the walker's bindings, or the module's final ones): a base's
`__getitem__` calling ``self.get_info`` reaches the subclass's override."""

from __future__ import annotations

from typing import Callable

from ddplint.lazy import cst

_MAX_DEPTH = 16


def module_bases(
    classdef: cst.ClassDef, values_of: Callable[[cst.BaseExpression], tuple[cst.CSTNode, ...]]
) -> list[cst.ClassDef]:
    """The module classes `classdef` derives from, nearest first (a depth-first
    approximation of the MRO), resolved by `values_of` (a name's values)."""
    found: list[cst.ClassDef] = []
    todo = [classdef]
    while todo and len(found) < _MAX_DEPTH:
        current = todo.pop(0)
        for base in current.bases:
            if base.keyword is not None:
                continue
            for value in values_of(base.value):
                if isinstance(value, cst.ClassDef) and value is not classdef and value not in found:
                    found.append(value)
                    todo.append(value)
    return found


def class_methods(
    classdef: cst.ClassDef, values_of: Callable[[cst.BaseExpression], tuple[cst.CSTNode, ...]]
) -> dict[str, cst.FunctionDef]:
    """The methods an instance of `classdef` has, through its module base
    classes: a base's `__getitem__` beside the subclass's `get_info`, the
    subclass's own definitions overriding the bases'."""
    table: dict[str, cst.FunctionDef] = {}
    for cls in reversed([classdef, *module_bases(classdef, values_of)]):
        for statement in cls.body.body:
            if isinstance(statement, cst.FunctionDef):
                table[statement.name.value] = statement
    return table
