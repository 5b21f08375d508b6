"""The Typer application: `check`, `doctor`, `rule`, `clean`, `server`, `version`.

Exit status (all commands): 0 nothing at or above ``--fail-on``; 1 findings
(or files that could not be read); 2 usage, configuration or internal error;
130 interrupted (Ctrl-C).
Errors are one line on standard error; a traceback only with ``--debug``.
"""

from __future__ import annotations

import enum
import os
import sys
from pathlib import Path
from typing import Annotated, Callable, List, NoReturn, Optional

import typer

from ddplint.version import __version__
from ddplint.model import Severity
from ddplint.reporters import OutputFormat

app = typer.Typer(
    name="ddplint",
    help="Find the bugs that hang, leak or silently mis-train PyTorch distributed jobs.",
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _exit_with(run: Callable[[], int], usage_error: type[Exception], debug: bool) -> NoReturn:
    """Exit with `run`'s status; a usage error or an internal error (without
    `--debug`) becomes one line on stderr and exit status 2."""
    try:
        status = run()
    except usage_error as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:  # Ctrl-C: the shell's status for SIGINT, no traceback, nothing half-written
        typer.echo("ddplint: interrupted", err=True)
        raise typer.Exit(130) from None
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if debug:
            raise
        raise _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)") from None
    raise typer.Exit(status)


class DoctorFormat(str, enum.Enum):
    """`ddplint doctor --format`: the linter's formats but gitlab, whose Code
    Quality entries need a file and line that a preflight has none of."""

    TEXT = OutputFormat.TEXT.value
    JSON = OutputFormat.JSON.value
    SARIF = OutputFormat.SARIF.value
    GITHUB = OutputFormat.GITHUB.value


def _fail(message: str) -> typer.Exit:
    typer.echo(f"ddplint: error: {message}", err=True)
    return typer.Exit(2)


def _split(values: Optional[List[str]]) -> tuple[str, ...]:
    """``--select A,B --select C`` -> ("A", "B", "C")."""
    return tuple(v.strip().upper() for value in values or () for v in value.split(",") if v.strip())


def _selectors(values: List[str]) -> tuple[str, ...]:
    """``--select A,B --select C`` -> ("A", "B", "C"), keeping empty items
    (``--select ""``, ``--select A,``) as "" for `check` to refuse."""
    return tuple(v.strip().upper() for value in values for v in value.split(","))


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"ddplint {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Show the version and exit.", callback=_version_callback, is_eager=True)
    ] = False,
) -> None:
    """ddplint [PATH...] is the same as ddplint check [PATH...]."""


