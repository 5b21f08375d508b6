"""Linting many files: discovery, reading, the per-file engine, one report.

This is the only layer that touches the file system for linting; the engine
below it is pure. Every file is independent of the others.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from ddplint.cache import Cache, entry_key
from ddplint.config.resolver import ConfigResolver
from ddplint.config.settings import Settings
from ddplint.discovery import SourceFile, discover
from ddplint.engine import FileResult, check_bytes
from ddplint.model import Notice
from ddplint.report import Report


#: Below this many files to lint, a process pool costs more than it saves.
MIN_FILES_FOR_POOL = 8


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class _Task:
    display: str
    data: bytes
    settings: Settings
    key: str | None
    prefilter: bool = True


def lint_paths(
    paths: list[Path],
    resolver: ConfigResolver | None = None,
    force_exclude: bool = False,
    jobs: int = 1,
    cache: Cache | None = None,
    prefilter: bool = True,
) -> Report:
    """Lint files and directories; missing paths must be rejected before.

    With `jobs` > 1 the files are linted in a process pool, largest first;
    the report is the same as with one job. `cache` skips files whose
    bytes, path, settings and ddplint version were linted before.
    """
    resolver = resolver or ConfigResolver()
    found = discover(paths, resolver, force_exclude=force_exclude)
    report = Report(notices=list(found.notices))
    tasks: list[_Task] = []
    for source in found.files:
        try:
            data = source.path.read_bytes()
        except OSError as exc:
            report.add(FileResult(notices=(Notice(source.display, f"cannot read file: {exc.strerror or exc}"),)))
            continue
        settings = resolver.settings_for(source.path)
        key = entry_key(data, source.display, settings) if cache is not None else None
        cached = cache.get(key) if cache is not None and key is not None else None
        if cached is not None:
            report.add(cached)
        else:
            tasks.append(_Task(source.display, data, settings, key, prefilter))
    for task, result in zip(tasks, _run(tasks, jobs)):
        report.add(result)
        if cache is not None and task.key is not None:
            cache.put(task.key, result)
    report.sort()
    return report


def _run(tasks: list[_Task], jobs: int) -> list[FileResult]:
    """The results of `tasks`, in order; in a pool when it pays."""
    if jobs <= 1 or len(tasks) < MIN_FILES_FOR_POOL:
        return [_lint_task(task) for task in tasks]
    results: list[FileResult | None] = [None] * len(tasks)
    order = sorted(range(len(tasks)), key=lambda i: -len(tasks[i].data))  # large files first
    context = multiprocessing.get_context("fork") if sys.platform == "linux" else None
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        futures = {pool.submit(_lint_task, tasks[i]): i for i in order}
        for future in as_completed(futures):
            index = futures[future]
            try:
                results[index] = future.result()
            except Exception as exc:  # noqa: BLE001 - a dead worker must not end the run
                results[index] = FileResult(notices=(Notice.internal_error(tasks[index].display, exc),))
    return [r for r in results if r is not None]


def _lint_task(task: _Task) -> FileResult:
    try:
        return check_bytes(task.display, task.data, task.settings, task.prefilter)
    except Exception as exc:  # noqa: BLE001 - one file's crash must not end the run
        return FileResult(notices=(Notice.internal_error(task.display, exc),))


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
