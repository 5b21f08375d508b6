"""Rationale of DDP001, DDP016-DDP021, shown with real PyTorch (CPU, gloo;
DDP016 and DDP020 only where a GPU is present).

Every multi-rank test runs its ranks in spawned processes under a
wall-clock limit (`_run_ranks`), and every collective that could wait
for a rank that never comes has a timeout of a few seconds.
"""

from __future__ import annotations

import datetime
import functools
import gc
import io
import os
import tempfile
import time
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from spawned_ranks import run_ranks  # noqa: E402

if not dist.is_available():  # pragma: no cover - builds without torch.distributed
    pytest.skip("torch.distributed is not available in this build", allow_module_level=True)

# A group's own timeout: how long a rank waits in a collective (or in the
# rendezvous) for a rank that does not come, before the call raises.
GROUP_TIMEOUT = datetime.timedelta(seconds=60)
# The wall-clock limit for a whole multi-rank job, start-up included.
JOB_TIMEOUT_S = 120.0


def _init(rank: int, world_size: int, init_file: str) -> None:
    url = f"file://{init_file}"
    dist.init_process_group(
        "gloo", init_method=url, rank=rank, world_size=world_size, timeout=GROUP_TIMEOUT
    )


_run_ranks = functools.partial(run_ranks, timeout=JOB_TIMEOUT_S)


@pytest.fixture
def single_rank_group():
    with tempfile.TemporaryDirectory() as directory:
        _init(0, 1, os.path.join(directory, "init"))
        try:
            yield
        finally:
            dist.destroy_process_group()


# --- DDP019 clip-before-unscale ---------------------------------------------


def _update(mode: str, max_norm: float, scale: float) -> torch.Tensor:
    """The parameter change of one SGD step on a fixed batch, with clipping
    done as `mode` says: "fp32" (no scaler), "scaled" (clip while the
    gradients are still scaled) or "unscaled" (scaler.unscale_ first)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), 10 * torch.randn(16, 1)
    before = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if mode == "fp32":
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
    else:
        scaler = torch.amp.GradScaler("cpu", init_scale=scale)
        assert scaler.is_enabled()
        scaler.scale(loss).backward()
        if mode == "unscaled":
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)
        scaler.update()
        assert scaler.get_scale() >= scale, "the step was skipped (inf/nan gradients)"
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach() - before


# max_norm=1 clips the true gradient too (its norm is ~19); max_norm=100
# would not clip it at all, yet still clips the scaled one.
@pytest.mark.parametrize("max_norm", [1.0, 100.0])
def test_ddp019_clipping_scaled_gradients_shrinks_the_step(max_norm: float) -> None:
    scale = 2.0**16  # GradScaler's default initial scale
    reference = _update("fp32", max_norm, scale)
    clipped_scaled = _update("scaled", max_norm, scale)
    unscaled_first = _update("unscaled", max_norm, scale)

    torch.testing.assert_close(unscaled_first, reference)  # the fix: same step as without AMP
    assert not torch.allclose(clipped_scaled, reference)
    assert clipped_scaled.norm() < reference.norm() / 1000
    # The clip cut the scaled norm to max_norm; unscaling then divided by the scale:
    # the step has norm lr * max_norm / scale, whatever the true gradient was.
    torch.testing.assert_close(clipped_scaled.norm(), torch.tensor(0.1 * max_norm / scale))


# --- DDP018 wrap-order --------------------------------------------------------


def _wrap(model: torch.nn.Module, kind: str) -> torch.nn.Module:
    if kind == "FullyShardedDataParallel":
        from torch.distributed.fsdp import FullyShardedDataParallel

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NO_SHARD on one rank; deprecation notices
            # On a machine without an accelerator FSDP1 needs to be told the CPU.
            return FullyShardedDataParallel(model, device_id=torch.device("cpu"))
    from torch.distributed.fsdp import fully_shard

    return fully_shard(model)


def _full(parameter: torch.Tensor) -> torch.Tensor:
    """A parameter's whole value (fully_shard's are DTensors)."""
    value = parameter.detach().clone()  # on one rank full_tensor() may alias the shard
    return value.full_tensor() if hasattr(value, "full_tensor") else value


def _steps_change_the_model(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> bool:
    before = [_full(p) for p in model.parameters()]
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
    return any(not torch.equal(b, _full(p)) for b, p in zip(before, model.parameters()))


@pytest.mark.parametrize("kind", ["FullyShardedDataParallel", "fully_shard"])
def test_ddp018_optimizer_built_before_fsdp_updates_nothing(kind: str, single_rank_group) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    built_before = torch.optim.SGD(model.parameters(), lr=0.1)
    wrapped = _wrap(model, kind)
    built_after = torch.optim.SGD(wrapped.parameters(), lr=0.1)

    held = {id(p) for group in built_before.param_groups for p in group["params"]}
    assert not held & {id(p) for p in wrapped.parameters()}, "FSDP kept the original parameters"
    assert not _steps_change_the_model(wrapped, built_before)
    assert all(p.grad is None for group in built_before.param_groups for p in group["params"])
    assert _steps_change_the_model(wrapped, built_after)  # the fix: build it after wrapping


# --- DDP017 forward-bypasses-ddp ----------------------------------------------


def _weight_spread(ddp_model) -> float:
    """The largest difference between the two ranks' weights (a collective: every rank calls it)."""
    weights = torch.nn.utils.parameters_to_vector(ddp_model.module.parameters()).detach()
    gathered = [torch.zeros_like(weights) for _ in range(2)]
    dist.all_gather(gathered, weights)
    return float((gathered[0] - gathered[1]).abs().max())


