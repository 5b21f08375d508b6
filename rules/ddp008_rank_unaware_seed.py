"""DDP008 rank-unaware-seed."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.analysis.classes import imported_bases
from ddplint.analysis.names import dotted_name
from ddplint.analysis.rank import Site
from ddplint.analysis.rewrite import ProposedFix, is_atom, parenthesized
from ddplint.analysis.seeding import (
    COMMON_SEED,
    DRAW_METHODS,
    PER_SAMPLE_METHODS,
    SEED_HELPERS,
    is_draw,
    is_hf_trainer,
    from_worker_seed,
    model_draws_in_train,
    random_layer_call,
    seed_call,
    sets_train_mode,
    worker_init_functions,
)
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule
#: Values that are the same on every rank of a job.
UNIFORM_NAMES = frozenset({"world_size", "num_processes", "num_replicas", "n_gpu", "num_gpus", "ngpus", "nprocs"})
UNIFORM_CALLS = frozenset({"torch.distributed.get_world_size", "torch.cuda.device_count"})
#: Tensor parallelism needs identical inputs and dropout masks within a group.
TENSOR_PARALLEL = "torch.distributed.tensor.parallel"


#: Variables that hold the global rank (a local rank repeats on every node).
_GLOBAL_RANK_NAMES = ("rank", "global_rank", "world_rank", "RANK")


#: accelerate's seeder, which takes `device_specific=True` to add the process index itself.
ACCELERATE_SET_SEED = frozenset({"accelerate.utils.set_seed", "accelerate.utils.random.set_seed"})


def _device_specific_fix(node: cst.Call) -> ProposedFix:
    """`set_seed(seed)` -> `set_seed(seed, device_specific=True)` (unsafe, as `seed + rank`)."""
    arg = cst.Arg(value=cst.Name("True"), keyword=cst.Name("device_specific"),
                  equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    given = [a for a in node.args if a.keyword is not None and a.keyword.value == "device_specific"]
    if given:  # `device_specific=False`
        new = node.deep_replace(given[0].value, cst.Name("True"))
    else:
        new = node.with_changes(args=[*node.args, arg])
    return ProposedFix("Seed each process differently: `device_specific=True`", ((node, new),), Applicability.UNSAFE)


def _binds_tighter_than_add(node: cst.BaseExpression) -> bool:
    """Whether `node + x` needs no parentheses around `node`."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power))
    return is_atom(node) or isinstance(node, cst.UnaryOperation)


@dataclass(frozen=True)
class _Seed:
    site: Site
    shown: str
    order: int
    device_specific: bool
    #: Whether the seed is certainly the same on every rank (literals, seed
    #: settings, loop counters); anything else is not judged.
    uniform: bool
    #: The fix, decided where the scope is known: `seed + rank` with a rank variable in scope.
    fix: ProposedFix | None = None
    #: Seeded from the DataLoader worker's own seed (`get_worker_info().seed`):
    #: the same on every rank exactly when the ranks share the torch seed.
    from_worker: bool = False
    #: accelerate's `set_seed`, which seeds each process differently with `device_specific=True`.
    accelerate: bool = False


