"""In-source suppressions: ``# noqa``, ``# noqa: DDP014, DDP0`` and the
file-wide ``# ddplint: noqa`` / ``# ddplint: noqa: DDP007``.

Codes are matched as prefixes (``DDP0`` silences DDP000-DDP099), like Ruff.
The parser works on comment texts that the engine collects with Python's
tokenizer (never from a regex over raw lines, so ``"# noqa"`` inside a
string suppresses nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

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

    @classmethod
    def from_comments(cls, comments: Iterable[tuple[int, str]]) -> Suppressions:
        """Parse (line, comment text) pairs."""
        result = cls()
        for line, text in comments:
            if match := _FILE_RE.match(text):
                result.file_wide.append(Directive(text.strip(), _codes(match)))
            elif match := _LINE_RE.search(text):
                result.by_line[line] = Directive(text.strip(), _codes(match))
        return result

    def match(self, code: str, lines: Iterable[int]) -> str | None:
        """The comment that suppresses `code` on any of `lines`, if one does."""
        for directive in self.file_wide:
            if directive.covers(code):
                return directive.comment
        for line in lines:
            directive = self.by_line.get(line)
            if directive is not None and directive.covers(code):
                return directive.comment
        return None


def _codes(match: re.Match[str]) -> tuple[str, ...] | None:
    codes = match.group("codes")
    if not codes:
        return None
    return tuple(c.upper() for c in _SPLIT_RE.split(codes.strip()) if c)