@app.command()
def check(
    # readable=False: an unreadable path is the run's one-line notice (exit 1), not click's usage error
    paths: Annotated[
        Optional[List[Path]], typer.Argument(help="Files or directories (default: .); - for stdin.", readable=False)
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "--output-format", help="Output format.", case_sensitive=False)
    ] = OutputFormat.TEXT,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the report to FILE.")] = None,
    sarif_category: Annotated[
        Optional[str], typer.Option(help="SARIF category (automationDetails.id NAME/), several uploads per repository.")
    ] = None,
    select: Annotated[Optional[List[str]], typer.Option(help="Only these codes/prefixes (comma-separated).")] = None,
    extend_select: Annotated[Optional[List[str]], typer.Option(help="Add codes/prefixes to the selection.")] = None,
    ignore: Annotated[Optional[List[str]], typer.Option(help="Codes/prefixes to switch off.")] = None,
    fail_on: Annotated[
        Optional[Severity], typer.Option(help="Lowest severity that fails the run [default: warning].", case_sensitive=False)
    ] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Also run the preview rules and rule variants (below 0.9 precision).")
    ] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when there are findings.")] = False,
    config: Annotated[Optional[Path], typer.Option(help="Use this config file instead of searching.")] = None,
    stdin_filename: Annotated[Optional[str], typer.Option(help="Lint standard input as this file.")] = None,
    force_exclude: Annotated[bool, typer.Option(help="Apply excludes to explicitly passed files too.")] = False,
    statistics: Annotated[bool, typer.Option(help="Show counts per rule instead of each finding.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print findings only, no summary.")] = False,
    no_color: Annotated[bool, typer.Option("--no-color", help="Never colour the output.")] = False,
    debug: Annotated[bool, typer.Option(help="Show tracebacks of internal errors.")] = False,
    jobs: Annotated[
        Optional[int], typer.Option("--jobs", "-j", help="Parallel processes [default: the CPUs available].")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")] = False,
    cache_dir: Annotated[
        Optional[Path], typer.Option(help="Cache directory [default: .ddplint_cache/ or $DDPLINT_CACHE_DIR].")
    ] = None,
    no_prefilter: Annotated[bool, typer.Option("--no-prefilter", hidden=True)] = False,
    no_project: Annotated[
        bool, typer.Option("--no-project", help="Analyse each file on its own (no helpers imported across files).")
    ] = False,
    absolute_paths: Annotated[
        bool, typer.Option("--absolute-paths", help="Absolute paths in JSON/SARIF/GitHub/GitLab output.")
    ] = False,
    fix: Annotated[bool, typer.Option("--fix", help="Apply the safe fixes; report what remains.")] = False,
    unsafe_fixes: Annotated[
        bool, typer.Option("--unsafe-fixes", help="With --fix/--diff/--fix-only: also the unsafe fixes (review them).")
    ] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print the fixes as a unified diff; change nothing (exit 1 if any).")
    ] = False,
    fix_only: Annotated[bool, typer.Option("--fix-only", help="Apply the fixes; report nothing else.")] = False,
    add_noqa: Annotated[
        bool, typer.Option("--add-noqa", help="Add a `# noqa: CODE` to every line with findings (merged into its `# noqa:`).")
    ] = False,
    show_settings: Annotated[
        bool, typer.Option("--show-settings", help="Show the settings resolved for the first PATH (or .), and exit.")
    ] = False,
    show_files: Annotated[bool, typer.Option("--show-files", help="Show the files that would be linted, and exit.")] = False,
) -> None:
    """Lint Python files for distributed-training bugs."""
    from ddplint.cli.check import CheckRequest, UsageError, run_check

    request = CheckRequest(
        paths=list(paths or []),
        output_format=output_format,
        output=output,
        sarif_category=sarif_category,
        select=_selectors(select) if select else None,
        extend_select=_selectors(extend_select or []),
        ignore=_selectors(ignore or []),
        fail_on=fail_on,
        preview=True if preview else None,
        exit_zero=exit_zero,
        config=config,
        stdin_filename=stdin_filename,
        force_exclude=force_exclude,
        statistics=statistics,
        quiet=quiet,
        color=not no_color and "NO_COLOR" not in os.environ and output is None and sys.stdout.isatty(),
        debug=debug,
        jobs=jobs,
        cache=not no_cache,
        cache_dir=cache_dir,
        prefilter=not no_prefilter,  # for benchmarks and the prefilter's own checks
        project=not no_project,
        absolute_paths=absolute_paths,
        fix=fix,
        unsafe_fixes=unsafe_fixes,
        diff=diff,
        fix_only=fix_only,
        add_noqa=add_noqa,
        show_settings=show_settings,
        show_files=show_files,
    )
    _exit_with(lambda: run_check(request), UsageError, debug)


@app.command()
def rule(
    code: Annotated[
        Optional[str],
        typer.Argument(help="A rule or doctor check, by code or name: DDP014, unguarded-save, RT006; omit to list all."),
    ] = None,
) -> None:
    """Show a rule's (or doctor check's) documentation, or list every rule and check."""
    import difflib

    from ddplint.docs import rule_markdown, rules_table
    from ddplint.rule import all_rules
    from ddplint.runtime.check import all_checks

    everything = (*all_rules(), *all_checks())
    if code is None:
        typer.echo(rules_table(everything), nl=False)
        return
    wanted = code.strip()
    found = next((r for r in everything if wanted.upper() == r.code or wanted.lower() == r.name), None)
    if found is None:
        by_key = {key: r for r in everything for key in (r.code, r.name)}
        close = difflib.get_close_matches(wanted.lower(), [k.lower() for k in by_key], n=3, cutoff=0.6)
        named = {by_key.get(k) or by_key[k.upper()] for k in close}
        hint = " or ".join(f"{r.name} ({r.code})" for r in sorted(named, key=lambda r: r.code))
        hint = f"did you mean {hint}? " if hint else ""
        raise _fail(f"unknown rule code or name {code!r} ({hint}`ddplint rule` lists them all)")
    typer.echo(rule_markdown(found), nl=False)


