"""In-source suppressions: ``# noqa``, ``# noqa: DDP014, DDP0`` and the
file-wide ``# ddplint: noqa`` / ``# ddplint: noqa: DDP007``.

Codes are matched as prefixes (``DDP0`` silences DDP000-DDP099), like Ruff.
The parser works on comment texts that the engine collects with CPython's
tokenizer (never from a regex over raw lines, so
``"# noqa"`` inside a string suppresses nothing); the raw text only decides
whether the tokenizer is needed at all (`may_suppress`).

Which lines a ``# noqa`` may sit on (`Suppressions.match` gets them from the
engine): the line where the finding's range starts, the line of the
offending argument when the rule names one, the first line of the statement
around it, and its last line (for a compound statement, the last line of its
header). A line that cannot end in a comment (it ends inside a multi-line
string, or with a backslash) is stood for by the next line that can: the
line where the string ends, as in Ruff. `--add-noqa` writes to the first of
these lines.

The directives' use is recorded (`used`), for DDP100 to report the ones that
suppressed nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Iterator

_CODES = r"(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)"
_LINE_RE = re.compile(r"#\s*noqa(?::\s*" + _CODES + r")?", re.IGNORECASE)
_FILE_RE = re.compile(r"^#\s*ddplint:\s*noqa(?::\s*" + _CODES + r")?", re.IGNORECASE)
_SPLIT_RE = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Directive:
    """One suppression comment; `codes` None means every code."""

    comment: str
    codes: tuple[str, ...] | None

    def covers(self, code: str) -> bool:
        """Whether this directive silences `code`."""
        return self.codes is None or any(code.startswith(c) for c in self.codes)


@dataclass
class Suppressions:
    """All directives of one file, by line (1-based)."""

    by_line: dict[int, Directive] = field(default_factory=dict)
    file_wide: list[Directive] = field(default_factory=list)
    #: The file's text, to find the lines that stand for others (see the module's docstring) when needed.
    text: str | None = None
    _comment_line: dict[int, int] | None = None
    #: (line, code) of every line directive that suppressed a finding of `code`.
    used: set[tuple[int, str]] = field(default_factory=set)

    @classmethod
    def from_comments(cls, comments: Iterable[tuple[int, str]], text: str | None = None) -> Suppressions:
        """Parse (line, comment text) pairs; with the file's `text`, lines
        that cannot hold a comment are stood for by the next that can."""
        result = cls()
        for line, comment in comments:
            if match := _FILE_RE.match(comment):
                result.file_wide.append(Directive(comment.strip(), _codes(match)))
            elif match := _LINE_RE.search(comment):
                result.by_line[line] = Directive(comment.strip(), _codes(match))
        result.text = text
        return result

    @classmethod
    def from_source(cls, text: str) -> Suppressions:
        """The directives of a file's source text (which CPython accepts)."""
        return cls.from_comments(((c.line, c.text) for c in source_comments(text)), text)

    def match(self, code: str, lines: Iterable[int]) -> str | None:
        """The comment that suppresses `code` on any of `lines`, if one does."""
        for directive in self.file_wide:
            if directive.covers(code):
                return directive.comment
        if not self.by_line:
            return None
        lines = list(dict.fromkeys(lines))
        for line in lines:
            directive = self.by_line.get(line)
            if directive is not None and directive.covers(code):
                self.used.add((line, code))
                return directive.comment
        if self.text is None:
            return None
        if self._comment_line is None:  # tokenized once, and only for a file whose directives the lines missed
            self._comment_line = comment_lines(self.text)
        for line in lines:
            stand_in = self._comment_line.get(line)
            directive = self.by_line.get(stand_in) if stand_in is not None else None
            if directive is not None and directive.covers(code):
                self.used.add((stand_in, code))
                return directive.comment
        return None


@dataclass(frozen=True)
class Comment:
    """A comment token: 1-based line, 0-based column (code points), text."""

    line: int
    column: int
    text: str


