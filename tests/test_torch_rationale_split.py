"""Rationale of DDP024 (unseeded ranks), shown with real PyTorch (CPU, gloo):
a train/validation split drawn on every rank agrees across the ranks only when
its generator is seeded alike on all of them.

The ranks run in spawned processes under a wall-clock limit, and the one
collective has a group timeout, so a rank that never comes fails the test
instead of hanging it.
"""

from __future__ import annotations

import datetime
import json
import random

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from spawned_ranks import run_ranks  # noqa: E402
from torch.utils.data import random_split  # noqa: E402

if not dist.is_available():  # pragma: no cover - builds without torch.distributed
    pytest.skip("torch.distributed is not available in this build", allow_module_level=True)

GROUP_TIMEOUT = datetime.timedelta(seconds=60)
JOB_TIMEOUT_S = 300.0  # spawning two torch processes takes tens of seconds on a busy machine
SEED = 1234


def _split(rank: int, how: str) -> tuple[list[int], list[int]]:
    """The (train, validation) indices of 200 samples this rank draws, seeded as `how` says."""
    if how == "rank-offset":
        torch.manual_seed(SEED + rank)
    elif how == "common-seed":
        torch.manual_seed(SEED)
    if how == "python-shuffle":
        ids = list(range(200))
        random.shuffle(ids)
        return ids[40:], ids[:40]
    generator = None
    if how == "seeded-generator":
        torch.manual_seed(SEED + rank)  # per-rank streams for everything else
        generator = torch.Generator().manual_seed(SEED)
    train, val = random_split(range(200), [160, 40], generator=generator) if generator else random_split(range(200), [160, 40])
    return list(train.indices), list(val.indices)


def _rank(rank: int, world_size: int, init_file: str, how: str, out_file: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size, timeout=GROUP_TIMEOUT)
    try:
        train, val = _split(rank, how)
        mine = torch.tensor(train + val)
        everyone = [torch.zeros_like(mine) for _ in range(world_size)]
        dist.all_gather(everyone, mine)
        if rank == 0:
            (train0, val0), (train1, val1) = ((t[: len(train)].tolist(), t[len(train) :].tolist()) for t in everyone)
            leaked = len(set(val1) & set(train0))  # rank 1 validates on samples rank 0 trains on
            with open(out_file, "w") as handle:
                json.dump({"same": train0 == train1 and val0 == val1, "leaked": leaked}, handle)
    finally:
        dist.destroy_process_group()


def _run_two_ranks(tmp_path, how: str) -> dict:
    out_file = tmp_path / "result.json"
    run_ranks(_rank, 2, 2, str(tmp_path / "init"), how, str(out_file), timeout=JOB_TIMEOUT_S)
    return json.loads(out_file.read_text())


@pytest.mark.parametrize("how", ["unseeded", "rank-offset", "python-shuffle"])
def test_ddp024_ranks_draw_different_splits_without_a_common_seed(how: str, tmp_path) -> None:
    result = _run_two_ranks(tmp_path, how)
    assert not result["same"]
    assert result["leaked"] > 0  # validation samples of rank 1 are training samples of rank 0


@pytest.mark.parametrize("how", ["seeded-generator", "common-seed"])
def test_ddp024_a_seeded_generator_or_a_common_seed_gives_every_rank_the_same_split(how: str, tmp_path) -> None:
    result = _run_two_ranks(tmp_path, how)
    assert result["same"]
    assert result["leaked"] == 0
