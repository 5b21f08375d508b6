"""`ddplint check`: from parsed options to a report on stdout and an exit status."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ddplint.config.loader import ConfigError
from ddplint.config.resolver import ConfigResolver, Overrides
from ddplint.config.selection import is_known_selector
from ddplint.model import NoticeLevel, Severity
from ddplint.reporters import OutputFormat, RenderOptions, renderer
from ddplint.reporters.text import plural
from ddplint.report import Report
from ddplint.cache import Cache, default_cache_dir
from ddplint.fixing import FixMode, write_fixed
from ddplint.paths import git_root, printable, project_root, shown_path
from ddplint.runner import available_cpus, lint_paths, lint_stdin, project_index, tune_gc

if TYPE_CHECKING:
    from ddplint.project.index import ProjectIndex

STDIN = Path("-")


class UsageError(Exception):
    """A bad argument or configuration: one line on stderr, exit 2."""


@dataclass(frozen=True)
class CheckRequest:
    """Everything `ddplint check` was asked to do."""

    paths: list[Path]
    output_format: OutputFormat = OutputFormat.TEXT
    output: Path | None = None
    sarif_category: str | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: Severity | None = None
    #: ``--preview``; None: as the configuration says.
    preview: bool | None = None
    exit_zero: bool = False
    config: Path | None = None
    stdin_filename: str | None = None
    force_exclude: bool = False
    statistics: bool = False
    quiet: bool = False
    color: bool = False
    debug: bool = False
    jobs: int | None = None
    cache: bool = True
    cache_dir: Path | None = None
    prefilter: bool = True
    project: bool = True
    absolute_paths: bool = False
    #: Apply safe fixes (and with `unsafe_fixes`, unsafe ones) to the files.
    fix: bool = False
    unsafe_fixes: bool = False
    #: Print the fixes as a unified diff instead of applying them.
    diff: bool = False
    #: Apply fixes and report nothing else.
    fix_only: bool = False
    #: Add noqa directives for the findings instead of reporting them.
    add_noqa: bool = False
    #: Print the resolved settings / the files to lint instead of linting.
    show_settings: bool = False
    show_files: bool = False

    @property
    def fix_mode(self) -> FixMode | None:
        """What to fix, when fixing or diffing at all."""
        return FixMode(unsafe=self.unsafe_fixes) if self.fix or self.diff or self.fix_only else None


def _check_selectors(option: str, selectors: tuple[str, ...] | None) -> None:
    for selector in selectors or ():
        if not selector:
            raise UsageError(f"{option}: empty rule code or prefix (an unset variable?)")
        if not is_known_selector(selector):
            raise UsageError(f"{option}: unknown rule code or prefix {selector!r}")


def _resolver(request: CheckRequest) -> ConfigResolver:
    _check_selectors("--select", request.select)
    _check_selectors("--extend-select", request.extend_select)
    _check_selectors("--ignore", request.ignore)
    overrides = Overrides(
        select=request.select,
        extend_select=request.extend_select,
        ignore=request.ignore,
        fail_on=request.fail_on,
        config_file=request.config,
        preview=request.preview,
    )
    try:
        return ConfigResolver(overrides)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _lint(request: CheckRequest, resolver: ConfigResolver, stdin: bytes | None) -> Report:
    paths = request.paths
    if stdin is not None and request.stdin_filename is not None:
        return _lint_named_stdin(request, resolver, stdin, request.stdin_filename)
    if stdin is not None:
        return lint_stdin(stdin, "<stdin>", resolver, fix=request.fix_mode)
    paths = paths or [Path(".")]
    for path in paths:  # a broken symlink or an unreadable path is reported by the run, which goes on
        if _missing(path):
            raise UsageError(f"path does not exist: {path}")
    jobs = request.jobs if request.jobs is not None else available_cpus()
    if jobs < 1:
        raise UsageError(f"--jobs: expected a positive number, got {jobs}")
    cache = _cache(request, resolver)
    return lint_paths(
        paths,
        resolver,
        force_exclude=request.force_exclude,
        jobs=jobs,
        cache=cache,
        prefilter=request.prefilter,
        project=request.project,
        fix=request.fix_mode,
    )


def _lint_named_stdin(request: CheckRequest, resolver: ConfigResolver, stdin: bytes, filename: str) -> Report:
    """Lint standard input as the file `filename`, with the facts of its
    project on disk: the working directory's when the file lies within it,
    else the repository holding the file (else none). The configurations of
    other directories (the working directory's, when the file lies outside
    it) are never read: a broken one there is none of this file's business."""
    directory = Path(os.path.normpath(resolver.cwd / filename)).parent
    while not directory.is_dir() and directory != directory.parent:  # a buffer not saved yet
        directory = directory.parent
    if directory.is_relative_to(resolver.cwd):
        root = project_root(resolver.cwd)
        return lint_stdin(stdin, filename, resolver, _stdin_index(request, root, resolver), root, request.fix_mode)
    root = git_root(directory)
    if root is None:  # outside the working directory and any repository: no project to read
        return lint_stdin(stdin, filename, resolver, fix=request.fix_mode)
    own = ConfigResolver(resolver.overrides, cwd=root)  # its repository, as if run there; paths shown from here
    inner = os.path.relpath(os.path.normpath(resolver.cwd / filename), root)
    report = lint_stdin(stdin, inner, own, _stdin_index(request, root, own), root, request.fix_mode)
    return report.with_paths(lambda p: filename if p == inner else os.path.relpath(root / p, resolver.cwd))


