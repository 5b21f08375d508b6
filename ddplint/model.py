"""The finding model shared by the static linter and the runtime preflight.

Every reporter (text, JSON, GitHub, SARIF) consumes these types and nothing
else, so a check written for either half of ddplint is rendered the same way.
All types are immutable and hold only plain data: a `Finding` can be pickled
to a worker process, cached on disk, or compared in a test.
"""

from __future__ import annotations

import enum
import traceback
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    """How bad a finding is; ordered ``note < warning < error``."""

    NOTE = "note"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """Numeric order, for comparisons such as ``--fail-on``."""
        return _SEVERITY_RANK[self]

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Parse a user-supplied level, raising ``ValueError`` with the choices."""
        try:
            return cls(text.lower())
        except ValueError:
            choices = ", ".join(s.value for s in cls)
            raise ValueError(f"expected one of {choices}, got {text!r}") from None


_SEVERITY_RANK = {Severity.NOTE: 0, Severity.WARNING: 1, Severity.ERROR: 2}


@dataclass(frozen=True, order=True)
class Span:
    """A 1-based, end-inclusive-line / end-exclusive-column source range.

    Columns count Unicode code points, as editors and SARIF's
    ``unicodeCodePoints`` column kind do.
    """

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Related:
    """A secondary location that explains a finding (e.g. the guarding `if`)."""

    path: str
    span: Span
    message: str


@dataclass(frozen=True)
class Edit:
    """Replace the text in `span` of the finding's file with `content`."""

    span: Span
    content: str


class Applicability(str, enum.Enum):
    """Whether a fix can be applied without review."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True)
class Fix:
    """A proposed change: a title and the edits that make it."""

    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE


NO_PATH = ""
NOWHERE = Span(1, 1, 1, 1)


@dataclass(frozen=True)
class Finding:
    """One problem found in one place.

    ``snippet`` is the anchor's first source line; reporters use it to build
    fingerprints that survive unrelated edits elsewhere in the file.
    ``suppressed`` holds the suppressing comment (e.g. ``# noqa: DDP014``)
    when an in-source suppression matched; suppressed findings never count
    towards the exit status and only SARIF shows them.

    A runtime finding (``ddplint doctor``) is about the machine or the job,
    not about a file: its ``path`` is empty (`NO_PATH`) and its ``span``
    meaningless; ``properties`` then holds the measured values.
    """

    rule: str
    name: str
    severity: Severity
    message: str
    path: str
    span: Span
    related: tuple[Related, ...] = ()
    fix: Fix | None = None
    snippet: str = ""
    suppressed: str | None = None
    properties: tuple[tuple[str, object], ...] = ()

    @property
    def located(self) -> bool:
        """Whether the finding points into a file (every static finding does)."""
        return self.path != NO_PATH

    @property
    def cell(self) -> int | None:
        """The notebook cell (from 1) that `span` counts its lines in; None in a Python file."""
        cell = dict(self.properties).get("cell")
        return cell if isinstance(cell, int) else None

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        """Output order: path, notebook cell, line, column, code."""
        return (self.path, self.cell or 0, self.span.line, self.span.column, self.rule)


class NoticeLevel(str, enum.Enum):
    """Level of a message about the run itself rather than about the code."""

    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Notice:
    """A file that could not be linted (unreadable, broken symlink, ...).

    ``internal`` marks a bug in ddplint itself (a rule that raised); such a
    run must never pass silently, so it exits with status 2.
    """

    path: str
    message: str
    level: NoticeLevel = NoticeLevel.ERROR
    internal: bool = False
    detail: str = field(default="", compare=False)

    @classmethod
    def internal_error(cls, path: str, exc: BaseException, where: str = "") -> Notice:
        """A bug in ddplint met on `path` (exit status 2); the traceback goes to `detail`."""
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        message = f"internal error{where}: {type(exc).__name__}: {exc}"
        return cls(path, message, NoticeLevel.ERROR, internal=True, detail=detail)
