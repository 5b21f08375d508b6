#!/usr/bin/env python3
"""ddplint's benchmark: real training code, measured side by side in one run.

    python bench/run.py                  # mixed subset, 3 runs each, peers included
    python bench/run.py --full --runs 1  # the whole pinned corpus too

It downloads the pinned corpus (bench/corpus.txt: PyPI packages of training
code) into a cache directory outside the repository (default
~/.cache/ddplint-bench; never commit it), keeps their .py files, and times
whole processes with GNU `time` (wall seconds and peak RSS; the median of the
runs is reported). Peers (TorchFix, Fixit, Ruff) are installed into their own
virtual environments in the same cache. The result is a Markdown report
(default docs/performance.md). A shared machine is noisy: compare the ratios
within one report, not absolute times across reports.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SUBSET = ("timm", "mmengine", "accelerate")
PEER_SUBSET = ("accelerate", "pytorch_ignite")
PEERS = {"torchfix": "torchfix==0.7.0", "fixit": "fixit==2.2.1", "ruff": "ruff==0.17.6"}
SINGLE_FILE = "transformers/trainer.py"
#: The file the "one file changed" row changes, linted on its own: that file's cost.
CHANGED_ALONE = "ddplint the changed file alone (--no-cache)"
RUFF_ALL = "ruff check --select ALL"

PARSE = """
import sys, libcst
for path in open(sys.argv[1]).read().split("\\0"):
    try:
        libcst.parse_module(open(path, encoding="utf-8", errors="replace").read())
    except Exception:
        pass
"""
METADATA = """
import sys, libcst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, QualifiedNameProvider, ScopeProvider
for path in open(sys.argv[1]).read().split("\\0"):
    try:
        wrapper = MetadataWrapper(libcst.parse_module(open(path, encoding="utf-8", errors="replace").read()))
        wrapper.resolve_many([PositionProvider, ParentNodeProvider, ScopeProvider, QualifiedNameProvider])
    except Exception:
        pass
"""
RELINT = """
import sys, time, libcst
from ddplint.rule import all_rules_settings
from ddplint.engine import check_source
from ddplint.runner import one_collection_per_file, tune_gc
tune_gc()  # as the language server does
text = open(sys.argv[1], encoding="utf-8").read()
settings = all_rules_settings()
check_source("warmup.py", text, settings)
def best(fn):
    times = []
    for _ in range(5):
        start = time.perf_counter(); fn(); times.append(time.perf_counter() - start)
    return min(times)
def relint():
    with one_collection_per_file():  # as the server re-lints a buffer
        check_source("trainer.py", text, settings)
parse = best(lambda: libcst.parse_module(text))
relint = best(relint)
print(parse, relint)
"""

#: Where one process spends a module-by-module lint of a file list: each
#: stage of the engine timed on its own, in the order the engine runs them.
STAGES = """
import json, sys, time
from ddplint.rule import all_rules_settings
from ddplint.engine import _visitor_rules
from ddplint.engine.lint import _lint_module
from ddplint.engine.prefilter import TextScan, applicable
from ddplint.engine.source import SourceError, decode_source, syntax_problem
from ddplint.lazy import parse_module
from ddplint.runner import tune_gc
tune_gc()
settings = all_rules_settings()
every = _visitor_rules(settings.rules)
seconds = dict.fromkeys(("read + decode", "CPython syntax check", "prefilter", "LibCST parse", "walk, rules, findings"), 0.0)
parsed = 0
for path in open(sys.argv[1]).read().split("\\0"):
    t0 = time.perf_counter()
    try:
        text = decode_source(open(path, "rb").read())
    except SourceError:
        continue
    t1 = time.perf_counter()
    problem = syntax_problem(text, path)
    t2 = time.perf_counter()
    rules = () if problem is not None else applicable(every, TextScan(text), settings.rank_names)
    t3 = time.perf_counter()
    seconds["read + decode"] += t1 - t0
    seconds["CPython syntax check"] += t2 - t1
    seconds["prefilter"] += t3 - t2
    if not rules:
        continue
    try:
        module = parse_module(text)
    except Exception:
        continue
    t4 = time.perf_counter()
    _lint_module(path, text, module, settings, rules)
    seconds["LibCST parse"] += t4 - t3
    seconds["walk, rules, findings"] += time.perf_counter() - t4
    parsed += 1
