"""Unit tests of shared analyses other than name resolution: distributed
context, version-compatibility branches, literal values."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.config import Settings
from ddplint.engine.context import FileContext
from ddplint.engine.walker import Walker


def walk(source: str, probe_cls=None):
    source = textwrap.dedent(source)
    module = cst.parse_module(source)
    stack: list = []
    ctx = FileContext("t.py", source, module, Settings(rules=frozenset()), stack)
    probes = [probe_cls(ctx)] if probe_cls else []

    def fail(rule, exc):
        raise exc

    Walker(ctx.analyses, probes, fail, stack).walk(module)
    return ctx, probes


@pytest.mark.parametrize(
    ("source", "distributed"),
    [
        ("import torch.distributed as dist", True),
        ("from torch import distributed", True),
        ("from torch.nn.parallel import DistributedDataParallel as DDP", True),
        ("from torch.distributed.fsdp import FullyShardedDataParallel", True),
        ("import accelerate", True),
        ("from accelerate import Accelerator", True),
        ("import deepspeed", True),
        ("import lightning as L", True),
        ("from pytorch_lightning import Trainer", True),
        ("import torch\ntorch.distributed.init_process_group('gloo')", True),
        ("import torch\nmodel = torch.nn.parallel.DistributedDataParallel(m)", True),
        ("def main():\n    import torch.distributed as dist", True),
        ("from utils import init_process_group\ninit_process_group()", True),
        ("import torch\nfrom torch.utils.data import DataLoader", False),
        ("import torch.nn.parallel\nmodel = torch.nn.DataParallel(m)", False),
        ("import accelerated_math", False),
        ("x = 'torch.distributed'", False),
    ],
)
def test_distributed_imports(source: str, distributed: bool) -> None:
    ctx, _ = walk(source + "\nrank = get_rank()\n")
    assert ctx.in_distributed_context is distributed


@pytest.mark.parametrize(
    ("source", "distributed"),
    [
        ("import deepspeed\nfrom deepspeed.utils import logger\nprint(logger)", False),  # a converter tool
        ("from accelerate import __version__\nprint(__version__)", False),  # a CLI command
        ("import deepspeed\nengine, *_ = deepspeed.initialize(model=m)", True),
        ("from accelerate import Accelerator\naccelerator = Accelerator()", True),
        ("import torch.distributed as dist\nif dist.get_rank() == 0:\n    pass", True),
        ("import os\nimport torch.distributed as dist\nlocal_rank = int(os.environ['LOCAL_RANK'])", True),
        ("import lightning as L\ntrainer = L.Trainer()", True),
        # A rank compared with 0, or a project's rank helper imported by its conventional name.
        ("import torch.distributed as dist\ndef f(rank):\n    if rank == 0:\n        pass", True),
        ("from .utils.dist import is_main_process\nif is_main_process():\n    pass", True),
        ("from utils import (\n    load,\n    get_rank,\n)\nprint(get_rank())", True),
        ("import torch\ndef truncate(m, rank):\n    if rank == 0:\n        return m", False),  # no distributed import
        ("import torch.distributed as dist\ndef f(lora_rank):\n    return lora_rank", False),
    ],
)
def test_distributed_context_needs_evidence_of_per_rank_execution(source: str, distributed: bool) -> None:
    ctx, _ = walk(source)
    assert ctx.in_distributed_context is distributed


class _CompatProbe:
    def __init__(self, ctx) -> None:
        self.ctx, self.seen = ctx, []

    def visit_Call(self, node) -> None:
        from ddplint.analysis.compat import in_compat_branch

        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.seen.append(in_compat_branch(self.ctx.stack, self.ctx.module, "torch.amp"))


@pytest.mark.parametrize(
    ("source", "compat"),
    [
        ("x = new() if _TORCH_GREATER_EQUAL_2_4 else probe()", True),
        ("if torch.__version__ < '2.4':\n    probe()", True),
        ("if version.parse(torch.__version__) >= version.parse('2'):\n    pass\nelse:\n    probe()", True),
        ("if hasattr(torch, 'amp'):\n    pass\nelse:\n    probe()", True),
        ("try:\n    torch.amp.GradScaler('cuda')\nexcept AttributeError:\n    probe()", True),
        ("if cfg.fp16:\n    probe()", False),
        ("if probe() and TORCH_VERSION:\n    pass", False),
        ("try:\n    probe()\nexcept AttributeError:\n    torch.amp.x()", False),
        ("try:\n    other()\nexcept AttributeError:\n    probe()", False),
        ("if TORCH_VERSION:\n    def f():\n        probe()", False),  # a function body runs later
    ],
)
def test_version_compat_branches(source: str, compat: bool) -> None:
    _, (probe,) = walk(source, _CompatProbe)
    assert probe.seen == [compat]


class _ValueProbe:
    def __init__(self, ctx) -> None:
        self.ctx, self.seen = ctx, []

    def visit_Call(self, node) -> None:
        from ddplint.analysis import values

        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            arg = node.args[0].value
            self.seen.append(
                (values.truthiness(arg, self.ctx), values.certainly_none(arg, self.ctx), values.may_be_not_none(arg, self.ctx))
            )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("probe(True)", (True, False, True)),
        ("probe(0)", (False, False, True)),
        ("probe(None)", (False, True, False)),
        ("probe(not False)", (True, False, False)),
        ("x = True\nprobe(x)", (True, False, True)),
        ("x = None\nprobe(x)", (False, True, False)),
        ("x = Sampler() if c else None\nprobe(x)", (None, False, True)),
        ("x = make()\nprobe(x)", (None, False, False)),
        ("if c:\n    x = True\nelse:\n    x = False\nprobe(x)", (None, False, True)),
        ("def f(x=True):\n    probe(x)", (None, False, False)),
        ("probe(args.flag)", (None, False, False)),
    ],
)
def test_literal_values(source: str, expected) -> None:
    _, (probe,) = walk(source, _ValueProbe)
    assert probe.seen == [expected]