class RankUnawareSeed(Rule):
    """
    ## What it does

    In distributed code, flags a seed call whose seed is the same on every
    rank: `torch.manual_seed`, `torch.cuda.manual_seed(_all)`,
    `np.random.seed`, `random.seed`, Lightning's `seed_everything` and the
    `set_seed` of transformers and accelerate, called with a literal, a
    config value or `args.seed` (`seed_everything(seed, workers=True)` too:
    `workers=True` seeds the DataLoader workers, not the ranks), where
    per-rank randomness is in play: dropout or random augmentation built or
    configured in the module, random draws in the training loop or what it
    calls, training steps on a model put in train mode (`model.train()`:
    its dropout draws on every forward, even where the model's code is
    elsewhere; not when the model is a class of the module visibly free of
    randomness: torch.nn layers without dropout, no drop-path, no dropout
    rate configured, nothing drawn in its `forward`), or a Dataset whose samples are drawn at random, defined in the
    module or in another linted module (SwAV's `MultiCropDataset`, an
    `ImageFolder` subclass with random crops in `src/`). A module that
    seeds nothing at all is DDP034's (off by default).

    Only seeds that are certainly the same everywhere are flagged: literals,
    seed settings (`seed`, `args.seed`, `config["seed"]`), loop counters, and
    arithmetic on those; a seed offset by something else
    (`base_seed + stage_index`) is taken as deliberate, and so is a seed
    that only a one-process run sets (`if args.local_rank == -1:`). Modules
    using tensor parallelism (`torch.distributed.tensor.parallel`) are not
    checked: the ranks of a tensor-parallel group must draw the same random
    numbers. Tools that join a process group need no seed.

    Not flagged: a seed derived from the rank (`seed + rank`,
    `seed + dist.get_rank()`, `args.seed + accelerator.process_index`);
    accelerate's `set_seed(seed, device_specific=True)`; a seed call in a
    helper whose seed parameter receives a rank-dependent value at every call
    site in the module; seed calls under a rank guard; and a constant seed
    followed later in the same function by a rank-dependent reseed. That
    last pattern is deliberate: FSDP, tensor and pipeline parallelism need
    the *same* seed on every rank while the model's parameters are
    initialised (so the shards match), and a per-rank seed afterwards for
    dropout and data augmentation.

    ## Why is this bad?

    With the same seed everywhere, every rank draws the same dropout masks
    and the same random augmentations: N GPUs see N copies of one random
    stream, and the effective batch is less diverse than its size says.
    With no seed at all, runs cannot be reproduced.

    ## Example

    ```python
    dist.init_process_group("nccl")
    torch.manual_seed(42)
    augment = torchvision.transforms.RandomResizedCrop(224)
    ```

    ## Use instead

    ```python
    dist.init_process_group("nccl")
    torch.manual_seed(42 + dist.get_rank())
    augment = torchvision.transforms.RandomResizedCrop(224)
    ```

    ## Fix safety

    With `--unsafe-fixes`, `torch.manual_seed(seed)` becomes
    `torch.manual_seed(seed + rank)` when a global-rank variable (`rank`,
    `global_rank`, `world_rank`, `RANK`) is bound where the seed is set; a
    `local_rank` is never used, as it repeats on every node; accelerate's
    `set_seed(seed)` becomes `set_seed(seed, device_specific=True)`. Unsafe: every
    rank but rank 0 gets a different random stream, so model initialisation
    done after the seed must be broadcast (DDP does it at wrapping) and
    results change. Without such a variable the fix is advice only.

    ## References

    - [PyTorch: Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    - [accelerate.utils.set_seed](https://huggingface.co/docs/accelerate/package_reference/utilities#accelerate.utils.set_seed)
    """

    code = "DDP008"
    name = "rank-unaware-seed"
    severity = Severity.WARNING
    summary = "Every rank seeds its random generators with the same seed."
    requires = frozenset({"rank"})
    distributed_only = True
    tokens = ("manual_seed", "manual_seed_all", "seed", "seed_everything", "set_seed", "init_seeds")
    tags = ("reproducibility", "correctness")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.seeds: list[_Seed] = []
        self.draws: list[Site] = []
        #: `model.train()` calls: with training steps, the model's dropout draws per rank.
        self.train_modes: list[Site] = []
        #: Functions DataLoaders run in each worker (`worker_init_fn=`): seeding there is randomness in play.
        self.worker_inits: set[cst.FunctionDef] = set()
        self.tensor_parallel = False
        self.hf_trainer = False
        self.random_layers = False

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A Hugging Face trainer subclass (also through the project's own
        base classes): the trainer reseeds every rank with `args.seed`."""
        bases = imported_bases(node, self.ctx)
        if is_hf_trainer(bases) or any(f is not None and f.hf_trainer for f in map(self.ctx.facts.facts.get, bases)):
            self.hf_trainer = True

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else None
        if module is not None and module.startswith(TENSOR_PARALLEL):
            self.tensor_parallel = True

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        names = ctx.qualified_names(node.func)
        if is_draw(names) or (isinstance(node.func, cst.Attribute) and node.func.attr.value in DRAW_METHODS):
            self.draws.append(ctx.rank.site(node))
        if sets_train_mode(node) and model_draws_in_train(node.func.value, ctx) is not False:
            # a model visibly free of randomness (no dropout, no noise in its forward) draws nothing per rank
            self.train_modes.append(ctx.rank.site(node))
        self.worker_inits.update(worker_init_functions(node, ctx))
        if is_hf_trainer(names):
            self.hf_trainer = True
        if not self.random_layers and (random_layer_call(node) or self._random_dataset(node)):
            self.random_layers = True
        if not seed_call(node, ctx):
            return
        args = [a for a in node.args if a.keyword is None or a.keyword.value in ("seed", "a")]
        value = args[0].value if args else None
        # Any rank-dependent argument makes the seed per rank (`seed_all(args.seed, rank)`).
        deps = ctx.rank.deps_of_all(a.value for a in node.args)
        device_specific = any(
            a.keyword is not None and a.keyword.value == "device_specific" and not _is_false(a.value)
            for a in node.args
        )
        code = ctx.module.code_for_node
        shown = f"`{code(node.func)}({', '.join(code(a).strip().rstrip(',') for a in node.args)})`"
        from_worker = value is not None and from_worker_seed(value, ctx)
        uniform = value is not None and not from_worker and self._uniform(value)
        accelerate = bool(names & ACCELERATE_SET_SEED)
        fix = None
        if (uniform or from_worker) and value is not None:
            fix = _device_specific_fix(node) if accelerate else self._fix(value)
        site = ctx.rank.site(node, deps)
        self.seeds.append(_Seed(site, shown, len(self.seeds), device_specific, uniform, fix, from_worker, accelerate))

    def _random_dataset(self, node: cst.Call) -> bool:
        """A call of another linted module's name that brings per-rank
        randomness (a project fact): a Dataset that augments at random
        (SwAV's `MultiCropDataset(...)` built in main_swav.py), a helper that
        draws noise or steps a model in train mode, a trainer class."""
        facts = self.ctx.facts
        if not facts:
            return False
        fact = facts.first(self.ctx.imported_callees(node.func))
        return fact is not None and fact.random

    def _fix(self, value: cst.BaseExpression) -> ProposedFix:
        """`seed` -> `seed + rank` with a global-rank variable bound here (unsafe:
        it changes every rank's random stream but rank 0's); else advice only."""
        for name in _GLOBAL_RANK_NAMES:
            binding = self.ctx.scopes.lookup(name)
            if binding is not None and not any(q and q.startswith("builtins.") for q in binding.qualnames):
                left = value if _binds_tighter_than_add(value) else parenthesized(value)
                new = cst.BinaryOperation(left, cst.Add(), cst.Name(name))
                return ProposedFix(f"Seed each rank differently: `... + {name}`", ((value, new),), Applicability.UNSAFE)
        return ProposedFix.display_only("Seed each rank differently: add the global rank to the seed")

    def _uniform(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether a seed value is certainly the same on every rank.

        Literals, names and keys that say "seed" (`seed`, `args.seed`,
        `config["seed"]`) unless the module assigns them something else
        (`args.seed = random.randint(1, 1000)` draws a different seed in each
        process), loop counters, and arithmetic or int()/str() of those.
        Anything else (`base + stage_index`, `time.time()`) may differ per
        rank by design and is not judged.
        """
        if depth > 8:
            return False
        depth += 1
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
            return self._uniform(node.left, depth) and self._uniform(node.right, depth)
        if isinstance(node, cst.UnaryOperation):
            return self._uniform(node.expression, depth)
        if isinstance(node, cst.Attribute):
            if not ("seed" in node.attr.value.lower() or node.attr.value in UNIFORM_NAMES):
                return False
            assigned = self.ctx.rank.attribute_values.get(node.attr.value, [])
            return all(self._uniform(v, depth) or _same_attribute(v, node) for v in assigned)
        if isinstance(node, cst.Subscript):
            key = node.slice[0].slice if len(node.slice) == 1 else None
            return isinstance(key, cst.Index) and "seed" in (self.ctx.module.code_for_node(key.value).lower())
        if isinstance(node, cst.Call):
            names = self.ctx.qualified_names(node.func)
            if names & UNIFORM_CALLS:
                return True
            if _setting_lookup(node, self.ctx.module.code_for_node):
                return all(self._uniform(a.value, depth) for a in node.args[1:])  # `cfg.get("seed", 0)`
            return bool(names) and names <= {"builtins.int", "builtins.str"} and all(
                self._uniform(a.value, depth) for a in node.args
            )
        if isinstance(node, cst.Name):
            binding = self.ctx.scopes.lookup(node.value)
            if binding is not None and binding.values:
                expressions = [v for v in binding.values if isinstance(v, cst.BaseExpression)]
                if expressions:
                    return all(self._uniform(v, depth) for v in expressions)
            if "seed" in node.value.lower() or node.value in UNIFORM_NAMES:
                return True
            if binding is None:
                return False
            return not binding.values and None in binding.qualnames  # a loop counter (every rank runs the same loop)
        return False

    def finish(self) -> None:
        if self.tensor_parallel or self.hf_trainer or COMMON_SEED.search(self.ctx.source):
            return  # the ranks need the same random stream (or a trainer reseeds them all alike)
        if not self.seeds or not self._randomness_in_play():
            return
        rank = self.ctx.rank
        shared = False  # a seed shared by the ranks in the main process: the workers' seeds are shared too
        for seed in self.seeds:
            if not seed.uniform or self._rank_aware(seed) or not rank.runs_on_every_rank(seed.site):
                continue
            if self._judged_by_callers(seed):
                continue
            shared = shared or seed.site.function not in self.worker_inits
            self.report(
                seed.site.node,
                f"{seed.shown} gives every rank the same seed, so all ranks draw the same dropout masks, "
                f"augmentations and noise; {self._advice(seed)}",
                statement=seed.site.statement,
                fix=seed.fix,
            )
        for seed in self.seeds:
            if shared and seed.from_worker and not self._rank_aware(seed) and rank.runs_on_every_rank(seed.site):
                self.report(
                    seed.site.node,
                    f"{seed.shown} seeds each DataLoader worker from its worker seed, which is the same on every "
                    "rank here (the ranks share the torch seed), so the workers of all ranks draw the same "
                    f"numbers; add the rank (`worker_seed + {self.ctx.rank_advice.rank(seed.site)}`)",
                    statement=seed.site.statement,
                    fix=seed.fix,
                )

    def _advice(self, seed: _Seed) -> str:
        """`seed + rank` in the module's words, or accelerate's own per-process seeding."""
        node = seed.site.node
        code = self.ctx.module.code_for_node
        if seed.accelerate:
            return f"pass `device_specific=True` (`{code(node.func)}(..., device_specific=True)`) to seed each process differently"
        args = [a for a in node.args if a.keyword is None or a.keyword.value in ("seed", "a")]
        rank = self.ctx.rank_advice.rank(seed.site)
        return f"use `seed + rank` (`{code(node.func)}({code(args[0].value)} + {rank})`)"

    def _randomness_in_play(self) -> bool:
        """Dropout or augmentation in the module, or random draws where the
        training repeats (the loop, what it calls, a Dataset's per-sample methods)."""
        if self.random_layers:
            return True
        if any(seed.site.function in self.worker_inits for seed in self.seeds):
            return True  # seeding each DataLoader worker: its workers draw random numbers
        execution = self.ctx.rank.execution
        if any(
            execution.repeated(draw) or (draw.function is not None and draw.function.name.value in PER_SAMPLE_METHODS)
            for draw in self.draws
        ):
            return True
        trains = self.ctx.rank.graph.trains
        return any(execution.repeated(mode) or mode.function in trains for mode in self.train_modes)

    def _judged_by_callers(self, seed: _Seed) -> bool:
        """A seeding helper (`fix_random_seeds(seed)`) that other modules call per
        rank: each call is judged where it is, with the seed it passes."""
        function = seed.site.function
        return (
            function is not None and function.name.value in SEED_HELPERS
            and self.ctx.rank.execution.from_elsewhere(function)
        )  # fmt: skip

    def _rank_aware(self, seed: _Seed) -> bool:
        rank = self.ctx.rank
        if seed.device_specific or rank.is_rank_dependent(seed.site.deps):
            return True
        return any(
            later.order > seed.order and later.site.function is seed.site.function and rank.is_rank_dependent(later.site.deps)
            for later in self.seeds
        )  # a deliberate same-seed initialisation, reseeded per rank afterwards


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


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"
