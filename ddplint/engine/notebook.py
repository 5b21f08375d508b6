"""Jupyter notebooks (``.ipynb``): their code cells, linted as one module.

The code cells are joined in order (markdown and raw cells left out), as the
kernel runs them top to bottom, so a name a cell defines is known to the next.
IPython's syntax is not Python: a line magic or shell escape (``%cd``,
``!pip install``, ``obj?``) is blanked (``pass`` where indented, to keep its
block), an assignment from one (``files = !ls``) assigns None, and a cell
under a cell magic (``%%bash``) is left out, but for the magics that run
their cell as Python (``%%time``, ``%%timeit``, ``%%capture``, ``%%prun``,
``%%debug``). Positions are mapped back to the cell: cells are numbered from
1 in the notebook's order, counting every cell (as editors show them), and
lines from 1 within the cell. A notebook of another language (its
``metadata.language_info.name``) is not linted.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass

from ddplint.model import Finding, Related, Span

NOTEBOOK_SUFFIX = ".ipynb"
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_MAGIC_ASSIGNMENT = re.compile(r"^(\s*[\w.\[\]'\", ]+?\s*=\s*)[!%]")
_HELP = re.compile(r"^[\w.]+\?\??$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class NotebookError(ValueError):
    """The bytes are not a Jupyter notebook this reader understands."""


@dataclass(frozen=True)
class Notebook:
    """The Python text of a notebook's code cells and where each line came from."""

    text: str
    #: For line N of `text` (index N-1): (cell number, line in the cell), both from 1.
    lines: tuple[tuple[int, int], ...]
    #: Lines in each cell, by cell number.
    cell_lines: dict[int, int]
    #: Whether the notebook's language is Python (else `text` is empty).
    python: bool = True

    def where(self, line: int) -> tuple[int, int]:
        """(cell, line in the cell) of line `line` of `text`."""
        if not self.lines:
            return 1, line
        return self.lines[min(max(line, 1), len(self.lines)) - 1]

    def span(self, span: Span) -> tuple[int, Span]:
        """(cell, the span within it); a span running into a later cell ends with its first cell."""
        cell, line = self.where(span.line)
        end_cell, end_line = self.where(span.end_line)
        end_column = span.end_column
        if end_cell != cell:
            end_line, end_column = line, span.column + 1
        return cell, Span(line, span.column, end_line, end_column)

    def finding(self, finding: Finding) -> Finding:
        """`finding` (of `text`) in the cell's positions, its cell in `properties`,
        without a fix (its edits are in the joined text, not in the notebook's JSON)."""
        cell, span = self.span(finding.span)
        related = []
        for item in finding.related:
            other, where = self.span(item.span)
            message = item.message if other == cell else f"(cell {other}) {item.message}"
            related.append(Related(item.path, where, message) if item.path == finding.path else item)
        properties = (*finding.properties, ("cell", cell))
        return dataclasses.replace(finding, span=span, related=tuple(related), fix=None, properties=properties)


def read_notebook(data: bytes) -> Notebook:
    """The code of a notebook's bytes; `NotebookError` (one line) if they are not one."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not a Jupyter notebook: not UTF-8 ({exc.reason})") from None
    except (ValueError, RecursionError) as exc:
        raise NotebookError(f"not a Jupyter notebook: invalid JSON ({exc})") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a Jupyter notebook: no list of cells (nbformat 4 is supported)")
    if not _is_python(document):
        return Notebook("", (), {}, python=False)
    text: list[str] = []
    where: list[tuple[int, int]] = []
    counts: dict[int, int] = {}
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a Jupyter notebook: cell {number} is not an object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"not a Jupyter notebook: cell {number}'s source is not text")
        lines = python_lines(_LINE_BREAK.split(source))
        if lines is None:
            continue
        counts[number] = len(lines)
        for index, line in enumerate(lines, start=1):
            text.append(line)
            where.append((number, index))
    return Notebook("".join(line + "\n" for line in text), tuple(where), counts)


def python_lines(lines: list[str]) -> list[str] | None:
    """A cell's lines with IPython's syntax blanked; None for a cell that a
    cell magic runs as something else than Python."""
    lines = list(lines)
    if lines and lines[0].startswith("%%"):
        magic = lines[0][2:].split(maxsplit=1)
        if not magic or magic[0] not in _PYTHON_CELL_MAGICS:
            return None
        lines[0] = ""
    continued = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        if continued or stripped.startswith(("%", "!", "?")) or _HELP.match(stripped):
            lines[index] = indent + "pass" if indent and not continued else ""
            continued = stripped.endswith("\\")
        elif match := _MAGIC_ASSIGNMENT.match(line):
            lines[index] = match.group(1) + "None"
            continued = stripped.endswith("\\")
    return lines


def _is_python(document: dict) -> bool:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    info = metadata.get("language_info")
    name = info.get("name") if isinstance(info, dict) else None
    if name is None:
        spec = metadata.get("kernelspec")
        name = spec.get("language") if isinstance(spec, dict) else None
    return not isinstance(name, str) or name.lower() in ("python", "python3", "ipython", "ipython3")
