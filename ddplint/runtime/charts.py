"""Pictures of the probes' memory curves: a one-line sparkline for the text
report, an inline SVG chart with the fitted trend for the HTML page.

Both read what the checks put in their results' `measured`: `curve_mib`
(``[[position, MiB], ...]``), `curve_unit` (``steps``/``samples``) and
`trend` (`ddplint.runtime.probes.trend.Trend.to_json` in MiB, slopes per
1,000 positions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from itertools import pairwise
from typing import Any

BLOCKS = "▁▂▃▄▅▆▇█"
ASCII_BLOCKS = "_.-:=+*#"


@dataclass(frozen=True)
class Picture:
    """A curve as the checks measured it, with its fitted trend (if any)."""

    points: list[tuple[float, float]]  # (position, MiB)
    unit: str
    trend: dict[str, float] | None

    @classmethod
    def of(cls, measured: dict[str, Any]) -> Picture | None:
        """The curve in a result's `measured`, or None when it has fewer than two points."""
        points = [(float(x), float(y)) for x, y in measured.get("curve_mib") or []]
        if len(points) < 2:
            return None
        return cls(points, str(measured.get("curve_unit", "steps")), measured.get("trend"))

    def fitted(self, position: float) -> float | None:
        """The trend line's MiB at `position`."""
        if not self.trend:
            return None
        return self.trend["intercept"] + self.trend["slope"] * position / 1000


def sparkline(values: list[float], width: int = 32, blocks: str = BLOCKS) -> str:
    """`values` as at most `width` block characters, lowest to highest.

    Values are averaged into `width` bins; a curve that does not move is a
    flat line of the lowest block.
    """
    if not values:
        return ""
    if len(values) > width:
        bounds = [round(i * len(values) / width) for i in range(width + 1)]
        values = [sum(values[a:b]) / (b - a) for a, b in pairwise(bounds) if b > a]
    low, high = min(values), max(values)
    if high - low < 1e-9:
        return blocks[0] * len(values)
    top = len(blocks) - 1
    return "".join(blocks[round((value - low) / (high - low) * top)] for value in values)


def curve_line(picture: Picture, blocks: str = BLOCKS) -> str:
    """``▁▂▃▅▆█ 305.1 → 328.4 MiB over 1,000 steps`` for the text report."""
    first, last = picture.points[0], picture.points[-1]
    spark = sparkline([mib for _, mib in picture.points], blocks=blocks)
    return f"{spark} {first[1]:.1f} → {last[1]:.1f} MiB over {last[0]:,.0f} {picture.unit}"


# The SVG's drawing area, in its own units (it scales with the page).
_WIDTH, _HEIGHT, _LEFT, _RIGHT, _TOP, _BOTTOM = 640, 260, 64, 16, 16, 40


def svg_chart(picture: Picture, title: str) -> str:
    """An inline SVG line chart of the curve, the warm-up shaded and the trend dashed."""
    xs = [x for x, _ in picture.points]
    ys = [y for _, y in picture.points]
    fitted = [picture.fitted(x) for x in (xs[0], xs[-1])] if picture.trend else []
    x0, x1 = xs[0], xs[-1] if xs[-1] > xs[0] else xs[0] + 1
    y0, y1 = _padded(min(ys + [y for y in fitted if y is not None]), max(ys + [y for y in fitted if y is not None]))

    def sx(x: float) -> float:
        return _LEFT + (x - x0) / (x1 - x0) * (_WIDTH - _LEFT - _RIGHT)

    def sy(y: float) -> float:
        return _HEIGHT - _BOTTOM - (y - y0) / (y1 - y0) * (_HEIGHT - _TOP - _BOTTOM)

    parts = [
        (f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{escape(title)}" '
         'xmlns="http://www.w3.org/2000/svg">'),
        f"<title>{escape(title)}</title>",
    ]
    if picture.trend and picture.trend.get("first", x0) > x0:
        warm = sx(min(picture.trend["first"], x1))
        parts.append(f'<rect class="warmup" x="{_LEFT}" y="{_TOP}" width="{warm - _LEFT:.1f}" '
                     f'height="{_HEIGHT - _TOP - _BOTTOM}"><title>warm-up: not fitted</title></rect>')  # fmt: skip
    for tick in _ticks(y0, y1):
        parts.append(f'<line class="grid" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{sy(tick):.1f}" y2="{sy(tick):.1f}"/>')
        parts.append(f'<text class="tick" x="{_LEFT - 6}" y="{sy(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for tick in _ticks(x0, x1):
        parts.append(f'<text class="tick" x="{sx(tick):.1f}" y="{_HEIGHT - _BOTTOM + 16}" text-anchor="middle">{tick:,.0f}</text>')
    parts.append(f'<line class="axis" x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{_HEIGHT - _BOTTOM}" y2="{_HEIGHT - _BOTTOM}"/>')
    parts.append(f'<line class="axis" x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{_HEIGHT - _BOTTOM}"/>')
    path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in picture.points)
    parts.append(f'<polyline class="curve" points="{path}"/>')
    if picture.trend:
        start = max(picture.trend.get("first", x0), x0)
        a, b = picture.fitted(start), picture.fitted(x1)
        slope = picture.trend["slope"]
        label = (f"trend {slope:+.3g} MiB per 1k {picture.unit} "
                 f"(95 %: {picture.trend['lower']:+.3g} to {picture.trend['upper']:+.3g})")  # fmt: skip
        parts.append(f'<line class="trend" x1="{sx(start):.1f}" y1="{sy(a):.1f}" x2="{sx(x1):.1f}" y2="{sy(b):.1f}">'
                     f"<title>{escape(label)}</title></line>")  # fmt: skip
        parts.append(f'<text class="label" x="{_WIDTH - _RIGHT}" y="{_TOP + 12}" text-anchor="end">{escape(label)}</text>')
    parts.append(f'<text class="tick" x="{(_LEFT + _WIDTH - _RIGHT) / 2:.0f}" y="{_HEIGHT - 6}" '
                 f'text-anchor="middle">{escape(picture.unit)}</text>')  # fmt: skip
    parts.append(f'<text class="tick" x="14" y="{(_TOP + _HEIGHT - _BOTTOM) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(_TOP + _HEIGHT - _BOTTOM) / 2:.0f})">MiB</text>')  # fmt: skip
    parts.append("</svg>")
    return "\n".join(parts)


def _padded(low: float, high: float) -> tuple[float, float]:
    """The value range with a margin; a flat curve gets ±1 MiB so it is a line mid-chart."""
    if high - low < 1e-6:
        return low - 1, high + 1
    margin = (high - low) * 0.08
    return low - margin, high + margin


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round tick values within [low, high]."""
    raw = (high - low) / count
    magnitude = 10 ** (math.floor(math.log10(raw)) if raw > 0 else 0)
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = -(-low // step) * step
    ticks, value = [], first
    while value <= high + 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks

