"""Unit tests of shared analyses other than name resolution: distributed
context, version-compatibility branches, literal values."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.rank_zero import replaces_print, sets_print
from ddplint.analysis.samples import harmful_returns
from ddplint.analysis.tree import name_reads
from ddplint.testing import walk_snippet


def walk(source: str, probe_cls=None, requires=()):
    ctx, probe = walk_snippet(textwrap.dedent(source), probe_cls, requires)
    return ctx, [probe] if probe is not None else []


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
        # A Fabric or Trainer of one device on one node is one process.
        ("import lightning as L\nfabric = L.Fabric(devices=1, precision='bf16-true')", False),
        ("from lightning import Trainer\ntrainer = Trainer(devices=1, num_nodes=1)", False),
        ("import lightning as L\nfabric = L.Fabric(devices=1, num_nodes=2)", True),
        ("import lightning as L\nfabric = L.Fabric(devices=1)\nother = L.Fabric(devices=4)", True),
        ("import lightning as L\nfabric = L.Fabric(**config)", True),
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


class _OriginsProbe:
    """Records what `ctx.origins` says each `probe(expr)` argument may hold, as code."""

    def __init__(self, ctx) -> None:
        self.ctx, self.seen = ctx, []

    def visit_Call(self, node) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            origins = self.ctx.origins(node.args[0].value)
            self.seen.append(sorted(self.ctx.module.code_for_node(o).strip(", ") for o in origins))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a method's parameter: the argument after the `self` offset, by position or keyword
        (
            "class T:\n    def run(self, a, b=None):\n        probe(b)\n"
            "    def fit(self):\n        loader = Loader()\n        self.run(1, loader)\n        self.run(2, b=Other())\n",
            ["Loader()", "Other()"],
        ),
        # a default where a call site leaves the parameter out
        ("def f(x, flag=True):\n    probe(flag)\nf(1)\nf(2, flag=False)\n", ["False", "True"]),
        # a constructor's argument reaches `__init__`
        ("class D:\n    def __init__(self, items):\n        probe(items)\nD(json.load(f))\n", ["json.load(f)"]),
        # no visible caller, `*args`, or a function passed as a value: the parameter itself
        ("def f(x):\n    probe(x)\n", ["x"]),
        ("def f(x):\n    probe(x)\nf(*args)\n", ["x"]),
        ("def f(x):\n    probe(x)\nf(1)\nrun(f)\n", ["x"]),
        # `self.x` assigned in any method, and `obj.x` for an object of a module class
        (
            "class R:\n    def __init__(self, ds):\n        self.loader = DataLoader(ds)\n"
            "    def run(self):\n        probe(self.loader)\n",
            ["DataLoader(ds)"],
        ),
        (
            "class R:\n    def __init__(self):\n        self.loader = DataLoader(ds)\n"
            "def main():\n    r = R()\n    probe(r.loader)\n",
            ["DataLoader(ds)"],
        ),
        # a helper's (or a method's) return values, every branch
        (
            "def pick(d):\n    if d:\n        return DistributedSampler(x)\n    return RandomSampler(x)\n"
            "def main():\n    probe(pick(True))\n",
            ["DistributedSampler(x)", "RandomSampler(x)"],
        ),
        (
            "class B:\n    def __init__(self):\n        probe(self._read())\n"
            "    def _read(self):\n        rows = json.load(f)\n        return [r for r in rows]\n",
            ["[r for r in rows]"],
        ),
        # a base class's method calling `self.get` reaches the subclass's override and its attributes
        (
            "class Base:\n    def item(self, i):\n        probe(self.get(i))\n"
            "class Sub(Base):\n    def __init__(self):\n        self.rows = pickle.load(f)\n"
            "    def get(self, i):\n        return self.rows\n",
            ["pickle.load(f)"],
        ),
        # a caller's binding under nested blocks (read from its statements), and one inside an
        # expression (a walrus: the module's expressions are read too)
        (
            "def use(x):\n    probe(x)\ndef main():\n    with ctx():\n        try:\n            for i in range(3):\n"
            "                loader = DataLoader(ds)\n        finally:\n            pass\n    use(loader)\n",
            ["DataLoader(ds)"],
        ),
        (
            "def use(x):\n    probe(x)\ndef main():\n    if (loader := DataLoader(ds)) is not None:\n        use(loader)\n",
            ["DataLoader(ds)"],
        ),
    ],
)
def test_value_origins(source: str, expected) -> None:
    _, (probe,) = walk(source, _OriginsProbe)
    assert probe.seen == [expected]


def test_value_origins_of_one_name_in_several_functions() -> None:
    """A name's origins are those of its bindings seen from the function that reads it, asked once or often."""
    source = (
        "def use(x):\n    probe(x)\n    probe(x)\ndef other(x):\n    probe(x)\n"
        "use(Loader())\nother(Sampler())\n"
    )
    _, (probe,) = walk(source, _OriginsProbe)
    assert probe.seen == [["Loader()"], ["Loader()"], ["Sampler()"]]


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ("f(True)\nf(shuffle=True)", True),  # every call site agrees
        ("f(True)\nf(False)", None),  # disagreement stays unknown
        ("f(True)\nf(flag)", None),  # an unknown argument
        ("f()", False),  # the default
    ],
)
def test_truthiness_follows_parameters(calls: str, expected) -> None:
    _, (probe,) = walk(f"def f(shuffle=False):\n    probe(shuffle)\n{calls}\n", _ValueProbe)
    assert probe.seen[0][0] is expected


