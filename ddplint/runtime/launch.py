"""`ddplint doctor` without a launcher: start N local ranks itself, so that
one command self-tests a node (`--nproc-per-node`, default: the visible GPUs,
or 2 on CPU).

Each rank is a Python process running `ddplint.runtime.rank` with torchrun's
variables set (a free port on 127.0.0.1 for the store) and the request in
``DDPLINT_DOCTOR_REQUEST``. It runs in the working directory (the user's
relative paths) but without it on ``sys.path``: ``python -m`` would put it
first, and a ``json.py`` or ``numpy.py`` there would be imported and run by
torch and ddplint themselves. Only a probe asks for the user's module, and
it adds the directory itself (`ddplint.runtime.probes.loader.resolve`).
Rank 0 writes the report to this process's standard output; the others'
output is shown only if they fail. Ranks bound their own waits by
``--timeout``; this process also kills them if they outlive a generous
limit, so the command can never hang.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

from ddplint.runtime.context import REQUEST_VARIABLE, DoctorRequest

#: Ranks are killed after this many times --timeout (plus the probes' time).
_OVERALL_TIMEOUTS = 6
_POLL_SECONDS = 0.1
#: A rank's program: ``-c`` puts the working directory first on sys.path (as
#: ``-m`` does) unless -P/PYTHONSAFEPATH already kept it off; drop it before
#: anything is imported from there.
_RANK_PROGRAM = (
    "import sys\n"
    "if not getattr(sys.flags, 'safe_path', False):\n"
    "    del sys.path[0]\n"
    "from ddplint.runtime.rank import main\n"
    "main()\n"
)


def default_nproc() -> int:
    """The visible GPUs, or 2 on a CPU-only host."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 2


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(request: DoctorRequest, rank: int, nproc: int, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0",
        "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        REQUEST_VARIABLE: request.to_json(),
    }  # fmt: skip


def spawn_local(request: DoctorRequest, nproc: int) -> int:
    """Run `nproc` ranks on this host; rank 0's exit status."""
    port = free_port()
    logs = [tempfile.TemporaryFile() for _ in range(nproc)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RANK_PROGRAM],
            env=_environment(request, rank, nproc, port),
            stdout=None if rank == 0 else logs[rank],  # its verdict, shown if it fails
            stderr=None if rank == 0 else logs[rank],
            cwd=request.options.cwd,
        )
        for rank in range(nproc)
    ]
    limit = _OVERALL_TIMEOUTS * request.options.timeout + (60 if request.options.step or request.options.dataset else 0)
    try:
        return _wait(procs, logs, limit)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for log in logs:
            log.close()


def _wait(procs: list[subprocess.Popen[bytes]], logs: list[object], limit: float) -> int:
    deadline = time.monotonic() + limit
    while procs[0].poll() is None and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    if procs[0].poll() is None:
        print(f"ddplint: error: rank 0 did not finish within {limit:.0f} s; stopped every rank", file=sys.stderr)
        return 2
    grace = time.monotonic() + (0 if procs[0].returncode == 2 else 10)
    while any(p.poll() is None for p in procs) and time.monotonic() < grace:
        time.sleep(_POLL_SECONDS)
    for rank, proc in enumerate(procs[1:], start=1):
        if proc.poll() not in (0, None):
            log = logs[rank]
            log.seek(0)  # type: ignore[attr-defined]
            tail = log.read().decode(errors="replace").strip().splitlines()[-5:]  # type: ignore[attr-defined]
            print(f"ddplint: rank {rank} exited with status {proc.returncode}", file=sys.stderr)
            for line in tail:
                print(f"  rank {rank}: {line}", file=sys.stderr)
    return procs[0].returncode
