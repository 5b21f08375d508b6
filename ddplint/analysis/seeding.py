"""What the model knows about random state: seeds, draws, generators.

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
  (`sets_train_mode`: an opaque model's dropout draws on every forward)
  unless the model is visibly free of randomness (`model_draws_in_train`:
  the module's own classes, built from torch.nn layers without dropout and
  drawing nothing in ``forward``). Without any, a shared seed changes
  nothing a rank draws differently, and DDP008 does not guess.
* A common seed by design (`COMMON_SEED`): code that initialises parameters
  identically on every rank before sharding them (FSDP, ``fully_shard``,
  meta-device init, ColossalAI's lazy init, tensor parallelism), and
  Hugging Face trainers, which reseed every rank identically themselves.
* `Seeds` (the model's ``seeds`` analysis, ``requires = {"rank", "seeds"}``):
  the module's seed calls in walk order (`SeedCall`: what each seeds, with
  what value, whether that value is the same on every rank:
  `same_on_every_rank`), asked after the walk: which seeds every rank
  shares, what seeds a generator before a given point (`Seeded`), whether
  the module seeds anything at all.
* `Randomness` (the ``randomness`` analysis): the per-rank randomness a
  shared seed governs, and whether the ranks need a common seed by design.
* Settings that stay in the process that makes them (`process_local_setting`):
  seed calls, cuDNN flags, deterministic switches.
* Generators a Dataset owns (`owned_generators`): created once in
  ``__init__`` and drawn from per sample, copied into every worker.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.analysis.callgraph import is_main_test
from ddplint.knowledge import (
    ACCELERATE_SET_SEED,
    DROPOUT_BY_DEFAULT,
    GENERATOR_CLASSES,
    GLOBAL_RANK_NAMES,
    HF_TRAINER_PACKAGES,
    MODEL_WRAPPERS,
    MODULE_CONTAINERS,
    MODULE_RETURNING_METHODS,
    RANDOM_FUNCTIONS,
    RANDOM_LAYER_NAME,
    RANDOM_NN_LAYERS,
    TENSOR_PARALLEL,
    UNIFORM_CALLS,
    UNIFORM_NAMES,
)
from ddplint.analysis.classes import imported_bases
from ddplint.analysis.data import is_dataloader, loader_arguments, methods, reachable_methods, self_assignments
from ddplint.analysis.guards import Runs, Site
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.rewrite import ProposedFix, is_atom, parenthesized
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst
from ddplint.model import Applicability

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

#: Words without which a module calls no seeder (`seed_call`): the prefilter's
#: tokens for the rules that judge seeds (a helper's name alone is one).
SEED_TOKENS = tuple(sorted({name.rsplit(".", 1)[-1] for name in SEED_FUNCTIONS} | SEED_HELPERS))

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


def is_hf_trainer(qualnames: frozenset) -> bool:
    """A class derived from a trainer that reseeds every rank with `args.seed`
    itself (`HF_TRAINER_PACKAGES`: `transformers.Trainer`, `trl.SFTTrainer`, ...)."""
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


# ------------------------------------------------------------ what a model draws in train mode

_RANDOM_NAME = re.compile(RANDOM_LAYER_NAME)
_MODEL_DEPTH = 10
#: Methods that run when a module is called.
_FORWARD_METHODS = ("forward", "__call__")
#: Calls that gather layers into a list or a module (`blocks.append(...)`, `self.add_module(name, ...)`).
_COLLECTING_METHODS = frozenset({"append", "extend", "insert", "add_module", "register_module"})


def model_draws_in_train(node: cst.BaseExpression, ctx: ModelView) -> bool | None:
    """Whether the model `node` holds (`model` of `model.train()`) draws random
    numbers in train mode: True for dropout, drop-path, noise in its forward;
    False when it is visibly built from torch.nn layers and classes of this
    module none of which draws; None when it cannot be seen (an imported
    model, a factory, a module passed in from outside)."""
    return _ModelRandomness(ctx).of_model(node, ctx.enclosing_function(), 0)


def _combine(answers) -> bool | None:
    """True if any is True; else None if any is unknown; else False."""
    unknown = False
    for answer in answers:
        if answer is True:
            return True
        unknown = unknown or answer is None
    return None if unknown else False


def _zero(node: cst.BaseExpression) -> bool:
    """A literal rate of zero (`0`, `0.0`, `None`, `False`): no draw."""
    if isinstance(node, cst.Name):
        return node.value in ("None", "False")
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.value.replace("_", "")) == 0.0
        except ValueError:
            return False
    return False


def _random_keywords(call: cst.Call) -> bool:
    """`dropout=0.1`, `attn_pdrop=cfg.p`, `drop_path_rate=rate`: a rate that may be non-zero."""
    return any(
        a.keyword is not None and _RANDOM_NAME.search(a.keyword.value) and not _zero(a.value) for a in call.args
    )


class _ModelRandomness:
    """Reads a model's classes (memoised per question) for randomness in train mode."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self.classes: dict[cst.ClassDef, bool | None] = {}
        self.functions: dict[cst.FunctionDef, bool] = {}
        #: Model expressions already followed: each counts once.
        self.followed: set[int] = set()

    # ---------------------------------------------------------------- names

    def _module_classes(self, node: cst.BaseExpression) -> list[cst.ClassDef]:
        if not isinstance(node, cst.Name):
            return []
        return [v for v in self.ctx.flow.module_values(node) if isinstance(v, cst.ClassDef)]

    def _nn_layer(self, func: cst.BaseExpression) -> str | None:
        """`Dropout` for `nn.Dropout`, `torch.nn.Dropout`: a torch.nn layer's name."""
        names = self.ctx.qualified_names(func)
        for name in names:
            if name and name.startswith("torch.nn.") and name.count(".") == 2:
                return name.rsplit(".", 1)[-1]
        return None

    # ---------------------------------------------------------------- the model

    def of_model(self, node: cst.CSTNode, function: cst.FunctionDef | None, depth: int) -> bool | None:
        """What the model expression `node` holds: followed through names,
        wrappers (`DDP(model)`, `torch.compile(model)`), `.module`, `.cuda()`."""
        if depth > _MODEL_DEPTH:
            return None
        if id(node) in self.followed:
            return False  # already counted (`model = torch.compile(model)` leads back to itself)
        self.followed.add(id(node))
        depth += 1
        if isinstance(node, cst.Name):
            origins = self.ctx.flow.origins(node, function)
            if any(o is node for o in origins):
                return None
            return _combine(self.of_model(o, function, depth) for o in origins)
        if isinstance(node, cst.Attribute):
            if node.attr.value in ("module", "_orig_mod"):
                return self.of_model(node.value, function, depth)  # DDP's and torch.compile's inner model
            origins = self.ctx.flow.origins(node, function)
            if any(o is node for o in origins):
                return None
            return _combine(self.of_model(o, function, depth) for o in origins)
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MODULE_RETURNING_METHODS:
            return self.of_model(func.value, function, depth)
        if self.ctx.qualified_names(func) & MODEL_WRAPPERS:
            inner = next((a.value for a in node.args if a.keyword is None or a.keyword.value in ("module", "model")), None)
            return None if inner is None else self.of_model(inner, function, depth)
        if isinstance(func, cst.Attribute):
            # `GPT.from_pretrained(...)`: a classmethod of a module class builds one
            classes = self._module_classes(func.value)
            if len(classes) == 1 and _is_classmethod(self.ctx.flow.methods_of(classes[0]).get(func.attr.value)):
                return self.of_class(classes[0], depth)
            if self._nn_layer(func) is None:
                return None  # `accelerator.prepare(model)`, `AutoModel.from_pretrained(...)`: not seen
        return self.of_member(node, function, depth)

    # ---------------------------------------------------------------- layers

    def of_member(self, node: cst.CSTNode, function: cst.FunctionDef | None, depth: int) -> bool | None:
        """A layer a class builds (`self.x = <node>`), or an element of a container."""
        if depth > _MODEL_DEPTH:
            return None
        depth += 1
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            return _combine(
                None if isinstance(e, cst.StarredElement) else self.of_member(e.value, function, depth)
                for e in node.elements
            )
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self.of_member(node.elt, function, depth)
        if isinstance(node, cst.Dict):
            return _combine(
                self.of_member(e.value, function, depth) if isinstance(e, cst.DictElement) else None for e in node.elements
            )
        if isinstance(node, cst.DictComp):
            return self.of_member(node.value, function, depth)
        if isinstance(node, cst.Name):
            if node.value in ("None", "True", "False"):
                return False
            origins = self.ctx.flow.origins(node, function)
            if not origins or any(o is node for o in origins):
                return None  # a name not followed (a global of another module, a loop variable)
            return _combine(self.of_member(o, function, depth) for o in origins)
        if isinstance(node, cst.Param):
            return None  # passed in: whatever the caller builds
        if not isinstance(node, cst.Call):
            return False  # numbers, tensors' attributes, expressions: not layers
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MODULE_RETURNING_METHODS:
            return self.of_member(func.value, function, depth)
        layer = self._nn_layer(func)
        if layer is not None:
            return self._of_nn_layer(layer, node, function, depth)
        if _RANDOM_NAME.search(last_name(func) or "") or _random_keywords(node):
            return True  # `DropPath(0.1)`, `Block(dim, attn_pdrop=p)`
        classes = self._module_classes(func)
        if classes:
            return _combine(self.of_class(c, depth) for c in classes)
        names = self.ctx.qualified_names(func)
        if names and all(n and (n.startswith("torch.") or n.startswith("builtins.")) for n in names):
            if names & {"builtins.dict", "builtins.list", "builtins.tuple"}:
                return _combine(self.of_member(a.value, function, depth) for a in node.args)
            return False  # a tensor (`torch.ones`, `nn.Parameter`), a generator, a number
        if isinstance(func, cst.Name):
            origins = [o for o in self.ctx.flow.origins(node, function) if o is not node]
            if origins:  # a module function building the layer: what it returns
                return _combine(self.of_member(o, None, depth) for o in origins)
            return None  # an imported builder, a parameter: not seen
        if not names:
            return False  # a method of a local value (`x.new_zeros(n)`): not a layer
        return None  # an imported factory (`timm.create_model`, `AutoModel.from_pretrained`)

    def _of_nn_layer(self, layer: str, call: cst.Call, function: cst.FunctionDef | None, depth: int) -> bool | None:
        if layer in RANDOM_NN_LAYERS:
            rate = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "p"), None)
            return rate is None or not _zero(rate)
        if _random_keywords(call):
            return True  # `nn.LSTM(..., dropout=0.2)`, `nn.MultiheadAttention(..., dropout=p)`
        if layer in DROPOUT_BY_DEFAULT and not any(a.keyword is not None and a.keyword.value == "dropout" for a in call.args):
            return True
        if layer in MODULE_CONTAINERS or layer.startswith("Transformer"):
            return _combine(
                None if a.star else self.of_member(a.value, function, depth) for a in call.args if a.keyword is None
            )
        return False

    # ---------------------------------------------------------------- classes

    def of_class(self, cls: cst.ClassDef, depth: int) -> bool | None:
        if cls in self.classes:
            return self.classes[cls]
        self.classes[cls] = False  # in progress: a class that builds itself adds nothing
        answer = self._of_class(cls, depth)
        self.classes[cls] = answer
        return answer

    def _of_class(self, cls: cst.ClassDef, depth: int) -> bool | None:
        flow = self.ctx.flow
        answers: list[bool | None] = []
        for base in cls.bases:
            if base.keyword is not None:
                continue
            classes = self._module_classes(base.value)
            if classes:
                answers.extend(self.of_class(c, depth) for c in classes)
                continue
            layer = self._nn_layer(base.value)
            if layer == "Module" or (layer is not None and layer not in RANDOM_NN_LAYERS and layer not in DROPOUT_BY_DEFAULT):
                continue
            answers.append(True if layer is not None else None)  # a random torch.nn layer, or an unseen base
        if not cls.bases:
            answers.append(None)
        if True in answers:
            return True
        layers: set[str] | None = None
        for method in (s for s in cls.body.body if isinstance(s, cst.FunctionDef)):
            for node in descendants(method.body):
                if isinstance(node, cst.Call):
                    layer = self._nn_layer(node.func)
                    if layer is not None:
                        if layer in RANDOM_NN_LAYERS and self._of_nn_layer(layer, node, method, depth):
                            return True  # built anywhere in the class (`layers.append(nn.Dropout(p))`)
                    elif (
                        self.ctx.qualified_names(node.func) & RANDOM_FUNCTIONS
                        or _RANDOM_NAME.search(last_name(node.func) or "")
                        or _random_keywords(node)
                    ):
                        return True
                    elif (
                        method.name.value == "__init__" and last_name(node.func) in _COLLECTING_METHODS and node.args
                        and self.of_member(node.args[-1].value, method, depth) is True
                    ):
                        return True  # `blocks.append(Block(p=0.1))`, later `nn.ModuleList(blocks)`
                elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
                    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                    for target in targets:
                        if _is_self_attribute(target, method):
                            answer = self.of_member(node.value, method, depth)
                            if answer is None:
                                layers = _class_called(cls) if layers is None else layers
                                if target.attr.value not in layers:
                                    answer = False  # never called as a layer (a setting, a tensor)
                            answers.append(answer)
        table = flow.methods_of(cls)
        todo = [table[m] for m in _FORWARD_METHODS if m in table]
        seen: set[cst.FunctionDef] = set()
        while todo:
            method = todo.pop()
            if method in seen:
                continue
            seen.add(method)
            if self._draws(method, depth):
                return True
            todo.extend(table[m] for m in _self_called(method) if m in table)
        return _combine(answers)

    def _draws(self, function: cst.FunctionDef, depth: int) -> bool:
        """Whether `function` (a forward, what it calls of the module) draws random numbers."""
        if function in self.functions:
            return self.functions[function]
        self.functions[function] = False
        found = False
        for node in descendants(function.body):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            names = self.ctx.qualified_names(func)
            if is_draw(names) or names & RANDOM_FUNCTIONS or (isinstance(func, cst.Attribute) and func.attr.value in DRAW_METHODS):
                found = True
                break
            if _RANDOM_NAME.search(last_name(func) or "") or _random_keywords(node):
                found = True
                break
            if isinstance(func, cst.Name) and depth < _MODEL_DEPTH:
                helpers = [v for v in self.ctx.flow.module_values(func) if isinstance(v, cst.FunctionDef)]
                if any(self._draws(h, depth + 1) for h in helpers):
                    found = True
                    break
        self.functions[function] = found
        return found


