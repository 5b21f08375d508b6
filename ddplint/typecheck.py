"""Checking that a dataclass built from outside data holds what its fields declare.

The cache reads findings back from files that anything could have written
(an older ddplint, a full disk, a hand edit); a value of the wrong type
there (a ``null`` path) would only fail later, in a reporter, on every run.
`check_types` compares every field, recursively, with its annotation, so
such an entry is refused where it is read.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any


def check_types(value: Any, hint: Any = None, where: str = "") -> None:
    """Raise `TypeError` naming the first place where `value` does not hold
    what `hint` (default: its own dataclass type) declares.

    Understood: the builtin scalars (an `int` is never a `bool`), `object`
    and `Any`, enums, dataclasses (field by field), ``X | None``,
    ``tuple[X, ...]``, fixed tuples and ``Mapping[K, V]``/``dict[K, V]``.
    """
    hint = type(value) if hint is None else hint
    where = where or getattr(hint, "__name__", str(hint))
    if hint is Any or hint is object:
        return
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(hint):
            try:
                check_types(value, option, where)
                return
            except TypeError:
                continue
        _fail(where, hint, value)
    elif origin is tuple:
        _check_tuple(value, typing.get_args(hint), where)
    elif origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            _fail(where, hint, value)
        key_hint, value_hint = typing.get_args(hint)
        for key, item in value.items():
            check_types(key, key_hint, f"{where} key")
            check_types(item, value_hint, f"{where}[{key!r}]")
    elif hint is type(None):
        if value is not None:
            _fail(where, hint, value)
    elif dataclasses.is_dataclass(hint):
        if type(value) is not hint:
            _fail(where, hint, value)
        for name, field_hint in _field_hints(hint).items():
            check_types(getattr(value, name), field_hint, f"{where}.{name}")
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        if not isinstance(value, hint):
            _fail(where, hint, value)
    elif hint in (int, str, bool, float, bytes):
        if type(value) is not hint:  # exact: True is no line number
            _fail(where, hint, value)
    else:  # pragma: no cover - an annotation this checker was never taught
        raise NotImplementedError(f"{where}: cannot check {hint!r}")


def _check_tuple(value: Any, args: tuple[Any, ...], where: str) -> None:
    if not isinstance(value, tuple):
        _fail(where, tuple, value)
    if len(args) == 2 and args[1] is Ellipsis:
        for index, item in enumerate(value):
            check_types(item, args[0], f"{where}[{index}]")
        return
    if len(value) != len(args):
        raise TypeError(f"{where}: expected {len(args)} items, got {len(value)}")
    for index, (item, item_hint) in enumerate(zip(value, args)):
        check_types(item, item_hint, f"{where}[{index}]")


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of `cls`'s fields (the modules use
    ``from __future__ import annotations``: they are strings until then)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _fail(where: str, hint: Any, value: Any) -> typing.NoReturn:
    expected = getattr(hint, "__name__", None) or str(hint)
    raise TypeError(f"{where}: expected {expected}, got {type(value).__name__}")
