"""The environment record (RT008): what a result must be kept with.

Versions of Python, torch, CUDA, cuDNN, NCCL and the driver, the GPU models,
the variables that steer NCCL, torch and the rendezvous, cores and memory —
so that a report read weeks later says on what it was measured.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from typing import Any

from ddplint.runtime import host

#: Variables recorded by prefix; values of the others are never read.
ENV_PREFIXES = ("NCCL_", "TORCH_", "MASTER_", "CUDA_VISIBLE_DEVICES", "TORCHELASTIC_", "OMP_NUM_THREADS")
#: Variables that may hold secrets are recorded as set, not by value.
_SECRET_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "KEY")


def relevant_variables(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The NCCL_*/TORCH_*/MASTER_*/CUDA_VISIBLE_DEVICES variables, sorted."""
    environ = dict(os.environ if environ is None else environ)
    chosen = {k: v for k, v in environ.items() if k.startswith(ENV_PREFIXES)}
    return {k: ("<set>" if any(m in k for m in _SECRET_MARKERS) else v) for k, v in sorted(chosen.items())}


def _driver_version() -> str | None:
    """The NVIDIA driver version, from the kernel module or nvidia-smi."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as handle:
            words = handle.readline().split()
        return next((w for w in words if w[:1].isdigit() and "." in w), None)
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
        return out.stdout.splitlines()[0].strip() or None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _torch_record() -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    nccl = None
    if torch.distributed.is_available() and torch.distributed.is_nccl_available():
        version = torch.cuda.nccl.version()
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "nccl": nccl,
        "cuda_available": cuda,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "distributed_backends": [
            name for name, ok in (("gloo", torch.distributed.is_gloo_available()),
                                  ("nccl", torch.distributed.is_nccl_available())) if ok
        ] if torch.distributed.is_available() else [],
    }  # fmt: skip


def environment_record() -> dict[str, Any]:
    """This rank's record; every value plain JSON."""
    import psutil

    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        **_torch_record(),
        "driver": _driver_version(),
        "cpus": os.cpu_count(),
        "cpus_available": host.cpus_available(),
        "memory_bytes": psutil.virtual_memory().total,
        "memory_available_bytes": host.memory_available(),
        "variables": relevant_variables(),
    }