def _is_classmethod(function: cst.FunctionDef | None) -> bool:
    return function is not None and any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod" for d in function.decorators
    )


def _self_name(method: cst.FunctionDef) -> str | None:
    params = method.params.posonly_params or method.params.params
    return params[0].name.value if params else None


def _is_self_attribute(target: cst.BaseExpression, method: cst.FunctionDef) -> bool:
    return (
        isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
        and target.value.value == _self_name(method)
    )  # fmt: skip


def _self_called(method: cst.FunctionDef) -> set[str]:
    """Names `n` of the `self.n(...)` calls in a method."""
    receiver = _self_name(method)
    return {
        node.func.attr.value
        for node in descendants(method.body)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        and isinstance(node.func.value, cst.Name) and node.func.value.value == receiver
    }  # fmt: skip


def _class_called(cls: cst.ClassDef) -> set[str]:
    """Attributes of `self` a class calls, calls methods of, iterates or indexes
    (`self.attn(x)`, `self.body.encode(x)`, `for b in self.blocks`): its
    layers, as opposed to settings it keeps."""
    used: set[str] = set()
    for method in (s for s in cls.body.body if isinstance(s, cst.FunctionDef)):
        receiver = _self_name(method)
        used |= _self_called(method)
        for node in descendants(method.body):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                value = node.func.value
                if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == receiver:
                    used.add(value.attr.value)
            elif isinstance(node, (cst.For, cst.CompFor)):
                target = node.iter
                while isinstance(target, (cst.Attribute, cst.Call)):
                    if isinstance(target, cst.Call):
                        target = target.func
                        continue
                    if isinstance(target.value, cst.Name) and target.value.value == receiver:
                        used.add(target.attr.value)
                        break
                    target = target.value
            elif isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute):
                value = node.value
                if isinstance(value.value, cst.Name) and value.value.value == receiver:
                    used.add(value.attr.value)
    return used


