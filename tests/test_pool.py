"""The run's worker processes (`ddplint.pool.Workers`): started once, for
every round of a run; a dead worker costs its round, not the run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES

from ddplint import runner
from ddplint.config.resolver import ConfigResolver
from ddplint.pool import Workers

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="forks workers")

#: Set by `_prepare` in the parent, read by the workers it forks.
_PREPARED: list[str] = []
#: Where `_lint_noting_the_process` notes each lint's process.
_LOG = "DDPLINT_TEST_POOL_LOG"
_REAL_LINT_TASK = runner._lint_task


def _pid(item: str) -> tuple[str, int, tuple[str, ...]]:
    if item == "die":
        os._exit(1)  # what a crash in LibCST's native parser would do
    time.sleep(0.02)  # long enough that both workers take some
    return item, os.getpid(), tuple(_PREPARED)


def _failed(item: str, exc: BaseException) -> tuple[str, int, tuple[str, ...]]:
    return item, -1, ()


def _prepare() -> None:
    _PREPARED.append("built in the parent")


def _lint_noting_the_process(task):  # type: ignore[no-untyped-def]
    with open(os.environ[_LOG], "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()}\n")
    return _REAL_LINT_TASK(task)


def test_later_rounds_go_to_the_workers_the_first_one_started() -> None:
    with Workers(2, _pid, _failed, min_items=1, prepare=_prepare) as workers:
        first = workers.map([f"a{i}" for i in range(8)])
        second = workers.map([f"b{i}" for i in range(8)])
        third = workers.map(["c0"])
    assert [r[0] for r in first] == [f"a{i}" for i in range(8)]  # in order, whatever finished first
    pids = {pid for _, pid, _ in first + second + third}
    assert len(pids) <= 2 and os.getpid() not in pids
    # What the parent prepared before it forked them, once.
    assert {prepared for *_, prepared in first + second + third} == {("built in the parent",)}
    _PREPARED.clear()


def test_few_items_or_one_job_run_here() -> None:
    with Workers(2, _pid, _failed, min_items=4) as workers:
        assert {pid for _, pid, _ in workers.map(["a", "b", "c"])} == {os.getpid()}
    with Workers(1, _pid, _failed, min_items=1) as workers:
        assert {pid for _, pid, _ in workers.map(["a", "b", "c", "d", "e"])} == {os.getpid()}


def test_a_dead_worker_fails_its_round_and_the_next_round_gets_new_workers() -> None:
    with Workers(2, _pid, _failed, min_items=1) as workers:
        first = workers.map(["a", "die", "b", "c"])
        second = workers.map(["d", "e", "f"])
    assert {item: pid for item, pid, _ in first}["die"] == -1
    assert [item for item, _, _ in second] == ["d", "e", "f"]
    assert all(pid > 0 and pid != os.getpid() for _, pid, _ in second)


def test_every_round_of_a_project_run_is_linted_by_the_same_workers(tmp_path, monkeypatch) -> None:
    """The files linted again with their imports' facts (three more rounds
    here) go to the workers that linted the first round: no new processes."""
    root = (FIXTURES / "projects" / "per_rank_callees").resolve()
    log = tmp_path / "pids"
    monkeypatch.setenv(_LOG, str(log))
    monkeypatch.setattr(runner, "MIN_FILES_FOR_POOL", 1)
    monkeypatch.setattr(runner, "_lint_task", _lint_noting_the_process)
    rounds: list[int] = []
    real_map = Workers.map
    monkeypatch.setattr(Workers, "map", lambda self, items: rounds.append(len(items)) or real_map(self, items))
    report = runner.lint_paths([root], ConfigResolver(cwd=root), jobs=2, project=True)
    assert report.findings and not report.notices
    assert len(rounds) >= 3
    pids = set(Path(log).read_text(encoding="utf-8").split())
    assert len(pids) <= 2 and str(os.getpid()) not in pids
