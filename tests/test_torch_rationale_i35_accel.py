"""Rationale of DDP028 (padded-eval-metric) and DDP029 (local-rank-from-argv),
shown with real PyTorch on the CPU: the DistributedSampler's padding changes an
evaluation metric with the world size, and the launchers' local-rank handoff
breaks a parser that knows only `--local_rank`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddplint.testing import lint

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402

#: Generous: a launcher starting two Python processes on a busy two-core machine.
LAUNCH_TIMEOUT_S = 180


def _padded_accuracy(correct: list[bool], world_size: int) -> float:
    """The accuracy a DistributedSampler evaluation reports once every rank's
    counts are summed (what `dist.all_reduce` of the counts gives)."""
    hits = total = 0
    for rank in range(world_size):
        sampler = DistributedSampler(correct, num_replicas=world_size, rank=rank, shuffle=False)
        for batch in DataLoader(correct, batch_size=4, sampler=sampler):
            hits += int(batch.sum())
            total += len(batch)
    return hits / total


def test_ddp028_padded_sampler_changes_the_metric_with_the_world_size() -> None:
    # 10 samples, the first two wrong: the sampler repeats samples from the start to pad.
    correct = [False, False] + [True] * 8
    single = sum(correct) / len(correct)
    two, three = _padded_accuracy(correct, 2), _padded_accuracy(correct, 3)
    assert two == single  # 10 splits evenly in two: no padding
    assert three != single  # 12 samples counted: the two wrong ones twice
    assert three == pytest.approx(8 / 12)
    source = textwrap.dedent(
        """
        import torch.distributed as dist
        from torch.utils.data import DataLoader, DistributedSampler

        def validate(model, dataset):
            loader = DataLoader(dataset, sampler=DistributedSampler(dataset, shuffle=False))
            correct = 0
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum()
            dist.all_reduce(correct)
            return correct / len(dataset)
        """
    )
    assert [f.rule for f in lint(source, select=["DDP028"])] == ["DDP028"]


_SCRIPT = """
import argparse
import os
parser = argparse.ArgumentParser()
{argument}
args = parser.parse_args()
with open(os.path.join(os.environ["RANKS_DIR"], str(os.getpid())), "w") as out:
    out.write(str(args.local_rank))
"""
_ARGV_ONLY = 'parser.add_argument("--local_rank", type=int, default=-1)'
_FIXED = 'parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))'


def _launch(tmp_path: Path, argument: str, launcher: list[str]) -> subprocess.CompletedProcess:
    """Run the script under `launcher` with two processes; each writes the local
    rank it parsed to a file of its own (the launcher's relay of its workers'
    stdout can lose a line on a busy machine, a file cannot)."""
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT.format(argument=argument))
    ranks = tmp_path / "ranks"
    shutil.rmtree(ranks, ignore_errors=True)
    ranks.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1", "RANKS_DIR": str(ranks)}
    return subprocess.run(
        [sys.executable, "-m", *launcher, "--nproc_per_node=2", "--master_port=0", str(script)],
        capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S, env=env, cwd=tmp_path,
    )  # fmt: skip


def _ranks(done: subprocess.CompletedProcess, tmp_path: Path) -> list[int]:
    """The local ranks the launched processes parsed (after a launch that ended well)."""
    assert done.returncode == 0, done.stderr[-2000:]
    return sorted(int(path.read_text()) for path in (tmp_path / "ranks").iterdir())


@pytest.mark.slow
def test_ddp029_launchers_break_a_parser_that_knows_only_local_rank(tmp_path: Path) -> None:
    launch = ["torch.distributed.launch"]
    torchrun = ["torch.distributed.run"]
    crashed = _launch(tmp_path, _ARGV_ONLY, launch)
    assert crashed.returncode != 0
    assert "unrecognized arguments: --local-rank=" in crashed.stderr
    assert _ranks(_launch(tmp_path, _ARGV_ONLY, torchrun), tmp_path) == [-1, -1]  # every rank keeps the default
    assert _ranks(_launch(tmp_path, _FIXED, launch), tmp_path) == [0, 1]
    assert _ranks(_launch(tmp_path, _FIXED, torchrun), tmp_path) == [0, 1]
    flagged = lint(f"import torch.distributed as dist\n{_SCRIPT.format(argument=_ARGV_ONLY)}dist.init_process_group('gloo')\n", select=["DDP029"])
    fixed = lint(f"import torch.distributed as dist\n{_SCRIPT.format(argument=_FIXED)}dist.init_process_group('gloo')\n", select=["DDP029"])
    assert [f.rule for f in flagged] == ["DDP029"] and fixed == []
