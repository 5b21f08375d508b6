"""A memory curve measured by a probe, and what the reports show of it."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.runtime.host import MIB
from ddplint.runtime.probes.trend import WARMUP_SHARE, Trend, fit_trend


@dataclass(frozen=True)
class Curve:
    """Memory in bytes measured at increasing positions (samples or steps)."""

    positions: list[int]
    values: list[int]

    @property
    def total_growth(self) -> int:
        """Last value minus first, warm-up included."""
        return self.values[-1] - self.values[0] if self.values else 0

    def trend(self, warmup: float = WARMUP_SHARE) -> Trend | None:
        """The fitted trend after the first `warmup` share (`ddplint.runtime.probes.trend`)."""
        return fit_trend(self.positions, self.values, warmup)

    def span(self, first: float) -> tuple[int, int]:
        """The lowest and highest value measured from position `first` on (bytes)."""
        window = [v for p, v in zip(self.positions, self.values) if p >= first] or self.values
        return min(window), max(window)

    def points(self, count: int = 120) -> list[list[float]]:
        """At most about `count` evenly spaced (position, MiB) points, for the reports' charts."""
        if not self.values:
            return []
        stride = max(1, (len(self.values) - 1) // (count - 1)) if count > 1 else len(self.values)
        picked = list(range(0, len(self.values), stride))
        if picked[-1] != len(self.values) - 1:
            picked.append(len(self.values) - 1)
        return [[self.positions[i], round(self.values[i] / MIB, 2)] for i in picked]

    def sketch(self) -> str:
        """The curve as `a → b → c MiB`, for one-line messages (a decimal when it moves little)."""
        points = [mib for _, mib in self.points(5)]
        digits = 1 if points and max(points) - min(points) < 10 else 0
        return " → ".join(f"{mib:.{digits}f}" for mib in points) + " MiB"
