"""Reading a memory curve: has it stopped growing?"""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.runtime.host import MIB


@dataclass(frozen=True)
class Curve:
    """Memory in bytes measured at increasing positions (samples or steps)."""

    positions: list[int]
    values: list[int]

    @property
    def total_growth(self) -> int:
        return self.values[-1] - self.values[0] if self.values else 0

    @property
    def last_third_growth(self) -> int:
        """Growth over the last third of the positions measured."""
        if len(self.values) < 3:
            return 0
        return self.values[-1] - self.values[(2 * len(self.values)) // 3]

    def rate_per(self, unit: int) -> float:
        """Bytes of growth per `unit` positions, over the whole curve."""
        span = self.positions[-1] - self.positions[0] if self.positions else 0
        return self.total_growth * unit / span if span > 0 else 0.0

    def points(self, count: int = 10) -> list[list[float]]:
        """At most `count` evenly spaced (position, MiB) points, for the report."""
        if not self.values:
            return []
        stride = max(1, (len(self.values) - 1) // (count - 1)) if count > 1 else len(self.values)
        picked = list(range(0, len(self.values), stride))
        if picked[-1] != len(self.values) - 1:
            picked.append(len(self.values) - 1)
        return [[self.positions[i], round(self.values[i] / MIB, 1)] for i in picked]

    def sketch(self) -> str:
        """The curve as `a → b → c MiB`, for one-line messages."""
        return " → ".join(f"{mib:.0f}" for _, mib in self.points(5)) + " MiB"


def running_peak(values: list[int]) -> list[int]:
    """The peak so far at each position."""
    peak, result = 0, []
    for value in values:
        peak = max(peak, value)
        result.append(peak)
    return result
