"""Deferred import of LibCST.

`ddplint --version`, `ddplint rule` and the rule catalogue's import must not
pay LibCST's import time (~0.2 s), yet rule modules want to write `cst.Call`
in their visitor bodies. ``from ddplint.lazy import cst`` gives them a stand-in
that imports LibCST on the first attribute access and from then on is as
fast as the module itself (its namespace is copied onto the stand-in).

LibCST is loaded through `libcst()`, which also makes `isinstance` on its node
classes cheap; `parse_module` parses without re-checking the parser's nodes.
"""

from __future__ import annotations

import abc
import functools
import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any


class _TypeChecked(abc.ABCMeta):
    """ABCMeta answering `isinstance` and `issubclass` as `type` does: from
    the class's own bases, without a Python-level call."""

    __instancecheck__ = type.__instancecheck__  # type: ignore[assignment]
    __subclasscheck__ = type.__subclasscheck__  # type: ignore[assignment]


@functools.cache
def libcst() -> ModuleType:
    """LibCST, imported, with isinstance tests on its node classes made cheap.

    Its node classes derive from `abc.ABC`, so every `isinstance(node,
    cst.If)` that fails (most do: the walk asks each node many) runs
    `ABCMeta.__instancecheck__`, a Python function (measured: 6 million calls
    for a lint of accelerate). LibCST registers no virtual subclass and
    defines no `__subclasshook__`, so the answers from the classes' bases
    are the same: each node class gets `_TypeChecked` as its metaclass. A
    LibCST that registered one would keep ABCMeta (checked per class).
    """
    module = importlib.import_module("libcst")
    classes = node_classes()
    if all(_plain_abc(cls) for cls in classes):
        for cls in classes:
            cls.__class__ = _TypeChecked
    return module


def node_classes() -> set[type]:
    """LibCST's `CSTNode` and every class derived from it."""
    from libcst._nodes.base import CSTNode

    classes, pending = set(), [CSTNode]
    while pending:
        cls = pending.pop()
        if cls not in classes:
            classes.add(cls)
            pending.extend(type.__subclasses__(cls))
    return classes


def parse_module(text: str) -> cst.Module:
    """`libcst.parse_module`, without the checks each node's constructor runs
    (`CSTNode._validate`, a seventh of the parse of a 5,000-line file): the
    parser builds only valid nodes. Nodes built meanwhile elsewhere (none:
    the lint runs on one thread) would go unchecked too."""
    module = libcst()
    from libcst._nodes.base import CSTNode

    checked = CSTNode.__post_init__
    CSTNode.__post_init__ = _built_by_the_parser  # type: ignore[method-assign]
    try:
        return module.parse_module(text)
    finally:
        CSTNode.__post_init__ = checked  # type: ignore[method-assign]


def _built_by_the_parser(self: object) -> None:
    """A parsed node's `__post_init__`: nothing to check."""


def _plain_abc(cls: type) -> bool:
    """Whether `cls` is an ABC whose subclasses are only its real ones."""
    if type(cls) is not abc.ABCMeta and type(cls) is not _TypeChecked:
        return False
    dump = getattr(abc, "_get_dump", None)  # CPython's C implementation of ABCs
    if dump is None:
        return False
    registry = dump(cls)[0]
    hooks = [c for c in cls.__mro__ if "__subclasshook__" in vars(c) and c is not object and c is not abc.ABC]
    return not registry and not hooks


class _LazyModule:
    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        name = self.__dict__["_lazy_name"]
        module = libcst() if name == "libcst" else importlib.import_module(name)
        self.__dict__.update(vars(module))
        try:
            return self.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {attr!r}") from None


if TYPE_CHECKING:
    import libcst as cst
else:
    cst = _LazyModule("libcst")

__all__ = ["cst"]