print(json.dumps({"seconds": seconds, "parsed": parsed}))
"""


@dataclass
class Measure:
    label: str
    seconds: float
    peak_mib: float
    files: int
    lines: int
    cpu: float = float("nan")  #: user + system seconds of the process and its children (median run)


def fetch(cache: Path) -> Path:
    """Download and unpack the pinned corpus; return the source directory."""
    source = cache / "src"
    pins = [line.strip() for line in (HERE / "corpus.txt").read_text().splitlines() if line.strip() and not line.startswith("#")]
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    for pin in pins:
        name = pin.split("==")[0].replace("-", "_")
        target = source / name
        if target.exists():
            continue
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", scratch, pin]
            if subprocess.run([*pip, "--no-binary", ":all:"], capture_output=True).returncode != 0:
                subprocess.run([*pip, "--only-binary", ":all:"], check=True, capture_output=True)
            (archive,) = Path(scratch).iterdir()
            _extract_python(archive, target)
    return source


def _extract_python(archive: Path, target: Path) -> None:
    target.mkdir(parents=True)
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if name.endswith(".py"):
                    z.extract(name, target)
    else:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.isfile() and m.name.endswith(".py")]
            t.extractall(target, members=members, filter="data") if sys.version_info >= (3, 12) else t.extractall(target, members=members)


def python_files(roots: list[Path]) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py"))


def count_lines(files: list[Path]) -> int:
    return sum(p.read_bytes().count(b"\n") for p in files)


#: The environment of every timed command. Installed packages run from
#: bytecode (pip compiles it); an editable checkout under
#: PYTHONDONTWRITEBYTECODE would recompile ddplint's sources on every run.
BENCH_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
WARM_UP = "import ddplint.cli.app, ddplint.engine, ddplint.lsp, ddplint.rule; ddplint.rule.all_rules()"


def timed(command: list[str], runs: int, cwd: Path | None = None, env: dict | None = None) -> tuple[float, float, float]:
    """(median wall seconds, median peak RSS MiB, median CPU seconds) of `runs` runs.

    CPU seconds are user + system time of the process and the children it
    waited for (GNU time's %U + %S; without GNU time, this process's children
    counters): what a tool costs a shared machine, whatever its parallelism."""
    env = BENCH_ENV if env is None else env
    walls, peaks, cpus = [], [], []
    for _ in range(runs):
        with tempfile.NamedTemporaryFile("r") as report:
            gnu_time = ["/usr/bin/time", "-f", "%e %M %U %S", "-o", report.name] if Path("/usr/bin/time").exists() else []
            before = os.times()
            start = time.perf_counter()
            subprocess.run([*gnu_time, *command], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            after = os.times()
            cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
            if gnu_time:
                seconds, kib, user, system = report.read().split()[-4:]
                wall, peak, cpu = float(seconds), int(kib) / 1024, float(user) + float(system)
            else:
                peak = float("nan")
        walls.append(wall)
        peaks.append(peak)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(peaks), statistics.median(cpus)


def file_list(files: list[Path], scratch: Path, name: str) -> Path:
    path = scratch / f"{name}.files"
    path.write_text("\0".join(map(str, files)))
    return path


def peer_env(cache: Path, name: str, requirement: str) -> Path:
    """A virtual environment with one peer tool; its bin directory."""
    venv = cache / "peers" / name
    binary = venv / "bin"
    if not (binary / name).exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(binary / "pip"), "install", "--quiet", requirement], check=True)
    return binary


def measure_set(
    label: str, roots: list[Path], runs: int, scratch: Path, cache: Path, metadata: bool = True
) -> list[Measure]:
    files = python_files(roots)
    lines = count_lines(files)
    listing = file_list(files, scratch, label)
    check = [sys.executable, "-m", "ddplint", "check", "--exit-zero", "-q"]
    ddplint = [*check, *map(str, roots)]
    cache_dir = scratch / f"cache-{label}"
    rows = [
        ("bare `libcst.parse_module` (1 process)", [sys.executable, "-c", PARSE, str(listing)]),
        ("parse + Position/Parent/Scope/QualifiedName providers", [sys.executable, "-c", METADATA, str(listing)]),
        ("ddplint -j1 --no-cache --no-project --no-prefilter", [*ddplint, "-j1", "--no-cache", "--no-project", "--no-prefilter"]),
        ("ddplint -j1 --no-cache", [*ddplint, "-j1", "--no-cache"]),
        ("ddplint -j1 --no-cache --no-project", [*ddplint, "-j1", "--no-cache", "--no-project"]),
        ("ddplint (default -j) --no-cache", [*ddplint, "--no-cache"]),
        ("ddplint (default -j), cold cache", [*ddplint, "--cache-dir", str(cache_dir)]),
        ("ddplint (default -j), warm cache", [*ddplint, "--cache-dir", str(cache_dir)]),
        ("ddplint (default -j), warm cache, one file changed", [*ddplint, "--cache-dir", str(cache_dir)]),
        (CHANGED_ALONE, [*check, "--no-cache", str(_largest(files))]),
    ]
    if not metadata:  # about 10x the parse: too slow for the whole corpus
        rows = [r for r in rows if "providers" not in r[0]]
    measures = []
    for name, command in rows:
        if "providers" in name:
            seconds, peak, cpu = timed(command, 1)
        elif "cold" in name:
            shutil.rmtree(cache_dir, ignore_errors=True)
            seconds, peak, cpu = timed(command, 1)
        elif name.endswith("one file changed"):
            seconds, peak, cpu = _with_one_file_changed(files, lambda: timed(command, 1))
        else:
            seconds, peak, cpu = timed(command, runs)
        if name == CHANGED_ALONE:
            measures.append(Measure(name, seconds, peak, 1, count_lines([_largest(files)]), cpu))
        else:
            measures.append(Measure(name, seconds, peak, len(files), lines, cpu))
    ruff = _peer_binary(cache, "ruff")
    if ruff is not None:  # the Ruff comparison the targets name: every Ruff rule, on the same files
        seconds, peak, cpu = timed([str(ruff / "ruff"), "check", "--no-cache", "--exit-zero", "--quiet", "--select", "ALL",
                                    *map(str, roots)], runs)
        measures.append(Measure(RUFF_ALL, seconds, peak, len(files), lines, cpu))
    return measures


def _peer_binary(cache: Path, name: str) -> Path | None:
    """The bin directory of a peer's environment (installed on first use), or None if it cannot be installed."""
    try:
        return peer_env(cache, name, PEERS[name])
    except (subprocess.CalledProcessError, OSError):
        return None


