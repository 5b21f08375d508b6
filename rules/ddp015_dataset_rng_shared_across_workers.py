"""DDP015 dataset-rng-shared-across-workers."""

from __future__ import annotations

from ddplint.knowledge import GENERATOR_CLASSES
from ddplint.analysis.guards import Site
from ddplint.analysis.seeding import owned_generators, reseeds_in_workers, worker_init_functions
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


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
    tokens = tuple(sorted({name.rsplit(".", 1)[-1] for name in GENERATOR_CLASSES}))
    context_tokens = ("__getitem__", "__iter__")
    requires = frozenset({"data"})
    preview = True
    tags = ("correctness", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.worker_inits: set[cst.FunctionDef] = set()

    def visit_Call(self, node: cst.Call) -> None:
        self.worker_inits.update(worker_init_functions(node, self.ctx))

    def check_ClassDef(self, node: cst.ClassDef, site: Site) -> None:
        if self.ctx.data.kind(node) is None:
            return
        for attr, value, statement in owned_generators(node, self.ctx):
            if not reseeds_in_workers(attr, self.worker_inits, self.ctx):
                self.report(
                    value,
                    f"`self.{attr}` is created once in `{node.name.value}.__init__` and drawn from in every "
                    "worker: each forked DataLoader worker gets a copy of the same state, so all workers (and, "
                    "with a fixed seed, all ranks) produce the same random augmentations; create it per worker "
                    "from `torch.initial_seed()` or `get_worker_info().seed`",
                    statement=statement,  # the assignment in `__init__`: a noqa comment there suppresses it
                )
