"""DDP015 dataset-rng-shared-across-workers."""

from __future__ import annotations

import re

from ddplint.analysis.data import is_dataloader, loader_arguments, methods, reachable_methods, self_assignments
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

GENERATORS = frozenset(
    {
        "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
        "random.Random", "torch.Generator", "torch._C.Generator",
    }
)  # fmt: skip
#: What makes a generator per-worker: the worker's own seed.
_PER_WORKER = re.compile(r"\b(?:get_worker_info|initial_seed)\b")


class DatasetRngSharedAcrossWorkers(Rule):
    """
    ## What it does

    Flags a Dataset that creates its own random generator in `__init__`
    (`np.random.default_rng(...)`, `np.random.RandomState(...)`,
    `np.random.Generator(...)`, `random.Random(...)`, `torch.Generator()`,
    with or without `.manual_seed(...)`) and draws from it in `__getitem__`
    or `__iter__` (or a method they call). The finding is on the generator's
    creation.

    Not flagged: a generator re-created or reseeded from the worker's seed
    (`torch.utils.data.get_worker_info()`, `torch.initial_seed()`) anywhere
    in the class, re-created in `__getitem__`/`__iter__` themselves (timm's
    `self.rng = random.Random(worker_seed() + epoch)`), or set by a
    `worker_init_fn` of the module; the
    global `np.random`, `random` and `torch` functions, which PyTorch reseeds
    per worker; a missing `worker_init_fn` by itself.

    **Preview** (`--preview`): on the training repositories its only
    findings were in dataset code no entry point builds.

    ## Why is this bad?

    Each DataLoader worker is a fork of the main process and gets a copy of
    the dataset, generator state included, so every worker produces the
    same sequence of "random" crops, flips and masks; with a constant seed,
    every rank does too. PyTorch reseeds only the global `random`, `torch`
    and (since 1.9) NumPy's legacy global generator in each worker, never a
    generator object the dataset owns.

    ## Example

    ```python
    class RandomCrops(Dataset):
        def __init__(self, images, seed=0):
            self.images = images
            self.rng = np.random.default_rng(seed)

        def __getitem__(self, idx):
            top = self.rng.integers(0, 32)
            return self.images[idx][:, top : top + 224]
    ```

    ## Use instead

    ```python
    class RandomCrops(Dataset):
        def __init__(self, images):
            self.images = images
            self.rng = None

        def __getitem__(self, idx):
            if self.rng is None:  # first use in this worker
                self.rng = np.random.default_rng(torch.initial_seed())
            top = self.rng.integers(0, 32)
            return self.images[idx][:, top : top + 224]
    ```

    ## Fix safety

    No automatic fix: seeding the generator in a `worker_init_fn` touches the
    DataLoader that builds the dataset, usually in another function or file.

    ## References

    - [torch.utils.data: randomness in multi-process data loading](https://pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading)
    """

    code = "DDP015"
    name = "dataset-rng-shared-across-workers"
    severity = Severity.WARNING
    summary = "A Dataset's own random generator is copied into every worker: identical augmentations."
    tokens = ("default_rng", "RandomState", "Generator", "Random")
    context_tokens = ("__getitem__", "__iter__")
    requires = frozenset({"data"})
    preview = True
    tags = ("correctness", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.found: list[tuple[cst.ClassDef, str, cst.Call, cst.CSTNode]] = []
        self.worker_init_fns: list[cst.FunctionDef] = []

    def visit_Call(self, node: cst.Call) -> None:
        if is_dataloader(node, self.ctx):
            value = loader_arguments(node, self.ctx).value("worker_init_fn")
            if isinstance(value, cst.Name):
                self.worker_init_fns += [v for v in self.ctx.values_of(value) if isinstance(v, cst.FunctionDef)]

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        table = methods(node)
        init = table.get("__init__")
        if init is None or not ({"__getitem__", "__iter__"} & table.keys()):
            return
        created = [(attr, value, statement) for attr, value, statement in self_assignments(init) if self._creates(value)]
        if not created or _PER_WORKER.search(self.ctx.module.code_for_node(node)):
            return
        drawn, recreated = set(), set()
        for method in reachable_methods(node, "__getitem__", "__iter__"):
            drawn |= _drawn_attributes(method)
            recreated |= {attr for attr, _, _ in self_assignments(method)}
        for attr, value, statement in created:
            if attr in drawn and attr not in recreated:  # re-created where it is drawn: per worker
                self.found.append((node, attr, value, statement))

    def _creates(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        if self.ctx.qualified_names(value.func) & GENERATORS:
            return True
        func = value.func  # torch.Generator().manual_seed(seed)
        return isinstance(func, cst.Attribute) and func.attr.value == "manual_seed" and self._creates(func.value)

    def finish(self) -> None:
        for classdef, attr, value, statement in self.found:
            if self.ctx.data.kind(classdef) is None or self._reseeded_by_worker_init(attr):
                continue
            self.report(
                value,
                f"`self.{attr}` is created once in `{classdef.name.value}.__init__` and drawn from in every "
                "worker: each forked DataLoader worker gets a copy of the same state, so all workers (and, "
                "with a fixed seed, all ranks) produce the same random augmentations; create it per worker "
                "from `torch.initial_seed()` or `get_worker_info().seed`",
                statement=statement,
            )

    def _reseeded_by_worker_init(self, attr: str) -> bool:
        code = self.ctx.module.code_for_node
        return any(re.search(rf"\.{re.escape(attr)}\b", code(f.body)) for f in self.worker_init_fns)


def _drawn_attributes(function: cst.FunctionDef) -> set[str]:
    """``self.x`` used as a generator: ``self.x.method(...)`` or ``generator=self.x``."""
    drawn = set()
    for node in descendants(function.body):
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and last_name(func.value) and _is_self_attr(func.value):
            drawn.add(func.value.attr.value)
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "generator" and _is_self_attr(arg.value):
                drawn.add(arg.value.attr.value)
    return drawn


def _is_self_attr(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