def _in_group(train, rank: int, init_file: str, out) -> None:
    """Run `train(rank, out)` in a two-rank gloo group. Its DDP models are its
    own locals, freed before the group is destroyed: a reducer outliving its
    group aborted the process at exit now and then (SIGABRT, "terminate
    called without an active exception")."""
    _init(rank, 2, init_file)
    try:
        train(rank, out)
        gc.collect()
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _train_two_ranks(rank: int, init_file: str, out) -> None:
    _in_group(_through_module_or_wrapper, rank, init_file, out)


def _through_module_or_wrapper(rank: int, out) -> None:
    """Each rank trains on its own batches, once calling the DDP model and
    once its bare module; rank 0 reports how far the replicas' weights differ."""
    from torch.nn.parallel import DistributedDataParallel

    for through_module in (True, False):
        torch.manual_seed(0)
        ddp_model = DistributedDataParallel(torch.nn.Linear(8, 1))
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
        data = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
        forward = ddp_model.module if through_module else ddp_model
        for _ in range(3):
            x, y = torch.randn(16, 8, generator=data), torch.randn(16, 1, generator=data)
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(forward(x), y).backward()
            optimizer.step()
        spread = _weight_spread(ddp_model)
        if rank == 0:
            out["ddp_model.module(x)" if through_module else "ddp_model(x)"] = spread


@pytest.mark.slow
def test_ddp017_forward_through_module_lets_the_replicas_drift(tmp_path) -> None:
    with mp.Manager() as manager:
        out = manager.dict()
        _run_ranks(_train_two_ranks, 2, str(tmp_path / "init"), out)
        difference = dict(out)
    # No gradient was all-reduced: each rank stepped with its own.
    assert difference["ddp_model.module(x)"] > 1e-3, difference
    # DDP's forward arms the all-reduce: the replicas stay identical.
    assert difference["ddp_model(x)"] == 0.0, difference


class _TwoHeads(torch.nn.Module):
    """`forward` uses `body` and `head`; `extra` is reached only by calling it."""

    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 1)
        self.extra = torch.nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.body(x))


def _bypass_shapes(rank: int, init_file: str, out) -> None:
    _in_group(_bypass_steps, rank, init_file, out)


def _bypass_steps(rank: int, out) -> None:
    """Three steps per shape on each rank's own batches; rank 0 reports how
    far the replicas' weights differ, or the error the backward raised."""
    from torch.nn.parallel import DistributedDataParallel

    for shape, unused in (("child", False), ("mixed", False), ("mixed", True)):
        torch.manual_seed(0)
        ddp_model = DistributedDataParallel(_TwoHeads(), find_unused_parameters=unused)
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
        data = torch.Generator().manual_seed(100 + rank)
        key = f"{shape}, find_unused_parameters={unused}"
        try:
            for _ in range(3):
                a, b = torch.randn(16, 8, generator=data), torch.randn(16, 8, generator=data)
                optimizer.zero_grad()
                if shape == "child":  # `model.module.head(model.module.body(x))`
                    loss = ddp_model.module.head(ddp_model.module.body(a)).pow(2).mean()
                else:  # `model(a) + model.module.extra(b)`
                    loss = ddp_model(a).sum() + ddp_model.module.extra(b).sum()
                loss.backward()
                optimizer.step()
        except RuntimeError as error:
            out[key] = str(error)
            continue
        spread = _weight_spread(ddp_model)
        if rank == 0:
            out[key] = spread


@pytest.mark.slow
def test_ddp017_child_forwards_drift_and_a_mixed_step_is_fragile(tmp_path) -> None:
    with mp.Manager() as manager:
        out = manager.dict()
        _run_ranks(_bypass_shapes, 2, str(tmp_path / "init"), out)
        found = dict(out)
    # Children of the bare module (CLIP's encode_*, a backbone): nothing is reduced.
    assert found["child, find_unused_parameters=False"] > 1e-3, found
    # The wrapper's forward in the same step armed the reducer: the sum is reduced
    # (hence a warning, not an error) ...
    assert found["mixed, find_unused_parameters=False"] == 0.0, found
    # ... but with find_unused_parameters a parameter only the bypass reaches breaks the backward.
    assert "mark a variable ready only once" in str(found["mixed, find_unused_parameters=True"]), found


