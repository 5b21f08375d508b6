"""Rationale of DDP027 and DDP030, shown with real PyTorch (CPU, gloo).

Each test lints a small training source with ddplint and runs the same
source in two spawned gloo ranks under a wall-clock limit; every collective
that could wait for a rank that never comes runs in a group whose own
timeout is a few seconds.
"""

from __future__ import annotations

import datetime
import functools
import textwrap

import pytest

from ddplint.testing import lint

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from spawned_ranks import run_ranks  # noqa: E402

if not dist.is_available():  # pragma: no cover - builds without torch.distributed
    pytest.skip("torch.distributed is not available in this build", allow_module_level=True)

#: The default group's timeout covers the start-up of a loaded machine.
GROUP_TIMEOUT = datetime.timedelta(seconds=120)
#: The group the collectives under test run in: how long a rank waits for one that does not come.
SHORT_TIMEOUT_S = 5
#: The wall-clock limit for a whole two-rank job, start-up included.
JOB_TIMEOUT_S = 240.0


_run_ranks = functools.partial(run_ranks, timeout=JOB_TIMEOUT_S)


def _in_group(rank: int, init_file: str, source: str, out) -> None:
    """Join a two-rank gloo group and run the source's `train(rank, group, out)`."""
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2, timeout=GROUP_TIMEOUT)
    group = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=SHORT_TIMEOUT_S))
    namespace: dict = {}
    exec(compile(source, "train.py", "exec"), namespace)
    namespace["train"](rank, group, out)


def _run_source(tmp_path, source: str) -> dict:
    with mp.Manager() as manager:
        out = manager.dict()
        _run_ranks(_in_group, 2, str(tmp_path / "init"), source, out)
        return dict(out)


# ---------------------------------------------------------------- DDP027

STOP_ON_LOCAL_LOSS = textwrap.dedent(
    """
    import time

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def train(rank, group, out):
        reached = 0
        for step in range(3):
            batch = torch.full((8,), float(rank))  # rank 0's batch is easy, rank 1's is not
            loss = (batch ** 2).mean()
            if loss.item() < 0.75:
                break
            gradient = torch.ones(4)
            try:
                dist.all_reduce(gradient, group=group)
            except RuntimeError:  # the group's timeout (gloo raises a RuntimeError subclass)
                out[rank] = f"timed out in the all-reduce of step {step}"
                return
            reached += 1
        out[rank] = f"left after {reached} all-reduces"
        time.sleep(LINGER)  # the rest of rank 0's script: it is alive, just elsewhere
    """
)

STOP_ON_REDUCED_LOSS = STOP_ON_LOCAL_LOSS.replace(
    "        loss = (batch ** 2).mean()\n",
    "        loss = (batch ** 2).mean()\n        dist.all_reduce(loss, group=group)\n        loss /= 2\n",
)


def test_ddp027_flags_the_local_decision_and_not_the_reduced_one() -> None:
    assert STOP_ON_REDUCED_LOSS != STOP_ON_LOCAL_LOSS
    local = STOP_ON_LOCAL_LOSS.replace("LINGER", "0")
    reduced = STOP_ON_REDUCED_LOSS.replace("LINGER", "0")
    assert [f.span.line for f in lint(local, select=["DDP027"])] == [local.splitlines().index("            break") + 1]
    assert lint(reduced, select=["DDP027"]) == []


@pytest.mark.slow
def test_ddp027_a_stop_on_one_ranks_loss_leaves_the_other_in_the_all_reduce(tmp_path) -> None:
    out = _run_source(tmp_path, STOP_ON_LOCAL_LOSS.replace("LINGER", str(SHORT_TIMEOUT_S * 3)))
    # Rank 0's loss (0) is under the line: it leaves before any all-reduce.
    assert out[0] == "left after 0 all-reduces", out
    # Rank 1's loss (1) is not: it enters the all-reduce, which no other rank joins, and times out.
    assert out[1] == "timed out in the all-reduce of step 0", out


@pytest.mark.slow
def test_ddp027_a_stop_on_the_reduced_loss_is_taken_by_every_rank(tmp_path) -> None:
    out = _run_source(tmp_path, STOP_ON_REDUCED_LOSS.replace("LINGER", "0"))
    # The mean (0.5) is the same everywhere: both ranks stop at the same step.
    assert out == {0: "left after 0 all-reduces", 1: "left after 0 all-reduces"}, out


# ---------------------------------------------------------------- DDP030

STREAM = textwrap.dedent(
    """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info


    class Numbers(IterableDataset):
        def __iter__(self):
            info = get_worker_info()  # splits across workers only
            for i in range(16):
                if info is None or i % info.num_workers == info.id:
                    yield i


    def train(rank, group, out):
        model = DistributedDataParallel(torch.nn.Linear(1, 1), process_group=group)
        train_loader = DataLoader(Numbers(), batch_size=4)
        seen = []
        for batch in train_loader:
            model(batch.float().unsqueeze(1)).sum().backward()
            seen += [int(x) for x in batch]
        out[rank] = seen
    """
)

SHARDED_STREAM = STREAM.replace(
    "            if info is None or i % info.num_workers == info.id:\n",
    "            if i % dist.get_world_size() == dist.get_rank():\n",
)


def test_ddp030_flags_the_unsharded_stream_and_not_the_sharded_one() -> None:
    assert SHARDED_STREAM != STREAM
    line = STREAM.splitlines().index("    train_loader = DataLoader(Numbers(), batch_size=4)") + 1
    assert [f.span.line for f in lint(STREAM, select=["DDP030"])] == [line]
    assert lint(SHARDED_STREAM, select=["DDP030"]) == []


@pytest.mark.slow
def test_ddp030_every_rank_iterates_the_same_unsharded_stream(tmp_path) -> None:
    out = _run_source(tmp_path, STREAM)
    assert out[0] == out[1] == list(range(16)), out


@pytest.mark.slow
def test_ddp030_a_stream_split_by_rank_gives_the_ranks_disjoint_samples(tmp_path) -> None:
    out = _run_source(tmp_path, SHARDED_STREAM)
    assert not set(out[0]) & set(out[1]) and sorted(out[0] + out[1]) == list(range(16)), out
