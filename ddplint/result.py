"""What linting one file produced, as the engine returns it and the cache stores it.

Kept apart from the engine so that reading results back (a warm cache, the
report) never imports LibCST.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ddplint.model import Finding, Notice
from ddplint.project.summary import ModuleSummary


@dataclass(frozen=True)
class FileResult:
    """Everything linting one file produced."""

    findings: tuple[Finding, ...] = ()
    notices: tuple[Notice, ...] = ()
    #: Whether LibCST parsed the file (False when the prefilter skipped it).
    parsed: bool = False
    #: What other modules may need to know about this one (when asked for).
    summary: ModuleSummary | None = None

    def with_notice(self, notice: Notice) -> FileResult:
        """The same result with one more notice."""
        return dataclasses.replace(self, notices=(*self.notices, notice))
