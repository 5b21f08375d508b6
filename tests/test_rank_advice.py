"""The advice of the rules that suggest a rank-0 test or a rank is written in
the module's own words (`RankAdvice`): the test it already uses, a rank bound
where the finding is, or `dist.get_rank()` when there is none."""

from __future__ import annotations

import pytest

from ddplint.testing import lint

HEAD = "import torch\nimport torch.distributed as dist\nimport torch.nn as nn\nfrom tqdm import tqdm\n\n"


def message(source: str, code: str) -> str:
    (finding,) = [f for f in lint(HEAD + source, select=[code]) if f.rule == code]
    return finding.message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (  # the module's own helper, called in another function
            "def is_master(args):\n    return args.rank == 0\n\n"
            "def report(args):\n    if is_master(args):\n        print('ready')\n\n"
            "def train(args, model, loader):\n    dist.init_process_group('nccl')\n"
            "    for epoch in range(3):\n        torch.save(model.state_dict(), 'last.pt')\n",
            "`if is_master(args):`",
        ),
        (  # a rank variable bound in the function, tested nowhere
            "def train(model, loader):\n    dist.init_process_group('nccl')\n    rank = dist.get_rank()\n"
            "    for epoch in range(3):\n        torch.save(model.state_dict(), f'e{epoch}.pt')\n",
            "`if rank == 0:`",
        ),
        (  # `if not accelerator.is_main_process: return` in the same function, read the other way round
            "from accelerate import Accelerator\n\ndef train(model):\n    accelerator = Accelerator()\n"
            "    torch.save(model.state_dict(), 'a.pt')\n    if not accelerator.is_main_process:\n        return\n",
            "`if accelerator.is_main_process:`",
        ),
    ],
    ids=["helper", "rank-variable", "negated-test"],
)
def test_save_advice_uses_the_module_test(source: str, expected: str) -> None:
    assert f"wrap it in {expected}" in message(source, "DDP006")


def test_fallback_uses_the_module_alias_of_torch_distributed() -> None:
    source = (
        "import torch\nimport torch.distributed as td\n\ndef train(model):\n    td.init_process_group('nccl')\n"
        "    for epoch in range(3):\n        torch.save(model.state_dict(), 'last.pt')\n"
    )
    (finding,) = lint(source, select=["DDP006"])
    assert "wrap it in `if td.get_rank() == 0:`" in finding.message


def test_a_name_of_another_function_is_not_suggested() -> None:
    """`rank == 0` written in another function where `rank` is local is not valid here."""
    source = (
        "def log(rank):\n    if rank == 0:\n        print('hi')\n\n"
        "def train(model):\n    dist.init_process_group('nccl')\n"
        "    for epoch in range(3):\n        torch.save(model.state_dict(), 'last.pt')\n"
    )
    text = message(source, "DDP006")
    assert "`if dist.get_rank() == 0:`" in text and "rank == 0:" not in text.replace("get_rank() == 0", "")


def test_a_loop_counter_named_rank_is_not_the_rank() -> None:
    source = (
        "def train(model):\n    dist.init_process_group('nccl')\n"
        "    for rank in range(4):\n        pass\n"
        "    for epoch in range(3):\n        torch.save(model.state_dict(), 'last.pt')\n"
    )
    assert "`if dist.get_rank() == 0:`" in message(source, "DDP006")


def test_progress_bar_advice_negates_the_module_test() -> None:
    source = (
        "def train(args, model, loader):\n    dist.init_process_group('nccl')\n"
        "    if args.rank == 0:\n        print('start')\n"
        "    for batch in tqdm(loader):\n        model(batch)\n"
    )
    assert "pass `disable=args.rank != 0`" in message(source, "DDP007")