def _largest(files: list[Path]) -> Path:
    return max(files, key=lambda f: f.stat().st_size)


def _with_one_file_changed(files: list[Path], measure):
    """`measure()` after appending a comment to the largest file (restored after)."""
    largest = _largest(files)
    original = largest.read_bytes()
    try:
        largest.write_bytes(original + b"\n# changed by bench/run.py\n")
        return measure()
    finally:
        largest.write_bytes(original)


def prefilter_check(roots: list[Path]) -> str:
    """Findings with the prefilter on and off (it must be invisible), module by module."""
    def findings(*extra: str) -> list:
        command = [sys.executable, "-m", "ddplint", "check", "--exit-zero", "-q", "--no-cache", "--format", "json", *extra]
        return json.loads(subprocess.run([*command, *map(str, roots)], capture_output=True, text=True).stdout)

    on, off = findings("--no-project"), findings("--no-project", "--no-prefilter")
    verdict = "identical" if on == off else f"DIFFERENT ({len(on)} vs {len(off)})"
    return f"Prefilter on vs off over these files: {verdict} findings ({len(on)})."


def measure_peers(roots: list[Path], runs: int, cache: Path) -> list[Measure]:
    files = python_files(roots)
    lines = count_lines(files)
    paths = list(map(str, roots))
    commands = {
        "torchfix": lambda b: [str(b / "torchfix"), *paths],
        "fixit": lambda b: [str(b / "fixit"), "lint", *paths],
        "ruff": lambda b: [str(b / "ruff"), "check", "--no-cache", "--exit-zero", "--quiet", *paths],
    }
    def measure(label: str, command: list[str]) -> Measure:
        seconds, peak, cpu = timed(command, runs)
        return Measure(label, seconds, peak, len(files), lines, cpu)

    measures = [
        measure("ddplint (default -j) --no-cache", [sys.executable, "-m", "ddplint", "check", "--exit-zero", "-q", "--no-cache", *paths]),
        measure("ddplint -j1 --no-cache", [sys.executable, "-m", "ddplint", "check", "--exit-zero", "-q", "--no-cache", "-j1", *paths]),
        measure("bare `libcst.parse_module` (1 process)", [sys.executable, "-c", PARSE, str(file_list(files, cache, "peers"))]),
    ]
    for name in PEERS:
        binary = _peer_binary(cache, name)
        if binary is not None:
            measures.append(measure(f"{name} (its defaults)", commands[name](binary)))
    return measures


