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

#: Samples of the workers' memory over an epoch, and over the time budget:
#: a fast dataset gets them from the epoch, a slow one from the clock.
_SAMPLES = 40


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
    """Iterate `dataset` for at most `window` seconds (or one epoch) and sample USS.

    A sample is due every 1/40 of the epoch's batches or of the window,
    whichever comes first: a dataset too slow to finish an epoch in the
    window is still sampled about 40 times. The progress bar counts the
    window, the probe's own budget, not the epoch.
    """
    import psutil
    from torch.utils.data import DataLoader

    loader = DataLoader(
        dataset, batch_size=batch_size, num_workers=workers, prefetch_factor=prefetch_factor,
        collate_fn=count_samples, timeout=window,
    )  # fmt: skip
    length = _length(dataset)
    batches = _length(loader)
    every = max(1, batches // _SAMPLES) if batches else None
    interval = window / _SAMPLES
    me = psutil.Process()
    before = {p.pid for p in me.children()}
    positions: list[int] = []
    values: list[int] = []
    start = time.monotonic()
    seen, last_sample, exhausted = 0, start, True
    epoch = f" of {length:,}" if length else ""
    with progress("RT006 worker memory", window, unit="s") as bar:
        for index, count in enumerate(loader):
            seen += count
            now = time.monotonic()
            bar.update(now - start, f"RT006 worker memory: {seen:,}{epoch} samples")
            due = (every is not None and (index + 1) % every == 0) or now - last_sample >= interval
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
