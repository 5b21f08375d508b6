"""A progress bar for the probes, on a terminal only (rich, which Typer
already brings); a silent stand-in everywhere else."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator


class _Silent:
    def advance(self, steps: float = 1) -> None:
        pass


class _Bar:
    def __init__(self, progress: object, task: object) -> None:
        self._progress, self._task = progress, task

    def advance(self, steps: float = 1) -> None:
        self._progress.advance(self._task, steps)  # type: ignore[attr-defined]


@contextmanager
def progress(description: str, total: float | None) -> Iterator[_Silent | _Bar]:
    """A bar on standard error when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        yield _Silent()
        return
    try:
        from rich.console import Console
        from rich.progress import Progress
    except ImportError:  # pragma: no cover - rich comes with typer
        yield _Silent()
        return
    with Progress(console=Console(stderr=True), transient=True) as bar:
        yield _Bar(bar, bar.add_task(description, total=total))
