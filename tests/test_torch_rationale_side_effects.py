"""Rationale of DDP008, DDP011 and DDP013, shown with real PyTorch (CPU, gloo)."""

from __future__ import annotations

import io
import os
import tempfile

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


def _dropout_masks(rank: int, world_size: int, init_file: str, rank_aware: bool, out: dict) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        torch.manual_seed(42 + (rank if rank_aware else 0))
        mask = (torch.nn.functional.dropout(torch.ones(64), p=0.5, training=True) > 0).int()
        masks = [torch.zeros_like(mask) for _ in range(world_size)]
        dist.all_gather(masks, mask)
        if rank == 0:
            out["same"] = bool(torch.equal(masks[0], masks[1]))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("rank_aware", [False, True])
def test_ddp008_same_seed_gives_every_rank_the_same_dropout_mask(rank_aware: bool, tmp_path) -> None:
    manager = mp.Manager()
    out = manager.dict()
    init_file = str(tmp_path / "init")
    mp.spawn(_dropout_masks, args=(2, init_file, rank_aware, out), nprocs=2, join=True)
    assert out["same"] is (not rank_aware)


@pytest.fixture
def single_rank_group():
    with tempfile.TemporaryDirectory() as directory:
        dist.init_process_group("gloo", init_method=f"file://{os.path.join(directory, 'init')}", rank=0, world_size=1)
        try:
            yield
        finally:
            dist.destroy_process_group()


def test_ddp011_wrapped_state_dict_does_not_load_into_the_bare_model(single_rank_group) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(torch.nn.Linear(4, 2))
    wrapped, unwrapped = io.BytesIO(), io.BytesIO()
    torch.save(model.state_dict(), wrapped)
    torch.save(model.module.state_dict(), unwrapped)
    assert all(key.startswith("module.") for key in model.state_dict())
    bare = torch.nn.Linear(4, 2)
    wrapped.seek(0)
    with pytest.raises(RuntimeError, match="Missing key"):
        bare.load_state_dict(torch.load(wrapped))
    unwrapped.seek(0)
    bare.load_state_dict(torch.load(unwrapped))


def _graph_size(tensor) -> int:
    seen, todo = set(), [tensor.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        todo.extend(next_fn for next_fn, _ in node.next_functions)
    return len(seen)


@pytest.mark.parametrize("detach", [False, True])
def test_ddp013_accumulating_the_loss_keeps_every_graph(detach: bool) -> None:
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    total = torch.zeros(())
    sizes = []
    for _ in range(20):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward(retain_graph=not detach)
        optimizer.step()
        optimizer.zero_grad()
        total = total + (loss.detach() if detach else loss)
        sizes.append(_graph_size(total) if total.grad_fn is not None else 0)
    if detach:
        assert sizes[-1] == 0
    else:
        assert sizes[-1] > sizes[4] > sizes[0]  # one more step's graph held each iteration
