"""Meeting the other ranks: the rendezvous store and a check-in that names
the ranks that never arrived.

Under torchrun (and any launcher that sets MASTER_ADDR/MASTER_PORT) every rank
connects to the job's TCPStore: torchrun's agent hosts it when
``TORCHELASTIC_USE_AGENT_STORE`` is set, otherwise rank 0 does. Each rank
writes ``arrived/<rank>``; rank 0 waits up to the timeout for all of them and
publishes the verdict (who arrived, who is missing), which every other rank
reads, so all ranks agree whether the process group can be formed at all
before anyone blocks in `init_process_group`. A one-rank run needs no store
(an in-memory one is used).

Connecting has a hard deadline of its own: TCPStore's timeout does not bound
its retries (a port with nothing behind it takes three times as long), and a
peer that accepts the connection and never answers holds a client forever.
The connection is made in a thread that is abandoned at the deadline, and
the failure is then diagnosed with a plain TCP connection, so that the
finding says whether nothing listens there, nothing answers, or something
that is not a store does.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ddplint.runtime.context import RankInfo
from ddplint.runtime.deadline import call_with_timeout

_POLL_SECONDS = 0.05
#: Seconds the diagnosing TCP connection may take.
_DIAGNOSIS_SECONDS = 1.0


@dataclass
class Rendezvous:
    """This rank's view of the check-in."""

    info: RankInfo
    store: Any = None
    arrived: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    endpoint: str = ""

    @property
    def complete(self) -> bool:
        """Every rank checked in and this rank knows it."""
        return self.store is not None and not self.missing and not self.error

    @classmethod
    def join(cls, info: RankInfo, timeout: float) -> Rendezvous:
        """Connect to the store and check in (at most about 2 × `timeout`)."""
        import torch.distributed as dist

        start = time.monotonic()
        if info.world_size == 1:
            return cls(info, dist.HashStore(), arrived=[0], endpoint="in-process")
        addr, raw_port = os.environ.get("MASTER_ADDR", "127.0.0.1"), os.environ.get("MASTER_PORT", "29500")
        endpoint = f"{addr}:{raw_port}"
        if not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
            return cls(info, None, error=f"MASTER_PORT={raw_port!r} is not a port number", endpoint=endpoint)
        port = int(raw_port)
        outcome = call_with_timeout(lambda: _connect(info, addr, port, timeout), timeout)
        if not outcome.ok and _hosts_store(info):
            error = f"could not host the rendezvous store at {endpoint}: {outcome.describe()}"
            return cls(info, None, error=error, seconds=time.monotonic() - start, endpoint=endpoint)
        if not outcome.ok:
            error = f"could not reach the rendezvous store at {endpoint} within {timeout:.0f} s: {diagnose(addr, port)}"
            return cls(info, None, error=error, seconds=time.monotonic() - start, endpoint=endpoint)
        rendezvous = cls(info, outcome.value, endpoint=endpoint)
        rendezvous._check_in(timeout)
        rendezvous.seconds = time.monotonic() - start
        return rendezvous

    def _check_in(self, timeout: float) -> None:
        rank, world = self.info.rank, self.info.world_size
        self.store.set(f"arrived/{rank}", self.info.hostname)
        if rank == 0:
            self.arrived, self.missing = _wait_for_ranks(self.store, world, timeout)
            self.store.set("verdict", json.dumps({"arrived": self.arrived, "missing": self.missing}))
            return
        try:
            self.store.wait(["verdict"], timedelta(seconds=2 * timeout))
            verdict = json.loads(self.store.get("verdict"))
            self.arrived, self.missing = verdict["arrived"], verdict["missing"]
        except Exception:  # noqa: BLE001 - rank 0 vanished after connecting
            self.error = f"rank 0 published no check-in verdict within {2 * timeout:.0f} s"

    def describe_missing(self) -> str:
        ranks = ", ".join(map(str, self.missing))
        noun = "rank" if len(self.missing) == 1 else "ranks"
        return f"{noun} {ranks} of {self.info.world_size} did not arrive"


def _connect(info: RankInfo, addr: str, port: int, timeout: float) -> Any:
    import torch.distributed as dist

    store = dist.TCPStore(
        addr, port, is_master=_hosts_store(info),
        timeout=timedelta(seconds=timeout), wait_for_workers=False,
    )  # fmt: skip
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"ddplint-doctor/{attempt}/", store)


def _hosts_store(info: RankInfo) -> bool:
    """Rank 0 hosts the store, unless torchrun's agent does."""
    return info.rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() != "true"


def diagnose(addr: str, port: int) -> str:
    """Why a store at `addr:port` could not be reached, from a plain TCP connection."""
    try:
        socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return f"the host name {addr!r} does not resolve ({exc.strerror or exc}); check MASTER_ADDR"
    try:
        with socket.create_connection((addr, port), timeout=_DIAGNOSIS_SECONDS):
            pass
    except ConnectionRefusedError:
        return "nothing listens there (connection refused): rank 0 is not up, or MASTER_PORT differs"
    except TimeoutError:
        return "no answer to a TCP connection (a wrong MASTER_ADDR, or a firewall drops it)"
    except OSError as exc:
        return f"cannot connect ({exc.strerror or exc})"
    return "something accepts connections there but did not answer as a store (another program on MASTER_PORT?)"


def _wait_for_ranks(store: Any, world: int, timeout: float) -> tuple[list[int], list[int]]:
    """Ranks that checked in within `timeout`, and those that did not."""
    deadline = time.monotonic() + timeout
    pending = set(range(world))
    while pending:
        pending = {r for r in pending if not store.check([f"arrived/{r}"])}
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(_POLL_SECONDS)
    return sorted(set(range(world)) - pending), sorted(pending)
