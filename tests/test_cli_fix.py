"""`--fix`, `--unsafe-fixes`, `--diff`, `--fix-only`, and fixing standard input."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from conftest import run_script

TRAIN = """\
import torch
from torch.utils.data import DataLoader, DistributedSampler


def loaders(dataset, model, loader, optimizer, criterion):
    sampler = DistributedSampler(dataset)
    train = DataLoader(dataset, batch_size=8, shuffle=True, sampler=sampler)
    running = torch.zeros(())
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss
    print(running.cpu())
    return train
"""
SAFE_FIXED = TRAIN.replace("batch_size=8, shuffle=True, sampler", "batch_size=8, sampler")
ALL_FIXED = SAFE_FIXED.replace("running += loss\n", "running += loss.detach()\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    return tmp_path


def test_fix_applies_safe_fixes_and_reports_what_remains(ddplint, project) -> None:
    run = ddplint("--fix", "--no-cache", ".", cwd=project)
    assert (project / "train.py").read_text(encoding="utf-8") == SAFE_FIXED
    assert run.status == 1  # DDP013 remains: its fix is unsafe here
    assert run.stdout.startswith("train.py:13:9: DDP013 ")
    lines = run.stdout.splitlines()
    assert lines[-2].endswith("1 fixable with `--fix --unsafe-fixes`.")
    assert lines[-1] == "Fixed 1 finding in 1 file."


def test_unsafe_fixes_too(ddplint, project) -> None:
    run = ddplint("--fix", "--unsafe-fixes", "--no-cache", "train.py", cwd=project)
    assert (project / "train.py").read_text(encoding="utf-8") == ALL_FIXED
    assert run.status == 0, run.stdout
    assert run.stdout.splitlines() == ["No findings in 1 file.", "Fixed 2 findings in 1 file."]


def test_diff_changes_nothing_and_exits_1(ddplint, project, tmp_path) -> None:
    run = ddplint("--diff", "--no-cache", ".", cwd=project)
    assert run.status == 1
    assert (project / "train.py").read_text(encoding="utf-8") == TRAIN
    assert run.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@ ")
    assert "-    train = DataLoader(dataset, batch_size=8, shuffle=True, sampler=sampler)\n" in run.stdout
    assert run.stderr.strip() == "Would fix 1 finding in 1 file."
    patch = tmp_path / "fix.patch"
    patch.write_text(run.stdout, encoding="utf-8")
    subprocess.run(["git", "apply", "--unsafe-paths", "--directory", ".", str(patch)], cwd=project, check=True)
    assert (project / "train.py").read_text(encoding="utf-8") == SAFE_FIXED


def test_diff_without_fixes_exits_0(ddplint, project) -> None:
    run = ddplint("--diff", "--no-cache", "clean.py", cwd=project)
    assert run.status == 0 and run.stdout == ""
    assert run.stderr.strip() == "Would fix 0 findings in 0 files."


def test_fix_only_reports_nothing_but_the_count(ddplint, project) -> None:
    run = ddplint("--fix-only", "--no-cache", ".", cwd=project)
    assert run.status == 0 and run.stdout == ""
    assert run.stderr.strip() == "Fixed 1 finding in 1 file."
    assert (project / "train.py").read_text(encoding="utf-8") == SAFE_FIXED


def test_diff_and_fix_together_is_a_usage_error(ddplint, project) -> None:
    run = ddplint("--diff", "--fix", ".", cwd=project)
    assert run.status == 2 and "--diff" in run.stderr
    assert (project / "train.py").read_text(encoding="utf-8") == TRAIN


def test_stdin_fix_writes_the_fixed_source_to_stdout(ddplint, project) -> None:
    run = ddplint("--fix", "--stdin-filename", "train.py", "-", cwd=project, stdin=TRAIN.encode())
    assert run.stdout == SAFE_FIXED
    assert "train.py:13:9: DDP013 " in run.stderr
    assert run.status == 1
    clean = ddplint("--fix", "--stdin-filename", "clean.py", "-", cwd=project, stdin=b"x = 1\n")
    assert clean.stdout == "x = 1\n" and clean.status == 0


def test_fixed_files_keep_encoding_newlines_and_mode(ddplint, tmp_path) -> None:
    text = "# -*- coding: latin-1 -*-\r\n# caf\xe9\r\n" + TRAIN.replace("\n", "\r\n")
    path = tmp_path / "train.py"
    path.write_bytes(text.encode("latin-1"))
    path.chmod(0o750)
    ddplint("--fix", "--no-cache", "train.py", cwd=tmp_path)
    data = path.read_bytes()
    assert data.decode("latin-1") == text.replace("batch_size=8, shuffle=True, sampler", "batch_size=8, sampler")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".ddplint")]


def test_fix_through_the_console_script(project) -> None:
    run = run_script("--fix", "--no-cache", "train.py", cwd=project)
    assert run.status == 1 and "Fixed 1 finding in 1 file." in run.stdout
    assert (project / "train.py").read_text(encoding="utf-8") == SAFE_FIXED
