"""Running a function on several spawned ranks, for the rationale tests on real torch."""

from __future__ import annotations

import time

import pytest
import torch.multiprocessing as mp


def run_ranks(fn, nprocs: int, *args, timeout: float) -> None:
    """Run fn(rank, *args) in `nprocs` spawned processes; fail (and kill
    them) if they have not all finished within `timeout` seconds. A rank
    that raises fails the test with its traceback (mp's ProcessRaisedException)."""
    context = mp.start_processes(fn, args=args, nprocs=nprocs, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout
    try:
        while not context.join(timeout=0.2):
            if time.monotonic() > deadline:
                pytest.fail(f"the {nprocs} ranks did not finish within {timeout:.0f} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
            process.join()