def measure_latency(source: Path, runs: int) -> list[tuple[str, float]]:
    trainer = next(source.rglob(SINGLE_FILE), None)
    rows = [("`ddplint --version`", timed([sys.executable, "-m", "ddplint", "--version"], max(runs, 5))[0])]
    if trainer is None:
        return rows
    parse = timed([sys.executable, "-c", f"import libcst; libcst.parse_module(open({str(trainer)!r}).read())"], runs)[0]
    lint = timed([sys.executable, "-m", "ddplint", "check", "--no-cache", "--exit-zero", "-q", str(trainer)], runs)[0]
    rows += [("`import libcst` + parse trainer.py (process)", parse), ("ddplint trainer.py (process)", lint)]
    out = subprocess.run([sys.executable, "-c", RELINT, str(trainer)], capture_output=True, text=True).stdout.split()
    if len(out) == 2:
        rows += [("in-process parse of trainer.py", float(out[0])), ("LSP re-lint of trainer.py (in process)", float(out[1]))]
    return rows


def measure_stages(roots: list[Path], scratch: Path) -> str:
    """The stage table of a module-by-module lint of `roots` in one process."""
    files = python_files(roots)
    out = subprocess.run([sys.executable, "-c", STAGES, str(file_list(files, scratch, "stages"))],
                         capture_output=True, text=True, env=BENCH_ENV)  # fmt: skip
    if out.returncode != 0:
        return f"(stage timing failed: {out.stderr.strip().splitlines()[-1:]})"
    data = json.loads(out.stdout)
    total = sum(data["seconds"].values())
    rows = ["| Stage | Seconds | Share |", "|---|---:|---:|"]
    rows += [f"| {name} | {s:.2f} | {s / total:.0%} |" for name, s in data["seconds"].items()]
    return (f"{len(files)} files, {data['parsed']} of them given to LibCST (the rest the prefilter "
            "settles on CPython's tree alone).\n\n" + "\n".join(rows))


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
        cpu = model
    except (OSError, StopIteration):
        pass
    from importlib.metadata import version

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    at = f" at commit {commit}" if commit else ""
    return f"{cores} CPUs ({cpu}), Python {platform.python_version()}, libcst {version('libcst')}, ddplint {version('ddplint')}{at}"


