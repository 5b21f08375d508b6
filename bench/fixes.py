#!/usr/bin/env python3
"""Every fix over real code: `ddplint --diff --unsafe-fixes` on the pinned corpus.

    python bench/fixes.py [--cache ~/.cache/ddplint-bench] [--output docs/fixes.md] [--show N]

Fixes (safe and unsafe) every file of the corpus that `bench/run.py`
downloads, in memory: nothing is written into the corpus. Reports the fixes
applied per rule, the files changed, and every fixed file that CPython's
`compile()` rejects (must be none), plus the files the fixer reported as
left unchanged or not converging. `--show N` prints N diffs per rule to
read. Not a unit test: it takes minutes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ecosystem import compile_fails  # noqa: E402
from run import fetch, machine  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "ddplint-bench")
    parser.add_argument("--output", type=Path, default=HERE.parent / "docs" / "fixes.md")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--show", type=int, default=0, help="print this many diffs per rule")
    args = parser.parse_args()

    from ddplint.config.resolver import ConfigResolver
    from ddplint.fixing import FixMode
    from ddplint.runner import available_cpus, lint_paths

    corpus = fetch(args.cache)
    per_rule: Counter[str] = Counter()
    rows, broken, problems = [], [], []
    examples: dict[str, list[str]] = defaultdict(list)
    start = time.perf_counter()
    for root in sorted(p for p in corpus.iterdir() if p.is_dir()):
        report = lint_paths(
            [root], ConfigResolver(cwd=root.parent), jobs=args.jobs or available_cpus(), fix=FixMode(unsafe=True)
        )
        fixes = Counter(code for fixed in report.fixed for code in fixed.rules)
        per_rule.update(fixes)
        for fixed in report.fixed:
            if compile_fails(fixed.after.encode(fixed.encoding), fixed.display):
                broken.append(fixed.display)
            for code in sorted(set(fixed.rules)):
                if len(examples[code]) < args.show:
                    examples[code].append(fixed.diff())
        problems += [f"{n.path}: {n.message}" for n in report.notices if "fix" in n.message]
        rows.append((root.name, report.files, len(report.fixed), sum(fixes.values()), fixes))
    seconds = time.perf_counter() - start
    codes = sorted(per_rule)
    table = [
        "| Package | Files | Files fixed | Fixes | " + " | ".join(codes) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(codes),
    ]
    for name, files, changed, count, fixes in rows:
        table.append(f"| {name} | {files} | {changed} | {count} | " + " | ".join(str(fixes[c] or "") for c in codes) + " |")
    table.append(
        f"| **total** | {sum(r[1] for r in rows)} | {sum(r[2] for r in rows)} | {sum(r[3] for r in rows)} | "
        + " | ".join(str(per_rule[c]) for c in codes) + " |"
    )
    text = (
        "# Fixes over real code\n\n"
        f"`python bench/fixes.py` on {machine()}: every fix, safe and unsafe, {seconds:.0f} s wall.\n\n"
        + "\n".join(table)
        + f"\n\nFixed files that `compile()` rejects: {len(broken)}"
        + "".join(f"\n- {path}" for path in broken)
        + f"\n\nFiles the fixer left unchanged or that did not converge: {len(problems)}"
        + "".join(f"\n- {line}" for line in problems)
        + "\n"
    )
    args.output.write_text(text, encoding="utf-8")
    print(text)
    for code in codes:
        for diff in examples[code]:
            print(f"===== {code}\n{diff}")
    if broken:
        sys.exit(1)


if __name__ == "__main__":
    main()
