"""Bringing every rank's results to rank 0.

Over the job's own process group (`gather_object`) when the handshake
formed it; through the rendezvous store otherwise, so that a job whose
process group cannot be formed still gets one report naming what failed.
Every rank also leaves its results in the store, which is where rank 0
looks when the gather itself fails.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ddplint.runtime.context import RankContext, bind_device
from ddplint.runtime.deadline import call_with_timeout

_POLL_SECONDS = 0.05


def gather_results(ctx: RankContext, payload: dict[str, Any]) -> list[dict[str, Any] | None] | None:
    """On rank 0 every rank's payload (None for ranks that sent none); elsewhere None."""
    rank, world = ctx.info.rank, ctx.info.world_size
    if world == 1:
        return [payload]
    store = ctx.rendezvous.store
    if store is None:  # this rank never reached the others
        return [payload, *[None] * (world - 1)] if rank == 0 else None
    store.set(f"result/{rank}", json.dumps(payload))
    if ctx.process_group_ready:
        outcome = call_with_timeout(lambda: _gather_object(ctx, payload), ctx.options.timeout)
        if outcome.ok:
            return outcome.value
    if rank != 0:
        return None
    return _read_from_store(store, world, ctx.rendezvous.arrived, ctx.options.timeout, payload)


def _gather_object(ctx: RankContext, payload: dict[str, Any]) -> list[dict[str, Any] | None] | None:
    import torch.distributed as dist

    bind_device(ctx.device)
    gathered: list[Any] | None = [None] * ctx.info.world_size if ctx.info.rank == 0 else None
    dist.gather_object(payload, gathered, dst=0)
    return gathered


def _read_from_store(
    store: Any, world: int, arrived: list[int], timeout: float, own: dict[str, Any]
) -> list[dict[str, Any] | None]:
    results: list[dict[str, Any] | None] = [own, *[None] * (world - 1)]
    pending = {r for r in arrived if r != 0}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for rank in sorted(pending):
            if store.check([f"result/{rank}"]):
                results[rank] = json.loads(store.get(f"result/{rank}"))
                pending.discard(rank)
        if pending:
            time.sleep(_POLL_SECONDS)
    return results
