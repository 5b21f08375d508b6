"""Class hierarchies within the module, resolved through import aliases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_MAX_DEPTH = 16


def class_of_instance(node: cst.CSTNode, ctx: ModelView) -> cst.ClassDef | None:
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


def inherits_from(classdef: cst.ClassDef, bases: frozenset[str], ctx: ModelView) -> bool:
    """Whether `classdef` derives (through module classes) from any of `bases`."""
    return any(ctx.qualified_names(base) & bases for base in _bases(classdef, ctx))


def base_names(classdef: cst.ClassDef, ctx: ModelView) -> frozenset[str]:
    """The qualified names of the classes `classdef` derives from (through
    module classes), for matching by package: ``torchvision.datasets.CIFAR10``."""
    result: set[str] = set()
    for base in _bases(classdef, ctx):
        result |= {n for n in ctx.qualified_names(base) if n}
    return frozenset(result)


def imported_bases(classdef: cst.ClassDef, ctx: ModelView) -> frozenset[str]:
    """The imported classes `classdef` derives from (through module classes),
    as qualified names, for the whole-project analysis."""
    result: set[str] = set()
    for base in _bases(classdef, ctx):
        result |= ctx.scopes.imported_qualnames(base)
    return frozenset(result)


def _bases(classdef: cst.ClassDef, ctx: ModelView) -> Iterator[cst.BaseExpression]:
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

