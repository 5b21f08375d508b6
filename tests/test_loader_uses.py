"""The data service's loaders (`ctx.data.loaders`, `LoaderUses`): which
DataLoaders run over a shuffling DistributedSampler, where they are iterated
and whether the epoch of their sampler is set there. No rule involved."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.config import Settings
from ddplint.engine.context import FileContext
from ddplint.testing import walk_snippet

_PRELUDE = """\
from torch.utils.data import DataLoader, DistributedSampler
"""


def _uses(source: str):
    ctx, _ = walk_snippet(_PRELUDE + textwrap.dedent(source), requires=("data",))
    return ctx, ctx.data.loaders


def test_not_followed_without_a_distributed_sampler() -> None:
    source = "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n"
    module = cst.parse_module(source)
    ctx = FileContext("t.py", source, module, Settings(rules=frozenset()), [], requires=("data",))
    assert ctx.data.loaders is None


@pytest.mark.parametrize(
    ("sampler", "shuffling"),
    [("DistributedSampler(ds)", True), ("DistributedSampler(ds, shuffle=False)", False),
     ("DistributedSampler(ds, None, None, False)", False), ("RandomSampler(ds)", False)],
)
def test_shuffling_loaders(sampler: str, shuffling: bool) -> None:
    _, uses = _uses(f"sampler = {sampler}\nloader = DataLoader(ds, sampler=sampler)\n")
    assert bool(uses.shuffling_loaders()) is shuffling


def test_prepared_loaders_set_their_own_epoch() -> None:
    _, uses = _uses(
        "loader = DataLoader(ds, sampler=DistributedSampler(ds))\nloader = accelerator.prepare(loader)\n"
    )
    assert uses.shuffling_loaders() == []


_HELPERS = """
def build(ds):
    sampler = DistributedSampler(ds)
    return DataLoader(ds, sampler=sampler), sampler

def run_epoch(loader):
    for batch in loader:
        step(batch)

def start(loader, epoch):
    loader.sampler.set_epoch(epoch)

train_loader, train_sampler = build(ds)
for epoch in range(3):
    {body}
