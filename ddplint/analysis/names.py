"""Small syntactic helpers about names, safe to import without LibCST."""

from __future__ import annotations

import re

from ddplint.lazy import cst


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def last_name(node: cst.BaseExpression) -> str | None:
    """The final identifier of a Name/Attribute chain (``c`` of ``a.b.c``)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def name_words(name: str) -> set[str]:
    """The lower-case words of an identifier: `val_loss` -> {val, loss}, `acc1` -> {acc1, acc},
    `numReplicas` -> {num, replicas}."""
    words = {w for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name) if w}
    return {w.lower() for w in words} | {w.rstrip("0123456789").lower() for w in words}


def short_code(module: cst.Module, node: cst.CSTNode, width: int = 40) -> str:
    """`node`'s source as a message shows it: cut to `width` characters with `...`."""
    text = module.code_for_node(node)
    return text if len(text) <= width else text[: width - 3] + "..."
