"""Linting many files: discovery, reading, the per-file engine, one report.

This is the only layer that touches the file system for linting; the engine
below it is pure. Every file is independent of the others.
"""

from __future__ import annotations

from pathlib import Path

from ddplint.config.resolver import ConfigResolver
from ddplint.discovery import SourceFile, discover
from ddplint.engine import FileResult, check_bytes
from ddplint.model import Notice
from ddplint.report import Report


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
    """Read and lint one file; an unreadable file or a ddplint bug becomes a notice."""
    try:
        data = source.path.read_bytes()
    except OSError as exc:
        return FileResult(notices=(Notice(source.display, f"cannot read file: {exc.strerror or exc}"),))
    settings = resolver.settings_for(source.path)
    try:
        return check_bytes(source.display, data, settings)
    except Exception as exc:  # noqa: BLE001 - one file's crash must not end the run
        return FileResult(notices=(Notice.internal_error(source.display, exc),))



def lint_stdin(data: bytes, filename: str, resolver: ConfigResolver) -> Report:
    """Lint `data` as if it were the file `filename` (excludes apply by name)."""
    path = Path(filename)
    report = Report()
    if not resolver.excludes_file(path):
        try:
            report.add(check_bytes(filename, data, resolver.settings_for(path)))
        except Exception as exc:  # noqa: BLE001
            report.notices.append(Notice.internal_error(filename, exc))
    return report
