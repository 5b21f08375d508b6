"""User code for the doctor's probes (RT006, RT007): flagged and clean twins.

Imported by `ddplint doctor --dataset doctor_targets:...` / `--step ...` with
this directory as the working directory.
"""

from __future__ import annotations

import time

import torch
from torch.utils.data import Dataset

SIZE = 1_000_000  # about 30 MiB of int objects: copied into every worker as it reads them


class PythonObjects(Dataset):
    """The copy-on-read case (pytorch/pytorch#13246): one int object per sample."""

    def __init__(self) -> None:
        self.items = [i + 10**9 for i in range(SIZE)]

    def __len__(self) -> int:
        return SIZE

    def __getitem__(self, index: int) -> int:
        return self.items[index] % 7


class TensorBacked(Dataset):
    """The same samples in one tensor: no reference counts to write."""

    def __init__(self) -> None:
        self.items = torch.arange(SIZE, dtype=torch.int64) + 10**9

    def __len__(self) -> int:
        return SIZE

    def __getitem__(self, index: int) -> int:
        return int(self.items[index]) % 7


def python_objects() -> Dataset:
    return PythonObjects()


def tensor_backed() -> Dataset:
    return TensorBacked()


def leaking_step(batch_size: int, device: torch.device):
    """A step that keeps every output alive: memory never plateaus."""
    model = torch.nn.Linear(256, 256).to(device)
    kept = []

    def step() -> None:
        out = model(torch.randn(batch_size, 256, device=device))
        out.sum().backward()
        kept.append(torch.empty(2 * 2**20, dtype=torch.uint8, device=device).fill_(1))  # 2 MiB per step, touched

    return step


def clean_step(batch_size: int, device: torch.device):
    """A step that lets go of everything: memory plateaus after the first steps."""
    model = torch.nn.Linear(256, 256).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = model(torch.randn(batch_size, 256, device=device)).square().mean()
        loss.backward()
        optimizer.step()
        scratch = torch.empty(2 * 2**20, dtype=torch.uint8, device=device).fill_(1)  # freed every step
        del scratch

    return step


def not_a_factory_result():
    return 42


def broken_dataset() -> Dataset:
    raise RuntimeError("the data directory /data/train does not exist")


def loss_appending_step(batch_size: int, device: torch.device):
    """The common slow leak: every loss is kept with its graph (for a running
    average, a log) and memory grows by a few KiB per step, never reaching a
    plateau; each step on its own looks fine."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = model(torch.randn(batch_size, 256, device=device)).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss)  # the graph's saved tensors stay alive with it

    return step


class Slow(Dataset):
    """A realistically slow dataset (decoding, augmentation): `delay` seconds a
    sample, far more samples than a probe can read in its budget."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, index: int) -> int:
        time.sleep(self.delay)
        return index % 7


def slow_dataset() -> Dataset:
    return Slow(0.001)


def very_slow_dataset() -> Dataset:
    return Slow(0.05)


def ten_ms_dataset() -> Dataset:
    """Decoding-speed samples that store nothing: the workers' memory rises
    while they start and then stays flat (issue 33)."""
    return Slow(0.01)
