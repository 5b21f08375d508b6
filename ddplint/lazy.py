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
import dataclasses
import functools
import importlib
import inspect
import types
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable


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
    parser builds only valid nodes. Its nodes are built by quicker
    constructors too (`_parser_constructors`). Nodes built meanwhile
    elsewhere (none: the lint runs on one thread) would go unchecked too."""
    module = libcst()
    from libcst._nodes.base import CSTNode

    checked = CSTNode.__post_init__
    constructors = _parser_constructors()
    CSTNode.__post_init__ = _built_by_the_parser  # type: ignore[method-assign]
    for cls, _, quick in constructors:
        cls.__init__ = quick  # type: ignore[misc]
    try:
        return module.parse_module(text)
    finally:
        for cls, own, _ in constructors:
            cls.__init__ = own  # type: ignore[misc]
        CSTNode.__post_init__ = checked  # type: ignore[method-assign]


def prepare_parser() -> None:
    """Build now what `parse_module` builds at its first call (LibCST's
    classes, quicker constructors): once in a parent, not in each worker it forks."""
    libcst()
    _parser_constructors()


#: Stands for a field the caller left to its default factory.
_NOT_GIVEN = object()


@functools.cache
def _parser_constructors() -> tuple[tuple[type, Callable[..., None], Callable[..., None]], ...]:
    """(class, its own `__init__`, a quicker one) for each node class whose
    constructor can be replaced while the parser builds nodes.

    A frozen dataclass's `__init__` sets each field through
    ``object.__setattr__(self, "name", value)``, which looks the name up
    along the class's bases at every call, then runs `__post_init__`. The
    quicker one calls each field's slot directly and runs no check (the
    parser's nodes are valid): a tenth of the parse. A class whose
    constructor is not exactly its fields in order (an `InitVar`, a field
    left out of `__init__`) keeps its own."""
    found = []
    for cls in node_classes():
        own = cls.__dict__.get("__init__")
        if own is not None and dataclasses.is_dataclass(cls):
            quick = _quick_constructor(cls, own)
            if quick is not None:
                found.append((cls, own, quick))
    return tuple(found)


def _quick_constructor(cls: type, own: Callable[..., None]) -> Callable[..., None] | None:
    """`cls`'s constructor that sets its fields' slots, or None where it cannot be made."""
    fields = dataclasses.fields(cls)
    if [f.name for f in fields if f.init] != list(inspect.signature(own).parameters)[1:]:
        return None
    namespace: dict[str, Any] = {"_NOT_GIVEN": _NOT_GIVEN}
    params, lines = [], []
    defaulted = False  # a field with a default came before
    for field in fields:
        name = field.name
        slot = next((vars(c)[name] for c in cls.__mro__ if name in vars(c)), None)
        if isinstance(slot, types.MemberDescriptorType):
            setter = f"_set_{name}(self, {{}})"
            namespace[f"_set_{name}"] = slot.__set__
        elif cls.__dictoffset__:  # kept in the instance's dictionary
            setter = f"self.__dict__[{name!r}] = {{}}"
        else:
            return None
        value = name
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            params.append(f"{name}=_default_{name}")
            defaulted = True
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = field.default_factory
            params.append(f"{name}=_NOT_GIVEN")
            value = f"_factory_{name}() if {name} is _NOT_GIVEN else {name}"
            defaulted = True
        elif defaulted:
            return None  # a field without a default after one with (keyword-only: not a positional signature)
        else:
            params.append(name)
        lines.append(f"    {setter.format(value)}\n")
    exec(f"def __init__(self, {', '.join(params)}):\n{''.join(lines) or '    pass'}\n", namespace)  # noqa: S102 - our own text
    quick = namespace["__init__"]
    quick.__qualname__ = f"{cls.__qualname__}.__init__"
    return quick


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
