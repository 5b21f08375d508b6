"""The RT007 probe: run the user's training step N times and record memory
after each: CUDA's peak allocated memory (under autocast) on a GPU, the
process's resident set on the CPU."""

from __future__ import annotations

import contextlib
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ddplint.runtime.deadline import abandoned
from ddplint.runtime.probes.curve import Curve
from ddplint.runtime.progress import progress


class StepTimeout(Exception):
    """A step did not return within the timeout."""


@dataclass(frozen=True)
class StepProbe:
    curve: Curve  # bytes after each step
    measure: str  # what was measured


def _meter(device: str) -> tuple[str, Callable[[], int]]:
    import torch

    if device.startswith("cuda"):
        return "torch.cuda.max_memory_allocated", lambda: torch.cuda.max_memory_allocated(device)
    import psutil

    process = psutil.Process()
    return "resident set size", lambda: process.memory_info().rss


def _autocast(device: str) -> Any:
    import torch

    return torch.autocast("cuda") if device.startswith("cuda") else contextlib.nullcontext()


def probe_steps(step: Callable[[], Any], *, steps: int, device: str, timeout: float) -> StepProbe:
    """Call `step()` `steps` times in a worker thread, each within `timeout` seconds."""
    measure, meter = _meter(device)
    done: queue.Queue[tuple[int, BaseException | None]] = queue.Queue()
    values: list[int] = []

    def loop() -> None:
        import torch

        if device.startswith("cuda"):
            torch.cuda.set_device(device)
        try:
            for index in range(steps):
                with _autocast(device):
                    step()
                values.append(meter())
                done.put((index, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            done.put((-1, exc))

    threading.Thread(target=loop, name="ddplint-step-probe", daemon=True).start()
    with progress("RT007 memory plateau", steps) as bar:
        for index in range(steps):
            try:
                _, error = done.get(timeout=timeout)
            except queue.Empty:
                abandoned.set()
                raise StepTimeout(f"step {index + 1} did not return within {timeout:.0f} s") from None
            if error is not None:
                raise error
            bar.advance()
    return StepProbe(Curve(list(range(1, steps + 1)), values), measure)
