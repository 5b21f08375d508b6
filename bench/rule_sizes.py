#!/usr/bin/env python3
"""Logic lines per rule and per analysis module: lines that are not blank,
not comments and not docstrings (a rule's documentation is its docstring, so
it never counts).

    python bench/rule_sizes.py [--max-median 35] [--max-rule 60] [--max-ddp001 120]

Prints one row per rule file (rules/) and per module of ddplint/analysis/,
then the median and the largest. With the limits given it exits 1 when one
is exceeded (the targets of the semantic model: a rule over ~60 logic lines
means the model lacks a service).
"""

from __future__ import annotations

import argparse
import ast
import io
import statistics
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def logic_lines(path: Path) -> int:
    """Lines holding code: no blank, comment-only or docstring lines."""
    text = path.read_text(encoding="utf-8")
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                if isinstance(body[0].value.value, str):
                    docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    code: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                          tokenize.ENDMARKER):  # fmt: skip
            continue
        code.update(range(token.start[0], token.end[0] + 1))
    return len(code - docstrings)


def table(title: str, sizes: dict[str, int]) -> str:
    rows = [f"| {name} | {size} |" for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])]
    median = statistics.median(sizes.values()) if sizes else 0
    return "\n".join(
        [f"## {title}", "", "| file | logic lines |", "|---|---:|", *rows, "",
         f"{len(sizes)} files, {sum(sizes.values())} logic lines, median {median:g}, largest {max(sizes.values(), default=0)}", ""]
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-median", type=float)
    parser.add_argument("--max-rule", type=int, help="the largest rule other than DDP001")
    parser.add_argument("--max-ddp001", type=int)
    args = parser.parse_args()
    rules = {p.name: logic_lines(p) for p in sorted((ROOT / "rules").glob("ddp*.py"))}
    analysis = {p.name: logic_lines(p) for p in sorted((ROOT / "ddplint" / "analysis").glob("*.py"))}
    print(table("Rules (rules/)", rules))
    print(table("Analysis (ddplint/analysis/)", analysis))
    failures = []
    median = statistics.median(rules.values())
    if args.max_median is not None and median > args.max_median:
        failures.append(f"median rule {median:g} > {args.max_median:g} logic lines")
    others = {n: s for n, s in rules.items() if not n.startswith("ddp001")}
    if args.max_rule is not None:
        failures += [f"{n}: {s} > {args.max_rule} logic lines" for n, s in others.items() if s > args.max_rule]
    if args.max_ddp001 is not None:
        failures += [f"{n}: {s} > {args.max_ddp001}" for n, s in rules.items() if n.startswith("ddp001") and s > args.max_ddp001]
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