def _stdin_index(request: CheckRequest, root: Path, resolver: ConfigResolver) -> ProjectIndex | None:
    """The facts of the project at `root` on disk for standard input; None
    with `--no-project`, or when the configuration of another part of the
    project is broken (a run over that part says so; this file is still
    linted, on its own)."""
    if not request.project:
        return None
    try:
        return project_index(root, resolver, _cache(request, resolver))
    except ConfigError as exc:
        if request.debug:
            _debug_line(f"the project's other files not read: {exc}")
        return None


def _fail_on(request: CheckRequest, resolver: ConfigResolver) -> Severity:
    """``--fail-on``, else the configuration of the file standard input stands
    for (not the working directory's), else as the resolver says."""
    if request.stdin_filename is not None and request.fail_on is None and _from_stdin(request):
        return resolver.config_for(Path(os.path.normpath(resolver.cwd / request.stdin_filename))).fail_on or Severity.WARNING
    return resolver.fail_on()


def _missing(path: Path) -> bool:
    """Whether nothing is at `path` (not even a broken link); a path that
    cannot be looked at (no search permission above it) is there."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        pass  # there, but not to be looked at: the run says so
    return False


def _cache(request: CheckRequest, resolver: ConfigResolver) -> Cache | None:
    if not request.cache:
        return None
    directory = request.cache_dir or default_cache_dir(project_root(resolver.cwd))
    return Cache(directory, on_bad_entry=_debug_line if request.debug else None, on_refused=_warning_line)


def _warning_line(message: str) -> None:
    """A one-line warning on stderr (the run goes on)."""
    print(printable(f"ddplint: warning: {message}"), file=sys.stderr)


def _debug_line(message: str) -> None:
    """A `--debug` line on stderr (what went wrong that changed no result)."""
    print(printable(f"ddplint: debug: {message}"), file=sys.stderr)


def exit_status(report: Report, fail_on: Severity, exit_zero: bool) -> int:
    """0 clean, 1 findings at or above `fail_on` or unreadable files, 2 internal error."""
    if any(n.internal for n in report.notices):
        return 2
    if exit_zero:
        return 0
    failing = any(f.severity.rank >= fail_on.rank for f in report.active)
    unreadable = any(n.level is NoticeLevel.ERROR for n in report.notices)
    return 1 if failing or unreadable else 0


def _print_notices(report: Report, debug: bool) -> None:
    for notice in report.notices:
        print(printable(f"{notice.path}: {notice.level.value}: {notice.message}"), file=sys.stderr)
        if debug and notice.detail:
            print(notice.detail, file=sys.stderr, end="")


def _from_stdin(request: CheckRequest) -> bool:
    return request.paths == [STDIN] or (request.stdin_filename is not None and request.paths in ([], [STDIN]))


def _check_fix_options(request: CheckRequest) -> None:
    if request.diff and (request.fix or request.fix_only):
        raise UsageError("--diff shows the fixes without applying them; it cannot be combined with --fix or --fix-only")
    if request.add_noqa and (request.fix_mode is not None or _from_stdin(request)):
        raise UsageError("--add-noqa edits the files on disk; it cannot be combined with --fix, --diff, --fix-only or stdin")
    if request.show_settings and request.show_files:
        raise UsageError("--show-settings and --show-files cannot be combined")


def _fix_summary(report: Report, diff: bool) -> str:
    """"Fixed 3 findings in 2 files." / "Would fix ..." """
    verb = "Would fix" if diff else "Fixed"
    return f"{verb} {plural(report.fixes_applied, 'finding')} in {plural(len(report.fixed), 'file')}."


def _apply_fixes(request: CheckRequest, report: Report, stdin: bytes | None) -> None:
    """Write the fixed files, the fixed standard input, or the diff, to where they go."""
    if request.diff:
        sys.stdout.write(printable("".join(f.diff() for f in report.fixed)))
    elif stdin is not None:  # editors' format-on-save: the whole (fixed) source on stdout
        if report.fixed:  # in the input's encoding: a UTF-8 BOM (utf-8-sig) or a PEP 263 coding stays
            sys.stdout.flush()
            sys.stdout.buffer.write(report.fixed[0].after.encode(report.fixed[0].encoding))
        else:
            sys.stdout.buffer.write(stdin)
    else:
        for fixed in report.fixed:
            failure = write_fixed(fixed)
            if failure is not None:
                report.notices.append(failure)
    sys.stdout.flush()


def write_atomically(path: Path, data: bytes) -> None:
    """Replace the file at `path` with `data` whole or not at all: written to
    a temporary file beside it, then renamed over it (a full disk or a
    file-size limit leaves the previous report as it was). A path that is
    not a regular file (``/dev/stdout``, a pipe), or an existing file in a
    directory that takes no new file, is written in place."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        regular = None
    import secrets  # here: only a run that writes a file needs it

    temporary = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666) if regular is not False else None
    except PermissionError:
        if regular is None:
            raise
        fd = None
    if fd is None:
        with open(path, "wb") as handle:
            handle.write(data)
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:  # Ctrl-C too
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def run_check(request: CheckRequest) -> int:
    """Lint (and fix), render, write; return the exit status."""
    resolver = _resolver(request)
    _check_fix_options(request)
    if request.show_settings or request.show_files:
        from ddplint.cli.show import show_files, show_settings

        paths = request.paths or [Path(".")]
        try:
            return show_settings(paths[0], resolver) if request.show_settings else show_files(paths, resolver, request.force_exclude)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    tune_gc()
    stdin = sys.stdin.buffer.read() if _from_stdin(request) else None
    try:
        report = _lint(request, resolver, stdin)
        fail_on = _fail_on(request, resolver)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if request.add_noqa:
        from ddplint.cli.noqa import add_noqa_directives

        added, files = add_noqa_directives(report, resolver.cwd)
        _print_notices(report, request.debug)
        if not request.quiet:
            print(f"Added {plural(added, 'noqa directive')} to {plural(files, 'file')}.", file=sys.stderr)
        if any(n.internal for n in report.notices):
            return 2
        return 1 if any(n.level is NoticeLevel.ERROR for n in report.notices) else 0  # the findings are silenced now
    if request.fix_mode is not None:
        _apply_fixes(request, report, stdin)
        if request.diff or request.fix_only:
            _print_notices(report, request.debug)
            if not request.quiet:
                print(_fix_summary(report, request.diff), file=sys.stderr)
            status = exit_status(report, Severity.ERROR, exit_zero=True)  # 2 on internal errors, else 0
            return max(status, 1 if request.diff and report.fixed else 0)
    options = RenderOptions(
        cwd=resolver.cwd,
        color=request.color,
        statistics=request.statistics,
        quiet=request.quiet,
        sarif_category=request.sarif_category,
        absolute_paths=request.absolute_paths,
    )
    if request.output_format is not OutputFormat.TEXT:  # machine-readable: no paths of the machine
        report = report.with_paths(lambda p: shown_path(p, resolver.cwd, request.absolute_paths))
    text = renderer(request.output_format)(report, options)
    if request.fix and report.fixed and not request.quiet and request.output_format is OutputFormat.TEXT:
        text += _fix_summary(report, diff=False) + "\n"
    _print_notices(report, request.debug)
    if request.output is not None:
        try:
            write_atomically(request.output, text.encode("utf-8"))
        except OSError as exc:
            raise UsageError(f"--output {request.output}: {exc.strerror or exc}") from None
    elif stdin is not None and request.fix:  # stdout holds the fixed source
        sys.stderr.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return exit_status(report, fail_on, request.exit_zero)
