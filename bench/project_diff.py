#!/usr/bin/env python3
"""What the whole-project analysis changes on real code.

    python bench/project_diff.py [--cache ~/.cache/ddplint-bench] [--jobs N]

Lints every package of the pinned corpus that `bench/run.py` downloads twice,
each package as its own project (as its CI would run `ddplint .`): with the
whole-project analysis (the default) and module by module (`--no-project`).
Prints, as Markdown, the findings per package in both modes and every finding
that appears or disappears with the project analysis, to triage by reading
the code (docs/project-analysis.md holds the triaged result). Not a unit
test: it takes minutes.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import fetch, machine  # noqa: E402


def findings(root: Path, project: bool, jobs: int) -> Counter:
    from ddplint.config.resolver import ConfigResolver
    from ddplint.runner import lint_paths

    report = lint_paths([root], ConfigResolver(cwd=root), jobs=jobs, project=project)
    return Counter(
        (str(Path(f.path).resolve().relative_to(root.resolve())), f.span.line, f.rule, f.message)
        for f in report.findings
        if f.suppressed is None
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "ddplint-bench")
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    from ddplint.runner import available_cpus

    jobs = args.jobs or available_cpus()
    source = fetch(args.cache)
    print(f"`python bench/project_diff.py` on {machine()}.\n")
    print("| Package | Module by module | Whole project | Appear | Disappear |\n|---|---:|---:|---:|---:|")
    changes = []
    for package in sorted(p for p in source.iterdir() if p.is_dir()):
        local, project = findings(package, False, jobs), findings(package, True, jobs)
        appear, disappear = project - local, local - project
        print(f"| {package.name} | {sum(local.values())} | {sum(project.values())} | "
              f"{sum(appear.values())} | {sum(disappear.values())} |")  # fmt: skip
        changes += [(package.name, "appears", f) for f in sorted(appear)]
        changes += [(package.name, "disappears", f) for f in sorted(disappear)]
    print()
    for name, change, (path, line, rule, message) in changes:
        print(f"- {name}/{path}:{line} {rule} {change}: {message}")
    if not changes:
        print("No finding appears or disappears.")


if __name__ == "__main__":
    main()
