"""Linting many files: discovery, reading, the per-file engine, one report.

This is the only layer that touches the file system for linting; the engine
below it is pure. Every file is independent of the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ddplint.config.resolver import ConfigResolver
from ddplint.discovery import SourceFile, discover
from ddplint.engine import FileResult, check_bytes
from ddplint.model import Finding, Notice


@dataclass
class Report:
    """The outcome of one run over many files."""

    findings: list[Finding] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    files: int = 0

    def add(self, result: FileResult) -> None:
        """Merge one file's result."""
        self.files += 1
        self.findings.extend(result.findings)
        self.notices.extend(result.notices)

    def sort(self) -> None:
        """Findings by path, line, column, code; notices by path."""
        self.findings.sort(key=lambda f: f.sort_key)
        self.notices.sort(key=lambda n: n.path)

    @property
    def active(self) -> list[Finding]:
        """The findings that no in-source suppression silenced."""
        return [f for f in self.findings if f.suppressed is None]


def lint_paths(
    paths: list[Path], resolver: ConfigResolver | None = None, force_exclude: bool = False
) -> Report:
    """Lint files and directories; missing paths must be rejected before."""
    resolver = resolver or ConfigResolver()
    found = discover(paths, resolver, force_exclude=force_exclude)
    report = Report(notices=list(found.notices))
    for source in found.files:
        report.add(lint_file(source, resolver))
    report.sort()
    return report


def lint_file(source: SourceFile, resolver: ConfigResolver) -> FileResult:
    """Read and lint one file; an unreadable file becomes a notice."""
    try:
        data = source.path.read_bytes()
    except OSError as exc:
        return FileResult(notices=(Notice(source.display, f"cannot read file: {exc.strerror or exc}"),))
    return check_bytes(source.display, data, resolver.settings_for(source.path))


def lint_stdin(data: bytes, filename: str, resolver: ConfigResolver) -> Report:
    """Lint `data` as if it were the file `filename` (excludes apply by name)."""
    path = Path(filename)
    report = Report()
    if not resolver.excludes_file(path):
        report.add(check_bytes(filename, data, resolver.settings_for(path)))
    return report