"""


@pytest.mark.parametrize(
    ("body", "sets"),
    [
        ("run_epoch(train_loader)", False),
        ("train_sampler.set_epoch(epoch)\n    run_epoch(train_loader)", True),
        ("train_sampler.set_epoch(0)\n    run_epoch(train_loader)", False),  # a constant epoch
        ("start(train_loader, epoch)\n    run_epoch(train_loader)", True),  # set in a helper given both
        ("start(train_loader, 0)\n    run_epoch(train_loader)", False),
        ("for i, b in enumerate(tqdm(train_loader)):\n        step(b)", False),
        ("train_loader.sampler.set_epoch(epoch)\n    for b in zip(train_loader, other):\n        step(b)", True),
    ],
)
def test_iterations_and_set_epoch(body: str, sets: bool) -> None:
    _, uses = _uses(_HELPERS.format(body=body))
    ((loader, sampler),) = uses.shuffling_loaders()
    epoch_loops = [it for it in uses.iterations(loader) if it.loops]
    assert epoch_loops, "the epoch loop iterates the loader (itself or through the helper)"
    assert all(uses.sets_epoch(it, loader, sampler) is sets for it in epoch_loops)


def test_sampler_name_is_what_the_loop_can_call() -> None:
    _, uses = _uses(
        "class Trainer:\n"
        "    def __init__(self, ds):\n"
        "        self.train_sampler = DistributedSampler(ds)\n"
        "        self.loader = DataLoader(ds, sampler=self.train_sampler)\n"
        "    def fit(self):\n"
        "        for epoch in range(3):\n"
        "            for b in self.loader:\n"
        "                step(b)\n"
    )
    ((loader, sampler),) = uses.shuffling_loaders()
    (iteration,) = uses.iterations(loader)
    assert uses.sampler_name(sampler, loader, iteration) == "self.train_sampler"
    assert not uses.sets_epoch(iteration, loader, sampler)


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("DataLoader(ds, batch_size=2, shuffle=True, sampler=s)", [("sampler", ["shuffle"], None)]),
        ("DataLoader(ds, 2, True, s)", [("sampler", ["shuffle"], None)]),  # by position
        ("DataLoader(ds, shuffle=flag, sampler=s)", []),  # an unknown shuffle
        ("DataLoader(ds, shuffle=True, sampler=maybe)", [("sampler", ["shuffle"], "maybe")]),
        ("DataLoader(ds, shuffle=True, sampler=None)", []),
        ("DataLoader(ds, batch_size=8, drop_last=True, batch_sampler=b)",
         [("batch_sampler", ["batch_size", "drop_last"], None)]),
        ("DataLoader(ds, batch_size=1, batch_sampler=b)", []),
        ("DataLoader(Stream(), shuffle=True)", [("iterable", ["shuffle"], None)]),
        ("DataLoader(Stream(), shuffle=False, sampler=s)", [("iterable", ["sampler"], None)]),
        ("DataLoader(Pipe(), shuffle=True)", []),  # a datapipe takes shuffle
    ],
)
def test_loader_conflicts(call: str, expected: list) -> None:
    from ddplint.analysis.data import loader_conflicts

    source = (
        "from torch.utils.data import DataLoader, IterableDataset, IterDataPipe\n"
        "class Stream(IterableDataset):\n    pass\nclass Pipe(IterDataPipe):\n    pass\n"
        "s = RandomSampler(ds)\nb = BatchSampler(s, 4, False)\nmaybe = RandomSampler(ds) if flag else None\n"
        f"probe = {call}\n"
    )
    found = []

    class Probe:
        def __init__(self, ctx) -> None:
            self.ctx = ctx

        def visit_Call(self, node) -> None:
            found.extend(loader_conflicts(node, self.ctx))

    walk_snippet(source, Probe)
    assert [(c.option, [name for name, _ in c.conflicts], c.when) for c in found] == expected


def _walk_probe(source: str, requires=("data",)):
    found = []

    class Probe:
        def __init__(self, ctx) -> None:
            self.ctx = ctx

        def visit_Call(self, node) -> None:
            from ddplint.analysis.data import is_dataloader, unsampled_training_loader

            if is_dataloader(node, self.ctx):
                found.append(unsampled_training_loader(node, self.ctx))

    ctx, _ = walk_snippet(source, Probe, requires)
    return ctx, found


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("train_loader = DataLoader(train_set, batch_size=8)", "train_set"),
        ("loader = DataLoader(items, batch_size=8, shuffle=True)", "items"),  # it shuffles
        ("loader = DataLoader(items, batch_size=8)", None),  # nothing says it trains
        ("val_loader = DataLoader(val_set, batch_size=8, shuffle=True)", None),  # evaluation
        ("loaders['train'] = DataLoader(sets['train'], 8, True)", "sets['train']"),
        ("train_loader = DataLoader(train_set, sampler=DistributedSampler(train_set))", None),
        ("train_loader = DataLoader(train_set, 8, False, my_sampler)", None),  # by position
        ("train_loader = DataLoader(train_set, **options)", None),  # perhaps a sampler
        ("train_loader = DataLoader(train_set, **{'batch_size': 8})", "train_set"),
    ],
)
def test_unsampled_training_loader(line: str, expected) -> None:
    _, found = _walk_probe(f"from torch.utils.data import DataLoader\n{line}\n")
    assert found == [expected]


def test_lightning_hooks_get_their_sampler_from_the_trainer() -> None:
    source = (
        "from torch.utils.data import DataLoader\n"
        "class Data:\n    def train_dataloader(self):\n        return DataLoader(self.train_set, shuffle=True)\n"
    )
    assert _walk_probe(source)[1] == [None]


@pytest.mark.parametrize(
    ("line", "needs"),
    [
        ("model = DDP(model)", True),
        ("dist.init_process_group('nccl')", True),
        ("model = DDP(model)\nloader = accelerator.prepare(loader)", False),  # accelerate splits the loaders
        ("model = model.cuda()", False),
    ],
)
def test_loaders_need_sampler(line: str, needs: bool) -> None:
    source = (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        f"from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n{line}\n"
    )
    ctx, _ = _walk_probe(source)
    assert ctx.data.loaders_need_sampler is needs
