"""Stopping a run: Ctrl-C and a killed parent end the worker processes too,
and the report file is written whole or not at all.

Each test runs the installed console script in its own session (so that a
failure can clean up every process it started) on a tree big enough that
the worker pool is busy for many seconds; every wait is bounded generously
(the suite runs on loaded 2-core machines).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import console_script, write

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and forks workers")

#: Seconds a stopped run may take to end (it takes well under one; the
#: machine may be loaded).
BOUND = 15
#: One file LibCST takes a while over (a rule token, so the prefilter keeps it).
SLOW_FILE = "from torch.utils.data import DataLoader\n" + "".join(f"x{i} = f(a, b={i})\n" for i in range(3000))


def _tree(root: Path, files: int = 48) -> Path:
    """A project whose lint keeps two workers busy for a good while."""
    write(root, {f"pkg/m{i:02d}.py": SLOW_FILE for i in range(files)})
    return root


def _as_from_a_terminal() -> None:
    """Ctrl-C's default disposition in the child, as a shell in a terminal gives
    it: a suite started in the background (`pytest &`, nohup, some CI runners)
    runs with SIGINT ignored, which every child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(root: Path, *args: str) -> subprocess.Popen:
    command = [console_script(), ".", "-j", "2", *args]
    return subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=_as_from_a_terminal,
    )  # fmt: skip


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended: only its parent has not asked)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry.name))
    return found


def _workers(proc: subprocess.Popen, count: int = 2) -> set[int]:
    """The pool's workers once `count` of them run (the tree is linted by then)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        children = _children(proc.pid)
        if len(children) >= count:
            time.sleep(0.5)  # each is linting by now
            return children
        time.sleep(0.05)
    pytest.fail(f"no worker pool seen (status {proc.poll()})")


def _wait_gone(pids: set[int]) -> set[int]:
    """The pids still running after BOUND seconds."""
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        alive = {pid for pid in pids if _alive(pid)}
        if not alive:
            return set()
        time.sleep(0.1)
    return {pid for pid in pids if _alive(pid)}


def _cleanup(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the session
    except ProcessLookupError:
        pass
    proc.communicate()  # the pipes' other ends are gone now


def test_ctrl_c_stops_a_parallel_run_at_once(tmp_path) -> None:
    root = _tree(tmp_path)
    proc = _start(root, "--output", "report.txt")
    try:
        workers = _workers(proc)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole group
        _, err = proc.communicate(timeout=BOUND)
        took = time.monotonic() - started
        assert not _wait_gone(workers)
    finally:
        _cleanup(proc)
    stderr = err.decode()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert stderr == "ddplint: interrupted\n"
    assert took < BOUND
    assert not (root / "report.txt").exists()  # no report of half the files
    cache = root / ".ddplint_cache"
    entries = [p for p in cache.rglob("*") if p.is_file() and p.name != ".gitignore"] if cache.exists() else []
    assert not [p for p in entries if p.name.startswith(".tmp-")]
    for entry in entries:
        json.loads(entry.read_bytes())  # every entry written whole


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_workers_die_with_a_killed_parent(tmp_path, sig) -> None:
    """`timeout`, CI runners and editors signal the main process alone: its
    workers must not linger and hold the caller's pipe open."""
    proc = _start(_tree(tmp_path), "--no-cache")
    try:
        workers = _workers(proc)
        os.kill(proc.pid, sig)
        proc.communicate(timeout=BOUND)  # both pipes reach EOF: nobody holds them any more
        assert not _wait_gone(workers)
    finally:
        _cleanup(proc)
    assert proc.returncode == -sig


def _file_size_limit(limit: int):
    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_file_size


BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"


def test_output_file_is_replaced_whole_or_not_at_all(tmp_path) -> None:
    write(tmp_path, {f"m{i}.py": BAD for i in range(40)})
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    report.write_text("previous report\n")
    command = [console_script(), ".", "--no-cache", "-j", "1", "--format", "json", "-o", str(report)]
    run = subprocess.run(command, cwd=tmp_path, check=False, capture_output=True, timeout=120, preexec_fn=_file_size_limit(1000))
    stderr = run.stderr.decode()
    assert run.returncode == 2 and "Traceback" not in stderr
    assert stderr.count("\n") == 1 and str(report) in stderr and stderr.startswith("ddplint: error: --output")
    assert report.read_text() == "previous report\n"  # not truncated, not half-written
    assert sorted(p.name for p in report.parent.iterdir()) == ["report.json"]  # no temporary file left
    ok = subprocess.run(command, cwd=tmp_path, check=False, capture_output=True, timeout=120)
    assert ok.returncode == 1 and len(json.loads(report.read_text())) == 40


def test_output_to_a_device_is_written_in_place(tmp_path) -> None:
    write(tmp_path, {"m.py": BAD})
    run = subprocess.run(
        [console_script(), "m.py", "--no-cache", "--format", "json", "-o", "/dev/stdout"],
        cwd=tmp_path, check=False, capture_output=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1 and json.loads(run.stdout)[0]["rule"] == "DDP014"


def test_cache_entries_are_whole_when_the_disk_fills(tmp_path) -> None:
    write(tmp_path, {f"m{i}.py": BAD + f"x = {'1' * 3000}\n" for i in range(10)})
    command = [console_script(), ".", "-j", "1", "--cache-dir", "cache"]
    run = subprocess.run(command, cwd=tmp_path, check=False, capture_output=True, timeout=120, preexec_fn=_file_size_limit(2500))
    assert run.returncode == 1 and "Traceback" not in run.stderr.decode()
    entries = [p for p in (tmp_path / "cache").rglob("*.json")]
    assert not [p for p in entries if p.name.startswith(".tmp-")]
    for entry in entries:
        json.loads(entry.read_bytes())