def load() -> str:
    """The machine's load when the run started: timings on a busy machine are slower, ratios less so."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) at the start"


def table(measures: list[Measure], base: str) -> str:
    reference = next(m.seconds for m in measures if m.label == base)
    rows = ["| Command | Files | Lines | Seconds | CPU s | Lines/s | × bare parse | Peak MiB |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in measures:
        rows.append(
            f"| {m.label} | {m.files} | {m.lines} | {m.seconds:.2f} | {m.cpu:.2f} | {m.lines / m.seconds:,.0f} | "
            f"{m.seconds / reference:.2f} | {m.peak_mib:.0f} |"
        )
    return "\n".join(rows)


def targets(
    subset: list[Measure], peers: list[Measure], latency: list[tuple[str, float]], full: list[Measure] = ()
) -> str:
    """The issue's targets as ratios measured in this run."""
    peer = {m.label: m.seconds for m in peers}
    lat = dict(latency)
    rows = []

    def row(target: str, value: float | None, fmt: str = "{:.2f}") -> None:
        rows.append(f"| {target} | {'n/a' if value is None else fmt.format(value)} |")

    def ratio(a: dict, x: str, y: str) -> float | None:
        return a[x] / a[y] if x in a and y in a and a[y] else None

    sub = {m.label: m.seconds for m in subset}
    base = "bare `libcst.parse_module` (1 process)"
    row("ddplint -j1 / bare parse (target <= 1.0)", ratio(sub, "ddplint -j1 --no-cache", base))
    row("ddplint -j1 --no-project / bare parse", ratio(sub, "ddplint -j1 --no-cache --no-project", base))
    row("whole-project / module-local analysis, -j1 (target <= 1.25)",
        ratio(sub, "ddplint -j1 --no-cache", "ddplint -j1 --no-cache --no-project"))
    row("-j1 / default -j (target >= 1.7)", ratio(sub, "ddplint -j1 --no-cache", "ddplint (default -j) --no-cache"))
    row("cold / warm cache (target >= 20)", ratio(sub, "ddplint (default -j), cold cache", "ddplint (default -j), warm cache"))
    changed = sub.get("ddplint (default -j), warm cache, one file changed")
    warm, alone = sub.get("ddplint (default -j), warm cache"), sub.get(CHANGED_ALONE)
    row("warm, one file changed / (warm + that file alone) (target <= 1.0)",
        changed / (warm + alone) if changed and warm and alone else None)
    peak = {m.label: m.peak_mib for m in subset}
    row("peak RSS: ddplint -j1 / bare parse (target <= 1.5)", ratio(peak, "ddplint -j1 --no-cache", base))
    whole = {m.label: m.seconds for m in full}
    if whole:
        row("whole corpus: ddplint -j1 / bare parse (target <= 1.0)", ratio(whole, "ddplint -j1 --no-cache", base))
        row("whole corpus: whole-project / module-local, -j1 (target <= 1.25)",
            ratio(whole, "ddplint -j1 --no-cache", "ddplint -j1 --no-cache --no-project"))
        row("whole corpus: -j1 / default -j (target >= 1.7)",
            ratio(whole, "ddplint -j1 --no-cache", "ddplint (default -j) --no-cache"))
        whole_peak = {m.label: m.peak_mib for m in full}
        row("whole corpus: peak RSS ddplint -j1 / bare parse (target <= 1.5)",
            ratio(whole_peak, "ddplint -j1 --no-cache", base))
    for name in ("torchfix", "fixit"):  # the peers run one process: compared with ddplint's default -j and its -j1
        row(f"peers: {name} / ddplint default -j (target >= 20)", ratio(peer, f"{name} (its defaults)", "ddplint (default -j) --no-cache"))
        row(f"peers: {name} / ddplint -j1", ratio(peer, f"{name} (its defaults)", "ddplint -j1 --no-cache"))
    cpu = {m.label: m.cpu for m in subset}
    row(f"ddplint default -j / `{RUFF_ALL}`, wall (target <= 2.0)", ratio(sub, "ddplint (default -j) --no-cache", RUFF_ALL))
    row(f"ddplint default -j / `{RUFF_ALL}`, CPU (target <= 2.0)", ratio(cpu, "ddplint (default -j) --no-cache", RUFF_ALL))
    row("ddplint trainer.py / import libcst + parse (target <= 1.5)",
        ratio(lat, "ddplint trainer.py (process)", "`import libcst` + parse trainer.py (process)"))
    row("LSP re-lint / in-process parse (target <= 2.0)",
        ratio(lat, "LSP re-lint of trainer.py (in process)", "in-process parse of trainer.py"))
    row("`ddplint --version` ms (target <= 80)", lat.get("`ddplint --version`", 0) * 1000, "{:.0f}")
    return "| Target (mixed subset unless named) | Measured |\n|---|---:|\n" + "\n".join(rows)


