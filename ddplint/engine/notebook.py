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
lines from 1 within the cell; SARIF, which shows the file itself, gets the
line of the ``.ipynb`` that holds the source line. A notebook of another language (its
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
#: ``files = !ls``, ``t = %timeit -o f()``: the target, then ``=`` and a magic. Its first character
#: is not a space, so a line splits one way only (``\s*[... ]+?\s*=`` took minutes on a line of spaces).
_MAGIC_ASSIGNMENT = re.compile(r"^(\s*[\w.\[\]'\",][\w.\[\]'\", \t]*=\s*)[!%]")
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
    #: For line N of `text`: the line of the .ipynb file that holds it (its string in
    #: the cell's ``source``); empty where the file's layout could not be read.
    file_lines: tuple[int, ...] = ()

    def where(self, line: int) -> tuple[int, int]:
        """(cell, line in the cell) of line `line` of `text`."""
        if not self.lines:
            return 1, line
        return self.lines[min(max(line, 1), len(self.lines)) - 1]

    def span(self, span: Span) -> tuple[int, Span]:
        """(cell, the span within it); a span running into a later cell ends where its first cell does."""
        cell, line = self.where(span.line)
        end_cell, end_line = self.where(span.end_line)
        end_column = span.end_column
        if end_cell != cell:
            end_line = max(self.cell_lines.get(cell, line), line)
            end_column = 1 if end_line > line else span.column + 1
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
        properties: tuple[tuple[str, object], ...] = (*finding.properties, ("cell", cell))
        if self.file_lines:  # where SARIF shows it: the notebook file's own lines, for the finding and its related
            spans = (finding.span, *(r.span for r in finding.related if r.path == finding.path))
            properties += (("file_lines", tuple((self._file_line(s.line), self._file_line(s.end_line)) for s in spans)),)
        return dataclasses.replace(finding, span=span, related=tuple(related), fix=None, properties=properties)


    def _file_line(self, line: int) -> int:
        return self.file_lines[min(max(line, 1), len(self.file_lines)) - 1]


def read_notebook(data: bytes) -> Notebook:
    """The code of a notebook's bytes; `NotebookError` (one line) if they are not one."""
    try:
        raw = data.decode("utf-8-sig")
        document = json.loads(raw)
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
    in_file = _source_strings(raw)
    file_lines: list[int] = []
    located = True  # every cell's source strings found in the file (a layout not understood gives none)
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
        starts = _line_starts(in_file.get(number, []))
        located = located and (bool(starts) or not source)
        for index, line in enumerate(lines, start=1):
            text.append(line)
            where.append((number, index))
            file_lines.append(next((at for first, at in reversed(starts) if first <= index), file_lines[-1] if file_lines else 1))
    return Notebook("".join(line + "\n" for line in text), tuple(where), counts, file_lines=tuple(file_lines) if located else ())


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _source_strings(raw: str) -> dict[int, list[tuple[int, str]]]:
    """Cell number -> the (file line, text) of each string of its ``source``,
    read from the notebook's JSON text (the parsed document has no positions)."""
    found: dict[int, list[tuple[int, str]]] = {}
    frames: list[list] = []  # [is_object, key or index, wants a key]
    line, position = 1, 0
    for match in _JSON_TOKEN.finditer(raw):
        line += raw.count("\n", position, match.start())
        position = match.start()
        token = match.group()
        top = frames[-1] if frames else None
        if token in ("{", "["):
            frames.append([token == "{", None if token == "{" else 0, True])
        elif token in ("}", "]"):
            frames.pop() if frames else None
        elif token == ":" and top is not None:
            top[2] = False
        elif token == "," and top is not None:
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
        elif token.startswith('"') and top is not None:
            is_key = top[0] and top[2]
            keys = [frame[1] for frame in frames]
            is_source = 3 <= len(keys) <= 4 and keys[0] == "cells" and isinstance(keys[1], int) and keys[2] == "source"
            if not (is_key or is_source):
                continue  # outputs and metadata: never decoded
            try:
                value = json.loads(token)
            except ValueError:
                return {}
            if is_key:
                top[1] = value
            else:
                found.setdefault(keys[1] + 1, []).append((line, value))
    return found


def _line_starts(strings: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(first cell line in it, file line) of each source string."""
    starts, first = [], 1
    for at, value in strings:
        starts.append((first, at))
        first += value.count("\n")
    return starts


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