def source_comments(text: str) -> list[Comment]:
    """Every comment in `text`, by CPython's tokenizer (strings hold none)."""
    return [Comment(t.start[0], t.start[1], t.string) for t in _tokens(text) if t.type == tokenize.COMMENT]


def comment_lines(text: str) -> dict[int, int]:
    """For each line that cannot end in a comment (inside a multi-line
    string, or continued by a backslash), the next line that can."""
    ends = sorted({t.start[0] for t in _tokens(text) if t.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT)})
    result: dict[int, int] = {}
    previous = 0
    for end in ends:
        for line in range(previous + 1, end):
            result[line] = end
        previous = end
    return result


#: `_LINE_RE` kept within one line: what it finds in a comment, it finds at the same place of the raw text.
_RAW_LINE_RE = re.compile(
    r"#[^\S\r\n]*noqa(?::[^\S\r\n]*(?P<codes>[A-Z]+[0-9]+(?:(?:[^\S\r\n]|,)+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_DDPLINT = re.compile("ddplint", re.IGNORECASE)
_NOQA_WORD = re.compile("noqa", re.IGNORECASE)


def raw_directives(text: str) -> Iterator[tuple[str, ...] | None]:
    """The codes (None: blanket) of every ``# noqa`` in the raw text, strings
    included: each directive a comment holds is among them (a string that
    mentions one only adds to them), so a text whose raw directives all name
    other tools' codes (``# noqa: E501``) needs no tokenizing for ddplint's."""
    for match in _RAW_LINE_RE.finditer(text):
        yield _codes(match)


def may_suppress(text: str) -> bool:
    """Whether a comment of `text` may silence a ddplint finding: a file-wide
    ``# ddplint: noqa``, a blanket ``# noqa``, or a code that is a prefix of a
    ddplint code (``DDP0``). Cheap: no tokenizing."""
    if _DDPLINT.search(text) is not None and _NOQA_WORD.search(text) is not None:
        return True
    return any(codes is None or any(code.startswith("D") for code in codes) for codes in raw_directives(text))


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    tokens: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            tokens.append(token)
    except (tokenize.TokenError, SyntaxError):  # what was read up to the error still counts
        pass
    return tokens


def directive_codes(comment: str) -> tuple[re.Match[str], tuple[str, ...] | None] | None:
    """The ``# noqa`` directive in a comment and its codes (None: blanket)."""
    if _FILE_RE.match(comment):
        return None
    match = _LINE_RE.search(comment)
    return (match, _codes(match)) if match else None


def _codes(match: re.Match[str]) -> tuple[str, ...] | None:
    codes = match.group("codes")
    if not codes:
        return None
    return tuple(c.upper() for c in _SPLIT_RE.split(codes.strip()) if c)


_PHYSICAL_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def add_noqa(text: str, codes_by_line: dict[int, set[str]]) -> tuple[str, int]:
    """`text` with a ``# noqa: CODE[, CODE]`` for the codes on each line
    (merged into the line's ``# noqa:`` directive if it has one; a line that
    cannot end in a comment gets it on the line that stands for it), and how
    many directives were added or extended."""
    comments = {c.line: c for c in source_comments(text)}
    stand_for = comment_lines(text)
    targets: dict[int, set[str]] = {}
    for line, codes in codes_by_line.items():
        targets.setdefault(stand_for.get(line, line), set()).update(codes)
    lines = _PHYSICAL_LINE_RE.findall(text)
    count = 0
    for line, codes in sorted(targets.items()):
        if not 0 < line <= len(lines):
            continue
        raw = lines[line - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        comment = comments.get(line)
        parsed = directive_codes(comment.text) if comment is not None else None
        if comment is not None and parsed is not None:
            match, existing = parsed
            missing = sorted(c for c in codes if existing is not None and not any(c.startswith(e) for e in existing))
            if not missing:  # a blanket directive, or the codes are there already
                continue
            at = comment.column + match.end("codes")
            body = body[:at] + ", " + ", ".join(missing) + body[at:]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        lines[line - 1] = body + ending
        count += 1
    return "".join(lines), count