def test_print_advice_uses_a_method_predicate_of_the_same_class() -> None:
    source = (
        "class Trainer:\n    def setup(self):\n        dist.init_process_group('nccl')\n"
        "        if self.is_main_process:\n            print('ready')\n\n"
        "    def fit(self, loader):\n        for epoch in range(3):\n            for batch in loader:\n"
        "                self.model(batch).backward()\n            print(epoch)\n\nTrainer().fit([])\n"
    )
    assert "guard it with `if self.is_main_process:`" in message(source, "DDP007")


def test_seed_advice_adds_the_rank_in_scope() -> None:
    source = (
        "def main(args):\n    dist.init_process_group('nccl')\n    rank = int(__import__('os').environ['RANK'])\n"
        "    torch.manual_seed(args.seed)\n    model = nn.Dropout(0.1)\n"
    )
    assert "(`torch.manual_seed(args.seed + rank)`)" in message(source, "DDP008")


def test_accelerate_set_seed_gets_device_specific() -> None:
    source = (
        "from accelerate import Accelerator\nfrom accelerate.utils import set_seed\n\n"
        "def main(args):\n    accelerator = Accelerator()\n    set_seed(args.seed)\n    model = nn.Dropout(0.1)\n"
        "    accelerator.prepare(model)\n"
    )
    findings = [f for f in lint(HEAD + source, select=["DDP008"]) if f.rule == "DDP008"]
    (finding,) = findings
    assert "device_specific=True" in finding.message and "seed + rank" not in finding.message
    (edit,) = finding.fix.edits
    assert edit.content == ", device_specific=True"


def test_download_advice_prefers_the_local_rank() -> None:
    source = (
        "import torchvision\nimport os\n\ndef main():\n    dist.init_process_group('nccl')\n"
        "    local_rank = int(os.environ['LOCAL_RANK'])\n    rank = dist.get_rank()\n"
        "    data = torchvision.datasets.CIFAR10('data', download=True)\n"
    )
    assert "download under `if local_rank == 0:`" in message(source, "DDP022")


SAMPLER = """\
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, epochs):
    dist.init_process_group("nccl")
    {build}
    for epoch in range(epochs):
        for batch in train_loader:
            model(batch).backward()
"""


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (
            "train_sampler = DistributedSampler(dataset)\n"
            "    train_loader = DataLoader(dataset, batch_size=8, sampler=train_sampler)",
            "`train_sampler.set_epoch(epoch)`",
        ),
        (
            "train_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))",
            "`train_loader.sampler.set_epoch(epoch)`",
        ),
    ],
    ids=["sampler-variable", "inline-sampler"],
)
def test_set_epoch_advice_names_the_sampler_in_scope(build: str, expected: str) -> None:
    (finding,) = lint(SAMPLER.format(build=build), select=["DDP002"])
    assert f"call {expected} at the start of each epoch" in finding.message


def test_a_lightning_accelerator_string_is_not_an_accelerate_object() -> None:
    source = (
        "def main(model, accelerator='gpu'):\n    dist.init_process_group('nccl')\n"
        "    for epoch in range(3):\n        torch.save(model.state_dict(), 'last.pt')\n"
    )
    assert "`if dist.get_rank() == 0:`" in message(source, "DDP006")


def test_an_accelerator_parameter_gives_its_main_process_test() -> None:
    source = (
        "def train(model, accelerator):\n    dist.init_process_group('nccl')\n"
        "    for epoch in range(3):\n        torch.save(model.state_dict(), 'last.pt')\n"
    )
    assert "`if accelerator.is_main_process:`" in message(source, "DDP006")


def test_a_test_for_another_single_rank_is_not_a_rank_zero_test() -> None:
    source = (
        "def train(model, mpu):\n    dist.init_process_group('nccl')\n    rank = dist.get_rank()\n"
        "    if mpu.is_pipeline_last_stage():\n        print('loss')\n"
        "    for epoch in range(3):\n        torch.save(model.state_dict(), 'last.pt')\n"
    )
    assert "wrap it in `if rank == 0:`" in message(source, "DDP006")
