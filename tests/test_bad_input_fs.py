"""SPEC §5 on a hostile file system and a damaged cache: file names that are
not UTF-8, unreadable directories, over-long paths, bad explicit paths,
tampered cache entries and a disk that is full. Each time the run goes on
for the other files and exits as README's table says."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from conftest import assert_valid_sarif, console_script, write

#: A collective only rank 0 reaches: DDP001, with a related location (the guard).
HANG = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"


def _strings(value):
    """Every string in decoded JSON, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _assert_valid_text(data) -> None:
    """Strict JSON readers reject lone surrogates: none may reach the output."""
    for text in _strings(data):
        text.encode("utf-8")  # raises on a surrogate


# ------------------------------------------------------- names that are not UTF-8


@pytest.fixture
def undecodable(tmp_path: Path) -> Path:
    """`b<0xff>.py` (a finding) and `d<0xfe>/c.py` (a finding), next to a plain file."""
    root = os.fsencode(tmp_path)
    try:
        with open(root + b"/b\xff.py", "wb") as handle:
            handle.write(HANG.encode())
        os.mkdir(root + b"/d\xfe")
        with open(root + b"/d\xfe/c.py", "wb") as handle:
            handle.write(HANG.encode())
    except (OSError, UnicodeError):  # pragma: no cover - a file system that insists on UTF-8 names
        pytest.skip("this file system does not store names that are not UTF-8")
    write(tmp_path, {"ok.py": HANG})
    return tmp_path


def test_a_name_that_is_not_utf8_is_linted_with_and_without_the_cache(ddplint, undecodable) -> None:
    for _ in range(2):  # a cold and a warm run: both compute cache keys from the names
        run = ddplint(".", cwd=undecodable)
        assert run.status == 1, run.stderr
        lines = run.stdout.splitlines()
        assert [line.split(" ")[:2] for line in lines[:3]] == [
            ["b\\xff.py:3:5:", "DDP001"], ["d\\xfe/c.py:3:5:", "DDP001"], ["ok.py:3:5:", "DDP001"]
        ]
        assert len(run.stdout.splitlines()) == 4 and run.stderr == ""
    assert list((undecodable / ".ddplint_cache").rglob("*.json"))


def test_json_and_gitlab_show_the_bytes_as_backslash_escapes(ddplint, undecodable) -> None:
    run = ddplint(".", "--format", "json", cwd=undecodable)
    assert run.status == 1, run.stderr
    findings = run.json()
    _assert_valid_text(findings)
    assert {f["path"] for f in findings} == {"b\\xff.py", "d\\xfe/c.py", "ok.py"}
    assert {r["path"] for f in findings for r in f["related"]} == {"b\\xff.py", "d\\xfe/c.py", "ok.py"}
    assert len({f["fingerprint"] for f in findings}) == 3

    run = ddplint(".", "--format", "gitlab", cwd=undecodable)
    assert run.status == 1, run.stderr
    _assert_valid_text(run.json())
    assert {i["location"]["path"] for i in run.json()} == {"b\\xff.py", "d\\xfe/c.py", "ok.py"}


def test_sarif_percent_encodes_the_names_bytes(ddplint, undecodable, sarif_validator) -> None:
    run = ddplint(".", "--format", "sarif", cwd=undecodable)
    assert run.status == 1, run.stderr
    log = run.json()
    _assert_valid_text(log)
    assert_valid_sarif(sarif_validator, log)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"b%FF.py", "d%FE/c.py", "ok.py"}


def test_github_annotations_and_notices_show_backslash_escapes(ddplint, undecodable) -> None:
    os.symlink("missing.py", os.fsencode(undecodable) + b"/e\xfd.py")  # a broken link: a notice naming it
    run = ddplint(".", "--format", "github", cwd=undecodable)
    assert run.status == 1
    assert "::error file=b\\xff.py,line=3," in run.stdout
    assert run.stderr.startswith("e\\xfd.py: error: broken symlink")


def test_a_strict_utf8_terminal_gets_the_escapes(undecodable) -> None:
    from conftest import run_script

    run = run_script(".", "--no-cache", cwd=undecodable, env={"PYTHONIOENCODING": "utf-8:strict"})
    assert run.status == 1 and "Traceback" not in run.stderr and run.stderr == ""
    assert "b\\xff.py:3:5: DDP001" in run.stdout
