"""A progress bar for the probes, on a terminal only (rich, which Typer
already brings); a silent stand-in everywhere else."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator


class _Silent:
    def advance(self, steps: float = 1) -> None:
        pass

    def update(self, completed: float, description: str | None = None) -> None:
        pass


class _Bar:
    def __init__(self, progress: object, task: object) -> None:
        self._progress, self._task = progress, task

    def advance(self, steps: float = 1) -> None:
        self._progress.advance(self._task, steps)  # type: ignore[attr-defined]

    def update(self, completed: float, description: str | None = None) -> None:
        """Set the bar to `completed` (and its text to `description`)."""
        changes = {"completed": completed} | ({"description": description} if description is not None else {})
        self._progress.update(self._task, **changes)  # type: ignore[attr-defined]


@contextmanager
def progress(description: str, total: float | None, unit: str | None = None) -> Iterator[_Silent | _Bar]:
    """A bar on standard error when it is a terminal, else nothing.

    With `unit` (``"s"``: a time budget), the bar shows ``done/total unit``
    instead of an estimate of the time left.
    """
    if not sys.stderr.isatty():
        yield _Silent()
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn
    except ImportError:  # pragma: no cover - rich comes with typer
        yield _Silent()
        return
    columns = () if unit is None else (
        TextColumn("{task.description}"), BarColumn(),
        TextColumn(f"{{task.completed:.0f}}/{{task.total:.0f}} {unit} budget"),
    )  # fmt: skip
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        yield _Bar(bar, bar.add_task(description, total=total))