# --- DDP021 rank-zero-write-without-barrier / DDP001 ---------------------------


def _write_then_read(rank: int, init_file: str, directory: str, out) -> None:
    """Rank 0 writes a checkpoint after slow work; rank 1 reads it, first
    with no barrier between (DDP021), then after a barrier on every rank."""
    _init(rank, 2, init_file)
    try:
        for attempt, barrier in (("no_barrier", False), ("barrier", True)):
            path = os.path.join(directory, f"{attempt}.pt")
            if rank == 0:
                time.sleep(1.0 if barrier else 2.0)  # the slow work before the write
                torch.save({"step": 7}, path)
            if barrier:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=5))
            if rank == 1:
                try:
                    out[attempt] = torch.load(path)["step"]
                except Exception as error:  # noqa: BLE001 - the error is the result
                    out[attempt] = type(error).__name__
            dist.barrier()  # both attempts start together
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_ddp021_other_rank_reads_before_rank_zero_has_written(tmp_path) -> None:
    with mp.Manager() as manager:
        out = manager.dict()
        _run_ranks(_write_then_read, 2, str(tmp_path / "init"), str(tmp_path), out)
        results = dict(out)
    assert results["no_barrier"] == "FileNotFoundError"
    assert results["barrier"] == 7


MONITOR_TIMEOUT_S = 1.0


def _guarded_barrier(rank: int, init_file: str, scenario: str, rank0_done, out) -> None:
    """scenario "never": only rank 0 reaches the barrier (`if rank == 0:`,
    DDP001). scenario "late": rank 1 reaches it at once, rank 0 only after
    slow work longer than the group's timeout."""
    _init(rank, 2, init_file)
    try:
        # A group whose own timeout is short (the default group's covers the start-up).
        group = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=MONITOR_TIMEOUT_S))
        monitor = datetime.timedelta(seconds=MONITOR_TIMEOUT_S)
        started = time.monotonic()
        try:
            if scenario == "never":
                if rank == 0:
                    time.sleep(0.5)
                    dist.monitored_barrier(group, timeout=monitor)
                else:
                    rank0_done.wait(JOB_TIMEOUT_S)  # stay in the group until rank 0 has given up
            else:
                if rank == 0:
                    time.sleep(MONITOR_TIMEOUT_S + 1.5)
                dist.monitored_barrier(group, timeout=monitor)
            out[rank] = ("passed", time.monotonic() - started)
        except Exception as error:  # noqa: BLE001 - the error is the result
            out[rank] = (str(error), time.monotonic() - started)
        finally:
            if rank == 0:
                rank0_done.set()
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_ddp001_monitored_barrier_names_the_rank_that_never_arrives(tmp_path) -> None:
    with mp.Manager() as manager:
        out, rank0_done = manager.dict(), manager.Event()
        _run_ranks(_guarded_barrier, 2, str(tmp_path / "init"), "never", rank0_done, out)
        (message, waited), (other, _) = out[0], out[1]
    assert "Rank 1 failed to pass monitoredBarrier" in message, message
    assert 0.5 + MONITOR_TIMEOUT_S - 0.1 <= waited < 0.5 + MONITOR_TIMEOUT_S + 3, waited
    assert other == "passed"  # rank 1 never entered the barrier


@pytest.mark.slow
def test_ddp001_rank_waiting_early_gives_up_and_names_rank_zero(tmp_path) -> None:
    with mp.Manager() as manager:
        out, rank0_done = manager.dict(), manager.Event()
        _run_ranks(_guarded_barrier, 2, str(tmp_path / "init"), "late", rank0_done, out)
        (message, waited) = out[1]
    # A non-zero rank waits for rank 0 under the group's timeout, then names it.
    assert "received errors while waiting for send/recv from rank 0" in message, message
    assert MONITOR_TIMEOUT_S - 0.1 <= waited < MONITOR_TIMEOUT_S + 3, waited


#: The no_grad test's group timeout: how long rank 0 waits in a blocked buffer
#: broadcast. Long enough that setting the group up, DDP's parameter broadcast
#: and the ranks' arrival at the barrier never time out on a loaded machine
#: (1 s did, at a load of 24 on two cores); the blocked case waits it out once.
NO_GRAD_TIMEOUT_S = 15.0


