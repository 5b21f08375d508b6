"""Who this rank is, what it was asked to check, and the results so far."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

#: How the launcher hands a rank its request (JSON).
REQUEST_VARIABLE = "DDPLINT_DOCTOR_REQUEST"


@dataclass(frozen=True)
class DoctorOptions:
    """`ddplint doctor`'s options (SPEC §3)."""

    backend: str = "auto"
    nproc_per_node: int | None = None
    num_workers: int | None = None  # not given: the checks that need it say so
    prefetch_factor: int = 2
    batch_bytes: int | None = None
    shm_gib: float | None = None
    timeout: float = 60.0
    dataset: str | None = None
    step: str | None = None
    steps: int = 100
    batch_size: int = 32
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    cwd: Path = field(default_factory=Path.cwd)

    def wants(self, code: str) -> bool:
        """Whether `--only`/`--skip` select the check."""
        if self.only and not any(code.startswith(c) for c in self.only):
            return False
        return not any(code.startswith(c) for c in self.skip)

    def resolved_backend(self, cuda_available: bool) -> str:
        if self.backend == "auto":
            return "nccl" if cuda_available else "gloo"
        return self.backend


@dataclass(frozen=True)
class DoctorRequest:
    """Everything `ddplint doctor` was asked to do, as every rank receives it."""

    options: DoctorOptions = field(default_factory=DoctorOptions)
    output_format: str = "text"
    output: str | None = None
    #: `--html FILE`: rank 0 also writes the report as a self-contained page.
    html: str | None = None
    fail_on: str = "warning"
    exit_zero: bool = False
    debug: bool = False
    color: bool = False
    #: SARIF: where results are shown (they are about the machine, not a
    #: file; see `ddplint.runtime.location`), and the code-scanning category.
    sarif_location: str | None = None
    sarif_category: str | None = None

    def to_json(self) -> str:
        data = asdict(self)
        data["options"]["cwd"] = str(self.options.cwd)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> DoctorRequest:
        data = json.loads(text)
        raw = data.pop("options")
        options = DoctorOptions(**{**raw, "cwd": Path(raw["cwd"]), "only": tuple(raw["only"]), "skip": tuple(raw["skip"])})
        return cls(options=options, **data)

    def output_for(self, rank: int) -> str | None:
        """This rank's output file: rank 0 writes the report; others only to a `{rank}` path."""
        if self.output is None or "{rank}" not in self.output:
            return self.output if rank == 0 else None
        return self.output.replace("{rank}", str(rank))

    def writes(self, rank: int) -> bool:
        return rank == 0 or (self.output is not None and "{rank}" in self.output)

    def with_options(self, **changes: Any) -> DoctorRequest:
        return replace(self, options=replace(self.options, **changes))


@dataclass(frozen=True)
class RankInfo:
    """A rank's place in the job."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    hostname: str = field(default_factory=socket.gethostname)

    @classmethod
    def single(cls) -> RankInfo:
        """A run without a launcher: one rank."""
        return cls(0, 1, 0, 1)

    @classmethod
    def from_environment(cls) -> RankInfo | None:
        """From torchrun's (or a launcher's) variables; None when not launched.

        Raises `ValueError` (one line, naming the variable) when they are not
        a rank in a world: reports carry the launcher's values, never a guess.
        """
        env = os.environ
        if "RANK" not in env or "WORLD_SIZE" not in env:
            return None
        rank, world = _whole_number(env, "RANK", None), _whole_number(env, "WORLD_SIZE", None)
        local_rank = _whole_number(env, "LOCAL_RANK", rank)
        local_world = _whole_number(env, "LOCAL_WORLD_SIZE", world)
        if world < 1 or rank >= world:
            raise ValueError(f"RANK={rank} WORLD_SIZE={world}: the rank must be below the world size")
        if local_rank >= local_world:
            raise ValueError(f"LOCAL_RANK={local_rank} LOCAL_WORLD_SIZE={local_world}: the local rank must be below it")
        return cls(rank, world, local_rank, local_world)

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "world_size": self.world_size, "local_rank": self.local_rank,
                "local_world_size": self.local_world_size, "hostname": self.hostname}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RankInfo:
        return cls(data["rank"], data["world_size"], data["local_rank"], data["local_world_size"], data["hostname"])


def _whole_number(env: Mapping[str, str], name: str, default: int | None) -> int:
    """The launcher's variable `name` as an integer >= 0 (`default` when unset)."""
    if name not in env and default is not None:
        return default
    try:
        value = int(env[name])
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{name}={env[name]!r}: expected a whole number (set by the launcher)")
    return value


@dataclass
class RankContext:
    """What a check reads: options, this rank, the job's backend and device."""

    options: DoctorOptions
    info: RankInfo
    backend: str
    device: str = "cpu"
    #: The check-in with the other ranks (`ddplint.runtime.rendezvous.Rendezvous`).
    rendezvous: Any = None
    #: Set by RT003 once init, all_reduce and barrier passed on this rank.
    process_group_ready: bool = False
    #: The user's factories for the probes, imported on rank 0: "dataset", "step".
    factories: dict[str, Any] = field(default_factory=dict)


def bind_device(device: str) -> None:
    """Make `device` current in the calling thread (CUDA's is per thread)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.set_device(device)
