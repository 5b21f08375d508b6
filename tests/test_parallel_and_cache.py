"""Parallel linting and the result cache change nothing but the time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, run_script, write


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
    warm = _json(ddplint, "fixtures", "--cache-dir", cache, cwd=REPO)
    assert sorted(cache.rglob("*.json")) == entries  # the warm run found everything
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
