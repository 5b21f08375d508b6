"""Facts of the host a rank runs on: cores, memory, shared memory, limits,
taking cgroup (container) limits into account where present."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

GIB = 2**30
MIB = 2**20
_CGROUP = Path("/sys/fs/cgroup")


def cpus_available() -> int:
    """CPUs this process may run on (affinity, then cgroup quota)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return min(cpus, quota) if quota is not None else cpus


def cgroup_cpu_quota() -> int | None:
    """The container's CPU quota in whole CPUs (cgroup v2 cpu.max or v1), if any."""
    try:
        quota, period = (_CGROUP / "cpu.max").read_text().split()
        if quota != "max":
            return max(1, int(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    try:
        quota = int((_CGROUP / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((_CGROUP / "cpu" / "cpu.cfs_period_us").read_text())
        if quota > 0:
            return max(1, quota // period)
    except (OSError, ValueError):
        pass
    return None


def memory_available() -> int:
    """Memory this process can still use: the host's, capped by the cgroup's."""
    import psutil

    available = psutil.virtual_memory().available
    for limit_file, usage_file in (("memory.max", "memory.current"), ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        try:
            limit = (_CGROUP / limit_file).read_text().strip()
            if limit != "max" and int(limit) < 2**60:
                used = int((_CGROUP / usage_file).read_text())
                available = min(available, max(0, int(limit) - used))
        except (OSError, ValueError):
            continue
    return available


def memlock_limit() -> int | None:
    """RLIMIT_MEMLOCK in bytes (None: unlimited, or a platform without it)."""
    try:
        import resource  # POSIX only: imported here so that the doctor runs on Windows
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else soft


def shm_free(path: str = "/dev/shm") -> int | None:
    """Free bytes of the shared-memory file system (None: it does not exist)."""
    if not os.path.isdir(path):
        return None
    return shutil.disk_usage(path).free


def gib(value: float) -> str:
    """Bytes as GiB, or MiB below 1 GiB, or KiB below 1 MiB: ``23.5 GiB``, ``310 MiB``."""
    if abs(value) < MIB:
        return f"{value / 2**10:.0f} KiB"
    if abs(value) < GIB:
        return f"{value / MIB:.0f} MiB"
    return f"{value / GIB:.1f} GiB"
