"""Is this module distributed training code? (SPEC §2 "distributed context").

A module is in distributed context when it imports `torch.distributed`,
`DistributedDataParallel`, FSDP, accelerate, deepspeed or Lightning, refers
to one of those through an imported parent package (``torch.distributed.``
after ``import torch``), calls an ``init_process_group``, or imports a rank
helper by its conventional name (``from .utils.dist import
is_main_process``: its rank tests come from the project) — and its own
code shows that it runs as one process per rank: it starts or joins a
process group, builds an `Accelerator`/`PartialState`/Lightning
`Trainer`/`Fabric`/DeepSpeed engine, wraps a model, reads a rank, imports a
rank helper or compares a rank with 0.
Importing a library alone does not make a module distributed: the
command-line tools and checkpoint converters shipped with accelerate and
DeepSpeed import them and run as a single process, and so does a module
that joins a group of one (`init_process_group(..., world_size=1)`) or
builds every Fabric with one device (`L.Fabric(devices=1)`: Fabric
launches no other process). The answer is final only
once the whole module was walked; rules flagged `distributed_only` have
their findings filtered by the engine at the end.
"""

from __future__ import annotations

import re

from ddplint.knowledge import DEEPSPEED_ENTRY_POINTS, DEVICE_LAUNCHERS, PER_RANK_WORDS, RANK_HELPER_NAMES
from ddplint.analysis.names import dotted_name
from ddplint.analysis.probe import AnyOf, Probe
from ddplint.analysis.scope import ScopeTracker, import_bindings, import_from_module
from ddplint.lazy import cst

DISTRIBUTED_PREFIXES = (
    "torch.distributed",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed",
    "accelerate",
    "deepspeed",
    "lightning",
    "pytorch_lightning",
)

_INIT_CALLS = ("init_process_group", "init_distributed")
#: Lightning Fabric's classes: `Fabric(devices=1)` launches no other process.

#: An import of a rank helper by its conventional name (``from .utils.dist
#: import is_main_process``, in parentheses over several lines too): the
#: importer tests its rank with a project helper.
RANK_HELPER_IMPORT = Probe(
    tuple(sorted(RANK_HELPER_NAMES)),
    re.compile(rf"\bimport\s+(?:\([^)]*?|[^\n]*?)\b(?:{'|'.join(sorted(RANK_HELPER_NAMES))})\b"),
    words=True,
)
#: A rank compared with 0 (``if rank == 0:``, ``args.local_rank != 0``, ``global_rank > 0``).
_RANK_COMPARISON = Probe(
    ("rank",),
    re.compile(r"\b(?:local_|global_|world_|node_|ddp_|dist_|process_)?rank\s*(?:==|!=|>|<=)\s*0\b|\b0\s*[=!]=\s*(?:\w+\.)*(?:local_|global_)?rank\b"),
)

#: Identifiers that only code running as one process per rank uses.
_WORD_EVIDENCE = Probe.of_words((
    *PER_RANK_WORDS, "init_process_group", "init_distributed", "deepspeed.initialize", "Accelerator", "PartialState",
    "DistributedDataParallel", "FullyShardedDataParallel", "fully_shard", "Trainer", "Fabric", "LightningModule",
    "LightningDataModule", "barrier", "all_reduce",
))  # fmt: skip
_EXECUTION_EVIDENCE = AnyOf((_WORD_EVIDENCE, RANK_HELPER_IMPORT, _RANK_COMPARISON))


#: A launcher sets the rank variables for the workers it starts; it is one
#: process per node (torchrun's agent, the deepspeed launcher), not per rank.
_LAUNCHER = Probe(("RANK",), re.compile(r"""\[\s*["'](?:LOCAL_|GROUP_)?RANK["']\s*\]\s*=[^=]"""))


#: Packages whose `Trainer` classes run one process per rank under torchrun.
HF_TRAINER_MODULES = ("transformers", "trl")
#: The environment torchrun sets, read by scripts that let a trainer do the rest (alpaca-lora).
_TORCHRUN_ENV = Probe.of_words(("LOCAL_RANK", "WORLD_SIZE"))


def launched_per_rank(source: str) -> bool:
    """A trainer script that reads torchrun's environment (`WORLD_SIZE`)."""
    return _TORCHRUN_ENV.matches(source)


def runs_per_rank(source: str) -> bool:
    """Whether the module's text shows it runs as one process per rank."""
    return _EXECUTION_EVIDENCE.matches(source) and not _LAUNCHER.matches(source)


