"""`ddplint check`: from parsed options to a report on stdout and an exit status."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ddplint.config.loader import ConfigError
from ddplint.config.resolver import ConfigResolver, Overrides
from ddplint.config.selection import is_known_selector
from ddplint.model import NoticeLevel, Severity
from ddplint.reporters import OutputFormat, RenderOptions, renderer
from ddplint.reporters.text import plural
from ddplint.report import Report
from ddplint.cache import Cache, default_cache_dir
from ddplint.fixing import FixMode, write_fixed
from ddplint.paths import printable, project_root, shown_path
from ddplint.runner import available_cpus, lint_paths, lint_stdin, project_index, tune_gc

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
        root = project_root(resolver.cwd)
        index = project_index(root, resolver, _cache(request, resolver)) if request.project else None
        return lint_stdin(stdin, request.stdin_filename, resolver, index, root, request.fix_mode)
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


def run_check(request: CheckRequest) -> int:
    """Lint (and fix), render, write; return the exit status."""
    resolver = _resolver(request)
    _check_fix_options(request)
    tune_gc()
    stdin = sys.stdin.buffer.read() if _from_stdin(request) else None
    try:
        report = _lint(request, resolver, stdin)
        fail_on = resolver.fail_on()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
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
            request.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--output {request.output}: {exc.strerror or exc}") from None
    elif stdin is not None and request.fix:  # stdout holds the fixed source
        sys.stderr.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return exit_status(report, fail_on, request.exit_zero)
