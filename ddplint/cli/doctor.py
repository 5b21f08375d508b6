"""`ddplint doctor`: from parsed options to ranks started (or joined) and an exit status."""

from __future__ import annotations

import re
import sys
from dataclasses import replace

from ddplint.reporters import OutputFormat
from ddplint.runtime import RuntimeUnavailable, import_runtime
from ddplint.runtime.check import all_checks
from ddplint.runtime.context import DoctorRequest, RankInfo
from ddplint.runtime.probes.loader import ProbeError, check_reference

_CHECK_SELECTOR = re.compile(r"^RT\d{0,3}$")


class DoctorUsageError(Exception):
    """A bad option: one line on stderr, exit 2."""


def validate(request: DoctorRequest) -> None:
    """Refuse bad options before any rank starts."""
    options = request.options
    if request.output_format == OutputFormat.GITLAB.value:  # not offered by the CLI; the request API
        raise DoctorUsageError("--format gitlab: Code Quality reports need file locations; use json or sarif")
    known = [check.code for check in all_checks()]
    for option, selectors in (("--only", options.only), ("--skip", options.skip)):
        for selector in selectors:
            if not _CHECK_SELECTOR.match(selector):
                raise DoctorUsageError(f"{option}: expected a check code or prefix such as RT003, got {selector!r}")
            if not any(code.startswith(selector) for code in known):  # would select nothing, and pass
                raise DoctorUsageError(f"{option}: unknown check {selector!r} (known: {', '.join(known)})")
    for option, value in (("--timeout", options.timeout), ("--prefetch-factor", options.prefetch_factor),
                          ("--batch-size", options.batch_size), ("--steps", options.steps)):  # fmt: skip
        if value <= 0:
            raise DoctorUsageError(f"{option}: expected a positive number, got {value}")
    if options.num_workers is not None and options.num_workers < 0:
        raise DoctorUsageError(f"--num-workers: expected 0 or more, got {options.num_workers}")
    if options.nproc_per_node is not None and options.nproc_per_node < 1:
        raise DoctorUsageError(f"--nproc-per-node: expected a positive number, got {options.nproc_per_node}")
    if request.sarif_location is not None and not (options.cwd / request.sarif_location).is_file():
        raise DoctorUsageError(f"--sarif-location: no such file: {request.sarif_location}")
    if options.backend not in ("auto", "nccl", "gloo"):
        raise DoctorUsageError(f"--backend: expected auto, nccl or gloo, got {options.backend!r}")
    try:
        for option, reference in (("--dataset", options.dataset), ("--step", options.step)):
            if reference is not None:
                check_reference(option, reference)
    except ProbeError as exc:
        raise DoctorUsageError(str(exc)) from None


def run_doctor(request: DoctorRequest) -> int:
    """Validate, then be one rank (under a launcher, or alone) or start the ranks."""
    validate(request)
    try:
        launched = RankInfo.from_environment()
    except ValueError as exc:
        raise DoctorUsageError(str(exc)) from None
    try:
        import_runtime()
    except RuntimeUnavailable as exc:
        if request.debug and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(type(exc.__cause__), exc.__cause__, exc.__cause__.__traceback__)
            sys.stderr.flush()
        raise DoctorUsageError(str(exc)) from None
    from ddplint.runtime.launch import default_nproc, spawn_local
    from ddplint.runtime.session import run_rank

    if launched is not None:  # torchrun, or another launcher
        return run_rank(request)
    nproc = request.options.nproc_per_node or default_nproc()
    if nproc == 1:
        return run_rank(request)
    return spawn_local(replace(request), nproc)