#: Parts of those libraries that single-process code uses as well: DeepSpeed's
#: device abstraction (`get_accelerator().device_name()`).
NOT_DISTRIBUTED = ("deepspeed.accelerator",)


def is_distributed_name(qualname: str | None) -> bool:
    """True for a qualified name inside one of the distributed libraries."""
    if not qualname or any(qualname == p or qualname.startswith(p + ".") for p in NOT_DISTRIBUTED):
        return False
    return any(qualname == p or qualname.startswith(p + ".") for p in DISTRIBUTED_PREFIXES)


class DistributedContext:
    """Walker analysis that records whether the module is distributed code."""

    def __init__(self, scopes: ScopeTracker) -> None:
        self._scopes = scopes
        self.found = False
        #: A Hugging Face trainer is imported: with torchrun it runs as one process per rank.
        self.hf_trainer = False
        #: A process group of one process only (`init_process_group(..., world_size=1)`).
        self._one_group = False
        #: Fabric/Lightning `Trainer`s built for one device on one node, and those built otherwise.
        self._one_device = False
        self._many_devices = False
        #: `init_process_group` calls that do not say the group has one process.
        self._other_groups = False
        #: `deepspeed.initialize`/`deepspeed.add_config_arguments` is called: the
        #: script is started by the DeepSpeed launcher (which passes `--local_rank`).
        self.deepspeed_launched = False

    @property
    def one_process(self) -> bool:
        """The module runs as one process: it joins a group of one, or its only
        launcher is a Fabric/`Trainer` of one device (`L.Fabric(devices=1)`,
        litgpt's generation scripts); final after the walk."""
        return self._one_group or (self._one_device and not self._many_devices and not self._other_groups)

    def leave_Import(self, node: cst.Import) -> None:
        if not self.found:
            self.found = any(is_distributed_name(dotted_name(a.name)) for a in node.names)

    def leave_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not self.hf_trainer:
            self.hf_trainer = any(
                q.startswith(HF_TRAINER_MODULES) and q.rsplit(".", 1)[-1].endswith("Trainer")
                for _, q in import_bindings(node)
            )
        if self.found:
            return
        if is_distributed_name(import_from_module(node)):
            self.found = True
        else:
            self.found = any(
                is_distributed_name(q) or q.rsplit(".", 1)[-1] in RANK_HELPER_NAMES for _, q in import_bindings(node)
            )  # `from .utils.dist import is_main_process`: a project's rank helper

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
        elif isinstance(func, cst.Name):
            name = func.value
        else:
            return
        if not self.hf_trainer and name.endswith("Trainer"):
            self.hf_trainer = any(
                q and q.startswith(HF_TRAINER_MODULES) for q in self._scopes.qualified_names(func)
            )
        if name in _INIT_CALLS:
            self.found = True
            if any(_one_process(a) for a in node.args):
                self._one_group = True
            else:
                self._other_groups = True
            return
        if name in _DEEPSPEED_LASTS and not self.deepspeed_launched:
            self.deepspeed_launched = bool(self._scopes.qualified_names(func) & DEEPSPEED_ENTRY_POINTS)
        if name in ("Fabric", "Trainer") and self._scopes.qualified_names(func) & DEVICE_LAUNCHERS:
            if _one_device(node.args):
                self._one_device = True
            else:
                self._many_devices = True
        if not self.found and isinstance(func, cst.Attribute):
            self.found = any(is_distributed_name(q) for q in self._scopes.qualified_names(func))


_DEEPSPEED_LASTS = frozenset(q.rsplit(".", 1)[-1] for q in DEEPSPEED_ENTRY_POINTS)


def _one_device(args) -> bool:
    """`devices=1` and no more than one node: one process."""
    keywords = {a.keyword.value: a.value for a in args if a.keyword is not None}
    if any(a.keyword is None or a.star for a in args):
        return False  # positional or `**kwargs`: unknown
    devices, nodes = keywords.get("devices"), keywords.get("num_nodes")
    return _is_one(devices) and (nodes is None or _is_one(nodes))


def _is_one(value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Integer) and value.value == "1"


def _one_process(arg: cst.Arg) -> bool:
    """`world_size=1`: OLMo's dataloader replay joins a group of one."""
    return (
        arg.keyword is not None and arg.keyword.value == "world_size"
        and isinstance(arg.value, cst.Integer) and arg.value.value == "1"
    )  # fmt: skip

