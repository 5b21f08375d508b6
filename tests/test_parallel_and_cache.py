"""Parallel linting and the result cache change nothing but the time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, run_script, write
from ddplint import runner
from ddplint.cache import Cache
from ddplint.config.resolver import ConfigResolver
from ddplint.fixing import FixMode


def cache_format() -> int:
    from ddplint import cache

    return cache._FORMAT


def _json(ddplint, *args, cwd) -> list:
    run = ddplint(*args, "--format", "json", "--exit-zero", cwd=cwd)
    assert run.status == 0, run.stderr
    return run.json()


def test_parallel_equals_serial(ddplint) -> None:
    serial = _json(ddplint, "fixtures", "-j", "1", "--no-cache", cwd=REPO)
    parallel = _json(ddplint, "fixtures", "-j", "2", "--no-cache", cwd=REPO)
    assert serial == parallel and len(serial) > 300


def test_warm_cache_equals_cold(ddplint, tmp_path) -> None:
    cache = tmp_path / "cache"
    cold = _json(ddplint, "fixtures", "--cache-dir", cache, cwd=REPO)
    entries = sorted(cache.rglob("*.json"))
    # one per file, and one more per file linted again with its imports' facts (fixtures/projects)
    assert len(list(FIXTURES.rglob("*.py"))) < len(entries) < len(list(FIXTURES.rglob("*.py"))) * 2
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    run = ddplint("fixtures", "--cache-dir", cache, "--format", "json", "--exit-zero", "--debug", cwd=REPO)
    warm = run.json()
    assert sorted(cache.rglob("*.json")) == entries  # the warm run found everything
    assert "cache entry" not in run.stderr  # every entry it wrote passes its checksum and type checks
    assert warm == cold == _json(ddplint, "fixtures", "--no-cache", cwd=REPO)


BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"


def test_a_changed_file_or_setting_misses_the_cache(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": BAD, "b.py": "x = 1\n"})
    assert len(_json(ddplint, ".", cwd=tmp_path)) == 1
    write(tmp_path, {"a.py": "x = 2\n"})
    assert _json(ddplint, ".", cwd=tmp_path) == []
    write(tmp_path, {"a.py": BAD})
    assert len(_json(ddplint, ".", cwd=tmp_path)) == 1
    assert _json(ddplint, ".", "--ignore", "DDP014", cwd=tmp_path) == []
    write(tmp_path, {"pyproject.toml": '[tool.ddplint]\nseverity = { DDP014 = "note" }\n'})
    assert _json(ddplint, ".", cwd=tmp_path)[0]["severity"] == "note"


def test_a_run_without_the_prefilter_never_reuses_a_prefiltered_result(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": BAD})
    cache = tmp_path / "cache"
    _json(ddplint, "a.py", "--cache-dir", cache, cwd=tmp_path)
    entries = set(cache.rglob("*.json"))
    _json(ddplint, "a.py", "--cache-dir", cache, "--no-prefilter", cwd=tmp_path)
    # Its own entry for the file (and for the run): a benchmark measures what it says.
    assert len(set(cache.rglob("*.json")) - entries) == 2


@pytest.mark.parametrize("kind", ["result", "keys"])  # a file's result; a whole run's list of entries
@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_damaged_entries_are_ignored_and_rewritten(ddplint, tmp_path, damage, kind) -> None:
    write(tmp_path, {"a.py": BAD})
    expected = _json(ddplint, ".", cwd=tmp_path)
    (entry,) = [e for e in (tmp_path / ".ddplint_cache").rglob("*.json") if kind in json.loads(e.read_text())]
    text = entry.read_text()
    entry.write_text(
        {"garbage": "\x00not json", "truncated": text[: len(text) // 2], "foreign": json.dumps({"format": 99})}[damage]
    )
    assert _json(ddplint, ".", cwd=tmp_path) == expected
    assert json.loads(entry.read_text())["format"] == cache_format()  # rewritten


def test_cache_dir_from_environment_and_clean(ddplint, tmp_path, monkeypatch) -> None:
    write(tmp_path, {"a.py": BAD})
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / "elsewhere"))
    _json(ddplint, ".", cwd=tmp_path)
    assert list((tmp_path / "elsewhere").rglob("*.json")) and not (tmp_path / ".ddplint_cache").exists()
    run = ddplint("clean", cwd=tmp_path)
    assert run.status == 0 and not (tmp_path / "elsewhere").exists()


def test_concurrent_runs_share_the_cache_safely(tmp_path) -> None:
    project = write(tmp_path, {f"pkg/m{i}.py": BAD.replace("ds", f"ds{i}") for i in range(40)})
    from conftest import console_script

    command = [console_script(), ".", "--format", "json", "--exit-zero", "-j", "1"]
    runs = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE) for _ in range(3)]
    outputs = [json.loads(p.communicate(timeout=300)[0]) for p in runs]
    assert outputs[0] == outputs[1] == outputs[2]
    again = run_script(".", "--format", "json", "--exit-zero", cwd=project)
    assert json.loads(again.stdout) == outputs[0]
    assert not list((project / ".ddplint_cache").rglob(".tmp-*"))


def test_jobs_must_be_positive(ddplint, tmp_path: Path) -> None:
    run = ddplint(".", "-j", "0", cwd=tmp_path)
    assert run.status == 2 and "--jobs" in run.stderr


SHUFFLED = """\
from torch.utils.data import DataLoader, DistributedSampler