# ------------------------------------------------------------ the module's seeds

TORCH, NUMPY, PYTHON = "torch", "numpy", "random"
ALL_GENERATORS = frozenset({TORCH, NUMPY, PYTHON})
#: Calls that start a rank's program where they are: the seeds before them are this module's.
_STARTS = frozenset({"init_process_group", "Accelerator", "PartialState"})
_CUDNN = "torch.backends.cudnn."


def seeded_generators(call: cst.Call, ctx: ModelView) -> frozenset[str]:
    """The global generators `call` seeds (none: not a seed call). Frameworks'
    and helpers' seeders (`seed_everything`, `set_seed`, `init_seeds`) seed all three."""
    if not seed_call(call, ctx):
        return frozenset()
    for name in ctx.qualified_names(call.func):
        if name and name.startswith("torch."):
            return frozenset({TORCH})
        if name == "numpy.random.seed":
            return frozenset({NUMPY})
        if name == "random.seed":
            return frozenset({PYTHON})
    return ALL_GENERATORS


def process_local_settings(node: cst.Call | cst.Assign, ctx: ModelView) -> list[tuple[cst.CSTNode, str]]:
    """What `node` sets that stays in the process that sets it, each part with
    how a finding shows it: a seed call or a deterministic switch
    (`torch.manual_seed(...)`), or the targets of an assignment to a cuDNN
    flag (`cudnn.deterministic = ...`), unless it assigns `False`, the
    default every process starts with."""
    code = ctx.module.code_for_node
    if isinstance(node, cst.Call):
        local = seed_call(node, ctx) or ctx.qualified_names(node.func) & DETERMINISM_CALLS
        return [(node, f"`{code(node.func)}(...)`")] if local else []
    if isinstance(node.value, cst.Name) and node.value.value == "False":
        return []
    return [
        (t.target, f"`{code(t.target)} = ...`") for t in node.targets if isinstance(t.target, cst.Attribute)
        and any(n and n.startswith(_CUDNN) and n[len(_CUDNN):] in CUDNN_FLAGS for n in ctx.qualified_names(t.target))
    ]  # fmt: skip


