#!/usr/bin/env python3
"""Whole-ecosystem run: every file of the pinned corpus and of CPython's own
standard library, linted with every rule; or, with `--training DIR`, the
precision check on real training repositories against the judged verdicts
(see `training.py` beside this file).

    python bench/ecosystem.py [--cache ~/.cache/ddplint-bench] [--output docs/ecosystem.md]
    python bench/ecosystem.py --training DIR [--record] [--repos a,b] [--min-precision 0.9]

Reports the files and lines read, internal errors (must be 0), DDP000
findings against CPython's own `compile()` verdict on the same bytes (must
agree), wall time and peak RSS. It reuses the corpus that `bench/run.py`
downloads. Not a unit test: it takes minutes.
"""

from __future__ import annotations

import argparse
import resource
import sys
import sysconfig
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import fetch, machine  # noqa: E402


def compile_fails(data: bytes, path: str) -> bool:
    """Whether CPython rejects the file (as `python file.py` would)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "ddplint-bench")
    parser.add_argument("--output", type=Path, default=HERE.parent / "docs" / "ecosystem.md")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--training", type=Path, help="the folder holding the training repositories")
    parser.add_argument("--record", action="store_true", help="with --training: rewrite the verdicts' states")
    parser.add_argument("--repos", help="with --training: only these repositories (comma-separated names)")
    parser.add_argument("--min-precision", type=float, help="with --training: fail below this overall precision")
    args = parser.parse_args()
    if args.training is not None:
        import training

        only = set(args.repos.split(",")) if args.repos else None
        raise SystemExit(training.main(args.training, args.record, only, args.min_precision))

    from ddplint.config.resolver import ConfigResolver
    from ddplint.discovery import discover
    from ddplint.runner import available_cpus, lint_paths

    corpus = fetch(args.cache)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    roots = [*sorted(p for p in corpus.iterdir() if p.is_dir()), stdlib]
    rows = []
    totals = {"files": 0, "lines": 0, "internal": 0, "ddp000": 0, "compile": 0, "disagree": 0}
    start = time.perf_counter()
    for root in roots:
        report = lint_paths([root], ConfigResolver(cwd=root.parent), jobs=args.jobs or available_cpus())
        files = sorted(f.path for f in discover([root], ConfigResolver(cwd=root.parent)).files)  # what ddplint lints
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        internal = sum(1 for n in report.notices if n.internal)
        syntax = {str(Path(f.path).resolve()) for f in report.findings if f.rule == "DDP000"}
        rejected = {str(p.resolve()) for p in files if compile_fails(p.read_bytes(), str(p))}
        disagree = sorted(syntax ^ rejected)
        name = "CPython Lib/" if root == stdlib else root.name
        rows.append((name, len(files), lines, internal, len(syntax), len(rejected), disagree))
        for key, value in zip(totals, (len(files), lines, internal, len(syntax), len(rejected), len(disagree))):
            totals[key] += value
    seconds = time.perf_counter() - start
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    table = ["| Tree | Files | Lines | Internal errors | DDP000 | compile() rejects | Disagreements |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, files, lines, internal, syntax, rejected, disagree in rows:
        table.append(f"| {name} | {files} | {lines} | {internal} | {syntax} | {rejected} | {len(disagree)} |")
    table.append(
        f"| **total** | {totals['files']} | {totals['lines']} | {totals['internal']} | {totals['ddp000']} | "
        f"{totals['compile']} | {totals['disagree']} |"
    )
    details = [f"- {path}" for *_, disagree in rows for path in disagree]
    text = (
        "# Whole-ecosystem run\n\n"
        f"`python bench/ecosystem.py` on {machine()}: every rule, {seconds:.0f} s wall, peak RSS {peak:.0f} MiB.\n\n"
        + "\n".join(table)
        + ("\n\nDisagreements between DDP000 and `compile()`:\n\n" + "\n".join(details) if details else "")
        + "\n"
    )
    args.output.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