def loader(dataset):
    return DataLoader(dataset, batch_size=8, shuffle=True, sampler=DistributedSampler(dataset))
"""
PLAIN = "def loader(dataset):\n    return dataset\n"


def _saved_during_the_run(monkeypatch, path: Path, text: str) -> None:
    """Write `text` to `path` right after ddplint has found and read it (an
    editor saving while a pre-commit run goes on)."""
    found = runner._found_task

    def found_then_saved(source, *args):
        task = found(source, *args)
        if source.path.resolve() == path.resolve():
            path.write_text(text, encoding="utf-8")
        return task

    monkeypatch.setattr(runner, "_found_task", found_then_saved)


@pytest.mark.parametrize("project", [True, False], ids=["project", "module-local"])
def test_a_file_saved_during_the_run_is_linted_as_saved_and_not_cached(tmp_path, monkeypatch, project) -> None:
    path = write(tmp_path, {"train.py": PLAIN}) / "train.py"
    cache = Cache(tmp_path / ".cache")

    def lint() -> list[str]:
        report = runner.lint_paths([tmp_path], ConfigResolver(cwd=tmp_path), cache=cache, project=project)
        return [f.rule for f in report.findings]

    _saved_during_the_run(monkeypatch, path, SHUFFLED)
    assert lint() == ["DDP014"]  # what the file holds now
    monkeypatch.undo()
    path.write_text(PLAIN, encoding="utf-8")
    assert lint() == []  # the bytes it was found with never got that result from the cache


def test_a_file_saved_during_the_run_is_not_fixed(tmp_path, monkeypatch) -> None:
    path = write(tmp_path, {"train.py": PLAIN}) / "train.py"
    _saved_during_the_run(monkeypatch, path, SHUFFLED)
    report = runner.lint_paths([tmp_path], ConfigResolver(cwd=tmp_path), fix=FixMode())
    assert not report.fixed and path.read_text(encoding="utf-8") == SHUFFLED
    assert [n.message for n in report.notices] == ["changed while it was linted; not fixed"]


def test_a_file_removed_during_the_run_is_reported(tmp_path, monkeypatch) -> None:
    path = write(tmp_path, {"train.py": SHUFFLED, "other.py": SHUFFLED}) / "train.py"
    found = runner._found_task

    def found_then_removed(source, *args):
        task = found(source, *args)
        path.unlink(missing_ok=True)
        return task

    monkeypatch.setattr(runner, "_found_task", found_then_removed)
    report = runner.lint_paths([tmp_path], ConfigResolver(cwd=tmp_path), jobs=1)
    assert [(Path(f.path).name, f.rule) for f in report.findings] == [("other.py", "DDP014")]
    assert [n.message.split(":")[0] for n in report.notices] == ["cannot read file"]


def test_the_cycle_collector_waits_for_the_end_of_each_file_and_comes_back(tmp_path, monkeypatch) -> None:
    """Off while a file is linted (its live tree is not scanned over and
    over), on again after every file, a crashed one included; a caller that
    turned it off keeps it off."""
    import gc

    import ddplint.engine

    root = write(tmp_path, {"a.py": "print(1)\n", "b.py": "print(2)\n"})
    seen: list[bool] = []
    real = ddplint.engine.check_bytes

    def check(path, *args):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        if path.endswith("b.py"):
            raise RuntimeError("a rule's bug")
        return real(path, *args)

    monkeypatch.setattr(ddplint.engine, "check_bytes", check)
    assert gc.isenabled()
    report = runner.lint_paths([root], ConfigResolver(cwd=root), jobs=1, cache=None)
    assert seen == [False, False] and gc.isenabled()
    assert len(report.notices) == 1 and report.notices[0].path.endswith("b.py")  # the crash, reported
    gc.disable()
    try:
        seen.clear()
        runner.lint_paths([root], ConfigResolver(cwd=root), jobs=1, cache=None)
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


def _first_findings_fixture(directory: Path) -> Path:
    """The first fixture of a rule's directory that is meant to be flagged."""
    return next(p for p in sorted(directory.glob("*.py")) if b"# expect:" in p.read_bytes())


@pytest.mark.parametrize(
    "fixture",
    [_first_findings_fixture(d) for d in sorted(FIXTURES.glob("DDP*")) if d.name != "DDP000"],  # DDP000: not parsed
    ids=lambda p: p.parent.name,
)
def test_a_lint_leaves_no_tree_to_the_cycle_collector(fixture: Path) -> None:
    """Once a file is linted, reference counting frees its tree and its
    analyses: the cycle collector, which would traverse every node of it
    (a sixteenth of a whole-project run), finds no LibCST node. Linted with
    its summary too (the whole-project analysis adds the summary collector)."""
    import gc

    import libcst as cst

    from ddplint.engine import check_bytes
    from ddplint.project.role import ProjectRole
    from ddplint.rule import all_rules_settings

    data = fixture.read_bytes()
    gc.collect()
    gc.freeze()  # what is alive now is not this lint's
    gc.disable()
    try:
        for role in (ProjectRole(), ProjectRole(summarize=True)):
            result = check_bytes(str(fixture), data, all_rules_settings(), True, role)
            assert result.parsed, "the fixture is meant to be parsed"
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            left = [type(o).__name__ for o in gc.garbage if isinstance(o, cst.CSTNode)]
            gc.set_debug(0)
            gc.garbage.clear()
            assert not left, f"{len(left)} nodes left to the cycle collector, e.g. {left[:5]}"
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.unfreeze()
        gc.enable()
