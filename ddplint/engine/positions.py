"""Source positions, resolved only for files that have findings.

LibCST's `PositionProvider` re-generates the whole module's code to learn
where each node is, about twice the cost of the parse. Most files have no
finding, so the engine asks for positions only when it needs them, and
without the deep copy `MetadataWrapper` makes by default (the nodes that the
rules reported must stay the keys).
"""

from __future__ import annotations

from typing import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ddplint.model import Span


def resolve_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Every node's syntactic range (1-based lines, 0-based columns)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return wrapper.resolve(PositionProvider)


def to_span(code_range: CodeRange) -> Span:
    """A LibCST range as ddplint's 1-based line/column span."""
    return Span(
        code_range.start.line,
        code_range.start.column + 1,
        code_range.end.line,
        code_range.end.column + 1,
    )


def comments(positions: Mapping[cst.CSTNode, CodeRange]) -> list[tuple[int, str]]:
    """(line, text) of every comment in the module."""
    return [(r.start.line, n.value) for n, r in positions.items() if type(n) is cst.Comment]