class _ReceiverProbe:
    """Records `framework_types` of the receiver of each `x.probe()` call."""

    def __init__(self, ctx) -> None:
        self.ctx, self.seen = ctx, []

    def visit_Call(self, node) -> None:
        from ddplint.analysis.receivers import framework_types

        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "probe":
            self.seen.append(set(framework_types(node.func.value, self.ctx)))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import lightning as L\nt = L.Trainer()\nt.probe()", {"lightning.Trainer"}),
        ("from lightning.pytorch import Trainer\ndef f(x: Trainer):\n    x.probe()", {"lightning.Trainer"}),
        # `pytorch_lightning` (often pinned to 1.x, no barrier in save_checkpoint) is a type of its own.
        ("from pytorch_lightning import Trainer\ndef f(x: Trainer):\n    x.probe()", {"pytorch_lightning.Trainer"}),
        ("import pytorch_lightning as pl\ndef f(x: 'pl.Trainer'):\n    x.probe()", {"pytorch_lightning.Trainer"}),
        ("import pytorch_lightning\ndef hook(self, trainer):\n    trainer.probe()", {"pytorch_lightning.Trainer"}),
        ("from transformers import Trainer\nclass T(Trainer):\n    pass\nt = T()\nt.probe()", {"transformers.Trainer"}),
        ("from trl import SFTTrainer\nt = SFTTrainer(m)\nt.probe()", {"transformers.Trainer"}),
        ("import lightning\ndef hook(self, trainer):\n    trainer.probe()", {"lightning.Trainer"}),
        ("import lightning\ndef hook(self):\n    self.fabric.probe()", {"lightning.Fabric"}),
        # A conventional name says nothing without the framework's import ...
        ("def hook(trainer):\n    trainer.probe()", set()),
        # ... nor against a visible constructor of another class.
        ("import lightning\nclass Trainer:\n    pass\ntrainer = Trainer()\ntrainer.probe()", set()),
        ("import lightning\ndef f(trainer: MyTrainer):\n    trainer.probe()", set()),
        ("import lightning\ntrainer = build(cfg)\ntrainer.probe()", {"lightning.Trainer"}),
    ],
)
def test_framework_receivers(source: str, expected) -> None:
    _, (probe,) = walk(source, _ReceiverProbe)
    assert probe.seen == [expected]


class _BuffersProbe:
    def __init__(self, ctx) -> None:
        self.ctx, self.seen = ctx, []

    def visit_Call(self, node) -> None:
        from ddplint.analysis.collectives import module_has_buffers

        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.seen.append(module_has_buffers(node.args[0].value, self.ctx))


