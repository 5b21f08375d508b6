"""The ecosystem check on real training repositories, against judged verdicts.

    python bench/ecosystem.py --training DIR [--record] [--repos a,b] [--min-precision 0.9]

Each repository of `ecosystem/training-repos.txt` lives in DIR/<name>/ (the
file says which commit and how to clone it). Each is linted as its own
project, with every rule, preview ones included, by the installed `ddplint`
console script. Every finding is looked up in `ecosystem/verdicts.tsv` by
(repository, fingerprint), so a verdict survives lines moving above it.

A verdict is `right` (the maintainer would fix it), `wrong` (the code is
fine) or `harmless` (true, not worth a warning); docs/ecosystem.md gives the
policy. Precision is right / (right + wrong): harmless findings count for
neither side. The check exits 1 when a finding has no
verdict, or when a finding once judged wrong and since gone comes back.

`--record` rewrites the verdict file: each verdict's state becomes `open`
(reported by this run) or `gone`, and findings without a verdict are added
with the verdict `?` and their message, to be judged by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOS = HERE / "ecosystem" / "training-repos.txt"
VERDICTS = HERE / "ecosystem" / "verdicts.tsv"
COLUMNS = ("repo", "rule", "fingerprint", "path", "line", "verdict", "state", "reason")
VERDICT_KINDS = ("right", "wrong", "harmless")


@dataclass(frozen=True)
class Repo:
    name: str
    slug: str
    commit: str
    folders: tuple[str, ...]

    def clone_hint(self, root: Path) -> str:
        target = root / self.name
        return f"git clone https://github.com/{self.slug} {target} && git -C {target} checkout {self.commit}"


@dataclass
class Verdict:
    repo: str
    rule: str
    fingerprint: str
    path: str
    line: int
    verdict: str
    state: str
    reason: str

    def row(self) -> str:
        cells = (self.repo, self.rule, self.fingerprint, self.path, str(self.line), self.verdict, self.state, self.reason)
        return "\t".join(c.replace("\t", " ").replace("\n", " ") for c in cells)


def read_repos(path: Path = REPOS) -> list[Repo]:
    repos = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, slug, commit, *folders = line.split()
        repos.append(Repo(name, slug, commit, tuple(folders)))
    return repos


def read_verdicts(path: Path = VERDICTS) -> dict[tuple[str, str], Verdict]:
    verdicts: dict[tuple[str, str], Verdict] = {}
    if not path.exists():
        return verdicts
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise SystemExit(f"{path}:{number}: expected {len(COLUMNS)} tab-separated columns, got {len(cells)}")
        repo, rule, fingerprint, file, row_line, verdict, state, reason = cells
        if verdict not in (*VERDICT_KINDS, "?"):
            raise SystemExit(f"{path}:{number}: unknown verdict {verdict!r}")
        verdicts[(repo, fingerprint)] = Verdict(repo, rule, fingerprint, file, int(row_line), verdict, state, reason)
    return verdicts


def write_verdicts(verdicts: dict[tuple[str, str], Verdict], path: Path = VERDICTS) -> None:
    header = "# " + "\t".join(COLUMNS)
    rows = sorted(verdicts.values(), key=lambda v: (v.repo, v.path, v.line, v.rule, v.fingerprint))
    path.write_text("\n".join([header, *(v.row() for v in rows)]) + "\n", encoding="utf-8")


def lint(repo: Repo, root: Path) -> list[dict]:
    """The findings of one repository, linted as its own project, every rule
    with `--preview`. A finding of a stable rule that only `--preview` makes
    is a preview variant of the rule: its `tally` is `CODE (preview)`."""
    everything = _run(repo, root, "--preview", "--select", "ALL")
    default = {f["fingerprint"] for f in _run(repo, root)}
    statuses = rule_statuses()
    for finding in everything:
        code = finding["rule"]
        variant = statuses.get(code) == "stable" and finding["fingerprint"] not in default
        finding["tally"] = f"{code} (preview)" if variant else code
    return everything


def _run(repo: Repo, root: Path, *options: str) -> list[dict]:
    command = [
        sys.executable, "-m", "ddplint", "check", "--format", "json", "--no-cache", "--exit-zero",
        *options, *(repo.folders or (".",)),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=root / repo.name, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{repo.name}: ddplint exited {done.returncode}\n{done.stderr}")
    return [item for item in json.loads(done.stdout) if "rule" in item]  # not the paths it could not read


def rule_statuses() -> dict[str, str]:
    from ddplint.rule import all_rules

    return {rule.code: rule.status() for rule in all_rules()}


def main(argv_root: Path, record: bool, only: set[str] | None, min_precision: float | None) -> int:
    repos = [r for r in read_repos() if only is None or r.name in only]
    verdicts = read_verdicts()
    statuses = rule_statuses()
    seen: set[tuple[str, str]] = set()
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    problems: list[str] = []
    missing = [r for r in repos if not (argv_root / r.name).is_dir()]
    for repo in missing:
        print(f"not found: {argv_root / repo.name}; get it with: {repo.clone_hint(argv_root)}", file=sys.stderr)
    start = time.perf_counter()
    for repo in repos:
        if repo in missing:
            continue
        for finding in lint(repo, argv_root):
            key = (repo.name, finding["fingerprint"])
            seen.add(key)
            verdict = verdicts.get(key)
            tally = counts[finding["tally"]]
            tally["findings"] += 1
            where = f"{repo.name}/{finding['path']}:{finding['line']}: {finding['rule']}"
            if verdict is None or verdict.verdict == "?":
                tally["unjudged"] += 1
                problems.append(f"unjudged: {where} {finding['message']}")
                if verdict is None:
                    verdicts[key] = Verdict(repo.name, finding["tally"], finding["fingerprint"], finding["path"],
                                            finding["line"], "?", "open", finding["message"])
                continue
            tally[verdict.verdict] += 1
            if verdict.verdict == "wrong" and verdict.state == "gone":
                problems.append(f"judged wrong, fixed, and back: {where} ({verdict.reason})")
            verdict.path, verdict.line, verdict.rule = finding["path"], finding["line"], finding["tally"]
    seconds = time.perf_counter() - start
    linted = {r.name for r in repos if r not in missing}
    lost = [v for k, v in verdicts.items() if v.repo in linted and k not in seen and v.verdict == "right" and v.state == "open"]
    print(table(counts, statuses))
    print(f"\n{len(linted)} repositories linted in {seconds:.0f} s; {len(missing)} not found.")
    for v in lost:
        print(f"note: a finding judged right is no longer reported: {v.repo}/{v.path}:{v.line}: {v.rule} ({v.reason})")
    for problem in problems:
        print(problem, file=sys.stderr)
    if record:
        for key, verdict in verdicts.items():
            if verdict.repo in linted:
                verdict.state = "open" if key in seen else "gone"
        write_verdicts(verdicts)
        if only is None and not missing:
            write_measured(measured_counts(verdicts))
    failed = bool(problems)
    if min_precision is not None:
        overall = precision(sum((c for code, c in counts.items() if statuses.get(code) == "stable"), Counter()))
        if overall is not None and overall < min_precision:
            print(f"overall precision of the stable rules {overall:.2f} < {min_precision}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


MEASURED = HERE.parent / "ddplint" / "measured.py"


def measured_counts(verdicts: dict[tuple[str, str], Verdict]) -> dict[str, tuple[int, int, int, int]]:
    """Per rule: (findings, right, wrong, harmless) over the open verdicts."""
    tallies: dict[str, Counter[str]] = defaultdict(Counter)
    for verdict in verdicts.values():
        if verdict.state == "open":
            tallies[verdict.rule]["findings"] += 1
            tallies[verdict.rule][verdict.verdict] += 1
    return {
        code: (t["findings"], t["right"], t["wrong"], t["harmless"]) for code, t in sorted(tallies.items())
    }


def write_measured(counts: dict[str, tuple[int, int, int, int]], path: Path = MEASURED) -> None:
    """Rewrite the table between the markers of ddplint/measured.py."""
    text = path.read_text(encoding="utf-8")
    head, rest = text.split("    # measured:start\n", 1)
    _, tail = rest.split("    # measured:end\n", 1)
    rows = "".join(f'    "{code}": {values},\n' for code, values in counts.items())
    path.write_text(f"{head}    # measured:start\n{rows}    # measured:end\n{tail}", encoding="utf-8")


def precision(tally: Counter[str]) -> float | None:
    judged = tally["right"] + tally["wrong"]
    return tally["right"] / judged if judged else None


def table(counts: dict[str, Counter[str]], statuses: dict[str, str]) -> str:
    rows = [
        "| Rule | Status | Findings | Unjudged | Right | Wrong | Harmless | Precision |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for code in sorted(counts):
        tally, status = counts[code], statuses.get(code, "preview" if code.endswith("(preview)") else "?")
        groups[status].update(tally)
        rows.append(_row(code, status, tally))
    for status in ("stable", "opt-in", "preview"):
        if status in groups:
            rows.append(_row(f"**all {status}**", "", groups[status]))
    return "\n".join(rows)


def _row(label: str, status: str, tally: Counter[str]) -> str:
    value = precision(tally)
    shown = "–" if value is None else f"{value:.2f}"
    return (
        f"| {label} | {status} | {tally['findings']} | {tally['unjudged']} | {tally['right']} | "
        f"{tally['wrong']} | {tally['harmless']} | {shown} |"
    )