#: Sections of the report measured by other scripts (bench/long_files.py) or written by hand: kept as they are.
KEPT_SECTIONS = ("## Reading the targets", "## Long files", "## Dense files")


def kept_sections(report: Path) -> list[str]:
    """The sections of an existing report that this script does not measure."""
    try:
        text = report.read_text(encoding="utf-8")
    except OSError:
        return []
    kept = []
    for heading in KEPT_SECTIONS:
        start = text.find("\n" + heading)
        if start >= 0:
            end = text.find("\n## ", start + 1)
            kept.append(text[start + 1 : end if end >= 0 else len(text)].strip())
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "ddplint-bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="also measure the whole corpus (slow)")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "performance.md")
    args = parser.parse_args()
    source = fetch(args.cache)
    kept = kept_sections(args.output)
    subprocess.run([sys.executable, "-c", WARM_UP], env=BENCH_ENV, check=True)  # writes ddplint's bytecode
    scratch = Path(tempfile.mkdtemp(prefix="ddplint-bench-"))
    base = "bare `libcst.parse_module` (1 process)"
    sections = [f"# Performance\n\nMeasured by `python bench/run.py` on {machine()}, {time.strftime('%Y-%m-%d')}, {load()}.\n"
                "Medians of whole-process runs, ddplint run from bytecode as an installed package is; "
                "ratios are within this run.\n"]
    def add(section: str) -> None:  # written as it goes: a long run that dies keeps what it measured
        sections.append(section)
        args.output.write_text("\n\n".join(sections) + "\n", encoding="utf-8")

    subset = [source / name for name in SUBSET if (source / name).exists()]
    subset_measures = measure_set("subset", subset, args.runs, scratch, args.cache)
    add("## Mixed subset (timm + mmengine + accelerate)\n\n" + table(subset_measures, base))
    add("## Where the time goes (mixed subset, module by module, one process)\n\n" + measure_stages(subset, scratch))
    full_measures: list[Measure] = []
    if args.full:
        everything = sorted(p for p in source.iterdir() if p.is_dir())
        full_measures = measure_set("full", everything, 1, scratch, args.cache, metadata=False)
        add("## Whole corpus\n\n" + table(full_measures, base) + "\n\n" + prefilter_check(everything))
    peer_measures: list[Measure] = []
    if not args.no_peers:
        peers = [source / name for name in PEER_SUBSET if (source / name).exists()]
        peer_measures = measure_peers(peers, args.runs, args.cache)
        add("## Peers (accelerate + pytorch-ignite)\n\n" + table(peer_measures, base))
    latency = measure_latency(source, args.runs)
    add("## Latency\n\n| What | Seconds |\n|---|---:|\n" + "\n".join(f"| {n} | {s:.3f} |" for n, s in latency))
    add("## Targets\n\n" + targets(subset_measures, peer_measures, latency, full_measures))
    for section in kept:
        add(section)
    print(args.output.read_text())
    json.dump({"output": str(args.output)}, sys.stderr)


if __name__ == "__main__":
    main()
