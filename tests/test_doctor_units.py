"""The doctor's pure parts: sizes, rank lists, memory curves and their trends, the request's round trip."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ddplint.runtime.check import Status
from ddplint.runtime.checks.rt005_pinned_memory_budget import PinnedMemoryBudget
from ddplint.runtime.context import DoctorOptions, DoctorRequest, RankContext, RankInfo
from ddplint.runtime.probes.curve import Curve
from ddplint.runtime.probes.trend import MIN_POINTS, Verdict, fit_trend
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


MIB = 2**20
STEPS = list(range(1, 401))
#: The floor RT007 uses on the CPU: 1 MiB per 1,000 steps, in bytes per step.
FLOOR = MIB / 1000


def noisy(values: list[float], sigma: float, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [v + rng.gauss(0, sigma) for v in values]


@pytest.mark.parametrize("seed", range(5))
def test_a_flat_curve_with_noise_is_flat(seed: int) -> None:
    trend = fit_trend(STEPS, noisy([300 * MIB] * len(STEPS), 0.2 * MIB, seed))
    assert trend is not None and trend.judge(FLOOR) is Verdict.FLAT
    assert abs(trend.slope) < FLOOR / 2


def test_steady_linear_growth_grows_and_its_bounds_hold_the_true_slope() -> None:
    # A step that keeps its loss: 23 KiB a step, about 2 GiB over 100k steps, under 0.3 MiB of noise.
    slope = 23 * 2**10
    trend = fit_trend(STEPS, noisy([305 * MIB + slope * s for s in STEPS], 0.3 * MIB))
    assert trend is not None and trend.judge(FLOOR) is Verdict.GROWS
    assert trend.lower < slope < trend.upper and trend.lower > 10 * FLOOR


def test_growth_in_page_sized_stairs_grows() -> None:
    # The resident set moves by whole pages and arenas: flat runs, then a jump.
    stairs = [300 * MIB + (s // 20) * 256 * 2**10 for s in STEPS]
    trend = fit_trend(STEPS, stairs)
    assert trend is not None and trend.judge(FLOOR) is Verdict.GROWS


def test_a_plateau_after_the_warm_up_is_flat() -> None:
    # Memory rises over the first 80 steps (optimizer state, caches), then stays put.
    rising = [300 * MIB + min(s, 80) * MIB for s in STEPS]
    trend = fit_trend(STEPS, noisy(rising, 0.1 * MIB))
    assert trend is not None and trend.first == 101 and trend.judge(FLOOR) is Verdict.FLAT
    assert trend.at(400) == pytest.approx(380 * MIB, rel=0.01)


@pytest.mark.parametrize("where", [150, 300, 400])
def test_a_single_spike_is_flat(where: int) -> None:
    spiked = [300 * MIB + (500 * MIB if s == where else 0) for s in STEPS]
    trend = fit_trend(STEPS, noisy(spiked, 0.05 * MIB))
    assert trend is not None and trend.judge(FLOOR) is Verdict.FLAT


def test_a_short_noisy_curve_is_undecided() -> None:
    trend = fit_trend(STEPS[:40], noisy([300 * MIB] * 40, 2 * MIB))
    assert trend is not None and trend.judge(FLOOR) is Verdict.UNDECIDED
    assert trend.lower < FLOOR < trend.upper


def test_too_few_points_after_the_warm_up_have_no_trend() -> None:
    enough = int(MIN_POINTS / 0.75) + 1
    assert fit_trend(STEPS[: enough - 2], [1.0] * (enough - 2)) is None
    assert fit_trend(STEPS[:enough], [1.0] * enough) is not None


def test_long_curves_are_binned_and_keep_their_slope() -> None:
    positions = list(range(1, 20_001))
    trend = fit_trend(positions, noisy([100 * MIB + 1000 * p for p in positions], 1 * MIB))
    assert trend is not None and trend.points <= 200 and trend.slope == pytest.approx(1000, rel=0.05)


def test_curve_points_and_sketch() -> None:
    leak = Curve(STEPS, [100 * MIB + s * 2**16 for s in STEPS])
    points = leak.points(10)
    assert points[0][0] == 1 and points[-1][0] == 400 and len(points) <= 11
    assert leak.total_growth == 399 * 2**16 and leak.sketch().startswith("100 → ")


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


def _slow_dataset_probe(monkeypatch: pytest.MonkeyPatch, uss: list[int], positions: list[int]) -> object:
    """RT006's verdict on a measured curve: the probe returns `uss` (2 workers, an
    epoch of a million samples of which `positions[-1]` were read)."""
    from ddplint.runtime.checks import rt006_worker_memory_growth as rt006
    from ddplint.runtime.probes.workers import WorkerProbe

    probe = WorkerProbe(Curve(positions, uss), 2, positions[-1], 1_000_000, 10.0, exhausted=False)
    monkeypatch.setattr(rt006, "probe_workers", lambda *args, **kwargs: probe)
    ctx = RankContext(DoctorOptions(num_workers=2, timeout=10), RankInfo.single(), "gloo", "cpu",
                      factories={"dataset": lambda: None})  # fmt: skip
    return rt006.WorkerMemoryGrowth().run(ctx)


SAMPLES = list(range(64, 2049, 64))  # 10 ms a sample, 2 workers, 10 s: about 2,000 samples of a million


@pytest.mark.parametrize(
    "shape",
    [
        # pages touched once as the workers start, fewer and fewer: 0.3 MiB in 2,000 samples
        lambda s: int(7 * 2**10 * s**0.5),
        # a warm-up that outlasts the first quarter, then nothing
        lambda s: min(s, 1100) * 300,
    ],
)
def test_a_slow_dataset_that_stores_nothing_does_not_fail(monkeypatch: pytest.MonkeyPatch, shape) -> None:
    # Issue 33: a 10 ms-a-sample Dataset got "146 MiB per epoch" from warm-up growth
    # extrapolated 500 times; a failure needs growth that persists past the warm-up.
    rng = random.Random(7)
    uss = [20 * MIB + shape(s) + rng.randrange(0, 3) * 4096 for s in SAMPLES]
    result = _slow_dataset_probe(monkeypatch, uss, SAMPLES)
    assert result.status is not Status.FAIL, result.summary
    low, high = result.measured["window_low_bytes"] / MIB, result.measured["window_high_bytes"] / MIB
    assert f"measured {low:.2f}-{high:.2f} MiB over samples 1,088-2,048" in result.summary, result.summary


def test_worker_growth_that_persists_past_the_warm_up_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # copy-on-read: every sample read copies its pages, 4 KiB a sample here
    uss = [20 * MIB + 4096 * s for s in SAMPLES]
    result = _slow_dataset_probe(monkeypatch, uss, SAMPLES)
    assert result.status is Status.FAIL and "per epoch on this node" in result.summary, result.summary
    assert "measured 24.25-28.00 MiB over samples 1,088-2,048" in result.summary, result.summary
