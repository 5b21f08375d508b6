"""The outcome of one run over many files, as every reporter receives it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from ddplint.model import Finding, Notice

if TYPE_CHECKING:
    from ddplint.result import FileResult
    from ddplint.fixing import FixedFile


@dataclass
class Report:
    """Findings and notices of a run, and how many files were linted."""

    findings: list[Finding] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    files: int = 0
    #: Files that `--fix`/`--diff` changed (in memory), in path order.
    fixed: list[FixedFile] = field(default_factory=list)

    def add(self, result: FileResult) -> None:
        """Merge one file's result."""
        self.files += 1
        self.findings.extend(result.findings)
        self.notices.extend(result.notices)

    def sort(self) -> None:
        """Findings by path, line, column, code; notices by path."""
        self.findings.sort(key=lambda f: f.sort_key)
        self.notices.sort(key=lambda n: n.path)
        self.fixed.sort(key=lambda f: f.display)

    def with_paths(self, convert: Callable[[str], str]) -> Report:
        """The same report with every path passed through `convert`."""
        def finding(f: Finding) -> Finding:
            related = tuple(replace(r, path=convert(r.path)) for r in f.related)
            return replace(f, path=convert(f.path), related=related)

        notices = [replace(n, path=convert(n.path)) for n in self.notices]
        return Report([finding(f) for f in self.findings], notices, self.files, self.fixed)

    @property
    def fixes_applied(self) -> int:
        """Findings that `--fix` fixed."""
        return sum(f.applied for f in self.fixed)

    @property
    def active(self) -> list[Finding]:
        """The findings that no in-source suppression silenced."""
        return [f for f in self.findings if f.suppressed is None]