def _no_grad_forward_on_rank_zero(rank: int, init_file: str, kind: str, out) -> None:
    """Every rank trains one step of a DDP model; then only rank 0 runs a
    forward under `torch.no_grad()` (evaluation on the main process) while
    rank 1 waits in a barrier, which rank 0 joins once its forward returns.
    `kind`: "buffers" (Linear + BatchNorm1d), "no buffers" (Linear + ReLU),
    or "broadcast_buffers=False" (Linear + BatchNorm1d)."""
    from torch.nn.parallel import DistributedDataParallel

    _init(rank, 2, init_file)
    try:
        monitor = datetime.timedelta(seconds=NO_GRAD_TIMEOUT_S)
        group = dist.new_group([0, 1], timeout=monitor)
        torch.manual_seed(0)
        last = torch.nn.ReLU() if kind == "no buffers" else torch.nn.BatchNorm1d(8)
        model = DistributedDataParallel(
            torch.nn.Sequential(torch.nn.Linear(8, 8), last),
            process_group=group,
            broadcast_buffers=kind != "broadcast_buffers=False",
        )
        model(torch.randn(4, 8)).sum().backward()
        started = time.monotonic()
        try:
            if rank == 0:
                with torch.no_grad():
                    model(torch.randn(4, 8))
            dist.monitored_barrier(group, timeout=monitor)
            out[rank] = ("passed", time.monotonic() - started)
        except Exception as error:  # noqa: BLE001 - the error is the result
            out[rank] = (str(error), time.monotonic() - started)
        del model
        gc.collect()
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "blocks"), [("buffers", True), ("no buffers", False), ("broadcast_buffers=False", False)]
)
def test_ddp001_no_grad_forward_of_a_model_with_buffers_is_a_collective(tmp_path, kind: str, blocks: bool) -> None:
    with mp.Manager() as manager:
        out = manager.dict()
        _run_ranks(_no_grad_forward_on_rank_zero, 2, str(tmp_path / "init"), kind, out)
        (message, waited), (other, _) = out[0], out[1]
    if blocks:
        # DDP broadcasts the buffers from rank 0 before the forward, under no_grad
        # too: rank 0 waits for a rank that is in a barrier, until the group's timeout.
        assert message != "passed", message
        assert waited >= NO_GRAD_TIMEOUT_S - 0.1, waited
        assert other != "passed", other
    else:
        # Nothing to broadcast: the forward returns and rank 0 joins the barrier.
        assert (message, other) == ("passed", "passed"), (message, other)
        assert waited < NO_GRAD_TIMEOUT_S, waited


# --- GPU only: DDP016 load-without-map-location, DDP020 cpu-tensor-collective --

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU: a checkpoint with cuda:0 tensors cannot be made on CPU",
)


@needs_cuda
def test_ddp016_load_without_map_location_lands_on_the_saving_gpu() -> None:
    buffer = io.BytesIO()
    torch.save({"weight": torch.ones(4, device="cuda:0")}, buffer)
    buffer.seek(0)
    assert torch.load(buffer)["weight"].device == torch.device("cuda", 0)
    if torch.cuda.device_count() > 1:  # a rank whose own GPU is cuda:1 loads onto cuda:0 too
        with torch.cuda.device(1):
            buffer.seek(0)
            assert torch.load(buffer)["weight"].device == torch.device("cuda", 0)
    buffer.seek(0)
    assert torch.load(buffer, map_location="cpu")["weight"].device == torch.device("cpu")


def _nccl_all_reduce(rank: int, init_file: str, out) -> None:
    torch.cuda.set_device(0)
    url, gpu = f"file://{init_file}", torch.device("cuda", 0)
    dist.init_process_group(
        "nccl", init_method=url, rank=0, world_size=1, timeout=GROUP_TIMEOUT, device_id=gpu
    )
    try:
        try:
            dist.all_reduce(torch.ones(3))
            out["cpu"] = "passed"
        except Exception as error:  # noqa: BLE001 - the error is the result
            out["cpu"] = f"{type(error).__name__}: {error}"
        on_gpu = torch.ones(3, device="cuda:0")
        dist.all_reduce(on_gpu)
        torch.cuda.synchronize()
        out["cuda"] = on_gpu.tolist()
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(
    not (torch.cuda.is_available() and dist.is_nccl_available()),
    reason="needs a CUDA GPU and a torch build with NCCL",
)
def test_ddp020_nccl_all_reduce_of_a_cpu_tensor_raises(tmp_path) -> None:
    with mp.Manager() as manager:
        out = manager.dict()
        _run_ranks(_nccl_all_reduce, 1, str(tmp_path / "init"), out)
        results = dict(out)
    assert results["cpu"] != "passed", "NCCL accepted a CPU tensor"
    error = results["cpu"]
    assert error.startswith(("RuntimeError", "DistBackendError", "ValueError")), error
    assert results["cuda"] == [1.0, 1.0, 1.0]  # the fix: the tensor on the rank's GPU
