"""Linting many files: discovery, reading, the per-file engine, one report.

This is the only layer that touches the file system for linting; the engine
below it is pure. Every file is independent of the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping

from ddplint.cache import Cache, entry_key, run_key
from ddplint.config.resolver import ConfigResolver
from ddplint.config.settings import Settings
from ddplint.discovery import SourceFile, discover
from ddplint.fixing import FixMode, fix_file
from ddplint.model import Notice
from ddplint.pool import Workers
from ddplint.project.facts import NO_FACTS, Fact, FileFacts
from ddplint.project.imports import imported_names
from ddplint.project.modules import ModuleNamer, module_names, project_roots, resolve_files
from ddplint.project.summary import ModuleSummary, attribute_uses
from ddplint.project.role import ALONE, ProjectRole
from ddplint.reading import read_source, unreadable_notice
from ddplint.report import Report
from ddplint.result import FileResult

if TYPE_CHECKING:
    from ddplint.project.index import ModuleEntry, ProjectIndex


#: Below this many files to lint, a process pool costs more than it saves.
MIN_FILES_FOR_POOL = 8
#: Rounds of re-linting files whose imported facts changed (each round can
#: only add facts; real import chains settle in one or two). A chain of
#: calls through modules that were not linted as per-rank code before takes
#: a round per module (each is linted as such once its callers are known).
MAX_PROJECT_ROUNDS = 8


@functools.cache  # once per process: a long-lived caller (tests, an editor) must not freeze its garbage
def tune_gc() -> None:
    """Tune CPython's cycle collector for linting (the process's own choice:
    the command line and the language server call it).

    LibCST builds a million objects for a large file; at the default
    threshold (a collection every 700 allocations) the tree under
    construction is scanned over and over and promoted into the old
    generations, whose full collections then traverse everything alive
    (measured: a quarter of a `-j1` run). A collection every 10,000
    allocations keeps peak memory the same; `gc.freeze` takes the imported
    modules out of every collection (and keeps forked workers' pages shared).
    """
    gc.freeze()
    gc.set_threshold(10_000)


@contextlib.contextmanager
def one_collection_per_file() -> Iterator[None]:
    """No cycle collection while one file is linted; the first one after it
    frees the file's garbage at once.

    A lint's tree and analyses stay alive until its end, and they hold one
    another in cycles (the analyses refer to each other and to the tree's
    nodes), so each collection during it only scans them and promotes them
    into older generations, scanned again later; the collection after it
    scans them once. Measured on timm + mmengine + accelerate, one process:
    collector time 1.6 -> 0.9 s whole project, peak memory 140 -> 130 MiB.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class _Task:
    """One file to lint. A file on disk travels as its path and the digest
    of the bytes read when it was found (the worker reads it again: the
    parent never holds the whole tree's bytes); text from an editor or
    stdin travels as `data`."""

    display: str
    settings: Settings
    key: str | None
    digest: bytes
    size: int
    prefilter: bool = True
    project: ProjectRole = ALONE
    path: Path | None = None
    data: bytes | None = None

    def with_facts(self, facts: FileFacts, cache: Cache | None, layout: ModuleSummary | None = None) -> _Task:
        """The task again with `facts`; `layout`, what its first lint read of
        the file's imports (the same bytes: the key stays one of the bytes)."""
        key = self.cache_key(f"facts:{self.project.imported}:{self.project.importer}:{facts.digest()}") if cache else None
        project = dataclasses.replace(self.project, facts=facts, layout=layout)
        return dataclasses.replace(self, project=project, key=key)

    def cache_key(self, extra: str = "") -> str:
        """The cache entry of this lint: the file's bytes and name, the
        settings, whether the prefilter ran, and `extra` (its role)."""
        return entry_key(self.digest, self.display, self.settings, extra if self.prefilter else f"{extra}|no-prefilter")

    def read(self) -> bytes:
        """The bytes to lint (`OSError` if the file cannot be read now, is
        no longer a regular file or has grown above max-file-size)."""
        if self.data is not None:
            return self.data
        return read_source(self.path, self.settings.max_file_size)  # type: ignore[arg-type]

    def fresh(self, data: bytes) -> bool:
        """Whether `data` (just read) are the bytes the file was found with."""
        return self.data is not None or hashlib.sha256(data).digest() == self.digest


#: The run's worker processes, each file's result with whether it is of the bytes it was found with.
_Workers = Workers[_Task, "tuple[FileResult, bool]"]


def _found_task(source: SourceFile, resolver: ConfigResolver, prefilter: bool, role: ProjectRole) -> _Task | Notice:
    """The task of a discovered file, or why it cannot be read (or is not
    read: not a regular file, or above max-file-size)."""
    settings = resolver.settings_for(source.path)
    try:
        data = read_source(source.path, settings.max_file_size)
    except OSError as exc:
        return unreadable_notice(source.display, exc)
    digest = hashlib.sha256(data).digest()
    return _Task(source.display, settings, None, digest, len(data), prefilter, role, source.path)


def lint_paths(
    paths: list[Path],
    resolver: ConfigResolver | None = None,
    force_exclude: bool = False,
    jobs: int = 1,
    cache: Cache | None = None,
    prefilter: bool = True,
    project: bool = True,
    fix: FixMode | None = None,
) -> Report:
    """Lint files and directories; missing paths must be rejected before.

    With `jobs` > 1 the files are linted in a process pool, largest first;
    the report is the same as with one job. `cache` skips files whose
    bytes, path, settings and ddplint version were linted before. With
    `project`, helpers imported from other linted files are resolved (see
    `ddplint.project`); without, each file is analysed on its own. With
    `fix`, the files with applicable fixes are fixed (in memory: the report
    holds the fixed texts in `fixed`, and the findings that remain).
    """
    resolver = resolver or ConfigResolver()
    found = discover(paths, resolver, force_exclude=force_exclude)
    report = Report(notices=list(found.notices))
    tasks: list[_Task] = []
    for source in found.files:
        task = _found_task(source, resolver, prefilter, ProjectRole(summarize=project))
        if isinstance(task, Notice):
            report.add(FileResult(notices=(task,)))
        else:
            tasks.append(task)
    with _workers(jobs) as workers:
        if project:
            results, _, tasks = _lint_project(tasks, paths, resolver, workers, cache, remember=fix is None)
        else:
            tasks = [dataclasses.replace(t, key=t.cache_key()) for t in tasks] if cache else tasks
            results = _cached_run(tasks, workers, cache)
    for task, result in zip(tasks, results):
        report.add(_fixed(task, result, fix, report) if fix else result)
    report.sort()
    return report


def _fixed(task: _Task, result: FileResult, mode: FixMode, report: Report) -> FileResult:
    """`result`, or with fixes to apply, the result of the fixed file (which
    joins `report.fixed`)."""
    from ddplint.engine.fixer import FixOutcome, applicable, fix_source  # only when fixing

    if not any(applicable(f, mode.unsafe) for f in result.findings):
        return result

    def fixer(text: str, first: FileResult) -> FixOutcome:
        return fix_source(task.display, text, task.settings, mode.unsafe, task.project, first)

    try:
        data = task.read()
        if not task.fresh(data):
            return result.with_notice(Notice(task.display, "changed while it was linted; not fixed"))
        result, fixed = fix_file(task.display, task.path, data, result, fixer)
    except OSError as exc:
        return result.with_notice(Notice(task.display, f"cannot read file to fix it: {exc.strerror or exc}"))
    except Exception as exc:  # noqa: BLE001 - a bug in one fix must not end the run
        return result.with_notice(Notice.internal_error(task.display, exc, " while fixing"))
    if fixed is not None:
        report.fixed.append(fixed)
    return result


def _cached_run(tasks: list[_Task], workers: _Workers, cache: Cache | None) -> list[FileResult]:
    """The results of `tasks`, from the cache where it has them."""
    results: list[FileResult | None] = [cache.get(t.key) if cache and t.key else None for t in tasks]
    todo = [i for i, r in enumerate(results) if r is None or (tasks[i].project.summarize and r.summary is None)]
    for index, (result, fresh) in zip(todo, workers.map([tasks[i] for i in todo])):
        results[index] = result
        if cache is not None and tasks[index].key is not None and fresh:
            cache.put(tasks[index].key, result)
    return [r for r in results if r is not None]


def _lint_project(
    tasks: list[_Task],
    paths: list[Path],
    resolver: ConfigResolver,
    workers: _Workers,
    cache: Cache | None,
    remember: bool = False,
) -> tuple[list[FileResult], ProjectIndex | None, list[_Task]]:
    """Lint every file, then again, with the facts of their imports, the files
    that import helpers the project knows something about; repeat while facts
    change. Returns the results, the final index and the tasks as last run.

    With `remember` and a cache, a run over exactly the same files, settings
    and roots as one before takes that run's results straight from the cache,
    without resolving the project again (then there is no index, and the
    tasks are returned as given).
    """
    resolved = resolve_files([t.path for t in tasks if t.path])
    roots = project_roots(paths, resolved, resolver.source_roots())
    run = _run_key(tasks, roots) if cache is not None and remember else None
    if run is not None and cache is not None:
        remembered = _remembered(cache, run, len(tasks))
        if remembered is not None:
            return remembered, None, tasks
    from ddplint.project.index import ModuleEntry, ProjectIndex  # here: a remembered run needs no index

    by_path = iter(resolved)
    namer = ModuleNamer(roots)
    named = [namer(next(by_path)) if t.path else ((), False) for t in tasks]
    roles = _import_roles(tasks, named)
    tasks = [
        dataclasses.replace(
            task,
            project=dataclasses.replace(task.project, imported=imported, importer=importer),
            key=task.cache_key(f"summary:{imported}:{importer}") if cache else None,
        )
        for task, (imported, importer) in zip(tasks, roles)
    ]
    # A module that imports linted ones and that none imports is linted once, with the facts of
    # its imports: its first round reads only its layout (their facts need their own lints alone).
    last = [i for i, task in enumerate(tasks) if task.project.importer and not task.project.imported]
    first = list(tasks)
    for i in last:
        role = dataclasses.replace(tasks[i].project, layout_only=True)
        first[i] = dataclasses.replace(tasks[i], project=role, key=tasks[i].cache_key("layout") if cache else None)
    results = _cached_run(first, workers, cache)
    entries = [
        ModuleEntry(task.display, names, is_package, result.summary or ModuleSummary())
        for task, (names, is_package), result in zip(tasks, named, results)
    ]
    # A re-lint reads the file's imports from its first lint (a file that did not compile has no summary).
    layouts = [result.summary.layout() if result.summary is not None else None for result in results]
    used = [NO_FACTS] * len(tasks)
    text_of = _text_reader(tasks)
    uses_of = _attribute_uses_reader(text_of)
    index = ProjectIndex(entries, uses_of)
    tasks = list(tasks)

    def lint_with(todo: dict[int, FileFacts]) -> bool:
        """Lint each file of `todo` with its facts; whether a summary moved (as others see it)."""
        for i, facts in todo.items():
            tasks[i] = tasks[i].with_facts(facts, cache, layouts[i])
        moved = False
        for i, result in zip(todo, _cached_run([tasks[i] for i in todo], workers, cache)):
            results[i], used[i] = result, todo[i]
            summary = result.summary or entries[i].summary
            moved = moved or not summary.shows_the_same(entries[i].summary)
            entries[i] = dataclasses.replace(entries[i], summary=summary)
        return moved

    last = [i for i in last if results[i].summary is not None]  # else its first result is its last (no syntax)
    if last:  # the index is rebuilt whatever moved: their first summaries held their layouts alone
        lint_with({i: index.file_facts(entries[i]) for i in last})
        index = ProjectIndex(entries, uses_of)
    for _ in range(MAX_PROJECT_ROUNDS):
        changed = {}
        for i, entry in enumerate(entries):
            facts = index.file_facts(entry)
            if facts == used[i]:
                continue
            # Facts that changed matter where its last lint consulted their names
            # (its summary names them; unknown, where its text uses them).
            if (
                entry.summary.needs_callers(facts.callers, used[i].callers)
                or facts.called_elsewhere != used[i].called_elsewhere  # entry points by their body that others call
                # A project rank helper of any name makes a module distributed code that was not linted as such.
                or (facts.rank_helper and not used[i].rank_helper and entry.summary.runs_unknown is None)
                or _changed_facts_matter(entry.summary, facts.facts, used[i].facts, functools.partial(text_of, entry.display))
            ):
                changed[i] = facts
            else:
                used[i] = facts  # facts about names its lint never asked about change nothing
        if not changed or not lint_with(changed):
            break  # every file's facts are what they were: the index answers as it would rebuilt
        index = ProjectIndex(entries, uses_of)
    if run is not None and cache is not None and all(t.key for t in tasks):
        cache.put_keys(run, [t.key for t in tasks if t.key])
    return results, index, tasks


def _changed_facts_matter(
    summary: ModuleSummary, facts: Mapping[str, Fact], before: Mapping[str, Fact], text: Callable[[], str | None]
) -> bool:
    """Whether the facts that differ from those its last lint had (`before`)
    could change its findings: as they are now, or as they were (a fact that
    is gone answered its questions then)."""
    now = {name: fact for name, fact in facts.items() if before.get(name) != fact}
    then = {name: fact for name, fact in before.items() if facts.get(name) != fact}
    return bool(now or then) and (summary.needs(now, text) or summary.needs(then, text))


def _text_reader(tasks: list[_Task]) -> Callable[[str], str | None]:
    """The text of a linted file by its display name, read again from disk
    (None when it is gone or undecodable now: its lint says so)."""
    by_display = {task.display: task for task in tasks}

    def text_of(display: str) -> str | None:
        from ddplint.engine.source import SourceError, decode_source  # here: a warm run imports no engine module

        try:
            return decode_source(by_display[display].read())
        except (OSError, SourceError):
            return None

    return text_of


def _attribute_uses_reader(text_of: Callable[[str], str | None]) -> Callable[[ModuleEntry], tuple[str, ...]]:
    """`ModuleSummary.uses` of a linted file, read from its text once, when
    the index needs it (a module imports a linted module with facts)."""
    read: dict[str, tuple[str, ...]] = {}  # a file's imports are the same in every round

    def uses_of(entry: ModuleEntry) -> tuple[str, ...]:
        if entry.display not in read:
            text = text_of(entry.display)
            read[entry.display] = () if text is None else attribute_uses(text, entry.summary.aliases)
        return read[entry.display]

    return uses_of


def _run_key(tasks: list[_Task], roots: set[Path]) -> str:
    prefilter = ",".join(sorted({str(t.prefilter) for t in tasks}))
    return run_key(((t.digest, t.display, t.settings) for t in tasks), f"{prefilter}|{sorted(map(str, roots))}")


def _remembered(cache: Cache, run: str, count: int) -> list[FileResult] | None:
    """The results of a run with key `run`, if the cache still holds all of them."""
    keys = cache.get_keys(run)
    if keys is None or len(keys) != count:
        return None
    results = []
    for key in keys:
        result = cache.get(key)
        if result is None:
            return None
        results.append(result)
    return results


def _import_roles(tasks: list[_Task], named: list[tuple[tuple[str, ...], bool]]) -> list[tuple[bool, bool]]:
    """For each file, from the text of the imports: whether another linted file
    imports it, and whether it imports another linted file."""
    from ddplint.project.index import ModuleEntry, ProjectIndex

    known = {name for names, _ in named for name in names}
    wanted: set[str] = set()
    importer: list[bool] = []
    for task, (names, is_package) in zip(tasks, named):
        entry = ModuleEntry(task.display, names, is_package, ModuleSummary())
        found = {n for raw in _imports(task) if (n := ProjectIndex.absolute(raw, entry))}
        wanted |= found
        importer.append(not found.isdisjoint(known))
    return [(any(name in wanted for name in names), imports) for (names, _), imports in zip(named, importer)]


def _imports(task: _Task) -> Iterable[str]:
    """The names the file's import statements import, read from it again
    (a run the cache remembers never needs them; gone now: its lint says so)."""
    try:
        return imported_names(task.read())
    except OSError:
        return ()


def project_index(root: Path, resolver: ConfigResolver, cache: Cache | None, jobs: int = 1) -> ProjectIndex:
    """The whole-project facts of the files under `root` on disk (for
    single-file modes: stdin and the editor), from the cache where it can."""
    shown = Path(os.path.relpath(root, resolver.cwd)) if root.is_absolute() else root  # paths as `ddplint .` shows them
    found = discover([shown], resolver)
    tasks = [t for source in found.files if isinstance(t := _found_task(source, resolver, True, ProjectRole(summarize=True)), _Task)]
    with _workers(jobs) as workers:
        index = _lint_project(tasks, [root], resolver, workers, cache)[1]
    assert index is not None  # only a remembered run has none
    return index


def single_file_facts(index: ProjectIndex | None, path: Path, text: str, roots: list[Path]) -> FileFacts:
    """The facts of the helpers that `text` (the file at `path`, maybe unsaved) imports."""
    if index is None:
        return NO_FACTS
    from ddplint.engine import read_layout  # here: only the single-file modes need it
    from ddplint.engine.source import SourceProblem
    from ddplint.project.index import ModuleEntry

    read = read_layout(text, str(path))
    if isinstance(read, SourceProblem):  # its lint reports it; no facts can change that
        return NO_FACTS
    summary = dataclasses.replace(read[0], uses=attribute_uses(text, read[0].aliases))
    resolved = resolve_files([path])
    names, is_package = module_names(resolved[0], project_roots(roots, resolved))
    return index.file_facts(ModuleEntry(str(path), names, is_package, summary))


def _workers(jobs: int) -> _Workers:
    """The run's workers: each result with whether it is of the bytes the
    file was found with; in a pool when it pays, largest files first."""
    return Workers(
        jobs, _lint_task, _task_failed, MIN_FILES_FOR_POOL, size=lambda task: task.size, prepare=_prepare_worker
    )


def _prepare_worker() -> None:
    """What every worker needs, built before they fork: the engine with
    LibCST, imported once, and the parser's node constructors."""
    import ddplint.engine.lint  # noqa: F401
    from ddplint.lazy import prepare_parser

    prepare_parser()


def _task_failed(task: _Task, exc: BaseException) -> tuple[FileResult, bool]:
    """The result of a file whose worker died."""
    return FileResult(notices=(Notice.internal_error(task.display, exc),)), False


def _lint_task(task: _Task) -> tuple[FileResult, bool]:
    """The file's result, and whether it is of the bytes the file was found
    with (a file changed since is linted as it is now, and not cached)."""
    from ddplint.engine import check_bytes  # here: a warm run imports no engine module

    try:
        data = task.read()
    except OSError as exc:
        return FileResult(notices=(unreadable_notice(task.display, exc),)), False
    try:
        with one_collection_per_file():
            result = check_bytes(task.display, data, task.settings, task.prefilter, task.project)
        return result, task.fresh(data)
    except Exception as exc:  # noqa: BLE001 - one file's crash must not end the run
        return FileResult(notices=(Notice.internal_error(task.display, exc),)), False


def lint_stdin(
    data: bytes,
    filename: str,
    resolver: ConfigResolver,
    index: ProjectIndex | None = None,
    root: Path | None = None,
    fix: FixMode | None = None,
) -> Report:
    """Lint `data` as if it were the file `filename` (excludes apply by name),
    with the facts `index` (the project at `root` on disk) has about its
    imports; with `fix`, the fixed text joins `report.fixed`."""
    path = Path(os.path.normpath(resolver.cwd / filename))  # `../other/x.py`: configs from there up, not from here
    report = Report()
    if not resolver.excludes_file(path):
        try:
            text = data.decode("utf-8", errors="replace")
            facts = single_file_facts(index, path, text, [root] if root else [])
            task = _Task(filename, resolver.settings_for(path), None, b"", len(data), project=ProjectRole(facts=facts), data=data)
            result = _lint_task(task)[0]
            report.add(_fixed(task, result, fix, report) if fix else result)
        except Exception as exc:  # noqa: BLE001
            report.notices.append(Notice.internal_error(filename, exc))
    return report
