"""`module:factory` references to the user's code."""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Callable

_REFERENCE_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class ProbeError(Exception):
    """The user's reference cannot be used: a usage error (exit 2), one line."""


def check_reference(option: str, reference: str) -> None:
    """Refuse anything that is not `module:factory` before any rank starts."""
    if not _REFERENCE_RE.match(reference):
        raise ProbeError(f"{option}: expected module:factory (e.g. mypkg.data:build_dataset), got {reference!r}")


def resolve(option: str, reference: str, cwd: Path) -> Callable[..., Any]:
    """Import `module` (from `cwd` first, as `python -m` would) and get `factory`."""
    check_reference(option, reference)
    module_name, _, attribute = reference.partition(":")
    if str(cwd) not in sys.path:
        sys.path.insert(0, str(cwd))
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ProbeError(f"{option}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ProbeError(f"{option}: module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise ProbeError(f"{option}: {reference} is not callable")
    return target


def call_with_supported(factory: Callable[..., Any], **offered: Any) -> Any:
    """`factory(**offered)`, passing only the keyword arguments it accepts."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return factory(**offered)
    return factory(**{k: v for k, v in offered.items() if k in parameters})
