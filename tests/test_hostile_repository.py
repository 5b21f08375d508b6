"""A repository nobody reviewed ships symbolic links where ddplint writes:
nothing is ever created or written outside the project through one (the
cache, `--fix`, `ddplint clean`), and the run goes on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import git_repository, run_script, write

from ddplint.version import __version__

BAD = (
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
)
FIXED = (
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "loader = DataLoader(ds, sampler=DistributedSampler(ds))\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repository(write(tmp_path / "repo", {"train.py": BAD}))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the project that the user may write."""
    (tmp_path / "outside").mkdir()
    return tmp_path / "outside"


def _lint(repo: Path, *args: str):
    run = run_script("--format", "json", *args, ".", cwd=repo)
    assert [f["rule"] for f in run.json()] == ["DDP014"], run.stderr  # linted all the same
    return run


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_dangling_gitignore_link_in_the_cache_creates_nothing(repo: Path, outside: Path) -> None:
    (repo / ".ddplint_cache").mkdir()
    (repo / ".ddplint_cache" / ".gitignore").symlink_to(outside / "planted")
    run = _lint(repo)
    assert not (outside / "planted").exists() and not os.path.lexists(outside / "planted")
    assert "is a symbolic link; the cache is not used" in run.stderr
    assert len([line for line in run.stderr.splitlines() if "cache" in line]) == 1


def test_a_cache_directory_that_is_a_link_is_not_used(repo: Path, outside: Path) -> None:
    (repo / ".ddplint_cache").symlink_to(outside, target_is_directory=True)
    run = _lint(repo)
    assert list(outside.iterdir()) == []
    assert "is a symbolic link; the cache is not used" in run.stderr


def test_a_version_directory_that_is_a_link_is_not_written_through(repo: Path, outside: Path) -> None:
    (repo / ".ddplint_cache").mkdir()
    (repo / ".ddplint_cache" / __version__).symlink_to(outside, target_is_directory=True)
    run = _lint(repo)
    assert list(outside.iterdir()) == []
    assert "is a symbolic link; the cache is not used" in run.stderr


def test_a_cache_entry_that_is_a_link_is_neither_read_nor_written(repo: Path, outside: Path) -> None:
    _lint(repo)
    entries = list((repo / ".ddplint_cache").rglob("*.json"))
    assert entries
    for entry in entries:  # valid entries, but behind links: not trusted either
        (outside / entry.name).write_bytes(entry.read_bytes())
        entry.unlink()
        entry.symlink_to(outside / entry.name)
    before = _tree(outside)
    run = _lint(repo)
    assert _tree(outside) == before and all(entry.is_symlink() for entry in entries)
    assert "is a symbolic link; the cache is not used" in run.stderr


def test_fix_never_writes_through_a_link_out_of_the_project(repo: Path, outside: Path) -> None:
    target = outside / "victim.py"
    target.write_text(BAD)
    (repo / "train.py").unlink()
    (repo / "train.py").symlink_to(target)
    run = run_script("--fix", "--no-cache", ".", cwd=repo)
    assert target.read_text() == BAD and (repo / "train.py").is_symlink()
    assert "outside the project root" in run.stderr and "fixes not written" in run.stderr
    assert list(outside.iterdir()) == [target]  # no temporary file left there either


def test_fix_writes_the_file_a_link_inside_the_project_names(repo: Path) -> None:
    write(repo, {"real/train.py": BAD})
    (repo / "train.py").unlink()
    (repo / "train.py").symlink_to(Path("real") / "train.py")
    run = run_script("--fix", "--no-cache", "train.py", cwd=repo)
    assert run.status == 0, run.stderr
    assert (repo / "real" / "train.py").read_text() == FIXED and (repo / "train.py").is_symlink()


def test_clean_removes_only_what_ddplint_created(repo: Path, outside: Path) -> None:
    _lint(repo)
    cache = repo / ".ddplint_cache"
    (outside / "kept.txt").write_text("mine")
    (cache / "notes.txt").write_text("the user's own")
    (cache / __version__ / "outside").symlink_to(outside, target_is_directory=True)
    run = run_script("clean", cwd=repo)
    assert run.status == 0, run.stderr
    assert not list(cache.rglob("*.json")) and not (cache / ".gitignore").exists()
    assert (cache / "notes.txt").read_text() == "the user's own" and (cache / __version__ / "outside").is_symlink()
    assert _tree(outside) == {"kept.txt": b"mine"}
    assert "notes.txt was not created by ddplint" in run.stderr


def test_clean_survives_a_cache_directory_that_is_a_link(repo: Path, outside: Path) -> None:
    write(outside, {"kept.txt": "mine", "v/ab/" + "ab" * 32 + ".json": "{}"})
    (repo / ".ddplint_cache").symlink_to(outside, target_is_directory=True)
    before = _tree(outside)
    run = run_script("clean", cwd=repo)
    assert run.status == 0 and "Traceback" not in run.stderr, run.stderr
    assert "is a symbolic link; left as it is" in run.stderr
    assert _tree(outside) == before and (repo / ".ddplint_cache").is_symlink()


def test_clean_removes_a_cache_ddplint_made(repo: Path) -> None:
    _lint(repo)
    run = run_script("clean", cwd=repo)
    assert run.status == 0 and not os.path.lexists(repo / ".ddplint_cache"), run.stderr


def test_a_fifo_planted_as_a_cache_entry_does_not_block_the_run(repo: Path) -> None:
    _lint(repo)
    entries = list((repo / ".ddplint_cache").rglob("*.json"))
    for entry in entries:  # reading a FIFO with no writer would wait forever
        entry.unlink()
        os.mkfifo(entry)
    run = _lint(repo)
    assert "is not a regular file; the cache is not used" in run.stderr
