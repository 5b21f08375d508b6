"""A module's text as code: its comments and its prose left out.

The prefilter asks whether a file's text holds a rule's tokens; a word in a
comment or a docstring (``# the rank-0 process saves``, ``Gather the
outputs...``) cannot make a rule fire, yet it made LibCST parse the file:
13 of the 119 files parsed in timm, mmengine and accelerate were parsed for
the word ``rank`` in a comment, a docstring or an error message alone.

Left out: comments, and the text of every string literal holding whitespace
(prose: docstrings, messages, help texts), except what its replacement
fields hold (``f"rank {rank} of {dist.get_world_size()}"`` keeps ``rank``
and ``dist.get_world_size()``: code), so a format string with a field is
code whatever its prefix. Strings without whitespace stay whole: they are
names code reads (``os.environ["LOCAL_RANK"]``, ``backend="nccl"``,
``"cuda:0"``, ``getattr(args, "local_rank")``). Where the braces of a
string cannot be paired, the whole string stays: leaving out too little only
costs a parse, too much would lose a finding.

One regular-expression pass over the text (a tenth of a second for the
539 files above), as CPython's tokenizer splits strings and comments.
"""

from __future__ import annotations

import re

#: A comment, or a string literal (its prefix letters stay in the text before it),
#: as CPython's tokenizer splits them (also the outline's, `ddplint.project.outline`).
STRING_OR_COMMENT = re.compile(
    r"""
      \#[^\r\n]*
    | '''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:'''|\Z)
    | \"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:\"\"\"|\Z)
    | '[^'\\\n]*(?:\\.[^'\\\n]*)*'?
    | "[^"\\\n]*(?:\\.[^"\\\n]*)*"?
    """,
    re.VERBOSE | re.DOTALL,
)

#: A replacement field, with fields nested one deep in it (``{x:{width}}``).
_FIELD = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")


def code_text(text: str) -> str:
    """`text` without its comments and the prose of its string literals
    (each such string becomes ``""`` or the fields it holds)."""
    pieces: list[str] = []
    last = 0
    for match in STRING_OR_COMMENT.finditer(text):
        token = match.group()
        if token[0] == "#":
            kept = ""
        elif " " in token or "\n" in token or "\t" in token:
            kept = _fields(token)
        else:
            continue
        pieces.append(text[last : match.start()])
        pieces.append(kept)
        last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _fields(literal: str) -> str:
    """A string literal of prose as the replacement fields it holds (``""``
    without any); whole where its braces do not pair."""
    if "{" not in literal and "}" not in literal:
        return '""'
    rest = _FIELD.sub("", literal)
    if "{" in rest or "}" in rest:
        return literal
    return '"' + " ".join(_FIELD.findall(literal)) + '"'