def same_on_every_rank(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """Whether a seed value is certainly the same on every rank (during the walk).

    Literals, names and keys that say "seed" (`seed`, `args.seed`,
    `config["seed"]`) unless the module assigns them something else
    (`args.seed = random.randint(1, 1000)` draws a different seed in each
    process), the world size, loop counters, and arithmetic or int()/str()
    of those. Anything else (`base + stage_index`, `time.time()`) may
    differ per rank by design and is not judged.
    """
    if depth > 8:
        return False
    depth += 1
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
        return same_on_every_rank(node.left, ctx, depth) and same_on_every_rank(node.right, ctx, depth)
    if isinstance(node, cst.UnaryOperation):
        return same_on_every_rank(node.expression, ctx, depth)
    if isinstance(node, cst.Attribute):
        if not ("seed" in node.attr.value.lower() or node.attr.value in UNIFORM_NAMES):
            return False
        assigned = ctx.rank.attribute_values.get(node.attr.value, [])
        return all(same_on_every_rank(v, ctx, depth) or _same_attribute(v, node) for v in assigned)
    if isinstance(node, cst.Subscript):
        key = node.slice[0].slice if len(node.slice) == 1 else None
        return isinstance(key, cst.Index) and "seed" in (ctx.module.code_for_node(key.value).lower())
    if isinstance(node, cst.Call):
        names = ctx.qualified_names(node.func)
        if names & UNIFORM_CALLS:
            return True
        if _setting_lookup(node, ctx.module.code_for_node):
            return all(same_on_every_rank(a.value, ctx, depth) for a in node.args[1:])  # `cfg.get("seed", 0)`
        return bool(names) and names <= {"builtins.int", "builtins.str"} and all(
            same_on_every_rank(a.value, ctx, depth) for a in node.args
        )
    if isinstance(node, cst.Name):
        binding = ctx.scopes.lookup(node.value)
        if binding is not None and binding.values:
            expressions = [v for v in binding.values if isinstance(v, cst.BaseExpression)]
            if expressions:
                return all(same_on_every_rank(v, ctx, depth) for v in expressions)
        if "seed" in node.value.lower() or node.value in UNIFORM_NAMES:
            return True
        if binding is None:
            return False
        return not binding.values and None in binding.qualnames  # a loop counter (every rank runs the same loop)
    return False


def _same_attribute(value: cst.BaseExpression, attribute: cst.Attribute) -> bool:
    """`args.seed = args.seed` style re-assignments keep the value."""
    return isinstance(value, cst.Attribute) and value.attr.value == attribute.attr.value


def _setting_lookup(call: cst.Call, code) -> bool:
    """`cfg.get("seed", 0)`, `os.environ.get("SEED", "0")`: a configuration
    lookup whose key says "seed" (every rank reads the same configuration)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ("get", "getint", "pop")) or not call.args:
        return False
    key = call.args[0]
    return key.keyword is None and isinstance(key.value, cst.SimpleString) and "seed" in code(key.value).lower()


def _literal_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _binds_tighter_than_add(node: cst.BaseExpression) -> bool:
    """Whether `node + x` needs no parentheses around `node`."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power))
    return is_atom(node) or isinstance(node, cst.UnaryOperation)


def _per_rank_fix(call: cst.Call, value: cst.BaseExpression, accelerate: bool, ctx: ModelView) -> ProposedFix:
    """accelerate's `set_seed(seed)` -> `set_seed(seed, device_specific=True)`;
    else `seed` -> `seed + rank` with a global-rank variable bound here (both
    unsafe: every rank's random stream but rank 0's changes); else advice only."""
    if accelerate:
        given = [a for a in call.args if a.keyword is not None and a.keyword.value == "device_specific"]
        if given:  # `device_specific=False`
            new = call.deep_replace(given[0].value, cst.Name("True"))
        else:
            arg = cst.Arg(value=cst.Name("True"), keyword=cst.Name("device_specific"),
                          equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            new = call.with_changes(args=[*call.args, arg])
        return ProposedFix("Seed each process differently: `device_specific=True`", ((call, new),), Applicability.UNSAFE)
    for name in GLOBAL_RANK_NAMES:
        binding = ctx.scopes.lookup(name)
        if binding is not None and not any(q and q.startswith("builtins.") for q in binding.qualnames):
            left = value if _binds_tighter_than_add(value) else parenthesized(value)
            new = cst.BinaryOperation(left, cst.Add(), cst.Name(name))
            return ProposedFix(f"Seed each rank differently: `... + {name}`", ((value, new),), Applicability.UNSAFE)
    return ProposedFix.display_only("Seed each rank differently: add the global rank to the seed")


@dataclass(frozen=True)
class SeedCall:
    """A call that seeds global generators, as the walk saw it."""

    site: Site
    generators: frozenset[str]
    #: Position among the module's calls, in walk order.
    order: int
    #: The call as a finding shows it: `torch.manual_seed(args.seed)`.
    shown: str
    #: The seed (first positional, `seed=` or `a=`), if given.
    value: cst.BaseExpression | None
    #: accelerate's `set_seed(..., device_specific=True)`: each process seeded differently.
    device_specific: bool
    #: The seed is certainly the same on every rank (`same_on_every_rank`).
    uniform: bool
    #: Seeded from the DataLoader worker's own seed (`get_worker_info().seed`):
    #: the same on every rank exactly when the ranks share the torch seed.
    from_worker: bool
    #: accelerate's `set_seed`, which seeds each process differently with `device_specific=True`.
    accelerate: bool
    #: The fix that seeds each rank differently (for a uniform or worker seed).
    fix: ProposedFix | None


class Seeded(enum.Enum):
    """What seeds a generator before a point, on the ranks."""

    COMMON = "the same seed on every rank"
    PER_RANK = "a seed offset by the rank"
    NOTHING = "nothing"
    UNKNOWN = "not known"


class Seeds:
    """The module's seed calls: the ``seeds`` analysis, filled by the walk
    (with the rank analysis), asked after it."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.calls: list[SeedCall] = []
        self._of: dict[int, SeedCall] = {}
        self._order: dict[int, int] = {}
        #: A call that says "seed" whose reach is not known (`utils.set_deterministic_seed(s)`).
        self.other_seeding = False
        #: Functions (None: module level) that join the process group: a rank's program starts there.
        self.starts: list[cst.FunctionDef | None] = []
        #: Functions DataLoaders run in each worker (`worker_init_fn=`).
        self.worker_inits: set[cst.FunctionDef] = set()
        #: Every seeder's name says "seed": without the word the module seeds
        #: nothing (its program starts are still noted).
        self._seeds_text = "seed" in ctx.source.lower()

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        order = self._order[id(node)] = len(self._order)
        if last_name(node.func) in _STARTS:
            self.starts.append(ctx.enclosing_function())
        if not self._seeds_text:
            return
        self.worker_inits.update(worker_init_functions(node, ctx))
        names = ctx.qualified_names(node.func)
        generators = seeded_generators(node, ctx)
        if not generators:
            if not self.other_seeding:  # the callee's name, without generating its code where it is a dotted one
                shown = dotted_name(node.func)
                self.other_seeding = "seed" in (shown if shown is not None else ctx.module.code_for_node(node.func)).lower()
            return
        seed = self._seed(node, generators, order, names)
        self.calls.append(seed)
        self._of[id(node)] = seed

    def _seed(self, node: cst.Call, generators: frozenset[str], order: int, names) -> SeedCall:
        ctx = self.ctx
        args = [a for a in node.args if a.keyword is None or a.keyword.value in ("seed", "a")]
        value = args[0].value if args else None
        device_specific = any(
            a.keyword is not None and a.keyword.value == "device_specific" and not _literal_false(a.value) for a in node.args
        )
        code = ctx.module.code_for_node
        shown = f"`{code(node.func)}({', '.join(code(a).strip().rstrip(',') for a in node.args)})`"
        from_worker = value is not None and from_worker_seed(value, ctx)
        uniform = value is not None and not from_worker and same_on_every_rank(value, ctx)
        accelerate = bool(names & ACCELERATE_SET_SEED)
        fix = _per_rank_fix(node, value, accelerate, ctx) if value is not None and (uniform or from_worker) else None
        # Any rank-dependent argument makes the seed per rank (`seed_all(args.seed, rank)`).
        site = ctx.rank.site(node, ctx.rank.deps_of_all(a.value for a in node.args))
        return SeedCall(site, generators, order, shown, value, device_specific, uniform, from_worker, accelerate, fix)

    # ---------------------------------------------------------------- after the walk

    def of(self, call: cst.Call) -> SeedCall | None:
        """The seed call `call` is, if it is one."""
        return self._of.get(id(call))

    @property
    def seeds_anything(self) -> bool:
        """Whether the module seeds anything (a seed call, or a call that says "seed")."""
        return bool(self.calls) or self.other_seeding

    def rank_aware(self, seed: SeedCall) -> bool:
        """Whether the ranks end up seeded differently: the seed depends on the
        rank, `device_specific=True`, or a later seed in the same function does
        (a deliberate same-seed initialisation, reseeded per rank afterwards)."""
        if seed.device_specific or self.ctx.rank.is_rank_dependent(seed.site.deps):
            return True
        return any(
            later.order > seed.order and later.site.function is seed.site.function and self._per_rank(later)
            for later in self.calls
        )

    def _per_rank(self, seed: SeedCall) -> bool:
        return seed.device_specific or self.ctx.rank.is_rank_dependent(seed.site.deps)

    def shared(self, seed: SeedCall) -> bool:
        """Whether every rank runs `seed` with the same seed and nothing seeds
        them apart; a seeding helper that other modules call (`fix_random_seeds`)
        is judged at each call, with the seed it passes."""
        if not seed.uniform or self.rank_aware(seed) or not self.ctx.rank.runs_on_every_rank(seed.site):
            return False
        function = seed.site.function
        return not (
            function is not None and function.name.value in SEED_HELPERS
            and self.ctx.rank.execution.from_elsewhere(function)
        )  # fmt: skip

    def shared_by_workers(self, seed: SeedCall) -> bool:
        """Whether `seed` seeds DataLoader workers from their worker seed while
        the ranks share the main process's seed: the workers of all ranks draw alike."""
        if not seed.from_worker or self.rank_aware(seed) or not self.ctx.rank.runs_on_every_rank(seed.site):
            return False
        return any(self.shared(s) and s.site.function not in self.worker_inits for s in self.calls)

    def advice(self, seed: SeedCall) -> str:
        """How to seed each rank differently, in the module's words."""
        code = self.ctx.module.code_for_node
        func = seed.site.node.func
        if seed.accelerate:
            return f"pass `device_specific=True` (`{code(func)}(..., device_specific=True)`) to seed each process differently"
        return f"use `seed + rank` (`{code(func)}({code(seed.value)} + {self.ctx.rank_advice.rank(seed.site)})`)"

    def before(self, point: Site, generator: str) -> tuple[Seeded, Site | None]:
        """What seeds `generator` on the ranks before `point`: the last seed
        before it in its function decides; else any seed of the module the
        ranks run (a common one wins). Not known when the module is a library
        of helpers whose program, and seeds, are elsewhere (no ``__main__``
        block or module-level call, and the function does not join the
        process group itself, or other modules call the function)."""
        rank = self.ctx.rank
        order = self._order.get(id(point.node), len(self._order))
        reaching = [
            s for s in self.calls
            if generator in s.generators and rank.runs(s.site) in (Runs.ALL, Runs.UNKNOWN)
            and not (s.site.function is point.function and s.order > order)
        ]  # fmt: skip
        same = [s for s in reaching if s.site.function is point.function]
        for seed in same[-1:] or sorted(reaching, key=self._per_rank):
            return (Seeded.PER_RANK if self._per_rank(seed) else Seeded.COMMON), seed.site
        if self.other_seeding or rank.execution.from_elsewhere(point.function):
            return Seeded.UNKNOWN, None  # other modules call it: their program may seed
        starts = runs_as_program(self.ctx.module) or point.function in self.starts
        return (Seeded.NOTHING if starts else Seeded.UNKNOWN), None


class Randomness:
    """Per-rank randomness in the module, what a shared seed would make the
    ranks draw alike: the ``randomness`` analysis, filled by the walk (with
    the rank analysis), asked after it."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._draws: list[Site] = []
        #: `model.train()` calls: with training steps, the model's dropout draws per rank.
        self._train_modes: list[Site] = []
        self._tensor_parallel = self._hf_trainer = self._random_layers = False
        self._in_play: bool | None = None
        self._common: bool | None = None

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A Hugging Face trainer subclass (also through the project's own
        base classes): the trainer reseeds every rank with `args.seed`."""
        bases = imported_bases(node, self.ctx)
        if is_hf_trainer(bases) or any(f is not None and f.hf_trainer for f in map(self.ctx.facts.facts.get, bases)):
            self._hf_trainer = True

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else None
        if module is not None and module.startswith(TENSOR_PARALLEL):
            self._tensor_parallel = True

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        names = ctx.qualified_names(node.func)
        if is_draw(names) or (isinstance(node.func, cst.Attribute) and node.func.attr.value in DRAW_METHODS):
            self._draws.append(ctx.rank.site(node))
        if sets_train_mode(node) and model_draws_in_train(node.func.value, ctx) is not False:
            self._train_modes.append(ctx.rank.site(node))  # a model visibly free of randomness draws nothing
        self._hf_trainer = self._hf_trainer or is_hf_trainer(names)
        if not self._random_layers and (random_layer_call(node) or self._random_callee(node)):
            self._random_layers = True

    def _random_callee(self, node: cst.Call) -> bool:
        """A call of another linted module's name that brings per-rank
        randomness (a project fact): a Dataset that augments at random
        (SwAV's `MultiCropDataset(...)` built in main_swav.py), a helper that
        draws noise or steps a model in train mode, a trainer class."""
        facts = self.ctx.facts
        if not facts:
            return False
        fact = facts.first(self.ctx.imported_callees(node.func))
        return fact is not None and fact.random

    @property
    def common_by_design(self) -> bool:
        """The ranks need the same random stream (parameters initialised alike
        before sharding, tensor parallelism), or a trainer reseeds them all alike."""
        if self._common is None:
            self._common = self._tensor_parallel or self._hf_trainer or bool(COMMON_SEED.search(self.ctx.source))
        return self._common

    def in_play(self, seeds: Seeds) -> bool:
        """Dropout or augmentation in the module, seeding in a DataLoader's
        workers, or random draws where the training repeats (the loop, what
        it calls, a Dataset's per-sample methods, a model stepped in train mode)."""
        if self._in_play is None:
            execution = self.ctx.rank.execution
            trains = self.ctx.rank.graph.trains
            self._in_play = (
                self._random_layers
                or any(seed.site.function in seeds.worker_inits for seed in seeds.calls)
                or any(
                    execution.repeated(draw) or (draw.function is not None and draw.function.name.value in PER_SAMPLE_METHODS)
                    for draw in self._draws
                )
                or any(execution.repeated(mode) or mode.function in trains for mode in self._train_modes)
            )
        return self._in_play


def runs_as_program(module: cst.Module) -> bool:
    """Whether the module is a program, not only a library of definitions: it
    has an ``if __name__ == "__main__":`` block or calls something at module level."""
    for statement in module.body:
        if isinstance(statement, cst.If) and is_main_test(statement.test):
            return True
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) for s in statement.body
        ):
            return True
    return False


