"""What the seed rules (DDP008, DDP023, DDP024, DDP034) know about random state.

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
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ddplint.analysis.catalogue import (
    DROPOUT_BY_DEFAULT,
    MODEL_WRAPPERS,
    MODULE_CONTAINERS,
    MODULE_RETURNING_METHODS,
    RANDOM_FUNCTIONS,
    RANDOM_LAYER_NAME,
    RANDOM_NN_LAYERS,
)
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
