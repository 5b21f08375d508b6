"""One rank's part in `ddplint doctor`: check in, run the checks, send the
results to rank 0; on rank 0, run the probes and write the report."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ddplint.model import Severity
from ddplint.reporters import OutputFormat, RenderOptions
from ddplint.runtime.check import Check, CheckResult, Status, all_checks
from ddplint.runtime.context import DoctorRequest, RankContext, RankInfo, bind_device
from ddplint.runtime.deadline import abandoned, call_with_timeout
from ddplint.runtime.exchange import gather_results
from ddplint.runtime.native_log import NativeLog, summarise
from ddplint.runtime.probes.loader import ProbeError, resolve
from ddplint.runtime.render import render
from ddplint.runtime.rendezvous import Rendezvous
from ddplint.runtime.report import DoctorReport
from ddplint.runtime.location import results_location
from ddplint.runtime.verdict import verdict


def _device(local_rank: int) -> str:
    import torch

    if torch.cuda.is_available() and local_rank < torch.cuda.device_count():
        return f"cuda:{local_rank}"
    return "cpu"


def _run_check(check: type[Check], ctx: RankContext, debug: bool) -> CheckResult:
    """A check's result; an exception (the user's code, or a bug) becomes an error result."""
    try:
        return check().run(ctx)
    except Exception as exc:  # noqa: BLE001 - reported as the check's outcome
        if debug:
            import traceback

            traceback.print_exc()
        summary = f"could not run: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"
        return CheckResult(check.code, Status.ERROR, summary)


def _factories(request: DoctorRequest) -> dict[str, Any]:
    """Import the user's probe factories (rank 0 only), or raise `ProbeError`."""
    options = request.options
    wanted = {"dataset": ("--dataset", options.dataset, "RT006"), "step": ("--step", options.step, "RT007")}
    return {
        key: resolve(option, reference, options.cwd)
        for key, (option, reference, code) in wanted.items() if reference and options.wants(code)
    }  # fmt: skip


def _write(text: str, output: str | None) -> None:
    """To stdout, or to `output` whole: through a temporary file renamed over
    it, so that two ranks writing one path never leave a mixture."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(output)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _teardown(timeout: float) -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        call_with_timeout(dist.destroy_process_group, timeout)


def run_rank(request: DoctorRequest) -> int:
    """This process's rank of the doctor; returns its exit status.

    torch's C++ log is captured while the rank runs and shown as one line at
    the end (whole with ``--debug``), after the rank's report or verdict.
    """
    import torch

    info = RankInfo.from_environment() or RankInfo.single()
    try:
        factories = _factories(request) if info.rank == 0 else {}
    except ProbeError as exc:
        print(f"ddplint: error: {exc}", file=sys.stderr)
        if request.debug and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(type(exc.__cause__), exc.__cause__, exc.__cause__.__traceback__)
        return 2
    native = NativeLog().start()
    try:
        status = _check_and_report(request, info, factories, torch.cuda.is_available())
    finally:
        # a thread stuck in C++ may log until os._exit: fd 2 stays captured then
        _show_native_log(native.stop(restore=not abandoned.is_set()), info, request.debug)
    if abandoned.is_set():  # a step hung in C++: the interpreter could not exit cleanly
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _check_and_report(request: DoctorRequest, info: RankInfo, factories: dict[str, Any], cuda: bool) -> int:
    options = request.options
    device = _device(info.local_rank)
    bind_device(device)
    backend = options.resolved_backend(cuda)
    ctx = RankContext(options, info, backend, device, factories=factories)
    ctx.rendezvous = Rendezvous.join(info, options.timeout)
    selected = [c for c in all_checks() if options.wants(c.code)]
    results = [_run_check(c, ctx, request.debug) for c in selected if c.per_rank]
    payload = {"info": info.to_json(), "device": device, "results": [r.to_json() for r in results]}
    gathered = gather_results(ctx, payload)
    output = request.output_for(info.rank)
    if output is None and ctx.rendezvous.error and info.rank != 0:
        # Rank 0 will not report a rank that never reached it: this rank
        # writes the requested report itself (its RT003 failure).
        output = request.output
    if info.rank == 0:
        probes = [_run_check(c, ctx, request.debug) for c in selected if not c.per_rank]
        report = DoctorReport.build(gathered or [payload], probes, backend, info.world_size)
        status = _report(request, report, output, html=request.html)
    else:
        report = DoctorReport.build([payload], [], backend, info.world_size)
        if request.writes(info.rank) or output is not None:
            _report(request, report, output)
        # A rank that joined exits 0 whatever it found: rank 0 reports the job,
        # and torchrun stops every rank as soon as one fails, rank 0 mid-report.
        # A rank that could not join has nobody to report it but itself.
        status = 1 if ctx.rendezvous.error and not request.exit_zero else 0
    if info.rank != 0 or output is not None:  # rank 0's report on stdout says it all
        _say(verdict(report, info, ctx.rendezvous, output), request, info.rank)
    _teardown(options.timeout)
    return status


def _say(line: str, request: DoctorRequest, rank: int) -> None:
    """A verdict on stdout, unless rank 0's JSON/SARIF report is there (one
    stream under torchrun): then on stderr, to keep that report parseable."""
    machine_report_on_stdout = rank != 0 and request.output is None and request.output_format != OutputFormat.TEXT.value
    stream = sys.stderr if machine_report_on_stdout else sys.stdout
    print(line, file=stream, flush=True)


def _show_native_log(text: str, info: RankInfo, debug: bool) -> None:
    if not text.strip():
        return
    if debug:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
    else:
        rank = f"rank {info.rank}: " if info.world_size > 1 else ""
        print(f"ddplint: {rank}{summarise(text)}", file=sys.stderr)
    sys.stderr.flush()


def _report(request: DoctorRequest, report: DoctorReport, output: str | None, html: str | None = None) -> int:
    fmt = OutputFormat(request.output_format)
    location = results_location(request)
    options = RenderOptions(
        cwd=request.options.cwd, color=request.color and output is None,
        sarif_category=request.sarif_category, sarif_location=location,
    )  # fmt: skip
    _write(render(report, fmt, options), output)
    if fmt is OutputFormat.SARIF and location is None and report.findings():
        print("ddplint: warning: the SARIF results have no file to be shown at (no pyproject.toml, ddplint.toml, "
              "setup.py or setup.cfg here); code scanning rejects them: pass --sarif-location FILE", file=sys.stderr)
    if html is not None:
        from ddplint.runtime.html import render_html

        _write(render_html(report), html)
    for error in report.errors():
        print(f"ddplint: error: {error}", file=sys.stderr)
    return report.exit_status(Severity.parse(request.fail_on), request.exit_zero)