_MLP = "class Mlp(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("probe(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)))", True),
        ("probe(nn.Sequential(nn.Linear(2, 2), nn.ReLU()).cuda())", False),
        ("m = nn.Conv2d(3, 3, 3)\nprobe(m)", False),
        ("probe(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(3)))", True),
        ("probe(nn.SyncBatchNorm.convert_sync_batchnorm(net))", None),
        ("probe(net)", None),
        ("probe(resnet50())", None),
        ("probe(nn.Sequential(*layers))", None),
        (_MLP + "probe(Mlp())", False),
        (_MLP + "        self.register_buffer('s', torch.ones(2))\nprobe(Mlp())", True),
        (_MLP + "        self.bn = nn.BatchNorm1d(2)\nprobe(Mlp())", True),
        (_MLP + "        self.body = make_body()\nprobe(Mlp())", None),
    ],
)
def test_module_buffers(source: str, expected) -> None:
    _, (probe,) = walk("import torch\nfrom torch import nn\n" + source, _BuffersProbe)
    assert probe.seen == [expected]


class _TrainRandomnessProbe:
    def __init__(self, ctx) -> None:
        self.ctx, self.seen = ctx, []

    def visit_Call(self, node) -> None:
        from ddplint.analysis.seeding import model_draws_in_train

        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.seen.append(model_draws_in_train(node.args[0].value, self.ctx))


_NET = (
    "class Net(nn.Module):\n"
    "    def __init__(self, dim=8, rate=0.0):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(dim, dim)\n"
    "{init}"
    "    def forward(self, x):\n"
    "{forward}"
    "        return self.fc(x)\n"
)


def _net(init: str = "", forward: str = "") -> str:
    return _NET.format(init=init, forward=forward)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (_net() + "probe(Net())", False),
        (_net() + "m = Net().cuda()\nm = torch.compile(m)\nm = DDP(m, device_ids=[0])\nprobe(m.module)", False),
        (_net("        self.drop = nn.Dropout(0.1)\n") + "probe(Net())", True),
        (_net("        self.drop = nn.Dropout(p=0.0)\n") + "probe(Net())", False),
        (_net("        self.attn = nn.MultiheadAttention(8, 2, dropout=rate)\n") + "probe(Net())", True),
        (_net("        self.attn = nn.MultiheadAttention(8, 2, dropout=0.0)\n") + "probe(Net())", False),
        (_net("        self.layer = nn.TransformerEncoderLayer(8, 2)\n") + "probe(Net())", True),
        (_net("        self.layer = nn.TransformerEncoderLayer(8, 2, dropout=0)\n") + "probe(Net())", False),
        (_net("        self.path = DropPath(0.1)\n") + "probe(Net())", True),
        (_net(forward="        x = F.dropout(x, 0.1, self.training)\n") + "probe(Net())", True),
        (_net(forward="        x = x + torch.randn_like(x) if self.training else x\n") + "probe(Net())", True),
        (_net(forward="        x = self.noise(x)\n") + "    def noise(self, x):\n        return x * torch.rand(1)\nprobe(Net())", True),
        (_net() + "probe(Net(rate=0.1, attn_pdrop=0.1))", True),
        (_net("        self.body = timm.create_model('vit')\n", "        x = self.body(x)\n") + "probe(Net())", None),
        (_net("        self.settings = load_settings()\n") + "probe(Net())", False),
        ("class Wrap(nn.Module):\n    def __init__(self, inner):\n        super().__init__()\n        self.inner = inner\n"
         "    def forward(self, x):\n        return self.inner(x)\nprobe(Wrap(backbone))", None),
        ("class Blk(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.d = nn.Dropout(0.2)\n"
         "class Stack(nn.Module):\n    def __init__(self):\n        super().__init__()\n        blocks = []\n"
         "        for _ in range(4):\n            blocks.append(Blk())\n        self.blocks = nn.ModuleList(blocks)\n"
         "probe(Stack())", True),
        ("probe(AutoModel.from_pretrained('bert-base-uncased'))", None),
        ("probe(model)", None),
        ("probe(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))", False),
        ("probe(nn.Sequential(nn.Linear(2, 2), nn.Dropout()))", True),
    ],
)
def test_model_draws_in_train(source: str, expected) -> None:
    header = (
        "import torch, timm\nfrom torch import nn\nimport torch.nn.functional as F\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom transformers import AutoModel\n"
        "from timm.layers import DropPath\n"
    )
    _, (probe,) = walk(header + source, _TrainRandomnessProbe)
    assert probe.seen == [expected]
