"""Byte sizes as users write them (``64MiB``, ``2GB``, ``512k``,
``1073741824``) and as ddplint writes them back."""

from __future__ import annotations

import re

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 2**10,
    "m": 1000**2, "mb": 1000**2, "mib": 2**20,
    "g": 1000**3, "gb": 1000**3, "gib": 2**30,
    "t": 1000**4, "tb": 1000**4, "tib": 2**40,
}  # fmt: skip
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes in `text`; ``ValueError`` naming the accepted units otherwise."""
    match = _SIZE_RE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"expected a size such as 64MiB, 2GB or 1048576, got {text!r}")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"expected a positive size, got {text!r}")
    return size


def describe_size(count: int) -> str:
    """`count` bytes in kB or MB with one decimal, as notes show sizes."""
    return f"{count / 10**6:.1f} MB" if count >= 10**6 else f"{count / 10**3:.1f} kB"
