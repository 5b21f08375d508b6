#!/usr/bin/env python3
"""Time and peak memory of ddplint on one very long file.

    python bench/long_files.py                           # 50k, 250k and 1M lines, default settings
    python bench/long_files.py --max-lines 2000000       # with the LibCST line limit raised
    python bench/long_files.py --bare --lines 250000     # bare libcst.parse_module, for comparison

Each file is N short lines (``x=1``) and one rule token at the end (a
DataLoader given both a DistributedSampler and shuffle=True), so the
prefilter hands it to LibCST: the worst case per byte under the default
5 MB max-file-size (1M lines is 4 MB). Every run is a whole process, measured
with GNU time (`/usr/bin/time -v`: wall seconds, maximum resident set size).
Set PYTHONPATH to measure another checkout of ddplint. Prints Markdown rows
for docs/performance.md ("Long files").
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TOKEN = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
BARE = "import sys, libcst; libcst.parse_module(open(sys.argv[1], encoding='utf-8').read())"


def write_file(directory: Path, lines: int) -> Path:
    """`lines` lines: short assignments, then the two lines of the rule token."""
    path = directory / f"long_{lines}.py"
    path.write_text("x=1\n" * (lines - 2) + TOKEN, encoding="utf-8")
    return path


def measure(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB and what the command said (its last line)."""
    proc = subprocess.run(["/usr/bin/time", "-v", *command], cwd=cwd, capture_output=True, text=True)
    report = proc.stderr
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", report)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
    assert wall and rss, report
    seconds = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    said = [line for line in (proc.stdout + report.split("\tCommand being timed")[0]).splitlines() if line.strip()]
    outcome = "DDP014 found" if "DDP014" in proc.stdout else (said[-1] if said else f"exit {proc.returncode}")
    return seconds, int(rss.group(1)) / 1024, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, nargs="+", default=[50_000, 250_000, 1_000_000])
    parser.add_argument("--max-lines", type=int, help="write a ddplint.toml raising max-lines to this")
    parser.add_argument("--bare", action="store_true", help="time libcst.parse_module alone instead of ddplint")
    parser.add_argument("--label", default="ddplint", help="the row's label (e.g. before / after)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ddplint-long-") as scratch:
        directory = Path(scratch)
        if args.max_lines:
            (directory / "ddplint.toml").write_text(f"max-lines = {args.max_lines}\n", encoding="utf-8")
        print("| Lines | Run | Seconds | Peak MiB | Outcome |\n|---:|---|---:|---:|---|")
        for lines in args.lines:
            path = write_file(directory, lines)
            if args.bare:
                command = [sys.executable, "-c", BARE, path.name]
            else:
                command = [sys.executable, "-m", "ddplint", "--no-cache", "-j1", path.name]
            seconds, peak, outcome = measure(command, directory)
            print(f"| {lines:,} | {args.label} | {seconds:.1f} | {peak:,.0f} | {outcome} |", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
