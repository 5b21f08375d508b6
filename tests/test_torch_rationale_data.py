"""Rationale of the data-pipeline rules, shown with real PyTorch DataLoaders (CPU)."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")
from torch.utils.data import DataLoader, Dataset, DistributedSampler  # noqa: E402


def _orders(set_epoch: bool) -> list[list[int]]:
    """Rank 0's order in epochs 0 and 1."""
    sampler = DistributedSampler(range(64), num_replicas=2, rank=0, shuffle=True, seed=0)
    orders = []
    for epoch in range(2):
        if set_epoch:
            sampler.set_epoch(epoch)
        orders.append(list(sampler))
    return orders


def test_ddp002_without_set_epoch_every_epoch_has_the_same_order() -> None:
    first, second = _orders(set_epoch=False)
    assert first == second
    first, second = _orders(set_epoch=True)
    assert first != second


class SharedRng(Dataset):
    """Flagged by DDP015: the generator is made once, in __init__."""

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def __len__(self) -> int:
        return 8

    def __getitem__(self, idx):
        return torch.tensor([torch.utils.data.get_worker_info().id, self.rng.randrange(10**9)])


class PerWorkerRng(SharedRng):
    """The fix: re-created in each worker from the worker's own seed."""

    def __getitem__(self, idx):
        if getattr(self, "_seeded", None) is None:
            self.rng = random.Random(torch.initial_seed())
            self._seeded = True
        return super().__getitem__(idx)


def _draws_by_worker(dataset: Dataset) -> dict[int, list[int]]:
    loader = DataLoader(dataset, batch_size=None, num_workers=2, multiprocessing_context="fork")
    draws: dict[int, list[int]] = {}
    for sample in loader:
        draws.setdefault(int(sample[0]), []).append(int(sample[1]))
    return draws


@pytest.mark.parametrize(("dataset", "identical"), [(SharedRng(), True), (PerWorkerRng(), False)])
def test_ddp015_forked_workers_copy_the_generator(dataset, identical: bool) -> None:
    draws = _draws_by_worker(dataset)
    assert (draws[0] == draws[1]) is identical


class _MemoryProbe(Dataset):
    """Item 0 reads every item the way __getitem__ would, in the forked worker,
    and returns how much the worker's unique memory (USS) grew meanwhile."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return 1

    def __getitem__(self, idx):
        before = psutil.Process().memory_full_info().uss
        for i in range(self.size):
            self.read(i)
        return torch.tensor(psutil.Process().memory_full_info().uss - before)


class PythonObjects(_MemoryProbe):
    """Flagged by DDP005: a list of distinct Python objects, indexed per item."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.items = [i + 10**9 for i in range(size)]  # distinct int objects

    def read(self, i: int) -> int:
        return self.items[i] % 7


class TensorBacked(_MemoryProbe):
    """The fix: one tensor, no per-item reference counts."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.items = torch.arange(size, dtype=torch.int64) + 10**9

    def read(self, i: int) -> int:
        return int(self.items[i]) % 7


def _worker_growth(dataset: _MemoryProbe) -> int:
    """USS growth of a forked DataLoader worker while it reads the dataset, in bytes."""
    loader = DataLoader(dataset, batch_size=None, num_workers=1, multiprocessing_context="fork")
    (growth,) = [int(g) for g in loader]
    return growth


@pytest.mark.slow
def test_ddp005_indexing_python_objects_copies_pages_into_the_worker() -> None:
    size = 400_000  # ~11 MiB of int objects
    python_growth = _worker_growth(PythonObjects(size))
    tensor_growth = _worker_growth(TensorBacked(size))
    assert python_growth > 8 * 2**20, python_growth
    assert tensor_growth < python_growth / 4, (tensor_growth, python_growth)
