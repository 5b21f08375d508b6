"""The doctor's pure parts: sizes, rank lists, memory curves, the request's round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddplint.runtime.check import Status
from ddplint.runtime.checks.rt005_pinned_memory_budget import PinnedMemoryBudget
from ddplint.runtime.context import DoctorOptions, DoctorRequest, RankContext, RankInfo
from ddplint.runtime.probes.curve import Curve, running_peak
from ddplint.runtime.report import compact_ranks
from ddplint.sizes import parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [("64MiB", 64 * 2**20), ("2GB", 2 * 10**9), ("1048576", 2**20), ("0.5GiB", 2**29), ("512 kib", 512 * 2**10)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MiB", "5 parsecs", "-1GB", "0"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize(
    ("ranks", "text"), [([1], "1"), ([0, 1, 2, 5], "0-2, 5"), ([7, 3, 4], "3-4, 7"), ([0, 2, 4], "0, 2, 4")]
)
def test_compact_ranks(ranks: list[int], text: str) -> None:
    assert compact_ranks(ranks) == text


def test_a_plateau_has_no_late_growth_and_a_leak_has() -> None:
    steps = list(range(1, 31))
    plateau = Curve(steps, running_peak([100 + min(i, 5) * 10 for i in steps]))
    leak = Curve(steps, [100 + i * 10 for i in steps])
    assert plateau.last_third_growth == 0 and plateau.total_growth == 40
    assert leak.last_third_growth == 90 and leak.rate_per(10) == pytest.approx(100)
    points = leak.points(10)
    assert points[0][0] == 1 and points[-1][0] == 30 and len(points) <= 11


def test_running_peak_never_falls() -> None:
    assert running_peak([3, 1, 4, 1, 5]) == [3, 3, 4, 4, 5]


def test_request_round_trips_to_the_ranks() -> None:
    request = DoctorRequest(
        DoctorOptions(num_workers=3, batch_bytes=2**20, only=("RT00",), skip=("RT007",), cwd=Path("/x")),
        output_format="sarif", output="out-{rank}.sarif", fail_on="error",
    )  # fmt: skip
    assert DoctorRequest.from_json(request.to_json()) == request
    assert request.output_for(0) == "out-0.sarif" and request.output_for(3) == "out-3.sarif"
    plain = DoctorRequest(output="report.json")
    assert plain.output_for(0) == "report.json" and plain.output_for(1) is None and not plain.writes(1)


@pytest.mark.parametrize(
    ("batch_bytes", "workers", "status", "numbers"),
    [
        (64 * 2**30, 8, Status.FAIL, "1 rank × 8 workers × 2 prefetch × 64.0 GiB = 1024.0 GiB pinned > half of the"),
        # 32 KiB per rank: below Docker's default RLIMIT_MEMLOCK of 64 KiB too
        (16 * 2**10, 1, Status.PASS, "1 rank × 1 worker × 2 prefetch × 16 KiB = 32 KiB pinned ≤ half of the"),
    ],
)
def test_pinned_memory_budget_of_a_gpu_rank(batch_bytes: int, workers: int, status: Status, numbers: str) -> None:
    options = DoctorOptions(batch_bytes=batch_bytes, num_workers=workers)
    result = PinnedMemoryBudget().run(RankContext(options, RankInfo.single(), "nccl", "cuda:0"))
    assert result.status is status and result.summary.startswith(numbers), result.summary
    assert result.measured["pinned_bytes"] == batch_bytes * workers * 2


def test_a_cpu_rank_pins_nothing_and_the_budget_is_skipped() -> None:
    options = DoctorOptions(batch_bytes=64 * 2**30, num_workers=8)
    result = PinnedMemoryBudget().run(RankContext(options, RankInfo.single(), "gloo", "cpu"))
    assert result.status is Status.SKIP and result.summary.startswith("without CUDA nothing is pinned (1 rank × 8 workers × 2 prefetch × 64.0 GiB = 1024.0 GiB pinned on a GPU host")
