"""Text edits on source: line/column <-> offset, and applying edits.

Spans are 1-based lines and columns in code points, end exclusive, as the
finding model has them. No LibCST here: applying a fix is string work.
"""

from __future__ import annotations

from typing import Iterable

from ddplint.model import Edit, Span


class LineIndex:
    """The offsets where a text's lines start."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        index = text.find("\n")
        while index != -1:
            self.starts.append(index + 1)
            index = text.find("\n", index + 1)

    def offset(self, line: int, column: int) -> int:
        """The offset of a 1-based (line, column)."""
        return self.starts[min(line, len(self.starts)) - 1] + column - 1

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based (line, column) of an offset."""
        low, high = 0, len(self.starts)
        while low < high:
            middle = (low + high) // 2
            if self.starts[middle] <= offset:
                low = middle + 1
            else:
                high = middle
        return low, offset - self.starts[low - 1] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of the offsets [start, end)."""
        return Span(*self.position(start), *self.position(end))

    def range(self, span: Span) -> tuple[int, int]:
        """The offsets [start, end) of a span."""
        return self.offset(span.line, span.column), self.offset(span.end_line, span.end_column)


def disjoint(ranges: Iterable[tuple[int, int]]) -> bool:
    """Whether no two [start, end) ranges overlap (insertions at one point do)."""
    ordered = sorted(ranges)
    return all(a_end <= b_start and (a_start, a_end) != (b_start, b_end)
               for (a_start, a_end), (b_start, b_end) in zip(ordered, ordered[1:]))


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """`text` with every edit made; the edits must not overlap."""
    index = LineIndex(text)
    placed = sorted(((*index.range(e.span), e.content) for e in edits), key=lambda r: (r[0], r[1]))
    if not disjoint((start, end) for start, end, _ in placed):
        raise ValueError("overlapping edits")
    parts, cursor = [], 0
    for start, end, content in placed:
        parts += [text[cursor:start], content]
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)