# ------------------------------------------------------------ generators a Dataset owns

#: What makes a generator per-worker: the worker's own seed.
_PER_WORKER = re.compile(r"\b(?:get_worker_info|initial_seed)\b")


def creates_generator(value: cst.BaseExpression, ctx: ModelView) -> bool:
    """`np.random.default_rng(seed)`, `torch.Generator().manual_seed(seed)`: a generator object."""
    if not isinstance(value, cst.Call):
        return False
    if ctx.qualified_names(value.func) & GENERATOR_CLASSES:
        return True
    func = value.func
    return isinstance(func, cst.Attribute) and func.attr.value == "manual_seed" and creates_generator(func.value, ctx)


def owned_generators(cls: cst.ClassDef, ctx: ModelView) -> list[tuple[str, cst.Call, cst.CSTNode]]:
    """The generators a Dataset class creates once in ``__init__`` (`self.rng = ...`)
    and draws from per sample (`__getitem__`/`__iter__` or what they call:
    `self.rng.integers(...)`, `generator=self.rng`), never re-created there
    nor from the worker's seed anywhere in the class: every DataLoader
    worker draws from a copy of the same state: (attribute, creation, its statement)."""
    table = methods(cls)
    init = table.get("__init__")
    if init is None or not ({"__getitem__", "__iter__"} & table.keys()):
        return []
    created = [(attr, value, line) for attr, value, line in self_assignments(init) if creates_generator(value, ctx)]
    if not created or _PER_WORKER.search(ctx.module.code_for_node(cls)):
        return []
    drawn, recreated = set(), set()
    for method in reachable_methods(cls, "__getitem__", "__iter__"):
        drawn |= _drawn_attributes(method)
        recreated |= {attr for attr, _, _ in self_assignments(method)}
    return [(attr, value, line) for attr, value, line in created if attr in drawn and attr not in recreated]


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


def reseeds_in_workers(attr: str, worker_inits: set[cst.FunctionDef], ctx: ModelView) -> bool:
    """Whether one of the `worker_init_fn`s touches `self.<attr>`'s generator (`dataset.rng = ...`)."""
    code = ctx.module.code_for_node
    return any(re.search(rf"\.{re.escape(attr)}\b", code(f.body)) for f in worker_inits)
