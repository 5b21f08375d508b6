"""Deferred import of LibCST.

`ddplint --version`, `ddplint rule` and the rule catalogue's import must not
pay LibCST's import time (~0.2 s), yet rule modules want to write `cst.Call`
in their visitor bodies. ``from ddplint.lazy import cst`` gives them a stand-in
that imports LibCST on the first attribute access and from then on is as
fast as the module itself (its namespace is copied onto the stand-in).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


class _LazyModule:
    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__dict__["_lazy_name"])
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