class _PrintReplacements:
    """Records which assignments and calls replace `print` for the process."""

    def __init__(self, ctx) -> None:
        self.ctx, self.found = ctx, []

    def visit_Assign(self, node) -> None:
        self.found.append(any(replaces_print(t.target, self.ctx) for t in node.targets))

    def visit_Call(self, node) -> None:
        if sets_print(node, self.ctx):
            self.found.append(True)


@pytest.mark.parametrize(
    ("statement", "replaces"),
    [
        ("builtins.print = quiet", True),
        ("builtins.__dict__['print'] = quiet", True),
        ("__builtins__.print = quiet", True),
        ("__builtins__['print'] = quiet", True),
        ("setattr(builtins, 'print', quiet)", True),
        ("builtins.input = quiet", False),
        ("builtins.__dict__['input'] = quiet", False),
        ("setattr(builtins, 'input', quiet)", False),
        ("config['print'] = quiet", False),
        ("args.print = quiet", False),
    ],
)
def test_print_replacements(statement: str, replaces: bool) -> None:
    _, (probe,) = walk(f"import builtins\ndef silence(quiet):\n    {statement}\n", _PrintReplacements)
    assert any(probe.found) is replaces


_SAMPLE_PRELUDE = """
import numpy as np
import torch
from PIL import Image
from torchvision import transforms as T
from torch.utils.data import DataLoader, Dataset, Subset

class D(Dataset):
    def __init__(self, files, tokenizer, transform=None):
        self.files, self.tokenizer, self.transform = files, tokenizer, transform
        self.flip = T.RandomHorizontalFlip()
        self.chain = T.Compose([T.Resize(64), T.ToTensor()])
    def __len__(self):
        return len(self.files)
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return Image.open(self.files[i])", ["PIL"]),
        ("img = Image.open(self.files[i])\n        return self.flip(img), i", ["PIL"]),
        ("img = Image.open(self.files[i])\n        img = self.flip(img)\n        return img", ["PIL"]),
        ("return self.chain(Image.open(self.files[i]))", []),  # ToTensor in the chain
        ("return self.transform(Image.open(self.files[i]))", []),  # a transform passed in: unknown
        # a branch keeps the earlier value possible: a PIL image or the transform's unknown result
        ("img = Image.open(self.files[i])\n        if self.transform:\n            img = self.transform(img)\n"
         "        return img", []),
        ("if not self.files[i]:\n            return None\n        return torch.zeros(2)", ["NONE"]),
        ("x = self.load(i)\n        if x is None:\n            return self[i + 1]\n        return x", []),
        ("return self.load(i)", ["NONE"]),
        ("return torch.tensor([len(w) for w in self.files[i].split()])", ["RAGGED"]),
        ("return self.tokenizer(self.files[i])['input_ids']", ["RAGGED"]),
        ("return self.tokenizer(self.files[i], padding='max_length', truncation=True, max_length=8)", []),
        ("ids = self.tokenizer.encode(self.files[i])\n        ids += [0] * (8 - len(ids))\n        return torch.tensor(ids)", []),
        ("return [float(i), 2.0]", ["FLAT"]),
        ("return float(i), 2.0", []),
        ("return np.array(self.files[i], dtype=object)", ["OBJECT"]),
        ("return np.asarray(Image.open(self.files[i])), i", []),
    ],
)
def test_sample_shapes(body: str, expected) -> None:
    helper = "    def load(self, i):\n        if i:\n            return None\n        return torch.zeros(1)\n"
    source = _SAMPLE_PRELUDE + helper + f"    def __getitem__(self, i):\n        {body}\n"
    ctx, _ = walk(source)
    classdef = next(s for s in ctx.module.body if isinstance(s, cst.ClassDef))
    getitem = next(s for s in classdef.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__getitem__")
    assert [shape.name for _, shape in harmful_returns(getitem, ctx)] == expected


@pytest.mark.parametrize(
    ("loaders", "expected"),
    [
        ("DataLoader(D(f, t), batch_size=4)", True),
        ("DataLoader(D(f, t), batch_size=4, collate_fn=pad)", False),
        ("DataLoader(D(f, t), batch_size=None)", False),
        ("DataLoader(D(f, t), collate_fn=pad)\nDataLoader(D(f, t))", True),  # one of them is enough
        ("DataLoader(Subset(D(f, t), idx), batch_size=2)", True),
        ("def make(ds):\n    return DataLoader(ds, batch_size=2)\nmake(D(f, t))", True),  # through a parameter
        ("DataLoader(E(f, t), batch_size=2)", True),  # a subclass inheriting __getitem__
        ("DataLoader(F(f, t), batch_size=2)", None),  # a subclass with its own __getitem__
        ("DataLoader(D(f, t), **options)", False),  # perhaps a collate_fn
        ("", None),
    ],
)
def test_default_collated(loaders: str, expected) -> None:
    source = (
        _SAMPLE_PRELUDE + "    def __getitem__(self, i):\n        return i\n"
        "class E(D):\n    pass\nclass F(D):\n    def __getitem__(self, i):\n        return 0\n" + loaders + "\n"
    )
    ctx, _ = walk(source, requires=("data",))
    classdef = next(s for s in ctx.module.body if isinstance(s, cst.ClassDef))
    assert ctx.data.default_collated(classdef) is expected


class _SplitProbe:
    """Records, for each `probe(...)` statement's call, which generator the split it draws comes from."""

    def __init__(self, ctx) -> None:
        self.ctx, self.seen = ctx, []

    def visit_Call(self, node) -> None:
        from ddplint.analysis.splits import split_draw

        if self.ctx.qualified_name(node.func) != "probe":
            draw = split_draw(node, self.ctx)
            if draw is not None:
                self.seen.append(draw.generator)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("a, b = random_split(ds, [0.9, 0.1])", ["torch"]),
        ("a, b = random_split(ds, [0.9, 0.1], generator=g)", []),
        ("a, b = random_split(ds, [0.9, 0.1], g)", []),
        ("a, b = train_test_split(ids, test_size=0.1)", ["numpy"]),
        ("a, b = train_test_split(ids, test_size=0.1, random_state=0)", []),
        ("a, b = train_test_split(ids, test_size=0.1, shuffle=False)", []),
        ("parts = hf.train_test_split(test_size=0.1)", ["numpy"]),
        ("parts = hf.train_test_split(test_size=0.1, seed=3)", []),
        ("p = np.random.permutation(n)\na, b = p[:9], p[9:]", ["numpy"]),
        ("p = torch.randperm(n).tolist()\na, b = np.split(np.array(p), [9])", ["torch"]),
        ("random.shuffle(ids)\na, b = ids[:9], ids[9:]", ["random"]),
        ("p = np.random.permutation(n)\nrows = [ds[i] for i in p]", []),  # used whole: no split
        ("p = torch.randperm(n)\nmine = p[rank::world]", []),  # one slice: a shard
        ("a, b = ids[:9], ids[9:]\nrandom.shuffle(ids)", []),  # cut before the shuffle
        ("p = np.random.default_rng(0).permutation(n)\na, b = p[:9], p[9:]", []),  # its own generator
    ],
)
def test_split_draws(body: str, expected: list) -> None:
    header = (
        "import random\nimport numpy as np\nimport torch\nfrom torch.utils.data import random_split\n"
        "from sklearn.model_selection import train_test_split\n"
    )
    _, (probe,) = walk(header + "def f(ds, ids, n, g, hf, rank, world):\n" + textwrap.indent(body, "    "), _SplitProbe)
    assert probe.seen == expected


# ------------------------------------------------------------ names a fix may write, names an import binds


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\n", True),
        ("import os.path\n", True),
        ("import posixpath as os\n", False),
        ("os = object()\n", False),
        ("import sys\n", None),
    ],
)
def test_names_module(source: str, expected: bool | None) -> None:
    class Probe:
        def __init__(self, ctx) -> None:
            self.ctx = ctx
            self.answer = "unasked"

        def visit_Pass(self, node) -> None:
            self.answer = self.ctx.scopes.names_module("os")

    _, (probe,) = walk(source + "pass\n", Probe)
    assert probe.answer == expected


def test_name_reads() -> None:
    module = cst.parse_module(
        "from torch.cuda.amp import autocast, GradScaler\nimport torch.cuda.amp as amp\n"
        "scaler = torch.cuda.amp.GradScaler()\nwith autocast():\n    pass\n"
    )
    reads = name_reads(module)
    assert reads["autocast"] == 1 and reads["torch"] == 1
    assert reads["GradScaler"] == 0 and reads["amp"] == 0  # only imported, or an attribute's own name
