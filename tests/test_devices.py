"""The devices service (ddplint/analysis/devices.py): process-group backends,
which tensor a collective sends, whether a module pins its GPU, what a helper
sends, where `torch.load` puts tensors. Where a tensor lives line by line is
tested by the snippets of tests/semantic/devices.py."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.analysis.devices import (
    WITHOUT_MAP_LOCATION,
    carries_cpu,
    group_backend,
    has_main_block,
    in_deviceless_branch,
    load_placement,
    picks_nccl,
    sent_tensor,
)
from ddplint.testing import model_of


def call(source: str) -> cst.Call:
    node = cst.parse_expression(source)
    assert isinstance(node, cst.Call)
    return node


@pytest.mark.parametrize(
    ("source", "nccl"),
    [
        ("dist.init_process_group()", True),
        ("dist.init_process_group('nccl')", True),
        ("dist.init_process_group(backend='cuda:nccl,cpu:gloo')", True),
        ("dist.init_process_group(backend=Backend.NCCL)", True),
        ("dist.init_process_group('gloo')", False),
        ("dist.init_process_group(backend=args.backend)", False),
    ],
)
def test_picks_nccl(source: str, nccl: bool) -> None:
    assert picks_nccl(call(source)) is nccl


@pytest.mark.parametrize(
    ("source", "cpu"),
    [
        ("dist.new_group(ranks, backend='gloo')", True),
        ("dist.init_process_group('cuda:nccl,cpu:gloo')", True),
        ("dist.init_process_group(backend=Backend.GLOO)", True),
        ("dist.init_process_group('nccl' if cuda else 'gloo')", False),
        ("dist.init_process_group('nccl')", False),
    ],
)
def test_carries_cpu(source: str, cpu: bool) -> None:
    backend = group_backend(call(source))
    assert backend is not None and carries_cpu(backend) is cpu


def test_a_new_groups_first_argument_is_its_ranks_not_its_backend() -> None:
    assert group_backend(call("dist.new_group([0, 1])")) is None


@pytest.mark.parametrize(
    ("source", "placement"),
    [
        ("torch.load(path)", WITHOUT_MAP_LOCATION),
        ("torch.load(path, map_location=None)", WITHOUT_MAP_LOCATION),
        ("torch.load(path, 'cuda:0')", "with `map_location='cuda:0'`"),
        ("torch.load(path, map_location='cpu')", None),
        ("torch.load(path, map_location='cuda')", None),
        ("torch.load(path, map_location=lambda s, _: s)", None),
    ],
)
def test_load_placement(source: str, placement: str | None) -> None:
    assert load_placement(call(source)) == placement


def test_has_main_block() -> None:
    assert has_main_block(cst.parse_module("def main():\n    pass\n\nif __name__ == '__main__':\n    main()\n"))
    assert not has_main_block(cst.parse_module("def f():\n    if __name__ == '__main__':\n        pass\n"))


PINNED = [
    "torch.cuda.set_device(local_rank)\n",
    "get_accelerator().set_device(local_rank)\n",
    "with torch.cuda.device(local_rank):\n    pass\n",
    "dist.init_process_group('nccl', device_id=torch.device('cuda', local_rank))\n",
    "os.environ['CUDA_VISIBLE_DEVICES'] = str(local_rank)\n",
    "subprocess.Popen(cmd, env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(i)))\n",
    "import lightning as L\n",
    "dist.barrier(device_ids=[local_rank])\n",
]
NOT_PINNED = [
    "model.cuda(local_rank)\n",
    "print(os.environ['CUDA_VISIBLE_DEVICES'])\n",
    "dist.barrier(device_ids=[local_rank])\ndist.all_reduce(t)\n",
    "dist.barrier(device_ids=[local_rank])\nmodel = DDP(model, device_ids=[local_rank])\n",
]
HEADER = "import os\nimport subprocess\nimport torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"


@pytest.mark.parametrize(("body", "pinned"), [(b, True) for b in PINNED] + [(b, False) for b in NOT_PINNED])
def test_pins_gpu(body: str, pinned: bool) -> None:
    assert model_of(HEADER + body).model.devices.pins_gpu is pinned


def test_a_gloo_group_anywhere_carries_cpu_tensors() -> None:
    devices = model_of(HEADER + "dist.init_process_group('nccl')\ncpu = dist.new_group(backend='gloo')\n").model.devices
    assert devices.nccl_in_sight and devices.cpu_group and not devices.cpu_tensors_fail
    devices = model_of(HEADER + "dist.init_process_group('nccl')\n").model.devices
    assert devices.cpu_tensors_fail


def test_factories_on_gpu_by_default() -> None:
    assert model_of(HEADER + "torch.set_default_device('cuda')\n").model.devices.factories_on_gpu
    assert not model_of(HEADER + "x = torch.zeros(1)\n").model.devices.factories_on_gpu


def sites(source: str, ask) -> list:
    """`ask(model, call)` for every call statement of the module (an
    expression or an assignment's value), asked where the call is."""
    model = model_of(source)
    answers = []
    for line, (node, _) in sorted(model.statements.items()):
        body = node.body[0] if isinstance(node, cst.SimpleStatementLine) else None
        value = getattr(body, "value", None)
        if isinstance(value, cst.Call):
            stack, mark = model.positions[node]
            model.model.stack[:] = stack
            with model.model.scopes.restored(mark):
                answers.append((line, ask(model.model, value)))
            model.model.stack.clear()
    return answers


HELPERS = """import torch
import torch.distributed as dist


def reduce_value(value, average=True):
    dist.all_reduce(value)
    return value


def log_value(value):
    print(value)


def main(local_rank):
    total = torch.tensor(0.0)
    reduce_value(total)
    reduce_value(average=False, value=total)
    reduce_value(total.cuda(local_rank))
    log_value(total)
    reduce_value(*[total])
"""


def test_sent_by_helper() -> None:
    found = [(line, a) for line, a in sites(HELPERS, lambda m, c: m.devices.sent_by_helper(c)) if a is not None]
    assert found == [
        (16, ("total", "reduce_value", "`dist.all_reduce()`")),
        (17, ("total", "reduce_value", "`dist.all_reduce()`")),
    ]


METER = """import torch
import torch.distributed as dist


class Meter:
    def __init__(self):
        self.total = torch.tensor(0.0)
        self.count = torch.zeros(1, device="cuda")

    def reset(self):
        self.total = torch.zeros(1)
        self.count = torch.zeros(1)

    def sync(self):
        dist.all_reduce(self.total)
        dist.all_reduce(self.count)
"""


def test_cpu_attribute_needs_every_assignment_on_the_cpu() -> None:
    devices = model_of(METER).model.devices
    total, count = (cst.parse_expression(f"self.{name}") for name in ("total", "count"))
    assert devices.cpu_attribute(total)
    assert not devices.cpu_attribute(count)
    assert not devices.cpu_attribute(cst.parse_expression("other.total"))


COLLECTIVES = """import torch.distributed as dist
from torch.distributed import all_gather as gather_all


def share(t, out, group):
    dist.all_reduce(t)
    gather_all(out, t)
    dist.send(tensor=t, dst=1)
    dist.all_reduce(t, group=group)
    dist.all_reduce(t, group=dist.group.WORLD)
    dist.all_gather_object(out, t)
    dist.barrier()
"""


def test_sent_tensor() -> None:
    shown = [(line, a and a.value) for line, a in sites(COLLECTIVES, lambda m, c: sent_tensor(c, m))]
    assert shown == [(6, "t"), (7, "t"), (8, "t"), (9, None), (10, "t"), (11, None), (12, None)]


RESUME = """import torch


def resume(args):
    if args.gpu is None:
        checkpoint = torch.load(args.resume)
    else:
        loc = "cuda:{}".format(args.gpu)
        checkpoint = torch.load(args.resume, map_location=loc)
    if args.other is None:
        checkpoint = torch.load(args.resume)
    else:
        checkpoint = torch.load(args.resume, map_location="cpu")
    return checkpoint
"""


def test_in_deviceless_branch() -> None:
    answers = dict(sites(RESUME, lambda m, c: in_deviceless_branch(m)))
    assert answers[6] is True
    assert answers[9] is False
    assert answers[11] is False
