#!/usr/bin/env python3
"""DDP000 against CPython's own verdict, file by file.

    python bench/ddp000_oracle.py                 # CPython's Lib/ and the pinned corpus
    python bench/ddp000_oracle.py DIR [DIR ...]   # any trees

docs/rules.md promises that DDP000's verdict matches `python file.py`. The
oracle is `compile(bytes, path, "exec")` on the file's bytes (it executes
nothing): a file is rejected when it raises (SyntaxError and its subclasses,
ValueError, RecursionError, MemoryError), accepted otherwise. ddplint's
verdict is whether `ddplint.engine.check_bytes` reports DDP000 for the same
bytes. Files above max-file-size get a note instead of a verdict and are
counted apart. Exit status 1 when any file disagrees.

The default trees: the standard library of the interpreter running this
script (its site-packages left out; Lib/test holds files with deliberate
syntax and encoding errors) and the pinned benchmark corpus that
`python bench/run.py` downloads to ~/.cache/ddplint-bench/src.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ddplint.config import Settings
from ddplint.engine import SYNTAX_ERROR, check_bytes

CORPUS = Path.home() / ".cache" / "ddplint-bench" / "src"
SKIPPED_DIRS = {"site-packages", "dist-packages", "__pycache__"}


@dataclass
class Tally:
    """Counts for one tree, and the files that disagree."""

    files: int = 0
    both_accept: int = 0
    both_reject: int = 0
    too_large: int = 0
    disagreements: list[str] = field(default_factory=list)


def compile_verdict(data: bytes, path: str) -> str | None:
    """CPython's error for `data`, or None when it compiles."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


def python_files(root: Path) -> list[Path]:
    """The .py files under `root`, without installed third-party packages."""
    return sorted(p for p in root.rglob("*.py") if not SKIPPED_DIRS.intersection(p.relative_to(root).parts) and p.is_file())


def check_tree(root: Path, settings: Settings) -> Tally:
    """Compare the two verdicts on every file under `root`."""
    tally = Tally()
    for path in python_files(root):
        data = path.read_bytes()
        tally.files += 1
        try:
            result = check_bytes(str(path), data, settings)
        except Exception as exc:  # noqa: BLE001 - the run would report an internal error: no DDP000
            ddp000 = None
            internal = f"internal error {type(exc).__name__}: {exc}"
        else:
            if not result.findings and any("max-file-size" in n.message for n in result.notices):
                tally.too_large += 1
                continue
            ddp000 = next((f.message for f in result.findings if f.rule == SYNTAX_ERROR), None)
            internal = next((n.message for n in result.notices if n.internal), None)
        expected = compile_verdict(data, str(path))
        if (ddp000 is None) == (expected is None):
            tally.both_accept += expected is None
            tally.both_reject += expected is not None
        else:
            tally.disagreements.append(f"{path}: compile(): {expected or 'accepted'}; DDP000: {ddp000 or internal or 'none'}")
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="*", type=Path, help="trees to check (default: CPython's Lib/ and the corpus)")
    args = parser.parse_args()
    roots = args.roots or [Path(sysconfig.get_paths()["stdlib"]), CORPUS]
    settings = Settings(rules=frozenset({SYNTAX_ERROR}))  # DDP000 comes before every rule: no other changes it
    print(f"Python {sys.version.split()[0]}")
    print("| Tree | Files | Both accept | Both reject | Above max-file-size | Disagree | Seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    disagreements = []
    for root in roots:
        if not root.is_dir():
            print(f"{root}: not a directory (run `python bench/run.py` to download the corpus)", file=sys.stderr)
            continue
        start = time.perf_counter()
        tally = check_tree(root, settings)
        seconds = time.perf_counter() - start
        print(f"| {root} | {tally.files} | {tally.both_accept} | {tally.both_reject} | {tally.too_large} "
              f"| {len(tally.disagreements)} | {seconds:.0f} |", flush=True)  # fmt: skip
        disagreements += tally.disagreements
    for line in disagreements:
        print(line)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