@app.command()
def doctor(
    backend: Annotated[str, typer.Option(help="auto (nccl with CUDA, else gloo), nccl or gloo.")] = "auto",
    nproc_per_node: Annotated[
        Optional[int], typer.Option(help="Without torchrun: ranks to start here [default: visible GPUs, or 2 on CPU].")
    ] = None,
    num_workers: Annotated[Optional[int], typer.Option(help="DataLoader workers per rank.")] = None,
    prefetch_factor: Annotated[int, typer.Option(help="Batches prefetched per worker.")] = 2,
    batch_bytes: Annotated[Optional[str], typer.Option(help="Bytes of one batch, e.g. 64MiB or 2GB.")] = None,
    shm_gib: Annotated[Optional[float], typer.Option(help="Required free /dev/shm in GiB [default: derived, or 16].")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds every blocking step may take.")] = 60.0,
    dataset: Annotated[Optional[str], typer.Option(help="module:factory returning a Dataset (RT006 probe).")] = None,
    step: Annotated[Optional[str], typer.Option(help="module:factory returning a step function (RT007 probe).")] = None,
    steps: Annotated[int, typer.Option(help="Steps the RT007 probe runs.")] = 100,
    batch_size: Annotated[int, typer.Option(help="Batch size for the probes.")] = 32,
    only: Annotated[Optional[List[str]], typer.Option(help="Only these checks (codes/prefixes, comma-separated).")] = None,
    skip: Annotated[Optional[List[str]], typer.Option(help="Skip these checks.")] = None,
    output_format: Annotated[
        DoctorFormat, typer.Option("--format", "--output-format", help="Output format.", case_sensitive=False)
    ] = DoctorFormat.TEXT,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="Write the report to FILE ({rank} in it: every rank writes).")
    ] = None,
    sarif_location: Annotated[
        Optional[str],
        typer.Option(
            metavar="FILE", help="SARIF: show the results at FILE [default: the workflow, probe module or pyproject.toml]."
        ),
    ] = None,
    sarif_category: Annotated[
        Optional[str], typer.Option(help="SARIF category (automationDetails.id NAME/), several uploads per repository.")
    ] = None,
    fail_on: Annotated[
        Severity, typer.Option(help="Lowest severity that fails the run.", case_sensitive=False)
    ] = Severity.WARNING,
    html: Annotated[
        Optional[Path], typer.Option(help="Also write the report as one self-contained HTML page, with the probes' memory charts.")
    ] = None,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when checks fail.")] = False,
    no_color: Annotated[bool, typer.Option("--no-color", help="Never colour the output.")] = False,
    debug: Annotated[bool, typer.Option(help="Show tracebacks of the user's code and of internal errors.")] = False,
) -> None:
    """Check this machine and the job's process group before a distributed run."""
    from ddplint.cli.doctor import DoctorUsageError, run_doctor
    from ddplint.runtime.context import DoctorOptions, DoctorRequest
    from ddplint.sizes import parse_size

    try:
        size = parse_size(batch_bytes) if batch_bytes is not None else None
    except ValueError as exc:
        raise _fail(f"--batch-bytes: {exc}") from None
    if html is not None and not html.resolve().parent.is_dir():
        raise _fail(f"--html: no directory {str(html.resolve().parent)!r} to write {html.name!r} in")
    options = DoctorOptions(
        backend=backend.lower(), nproc_per_node=nproc_per_node, num_workers=num_workers,
        prefetch_factor=prefetch_factor, batch_bytes=size, shm_gib=shm_gib, timeout=timeout, dataset=dataset,
        step=step, steps=steps, batch_size=batch_size, only=_split(only), skip=_split(skip), cwd=Path.cwd(),
    )  # fmt: skip
    request = DoctorRequest(
        options=options, output_format=output_format.value, output=output, fail_on=fail_on.value,
        html=str(html.resolve()) if html is not None else None, exit_zero=exit_zero, debug=debug,
        color=not no_color and "NO_COLOR" not in os.environ and output is None and sys.stdout.isatty(),
        sarif_location=sarif_location, sarif_category=sarif_category,
    )  # fmt: skip
    _exit_with(lambda: run_doctor(request), DoctorUsageError, debug)


@app.command()
def clean(
    cache_dir: Annotated[Optional[Path], typer.Option(help="The cache directory to remove.")] = None,
) -> None:
    """Remove the cache directory (only the files ddplint created there; no link is followed)."""
    from ddplint.cache import Cache, default_cache_dir
    from ddplint.paths import printable, project_root

    cache = Cache(cache_dir or default_cache_dir(project_root(Path.cwd())))
    there = os.path.lexists(cache.directory)
    removed, left = cache.clear()
    for line in left:
        typer.echo(printable(f"ddplint: warning: {line}"), err=True)
    if not there:
        typer.echo(printable(f"No cache at {cache.directory}"))
    else:
        typer.echo(printable(f"Removed {cache.directory}" if not left else f"Removed {removed} cache files from {cache.directory}"))


@app.command()
def server() -> None:
    """Run the language server (LSP over stdio) for editors."""
    from ddplint.lsp import main as serve

    serve()


@app.command()
def version() -> None:
    """Show the version."""
    typer.echo(f"ddplint {__version__}")
