"""The doctor's HTML page (`ddplint doctor --html`) in a real browser.

    python bench/doctor_page.py [--out DIR]

Runs the installed `ddplint doctor` with both probes on the test targets (a
dataset of Python objects, a step that keeps its losses), writes
DIR/report.html, renders it with headless Chromium (Debian's `chromium`
package) to DIR/report.png, and prints what it found: the page's size, the
charts in the rendered DOM, the console errors and the screenshot's pixels.
Exits 1 when the page did not render as it should. The tests use the same
functions (tests/test_doctor_pictures.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBES = REPO / "tests" / "probes"
#: The doctor run that draws both curves (a failing one for each probe).
PROBE_ARGS = ("--nproc-per-node", "1", "--only", "RT006,RT007", "--dataset", "doctor_targets:python_objects",
              "--num-workers", "2", "--batch-size", "256", "--step", "doctor_targets:loss_appending_step",
              "--steps", "60")  # fmt: skip


def chromium() -> str | None:
    """The Chromium executable, if installed."""
    return next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)


@dataclass(frozen=True)
class Rendered:
    """What the browser made of the page."""

    dom: str  # the DOM after parsing (`--dump-dom`)
    log: str  # the browser's own log: console messages, refused loads
    screenshot: Path


def render(page: Path, screenshot: Path, width: int = 1100, height: int = 1500, timeout: float = 60) -> Rendered:
    """Load `page` in headless Chromium, offline: its DOM, its log and a screenshot."""
    executable = chromium()
    if executable is None:
        raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="ddplint-chromium-") as profile:
        common = [
            executable, "--headless", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
            "--enable-logging=stderr", "--v=0", f"--window-size={width},{height}",
            # Any request the page made would fail here and show in the log.
            "--proxy-server=127.0.0.1:9", "--no-first-run", "--no-default-browser-check",
        ]  # fmt: skip
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            common.append("--no-sandbox")  # Chromium refuses to run its sandbox as root
        url = page.resolve().as_uri()
        dumped = subprocess.run([*common, "--dump-dom", url], check=False, capture_output=True, text=True, timeout=timeout)
        shot = subprocess.run([*common, f"--screenshot={screenshot}", url], check=False, capture_output=True, text=True, timeout=timeout)
    if not screenshot.exists():
        raise RuntimeError(f"chromium wrote no screenshot: {shot.stderr[-2000:]}")
    return Rendered(dumped.stdout, dumped.stderr + shot.stderr, screenshot)


def console_problems(log: str) -> list[str]:
    """The log lines that say the page itself went wrong (not Chromium's own dbus noise)."""
    markers = ("CONSOLE", "Refused to", "Uncaught", "net::ERR", "Failed to load resource")
    return [line for line in log.splitlines() if any(marker in line for marker in markers)]


def read_png(path: Path) -> tuple[int, int, list[list[tuple[int, int, int]]]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    offset, chunks, header = 8, [], b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        offset += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    channels = {2: 3, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
    raw, stride = zlib.decompress(b"".join(chunks)), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            line[i] = (line[i] + _predict(kind, left, up, corner)) & 0xFF
        rows.append([tuple(line[i : i + 3]) for i in range(0, stride, channels)])
        previous = line
    return width, height, rows  # type: ignore[return-value]


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    """PNG's per-row filters (RFC 2083, 6.2)."""
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    estimate = left + up - corner
    pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
    return left if pa <= pb and pa <= pc else up if pb <= pc else corner


def pixel_census(path: Path) -> dict[str, float]:
    """Shares of the screenshot's pixels: not white, the curves' blue, the trend's red."""
    width, height, rows = read_png(path)
    total = width * height
    pixels = [p for row in rows for p in row]
    return {
        "width": width, "height": height,
        "ink": sum(1 for r, g, b in pixels if r + g + b < 720) / total,
        "blue": sum(1 for r, g, b in pixels if b > 150 and r < 80 and g < 140) / total,
        "red": sum(1 for r, g, b in pixels if r > 150 and g < 90 and b < 90) / total,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("doctor-page"), help="directory for report.html and report.png")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    page, png = args.out.resolve() / "report.html", args.out.resolve() / "report.png"
    ddplint = shutil.which("ddplint", path=os.path.dirname(sys.executable)) or "ddplint"
    run = subprocess.run([ddplint, "doctor", *PROBE_ARGS, "--html", str(page)], check=False, cwd=PROBES, capture_output=True, text=True)
    print(run.stdout, end="")
    if not page.exists():
        print(f"no page written (exit {run.returncode}): {run.stderr}", file=sys.stderr)
        return 1
    rendered = render(page, png)
    census = pixel_census(png)
    problems = console_problems(rendered.log)
    charts = rendered.dom.count('class="chart"')
    print(f"{page}: {page.stat().st_size:,} bytes; {charts} charts in the rendered DOM")
    print(f"{png}: {png.stat().st_size:,} bytes, {census['width']}x{census['height']}, "
          f"{census['ink']:.1%} ink, {census['blue']:.2%} curve blue, {census['red']:.2%} trend red")  # fmt: skip
    for line in problems:
        print(f"browser: {line}")
    return 0 if charts == 2 and not problems and census["blue"] > 0 and census["red"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
