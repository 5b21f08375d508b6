"""The RT006 probe: iterate the user's dataset through a real DataLoader and
sample its workers' private memory (USS) as they go.

The collate function only counts the samples, so what is measured is the
dataset's own effect on the workers (copy-on-read of Python objects,
caches that grow), not the batches in flight, and any sample type works.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ddplint.runtime.probes.curve import Curve
from ddplint.runtime.progress import progress

#: Samples of the workers' memory taken over the probe, at most.
_SAMPLES = 40
#: For datasets without a length: sample every so many seconds.
_INTERVAL_SECONDS = 0.25


def count_samples(batch: list[Any]) -> int:
    """The probe's collate_fn: nothing crosses back but the batch size."""
    return len(batch)


@dataclass(frozen=True)
class WorkerProbe:
    """What the probe measured."""

    curve: Curve  # total USS of the workers (bytes) against samples delivered
    workers: int
    samples: int
    dataset_length: int | None
    seconds: float
    exhausted: bool


def _uss(processes: list[Any]) -> int | None:
    import psutil

    total = 0
    for process in processes:
        try:
            total += process.memory_full_info().uss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
    return total


def probe_workers(dataset: Any, *, workers: int, batch_size: int, prefetch_factor: int, window: float) -> WorkerProbe:
    """Iterate `dataset` for at most `window` seconds (or one epoch) and sample USS."""
    import psutil
    from torch.utils.data import DataLoader

    loader = DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, prefetch_factor=prefetch_factor,
        collate_fn=count_samples, timeout=window,
    )  # fmt: skip
    length = _length(dataset)
    batches = _length(loader)
    every = max(1, batches // _SAMPLES) if batches else None
    me = psutil.Process()
    before = {p.pid for p in me.children()}
    positions: list[int] = []
    values: list[int] = []
    seen, start, last_sample, exhausted = 0, time.monotonic(), 0.0, True
    with progress("RT006 worker memory", length) as bar:
        for index, count in enumerate(loader):
            seen += count
            bar.advance(count)
            now = time.monotonic()
            due = (index + 1) % every == 0 if every else now - last_sample >= _INTERVAL_SECONDS
            if due and index > 0:
                uss = _uss([p for p in me.children() if p.pid not in before])
                if uss is not None:
                    positions.append(seen)
                    values.append(uss)
                last_sample = now
            if now - start >= window:
                exhausted = False
                break
    return WorkerProbe(Curve(positions, values), workers, seen, length, time.monotonic() - start, exhausted)


def _length(sized: Any) -> int | None:
    try:
        return len(sized)
    except TypeError:
        return None
