"""Class hierarchies within the module, resolved through import aliases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.engine.context import FileContext

_MAX_DEPTH = 16


def class_of_instance(node: cst.CSTNode, ctx: FileContext) -> cst.ClassDef | None:
    """The module class that `node` (a call, or a Name bound to one) instantiates.

    None unless every binding of a Name agrees on one class.
    """
    for _ in range(_MAX_DEPTH):
        if isinstance(node, cst.Call):
            classes = {id(v): v for v in ctx.values_of(node.func) if isinstance(v, cst.ClassDef)}
            return next(iter(classes.values())) if len(classes) == 1 else None
        if not isinstance(node, cst.Name):
            return None
        values = ctx.values_of(node)
        if len(values) != 1:
            return None
        node = values[0]
    return None


def inherits_from(classdef: cst.ClassDef, bases: frozenset[str], ctx: FileContext) -> bool:
    """Whether `classdef` derives (through module classes) from any of `bases`."""
    return any(ctx.qualified_names(base) & bases for base in _bases(classdef, ctx))


def base_names(classdef: cst.ClassDef, ctx: FileContext) -> frozenset[str]:
    """The qualified names of the classes `classdef` derives from (through
    module classes), for matching by package: ``torchvision.datasets.CIFAR10``."""
    result: set[str] = set()
    for base in _bases(classdef, ctx):
        result |= {n for n in ctx.qualified_names(base) if n}
    return frozenset(result)


def imported_bases(classdef: cst.ClassDef, ctx: FileContext) -> frozenset[str]:
    """The imported classes `classdef` derives from (through module classes),
    as qualified names, for the whole-project analysis."""
    result: set[str] = set()
    for base in _bases(classdef, ctx):
        result |= ctx.scopes.imported_qualnames(base)
    return frozenset(result)


def _bases(classdef: cst.ClassDef, ctx: FileContext) -> Iterator[cst.BaseExpression]:
    """The base-class expressions of `classdef` and of the module classes it derives from."""
    seen: set[int] = set()
    todo = [classdef]
    while todo:
        current = todo.pop()
        if id(current) in seen or len(seen) > _MAX_DEPTH:
            continue
        seen.add(id(current))
        for base in current.bases:
            if base.keyword is not None:
                continue
            yield base.value
            todo.extend(v for v in ctx.values_of(base.value) if isinstance(v, cst.ClassDef))


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
