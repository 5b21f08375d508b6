"""What the seed rules (DDP008, DDP023, DDP024) know about random state.

* Seed calls: the library seeders (`SEED_FUNCTIONS`) and helpers that seed
  by convention whichever module defines them (`SEED_HELPERS`: DINO's
  ``utils.fix_random_seeds(args.seed)``, YOLO's ``init_seeds``). A helper
  the module defines itself is judged where it calls the library.
* Launcher-only settings: cuDNN flags and deterministic switches, which, like
  seeds, stay in the process that sets them.
* Per-rank randomness in play (`Randomness`): dropout or random
  augmentation named in the module, random draws where the training runs
  again and again (in the training loop, what it calls, a Dataset's
  ``__getitem__``), or training steps on a model put in train mode
  (`sets_train_mode`: an opaque model's dropout draws on every forward). Without any, a shared seed changes nothing a rank draws
  differently, and DDP008 does not guess.
* A common seed by design (`COMMON_SEED`): code that initialises parameters
  identically on every rank before sharding them (FSDP, ``fully_shard``,
  meta-device init, ColossalAI's lazy init, tensor parallelism), and
  Hugging Face trainers, which reseed every rank identically themselves.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ddplint.analysis.data import is_dataloader, loader_arguments
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

SEED_FUNCTIONS = frozenset(
    {
        "torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.random.manual_seed",
        "numpy.random.seed", "random.seed",
        "lightning.seed_everything", "lightning.pytorch.seed_everything", "pytorch_lightning.seed_everything",
        "lightning.fabric.seed_everything", "lightning_fabric.seed_everything",
        "lightning.pytorch.utilities.seed.seed_everything", "pytorch_lightning.utilities.seed.seed_everything",
        "lightning.fabric.utilities.seed.seed_everything", "lightning_fabric.utilities.seed.seed_everything",
        "transformers.set_seed", "transformers.trainer_utils.set_seed",
        "accelerate.utils.set_seed", "accelerate.utils.random.set_seed",
        "colossalai.utils.set_seed", "colossalai.utils.common.set_seed",
    }
)  # fmt: skip

#: Helpers that seed torch/NumPy/random with their first argument, by name,
#: when another module defines them.
SEED_HELPERS = frozenset(
    {
        "fix_random_seeds", "fix_random_seed", "set_seed", "set_seeds", "set_random_seed", "set_random_seeds",
        "seed_everything", "seed_all", "init_seeds", "setup_seed", "setup_seeds", "same_seeds", "seed_torch",
        "random_seed", "set_global_seed",
    }
)  # fmt: skip

#: `torch.backends.cudnn.<flag> = ...` settings that a spawned worker does not inherit.
CUDNN_FLAGS = frozenset({"deterministic", "benchmark"})
DETERMINISM_CALLS = frozenset({"torch.use_deterministic_algorithms"})

#: Random draws (qualified names; NumPy's and Python's whole modules count).
RANDOM_DRAWS = frozenset(
    {
        "torch.randn", "torch.randn_like", "torch.rand", "torch.rand_like", "torch.randint", "torch.randint_like",
        "torch.randperm", "torch.bernoulli", "torch.multinomial", "torch.normal", "torch.poisson",
    }
)  # fmt: skip
RANDOM_MODULES = ("numpy.random.", "random.")
NOT_DRAWS = frozenset(
    {
        "numpy.random.seed", "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.get_state",
        "numpy.random.set_state", "random.seed", "random.Random", "random.SystemRandom", "random.getstate",
        "random.setstate",
    }
)  # fmt: skip
#: In-place draws on a tensor (`noise.normal_()`).
DRAW_METHODS = frozenset({"normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_"})
#: Methods of a Dataset that run once per sample, in the loader's workers.
PER_SAMPLE_METHODS = frozenset({"__getitem__", "__iter__", "__getitems__"})

#: Dropout and random augmentation, named anywhere in the module.
_RANDOM_LAYERS = re.compile(
    r"(?i:drop_?(?:out|path|rate|_prob))|\bRandom[A-Z]\w*|\bRand(?:Augment|omErasing)\b|\bAutoAugment\b|"
    r"\bTrivialAugment\w*|\bAugMix\b|\bColorJitter\b|\bMixup\b|\bCutMix\b|\bGaussianBlur\b"
)

#: Code that needs the same seed on every rank: parameters initialised
#: identically before they are sharded, or a trainer that reseeds them all.
COMMON_SEED = re.compile(
    r"\bfully_shard\(|\bFullyShardedDataParallel\(|\bFSDP\(|\bLazyInitContext\b|\bparallelize_module\(|"
    r"\.to_empty\(|\bdevice\(\s*[\"']meta[\"']|device\s*=\s*[\"']meta[\"']"
)
#: Trainer classes that reseed every rank with `args.seed` themselves
#: (`transformers.Trainer`, `trl.SFTTrainer`, ...; Lightning's does not).
HF_TRAINER_PACKAGES = ("transformers.", "trl.")


def is_hf_trainer(qualnames: frozenset) -> bool:
    return any(n and n.startswith(HF_TRAINER_PACKAGES) and n.endswith("Trainer") for n in qualnames)


def random_layer_call(call: cst.Call) -> bool:
    """A call that builds or applies dropout or a random augmentation
    (`nn.Dropout(0.1)`, `T.RandomResizedCrop(224)`, `F.dropout(x)`), or
    configures one (`Model(hidden_dropout_prob=0.1)`, `drop_path_rate=...`)."""
    name = last_name(call.func) or ""
    if _RANDOM_LAYERS.search(name):
        return True
    return any(a.keyword is not None and _RANDOM_LAYERS.search(a.keyword.value) for a in call.args)


#: Text of a class that draws per sample: random augmentation or a generator call.
_DRAWS_TEXT = re.compile(r"\brandom\.\w+\(|\bnp\.random\.|\btorch\.(?:rand\w*|normal|bernoulli|multinomial)\(")


class ClassCalls:
    """What the calls in a class's code show, noted call by call during the
    walk: whether it builds random augmentation or draws random numbers (a
    Dataset: what each rank's copy draws differs only by seed), and whether
    it puts a model in train mode and takes optimisation steps (a trainer:
    its `fit()` draws dropout masks per rank)."""

    __slots__ = ("draws", "train_mode", "steps")

    def __init__(self) -> None:
        self.draws = self.train_mode = self.steps = False

    @property
    def trains(self) -> bool:
        return self.train_mode and self.steps

    def note(self, call: cst.Call) -> None:
        method = last_name(call.func)
        shown = dotted_name(call.func) or (f"_.{method}" if method else "")  # `loss.mean().backward()`
        text = f"{shown}("
        keywords = " ".join(a.keyword.value for a in call.args if a.keyword is not None)
        if not self.draws and (
            _RANDOM_LAYERS.search(text) or _DRAWS_TEXT.search(text) or (keywords and _RANDOM_LAYERS.search(keywords))
        ):
            self.draws = True
        if not self.train_mode and sets_train_mode(call):
            self.train_mode = True
        if not self.steps and _STEP_TEXT.search(text):
            self.steps = True


def sets_train_mode(call: cst.Call) -> bool:
    """`model.train()` / `model.train(True)` / `model.train(mode=True)`: a
    module in train mode draws dropout masks (and drop-path, noise layers)
    on every forward, whatever its code, which the linted module may not show."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "train" or len(call.args) > 1:
        return False
    if not call.args:
        return True
    arg = call.args[0]
    return (arg.keyword is None or arg.keyword.value == "mode") and isinstance(arg.value, cst.Name) and arg.value.value == "True"


#: What a DataLoader worker's own seed comes from: `get_worker_info().seed`,
#: `torch.initial_seed()` in the worker. Both are the main process's torch
#: seed plus the worker index: different per worker, the same per rank
#: when the ranks share the torch seed.
WORKER_SEED_SOURCES = frozenset({"torch.utils.data.get_worker_info", "torch.initial_seed", "torch.random.initial_seed"})
_PARTIALS = frozenset({"functools.partial"})


def worker_init_functions(call: cst.Call, ctx: ModelView) -> list[cst.FunctionDef]:
    """The module functions a DataLoader call runs in each of its workers
    (`worker_init_fn=seed_worker`, `functools.partial(seed_worker, ...)`)."""
    if not is_dataloader(call, ctx):
        return []
    value = loader_arguments(call, ctx).value("worker_init_fn")
    values = list(ctx.values_of(value)) if isinstance(value, cst.Name) else [value]
    found = []
    for value in values:
        if isinstance(value, cst.Call) and ctx.qualified_names(value.func) & _PARTIALS and value.args:
            value = value.args[0].value
            found.extend(v for v in ctx.values_of(value) if isinstance(v, cst.FunctionDef))
        elif isinstance(value, cst.FunctionDef):
            found.append(value)
    return found


def from_worker_seed(node: cst.BaseExpression, ctx: ModelView, depth: int = 0) -> bool:
    """Whether a seed value derives from the DataLoader worker's own seed
    (`info.seed` after `info = get_worker_info()`, `torch.initial_seed() % 2**32`)."""
    if depth > 4:
        return False
    for part in (node, *descendants(node)):
        if isinstance(part, cst.Call) and ctx.qualified_names(part.func) & WORKER_SEED_SOURCES:
            return True
        if isinstance(part, cst.Name):
            values = [v for v in ctx.values_of(part) if isinstance(v, cst.BaseExpression)]
            if any(from_worker_seed(v, ctx, depth + 1) for v in values):
                return True
    return False


#: Draws of noise tensors: what a diffusion or RL helper in another module
#: draws per step (`torch.randperm`, a split drawn once, is left out).
NOISE_DRAWS = frozenset(
    {"torch.randn", "torch.randn_like", "torch.rand", "torch.rand_like", "torch.randint", "torch.randint_like",
     "torch.normal", "torch.bernoulli"}
)  # fmt: skip
_STEP_TEXT = re.compile(r"\.backward\(|\w*(?:optim|scaler|opt)\w*\.step\(", re.IGNORECASE)


def draws_noise(call: cst.Call, ctx: ModelView) -> bool:
    """`torch.randn_like(x)`, `noise.normal_()`: a noise tensor drawn from the global generator."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in DRAW_METHODS:
        return True
    return bool(ctx.qualified_names(func) & NOISE_DRAWS)


def is_draw(qualnames: frozenset) -> bool:
    """Whether a call draws from a global random generator."""
    for name in qualnames:
        if not name or name in NOT_DRAWS:
            continue
        if name in RANDOM_DRAWS or name.startswith(RANDOM_MODULES):
            return True
    return False


def seed_call(call: cst.Call, ctx: ModelView) -> bool:
    """Whether `call` seeds the global generators: a library seeder, or a
    conventional seeding helper the module does not define itself."""
    func = call.func
    if ctx.qualified_names(func) & SEED_FUNCTIONS:
        return True
    if last_name(func) not in SEED_HELPERS or not call.args:
        return False
    if isinstance(func, cst.Name) and any(isinstance(v, cst.FunctionDef) for v in ctx.values_of(func)):
        return False  # the module's own helper: judged where it calls the library
    return True
