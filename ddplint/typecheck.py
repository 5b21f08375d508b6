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
from typing import Any, Callable


def check_types(value: Any, hint: Any = None) -> None:
    """Raise `TypeError` naming the first place where `value` does not hold
    what `hint` (default: its own dataclass type) declares.

    Understood: the builtin scalars (an `int` is never a `bool`), `object`
    and `Any`, enums, dataclasses (field by field), ``X | None``,
    ``tuple[X, ...]``, fixed tuples and ``Mapping[K, V]``/``dict[K, V]``.
    """
    hint = type(value) if hint is None else hint
    if not _validator(hint)(value):  # a warm run checks every entry: the fast answer first
        _explain(value, hint, getattr(hint, "__name__", str(hint)))


@functools.cache
def _validator(hint: Any) -> Callable[[Any], bool]:
    """A predicate for `hint`, built once per annotation."""
    if hint is Any or hint is object:
        return lambda value: True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [_validator(option) for option in args]
        return lambda value: any(valid(value) for valid in options)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _validator(args[0])
        return lambda value: type(value) is tuple and all(map(item, value))
    if origin is tuple:
        items = [_validator(arg) for arg in args]
        return lambda value: type(value) is tuple and len(value) == len(items) and all(v(x) for v, x in zip(items, value))
    if origin in (dict, Mapping):
        key, item = (_validator(arg) for arg in args)
        return lambda value: isinstance(value, Mapping) and all(key(k) and item(v) for k, v in value.items())
    if hint is type(None):
        return lambda value: value is None
    if dataclasses.is_dataclass(hint):
        fields = [(name, _validator(field_hint)) for name, field_hint in _field_hints(hint).items()]
        return lambda value: type(value) is hint and all(valid(getattr(value, name)) for name, valid in fields)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return lambda value: isinstance(value, hint)
    if hint in (int, str, bool, float, bytes):
        return lambda value: type(value) is hint  # exact: True is no line number
    raise NotImplementedError(f"cannot check {hint!r}")  # pragma: no cover - an annotation never taught


def _explain(value: Any, hint: Any, where: str) -> None:
    """Raise the `TypeError` that says where `value` fails `hint` (slow: only on failure)."""
    origin = typing.get_origin(hint)
    if _validator(hint)(value):
        return
    if origin in (typing.Union, types.UnionType):
        _fail(where, hint, value)
    elif origin is tuple:
        _check_tuple(value, typing.get_args(hint), where)
    elif origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            _fail(where, hint, value)
        key_hint, value_hint = typing.get_args(hint)
        for key, item in value.items():
            _explain(key, key_hint, f"{where} key")
            _explain(item, value_hint, f"{where}[{key!r}]")
    elif dataclasses.is_dataclass(hint) and type(value) is hint:
        for name, field_hint in _field_hints(hint).items():
            _explain(getattr(value, name), field_hint, f"{where}.{name}")
    _fail(where, hint, value)


def _check_tuple(value: Any, args: tuple[Any, ...], where: str) -> None:
    if not isinstance(value, tuple):
        _fail(where, tuple, value)
    if len(args) == 2 and args[1] is Ellipsis:
        args = (args[0],) * len(value)
    elif len(value) != len(args):
        raise TypeError(f"{where}: expected {len(args)} items, got {len(value)}")
    for index, (item, item_hint) in enumerate(zip(value, args)):
        _explain(item, item_hint, f"{where}[{index}]")


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of `cls`'s fields (the modules use
    ``from __future__ import annotations``: they are strings until then)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _fail(where: str, hint: Any, value: Any) -> typing.NoReturn:
    expected = getattr(hint, "__name__", None) or str(hint)
    raise TypeError(f"{where}: expected {expected}, got {type(value).__name__}")
