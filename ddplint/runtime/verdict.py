"""Every rank's one-line verdict: whether it joined the job, and what it found.

Rank 0's report speaks for the job; a rank that prints nothing leaves its
user (or the log of its node) guessing whether it ever joined. So every rank
whose report does not go to standard output says, in one line, who it is (the
launcher's rank and world size), whether it joined, and where its report is.
"""

from __future__ import annotations

from ddplint.runtime.context import RankInfo
from ddplint.runtime.rendezvous import Rendezvous
from ddplint.runtime.report import DoctorReport


def verdict(report: DoctorReport, info: RankInfo, rendezvous: Rendezvous, output: str | None) -> str:
    """This rank's line; `output` is where its report went (None: nowhere)."""
    where = f"; report in {output}" if output else ""
    if info.rank == 0:
        return f"ddplint doctor: {_ranks(info.world_size)} ({report.backend}): {conclusion(report)}{where}"
    rank = f"rank {info.rank} of {info.world_size} on {info.hostname}"
    if rendezvous.error:
        return f"ddplint doctor: {rank} could not join (RT003): {rendezvous.error}{where}"
    return f"ddplint doctor: {rank} joined: {conclusion(report)} here, rank 0 reports the job{where}"


def conclusion(report: DoctorReport) -> str:
    """``no problems found``, ``2 problems found``, ``1 check could not run``."""
    errors = len(report.errors())
    if errors:
        return f"{errors} check{'s' if errors != 1 else ''} could not run"
    found = [finding for finding in report.findings() if finding.severity.value != "note"]
    if found:
        codes = ", ".join(sorted({finding.rule for finding in found}))
        return f"{len(found)} problem{'s' if len(found) != 1 else ''} found ({codes})"
    return "no problems found"


def _ranks(number: int) -> str:
    return f"{number} rank{'' if number == 1 else 's'}"
