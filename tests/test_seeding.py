"""The model's ``seeds`` analysis (ddplint/analysis/seeding.py), asked with no rule involved:
which seed calls a module makes, with what value, what seeds a generator
before a point, and what a Dataset's own generators are."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.seeding import NUMPY, TORCH, Seeded, owned_generators, process_local_settings
from ddplint.testing import model_of

HEADER = """\
import argparse, random, time
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
dist.init_process_group("nccl")
rank = dist.get_rank()
args = argparse.ArgumentParser().parse_args()
"""


def _seeds(body: str):
    model = model_of(HEADER + textwrap.dedent(body))
    return model, model.model.seeds


def _only(seeds):
    (seed,) = seeds.calls
    return seed


@pytest.mark.parametrize(
    ("call", "uniform"),
    [
        ("torch.manual_seed(42)", True),
        ("torch.manual_seed(args.seed)", True),
        ("np.random.seed(int(args.seed) * 3)", True),
        ("random.seed(cfg.get('seed', 0))", True),
        ("torch.manual_seed(args.seed + rank)", False),
        ("torch.manual_seed(int(time.time()))", False),
        ("torch.manual_seed(base + stage_index)", False),
    ],
)
def test_a_seed_value_is_judged_the_same_on_every_rank_only_when_it_certainly_is(call: str, uniform: bool) -> None:
    _, seeds = _seeds(f"cfg = {{}}\n{call}\n")
    assert _only(seeds).uniform is uniform


def test_a_seed_setting_the_module_draws_per_process_is_not_uniform() -> None:
    _, seeds = _seeds("args.seed = random.randint(1, 1000)\ntorch.manual_seed(args.seed)\n")
    assert not _only(seeds).uniform


def test_which_generators_a_seed_call_seeds() -> None:
    _, seeds = _seeds("torch.manual_seed(1)\nnp.random.seed(1)\nfrom lightning import seed_everything\nseed_everything(1)\n")
    assert [sorted(s.generators) for s in seeds.calls] == [["torch"], ["numpy"], ["numpy", "random", "torch"]]


def test_a_common_seed_with_dropout_in_play_is_shared_by_every_rank() -> None:
    model, seeds = _seeds("torch.manual_seed(args.seed)\nlayer = nn.Dropout(0.1)\n")
    assert model.model.randomness.in_play(seeds)
    assert seeds.shared(_only(seeds))


def test_a_common_seed_reseeded_per_rank_later_in_the_function_is_not_shared() -> None:
    _, seeds = _seeds(
        """\
        def main():
            torch.manual_seed(args.seed)
            model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
            torch.manual_seed(args.seed + dist.get_rank())
        main()
        """
    )
    first, second = seeds.calls
    assert seeds.rank_aware(first) and seeds.rank_aware(second)
    assert not seeds.shared(first)


def test_nothing_random_in_play_and_sharding_needs_a_common_seed() -> None:
    quiet, seeds = _seeds("torch.manual_seed(0)\nx = torch.zeros(3)\n")
    assert not quiet.model.randomness.in_play(seeds)
    sharded, _ = _seeds("torch.manual_seed(0)\nfrom torch.distributed.fsdp import FullyShardedDataParallel\nm = FullyShardedDataParallel(net)\n")
    assert sharded.model.randomness.common_by_design


def test_what_seeds_a_generator_before_a_point() -> None:
    model, seeds = _seeds("torch.manual_seed(args.seed + rank)\nnp.random.seed(args.seed)\nx = 1\n")
    line = HEADER.count("\n") + 3
    point = model.statements[line][1]
    assert seeds.before(point, TORCH)[0] is Seeded.PER_RANK
    assert seeds.before(point, NUMPY)[0] is Seeded.COMMON
    plain, unseeded = _seeds("x = 1\n")
    assert unseeded.before(plain.statements[line - 2][1], TORCH) == (Seeded.NOTHING, None)
    assert not unseeded.seeds_anything


def test_a_call_that_says_seed_counts_as_seeding_of_unknown_reach() -> None:
    _, seeds = _seeds("utils.set_deterministic_seed(3)\n")
    assert seeds.calls == [] and seeds.seeds_anything


def test_seeding_in_a_dataloader_worker_from_its_worker_seed() -> None:
    model, seeds = _seeds(
        """\
        def seed_worker(worker_id):
            np.random.seed(torch.initial_seed() % 2**32)
        torch.manual_seed(args.seed)
        loader = torch.utils.data.DataLoader(data, worker_init_fn=seed_worker)
        """
    )
    worker, main = seeds.calls
    assert worker.from_worker and not worker.uniform and main.uniform
    assert model.model.randomness.in_play(seeds)  # seeding the workers: they draw
    assert seeds.shared_by_workers(worker)


def _module_and_ctx(body: str):
    model = model_of(HEADER + textwrap.dedent(body)).model
    return model.module, model


def test_a_dataset_generator_created_once_and_drawn_per_sample() -> None:
    module, ctx = _module_and_ctx(
        """\
        class Crops(torch.utils.data.Dataset):
            def __init__(self, seed):
                self.rng = np.random.default_rng(seed)
                self.gen = torch.Generator().manual_seed(seed)
                self.other = random.Random(seed)
            def __getitem__(self, i):
                return self.rng.integers(0, 9) + torch.randint(0, 9, (1,), generator=self.gen)
        class PerWorker(torch.utils.data.Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)
            def __getitem__(self, i):
                if i == 0:
                    self.rng = np.random.default_rng(torch.initial_seed())
                return self.rng.integers(0, 9)
        """
    )
    crops, per_worker = [s for s in module.body if isinstance(s, cst.ClassDef)]
    assert [attr for attr, _, _ in owned_generators(crops, ctx)] == ["rng", "gen"]  # `other` is never drawn
    assert owned_generators(per_worker, ctx) == []


def test_settings_that_stay_in_the_process_that_makes_them() -> None:
    module, ctx = _module_and_ctx(
        "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False\n"
        "torch.use_deterministic_algorithms(True)\nprint(1)\n"
    )
    statements = [s.body[0] for s in module.body[-4:]]
    shown = [[text for _, text in process_local_settings(s, ctx)] for s in statements[:2]]
    assert shown == [["`torch.backends.cudnn.deterministic = ...`"], []]
    calls = [process_local_settings(s.value, ctx) for s in statements[2:]]
    assert [[text for _, text in found] for found in calls] == [["`torch.use_deterministic_algorithms(...)`"], []]
