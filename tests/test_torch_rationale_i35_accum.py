"""Rationale of DDP026 (gradient accumulation and `no_sync`), shown with real
PyTorch: two gloo ranks on CPU, spawned in subprocesses under a wall-clock
limit, each collective bounded by the group's timeout.

(1b) `no_sync()` entered after the forward does not stop the all-reduce:
the gradients are equal across ranks after a backward on different inputs.
(1c) stepping after micro-batches that all ran inside `no_sync()` leaves the
ranks' parameters different. The control cases (no `no_sync`; `no_sync`
around forward and backward) show the test can tell the two apart.
"""

from __future__ import annotations

import datetime
import functools
import gc
import os
import tempfile

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from spawned_ranks import run_ranks  # noqa: E402

if not dist.is_available():  # pragma: no cover - builds without torch.distributed
    pytest.skip("torch.distributed is not available in this build", allow_module_level=True)

GROUP_TIMEOUT = datetime.timedelta(seconds=60)
JOB_TIMEOUT_S = 180.0


_run_ranks = functools.partial(run_ranks, timeout=JOB_TIMEOUT_S)


def _model(rank: int, init_file: str):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2, timeout=GROUP_TIMEOUT)
    torch.manual_seed(0)  # the same initial weights on both ranks (DDP broadcasts rank 0's anyway)
    return torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))


def _close() -> None:
    """Destroy the group once the caller has dropped its DDP model: a model
    (its reducer and the gloo work it holds) outliving its group can abort
    the process at exit ("terminate called without an active exception",
    seen on a loaded machine)."""
    gc.collect()
    dist.destroy_process_group()


def _batch(rank: int, micro: int) -> torch.Tensor:
    """Different data on each rank, so unreduced gradients differ."""
    generator = torch.Generator().manual_seed(100 * rank + micro)
    return torch.randn(8, 4, generator=generator)


def _gradients_after_backward(rank: int, mode: str, init_file: str, out_dir: str) -> None:
    """One forward and backward; `mode` is where `no_sync` goes."""
    model = _model(rank, init_file)
    x = _batch(rank, 0)
    if mode == "around_backward":
        loss = model(x).pow(2).mean()
        with model.no_sync():
            loss.backward()
    elif mode == "around_both":
        with model.no_sync():
            loss = model(x).pow(2).mean()
            loss.backward()
    else:
        loss = model(x).pow(2).mean()
        loss.backward()
    gradient = torch.cat([p.grad.flatten() for p in model.parameters()])
    torch.save(gradient, os.path.join(out_dir, f"{mode}-{rank}.pt"))
    del model, loss
    _close()


def _parameters_after_accumulation(rank: int, mode: str, init_file: str, out_dir: str) -> None:
    """Two micro-batches then one SGD step; `mode` says which ran inside `no_sync`."""
    model = _model(rank, init_file)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    accum = 2
    for micro in range(accum):
        x = _batch(rank, micro)
        stepping = micro == accum - 1
        if mode == "all_inside" or (mode == "last_outside" and not stepping):
            with model.no_sync():
                model(x).pow(2).mean().backward()
        else:
            model(x).pow(2).mean().backward()
    optimizer.step()
    parameters = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    torch.save(parameters, os.path.join(out_dir, f"{mode}-{rank}.pt"))
    del optimizer, model
    _close()


def _by_rank(out_dir: str, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    return tuple(torch.load(os.path.join(out_dir, f"{mode}-{r}.pt")) for r in (0, 1))  # type: ignore[return-value]


@pytest.mark.slow
def test_no_sync_around_the_backward_only_still_all_reduces() -> None:
    """DDP026 (b): the forward armed the reducer; `no_sync` after it changes nothing."""
    with tempfile.TemporaryDirectory() as directory:
        for mode in ("around_backward", "around_both", "plain"):
            _run_ranks(_gradients_after_backward, 2, mode, os.path.join(directory, f"init-{mode}"), directory)
        misplaced, inside, plain = (_by_rank(directory, m) for m in ("around_backward", "around_both", "plain"))
    assert torch.allclose(*misplaced), "no_sync around the backward only skipped the all-reduce"
    assert torch.allclose(misplaced[0], plain[0]), "the gradients are not the plain all-reduced ones"
    assert not torch.allclose(*inside), "control: no_sync around forward and backward keeps local gradients"


@pytest.mark.slow
def test_stepping_inside_no_sync_lets_the_ranks_drift() -> None:
    """DDP026 (c): the step uses gradients that were never reduced."""
    with tempfile.TemporaryDirectory() as directory:
        for mode in ("all_inside", "last_outside"):
            _run_ranks(_parameters_after_accumulation, 2, mode, os.path.join(directory, f"init-{mode}"), directory)
        drifted, synced = (_by_rank(directory, m) for m in ("all_inside", "last_outside"))
    assert not torch.allclose(*drifted), "every micro-batch inside no_sync, yet the ranks agree"
    assert torch.allclose(*synced), "control: with the stepping micro-batch synced the ranks agree"
