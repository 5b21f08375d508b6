"""Is a memory curve still growing? A trend fitted over the measured window.

A threshold on the last stretch of a curve misses the leaks that matter: a
step that keeps its loss (with its graph) adds a few KiB per step, under any
sensible noise threshold over 100 steps, and still adds gigabytes over a
real job. So the probes fit the curve's slope after a warm-up part and judge
the slope with a confidence bound:

- the slope is Theil–Sen's (the median of the slopes between every pair of
  points), which one spike or one allocator step cannot tilt;
- its one-sided 95 % bounds are Sen's rank bounds (from the variance of
  Kendall's S, corrected for tied values), with no assumption on the noise's
  distribution;
- a curve *grows* when even the lower bound exceeds a floor of practical
  importance (the checks' own), is *flat* when even the upper bound stays
  below it, and is *undecided* otherwise (too short or too noisy: more
  samples would settle it).

Pure Python: the runtime extra brings no NumPy, and at most `MAX_POINTS`
points are fitted (O(n²) pairs).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from itertools import pairwise
from statistics import median

#: The first part of the window is warm-up (optimizer state, allocator
#: caches, workers starting) and is not fitted.
WARMUP_SHARE = 0.25
#: The probes' share: memory that keeps growing must still grow over the
#: later half of what was measured; a warm-up that outlasts the first quarter
#: (a slow dataset's workers starting, an allocator filling its free lists)
#: is not a leak.
LATER_HALF = 0.5
#: At least this many points after the warm-up, or there is no trend to fit.
MIN_POINTS = 8
#: Longer curves are reduced to this many bins (median position and value).
MAX_POINTS = 200
#: One-sided 95 %: the standard normal quantile.
Z_95 = 1.6449


class Verdict(str, enum.Enum):
    """How a fitted trend compares with a check's floor."""

    GROWS = "grows"
    FLAT = "flat"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Trend:
    """A fitted line through a curve's window after the warm-up.

    Slopes are in the curve's value unit per position unit (bytes per step,
    bytes per sample); `lower` and `upper` are one-sided 95 % bounds.
    """

    slope: float
    lower: float
    upper: float
    intercept: float
    first: float  # the first position fitted: the warm-up ends here
    last: float
    points: int  # points fitted (after binning)

    def judge(self, floor: float) -> Verdict:
        """`GROWS` when the lower bound exceeds `floor`, `FLAT` when the upper bound does not."""
        if self.lower > floor:
            return Verdict.GROWS
        if self.upper <= floor:
            return Verdict.FLAT
        return Verdict.UNDECIDED

    def at(self, position: float) -> float:
        """The fitted line's value at `position`."""
        return self.intercept + self.slope * position

    def slopes(self, scale: float = 1.0, per: float = 1.0) -> dict[str, float]:
        """The slope and its bounds in a report's units: values divided by
        `scale`, per `per` positions (MiB per 1k steps: `MIB`, 1000)."""
        factor = per / scale
        return {"slope": self.slope * factor, "lower": self.lower * factor, "upper": self.upper * factor}

    def to_json(self, scale: float = 1.0, per: float = 1.0) -> dict[str, float]:
        """The trend for reports: values divided by `scale`, slopes per `per` positions."""
        slopes = {name: round(value, 4) for name, value in self.slopes(scale, per).items()}
        return {**slopes, "intercept": round(self.intercept / scale, 4),
                "first": self.first, "last": self.last, "points": self.points}  # fmt: skip


def fit_trend(positions: list[float], values: list[float], warmup: float = WARMUP_SHARE) -> Trend | None:
    """The Theil–Sen trend of `values` over `positions` after the first `warmup`
    share of the points; None with fewer than `MIN_POINTS` points left."""
    start = math.ceil(len(values) * warmup)
    if len(values) - start < MIN_POINTS:
        return None
    xs, ys = _binned(list(positions[start:]), list(values[start:]), MAX_POINTS)
    if len(xs) < MIN_POINTS:
        return None
    slopes = sorted((ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[j] != xs[i])
    if not slopes:
        return None
    slope = median(slopes)
    lower, upper = _sen_bounds(slopes, ys)
    intercept = median(y - slope * x for x, y in zip(xs, ys))
    return Trend(slope, lower, upper, intercept, positions[start], positions[-1], len(xs))


def _sen_bounds(slopes: list[float], values: list[float]) -> tuple[float, float]:
    """Sen's one-sided 95 % bounds on the median slope (`slopes` sorted).

    The bounds are order statistics of the pairwise slopes, placed by the
    variance of Kendall's S; ties among the values (memory often repeats to
    the byte) shrink that variance.
    """
    n, pairs = len(values), len(slopes)
    ties = sum(t * (t - 1) * (2 * t + 5) for t in _tie_sizes(values))
    variance = (n * (n - 1) * (2 * n + 5) - ties) / 18
    spread = Z_95 * math.sqrt(max(variance, 0.0))
    # Gilbert (1987): the M1-th smallest and the (M2 + 1)-th, rounded outwards.
    low = max(0, min(pairs - 1, math.floor((pairs - spread) / 2) - 1))
    high = max(0, min(pairs - 1, math.ceil((pairs + spread) / 2)))
    return slopes[low], slopes[high]


def _tie_sizes(values: list[float]) -> list[int]:
    counts: dict[float, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [t for t in counts.values() if t > 1]


def _binned(xs: list[float], ys: list[float], limit: int) -> tuple[list[float], list[float]]:
    """At most `limit` points: consecutive bins of the curve, each its medians."""
    if len(xs) <= limit:
        return xs, ys
    bounds = [round(i * len(xs) / limit) for i in range(limit + 1)]
    pairs = [(median(xs[a:b]), median(ys[a:b])) for a, b in pairwise(bounds) if b > a]
    return [x for x, _ in pairs], [y for _, y in pairs]
