"""A module's outline: what its summary's imports are read from, cheaply.

The whole-project analysis reads each module's imports, ``__all__`` and the
line of each top-level definition and method from CPython's tree
(`imports_summary`). Building that tree for every file cost more than
compiling it (for timm, mmengine and accelerate: 2.0-2.4 s against
1.2-1.3 s), while the summary reads only the module's top level: its
statements, those inside top-level ``if``/``for``/``while``/``with``/``try``
blocks, and the ``def`` lines of its classes' methods.

The outline is the module's text with only what the summary reads, each
line in its place: imports, ``__all__``, the blocks the summary reads in
(``if``, ``for``, ``while``, ``with``, ``try`` and their clauses, and
lines of several statements, whole), and each definition's line up to its
name (``def name():``, ``class Name:``; methods in a class's body); every
function body, other statement and decorator is left out (a block left
empty holds ``pass``). CPython builds its tree at a small fraction of the
cost of the whole tree's, and
`imports_summary` reads the same there (the test suite checks it against the
full tree over real code). Lines are split into logical lines as CPython's
tokenizer does: strings and comments (`STRING_OR_COMMENT`), brackets and
backslash continuations. A text indented with tabs or form feeds, with
carriage returns, with an f-string that Python 3.12 may nest quotes in, or
whose outline CPython rejects gets no outline (the caller builds the full
tree).
"""

from __future__ import annotations

import ast
import re
import sys
import warnings

from ddplint.analysis.code_text import STRING_OR_COMMENT

#: A logical line defining a function or a class: its keyword, and the line up to its name.
_OPENER = re.compile(r" *(?:async[ \t]+)?(def|class)\b(?:[ \t]+\w+)?")
#: Marks a line that continues a string begun on a line before it.
_IN_STRING = "\x01"
#: Python 3.12 lets an f-string's fields hold its own quotes, comments and
#: line breaks (PEP 701: ``f"{d["key"]}"``), which one expression cannot split.
_NESTED_QUOTES = sys.version_info >= (3, 12)

#: The first word of a logical line.
_FIRST_WORD = re.compile(r" *([A-Za-z_]\w*)")
#: Statements `imports_summary` reads (the first word of their line): imports and ``__all__``.
_READ = frozenset({"import", "from", "__all__"})
#: Blocks whose statements it reads as the top level's, and their clauses (which
#: continue only these in text CPython compiles: `async for` is a function's).
_BLOCKS = frozenset({"if", "elif", "else", "for", "while", "with", "try", "except", "finally"})

# What a block's statements are in the outline:
_KEEP = 0  # the module's top level and the blocks `imports_summary` reads in: what it reads is kept
_CLASS = 1  # a class body: its `def` lines kept, the rest left out
_DROP = 2  # left out: a function's body, a class's other statements


def outline_tree(text: str) -> ast.Module | None:
    """CPython's tree of `text`'s outline (valid Python text, as `compile`
    accepted it), or None where there is none."""
    outline = _outline(text)
    if outline is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(outline)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _Unsure(Exception):
    """The text's strings may not split as the expression splits them."""


def _mask(match: re.Match[str]) -> str:
    """A comment as nothing, a string as one character per line it spans,
    each line after the first marked as inside it."""
    token = match.group()
    if token[0] == "#":
        return ""
    if _NESTED_QUOTES and _open_field(match):
        raise _Unsure
    lines = token.count("\n")
    return "x" + f"\n{_IN_STRING}x" * lines if lines else "x"


def _open_field(match: re.Match[str]) -> bool:
    """An f-string whose replacement fields do not close within it: where
    PEP 701's nesting may have ended it early (then there is no outline)."""
    start = match.start()
    prefix = match.string[max(start - 2, 0) : start]
    if "f" not in prefix and "F" not in prefix:
        return False
    token = match.group()
    return token.count("{") != token.count("}")  # a lone `{{` or `}}` too: then the whole tree is built


def _logical_lines(masked: list[str]) -> list[tuple[int, int]]:
    """The (first, last) physical line of each logical line that is not blank."""
    logical: list[tuple[int, int]] = []
    depth, continued = 0, False
    for number, line in enumerate(masked):
        if depth == 0 and not continued and not line.startswith(_IN_STRING):
            if not line.strip():
                continue
            logical.append((number, number))
        elif logical:
            logical[-1] = (logical[-1][0], number)
        depth += line.count("(") + line.count("[") + line.count("{")
        depth -= line.count(")") + line.count("]") + line.count("}")
        continued = line.endswith("\\")
    return logical


def _outline(text: str) -> str | None:
    """`text` with what the summary does not read left out, line for line."""
    if "\t" in text or "\f" in text or "\r" in text:
        return None  # indentation CPython measures its own way, or other line ends: not worth the risk
    try:
        masked = [line.rstrip() for line in STRING_OR_COMMENT.sub(_mask, text).split("\n")]
    except _Unsure:
        return None
    lines = text.split("\n")
    out = [""] * len(lines)
    blocks: list[list[int]] = []  # [indent, what its statements are, whether one is in the outline yet]
    for first, last in _logical_lines(masked):
        line = masked[first]
        indent = len(line) - len(line.lstrip(" "))
        while blocks and blocks[-1][0] >= indent:
            blocks.pop()
        opener = _OPENER.match(line)
        keyword = opener.group(1) if opener else None
        opens = masked[last].endswith(":")  # a block follows on the lines below
        inside = blocks[-1] if blocks else [-1, _KEEP, True]
        if inside[1] == _KEEP:
            word = _FIRST_WORD.match(line)
            word = word.group(1) if word else ""
            # A definition, an import, `__all__`, a block read in (its clauses too); a line of several statements, whole.
            keep = keyword is not None or word in _READ or word in _BLOCKS or ";" in line
        else:
            keep = inside[1] == _CLASS and keyword == "def"
        if keep:
            # A definition's name and line are what is read: not its parameters, bases or decorators.
            if opener and opener.end() > opener.end(1):
                out[first] = f"{opener.group()}{'()' if keyword == 'def' else ''}:{'' if opens else ' pass'}"
            else:
                out[first : last + 1] = lines[first : last + 1]
            inside[2] = True
            if opens:  # the blocks `imports_summary` reads in are outlined; a class keeps its `def` lines
                blocks.append([indent, _DROP if keyword == "def" else _CLASS if keyword == "class" else _KEEP, False])
        else:  # left out: the first statement of the block stands as `pass`
            if not inside[2]:
                out[first] = " " * indent + "pass"
                inside[2] = True
            if opens:
                blocks.append([indent, _DROP, True])
    return "\n".join(out)
