"""The doctor's report: every rank's results merged per check, turned into the
shared finding model for the reporters, and its exit status."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ddplint.model import NO_PATH, NOWHERE, Finding, Severity
from ddplint.runtime.check import Check, CheckResult, Status, all_checks
from ddplint.runtime.context import RankInfo


@dataclass(frozen=True)
class RankRow:
    """One rank of the job as the report lists it."""

    rank: int
    hostname: str = "?"
    local_rank: int | None = None
    device: str = "?"
    reported: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "hostname": self.hostname, "local_rank": self.local_rank,
                "device": self.device, "reported": self.reported}  # fmt: skip


@dataclass(frozen=True)
class CheckOutcome:
    """One check across the ranks: its results grouped by identical outcome."""

    check: type[Check]
    groups: list[tuple[CheckResult, list[int]]]  # (result, ranks that got it)

    @property
    def status(self) -> Status:
        """The worst status over the ranks."""
        order = (Status.ERROR, Status.FAIL, Status.NOTE, Status.PASS, Status.SKIP)
        present = {result.status for result, _ in self.groups}
        return next(s for s in order if s in present)

    @property
    def uniform(self) -> bool:
        return len(self.groups) == 1


@dataclass
class DoctorReport:
    """The merged results of one `ddplint doctor` run."""

    world_size: int
    backend: str
    rows: list[RankRow]
    outcomes: list[CheckOutcome]
    environment: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(
        cls, payloads: list[dict[str, Any] | None], probes: list[CheckResult], backend: str,
        world_size: int | None = None,
    ) -> DoctorReport:  # fmt: skip
        """From the gathered per-rank payloads (None: that rank sent nothing) and rank 0's probes.

        Rank 0's report has a payload (or None) per rank, in rank order; a
        rank's own report has its payload only, with the job's `world_size`
        and its rank as the launcher gave them.
        """
        rows, by_code = [], defaultdict(list)
        for index, payload in enumerate(payloads):
            if payload is None:
                rows.append(RankRow(index))
                continue
            info = RankInfo.from_json(payload["info"])
            rows.append(RankRow(info.rank, info.hostname, info.local_rank, payload["device"], reported=True))
            for data in payload["results"]:
                by_code[data["code"]].append((info.rank, CheckResult.from_json(data)))
        for result in probes:
            by_code[result.code].append((0, result))
        checks = {c.code: c for c in all_checks()}
        outcomes = [CheckOutcome(checks[code], _group(by_code[code])) for code in sorted(by_code)]
        records = sorted(by_code.get("RT008", []), key=lambda item: item[0])  # the lowest rank's record
        environment = records[0][1].measured if records else {}
        return cls(world_size or len(payloads), backend, rows, outcomes, environment)

    def hostname(self, rank: int) -> str:
        """The host `rank` reported from ("?" when it did not report)."""
        return next((row.hostname for row in self.rows if row.rank == rank), "?")

    def findings(self) -> list[Finding]:
        """One finding per check and distinct failure (or note), naming the ranks."""
        found = []
        for outcome in self.outcomes:
            for result, ranks in outcome.groups:
                if result.status not in (Status.FAIL, Status.NOTE):
                    continue
                severity = Severity(result.severity) if result.status is Status.FAIL else Severity.NOTE
                found.append(
                    Finding(
                        rule=outcome.check.code, name=outcome.check.name, severity=severity,
                        message=result.summary + self.where(ranks), path=NO_PATH, span=NOWHERE,
                        snippet=result.summary, properties=(("ranks", ranks), *sorted(result.measured.items())),
                    )
                )  # fmt: skip
        return found

    def errors(self) -> list[str]:
        """Checks that could not run (the user's code raised): exit status 2."""
        return [
            f"{o.check.code}: {result.summary}" for o in self.outcomes for result, _ in o.groups
            if result.status is Status.ERROR
        ]  # fmt: skip

    def where(self, ranks: list[int]) -> str:
        """`` (ranks 0-3 on host-a)`` for a job of several ranks, else nothing."""
        if self.world_size == 1:
            return ""
        hosts = sorted({self.hostname(r) for r in ranks})
        if len(ranks) == self.world_size:
            return f" (all {self.world_size} ranks)"
        noun = "rank" if len(ranks) == 1 else "ranks"
        return f" ({noun} {compact_ranks(ranks)} on {', '.join(hosts)})"

    def exit_status(self, fail_on: Severity, exit_zero: bool) -> int:
        if self.errors():
            return 2
        if exit_zero:
            return 0
        return 1 if any(f.severity.rank >= fail_on.rank for f in self.findings()) else 0


def _group(results: list[tuple[int, CheckResult]]) -> list[tuple[CheckResult, list[int]]]:
    """Ranks with the same status and summary share one group, first rank first."""
    groups: dict[tuple[Status, str], tuple[CheckResult, list[int]]] = {}
    for rank, result in sorted(results, key=lambda item: item[0]):
        groups.setdefault((result.status, result.summary), (result, []))[1].append(rank)
    return list(groups.values())


def compact_ranks(ranks: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    parts, start, previous = [], None, None
    for rank in sorted(ranks):
        if start is None:
            start = previous = rank
        elif rank == previous + 1:
            previous = rank
        else:
            parts.append(f"{start}-{previous}" if start != previous else str(start))
            start = previous = rank
    if start is not None:
        parts.append(f"{start}-{previous}" if start != previous else str(start))
    return ", ".join(parts)
