"""DDP001 collective-in-rank-branch."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Callable

from ddplint.analysis.catalogue import FRAMEWORK_COLLECTIVES, RANK_TEXT
from ddplint.analysis.collectives import (
    COLLECTIVE_FUNCTIONS,
    HOROVOD_COLLECTIVES,
    MPI_COLLECTIVES,
    Balance,
    CollectiveChains,
    Performer,
    WrappedModel,
    backend_dependence,
    collective_name,
    in_lazy_initialization,
    parameter_forward,
    under_no_grad,
    wrapped_model,
    wrapped_model_collective,
    wrapper_of,
)
from ddplint.analysis.calls import bind_to, literal_arguments, switched_off
from ddplint.analysis.callgraph import enclosing_loops
from ddplint.analysis.conditions import excludes
from ddplint.analysis.guards import Guard, GuardKind
from ddplint.lazy import cst
from ddplint.analysis.names import last_name
from ddplint.model import Related, Severity, Span
from ddplint.paths import message_path
from ddplint.project.facts import Fact
from ddplint.rule import Rule


@dataclass(frozen=True, eq=False)
class _Site:
    """A call that is, or may turn out to be, a collective."""

    node: cst.Call
    shown: str
    guards: tuple[Guard, ...]
    #: Guards around the definitions of enclosing functions (balance only).
    outer: tuple[Guard, ...]
    function: cst.FunctionDef | None
    statement: cst.CSTNode
    #: For calls of module functions: the functions it may call, or a method name.
    targets: tuple[cst.FunctionDef, ...] = ()
    method: str | None = None
    backward: bool = False
    #: For calls of a helper imported from another linted module: what it does.
    imported: Fact | None = None
    #: Inside ``if <cached> is None:``: runs once, not on every call of its function.
    lazy: bool = False
    #: Walk order, to tell a backward before the model is wrapped from one after.
    order: int = 0
    #: An enclosing `if` whose test reads per-process state (a file, the clock): (test, what).
    varying: tuple | None = None
    #: The loops around it within its function, innermost first (loop-carried exits).
    loops: tuple[cst.CSTNode, ...] = ()
    #: For calls of module functions: the wrapped models passed, by argument index.
    models: tuple[tuple[int, WrappedModel], ...] = ()
    #: Inside ``torch.no_grad()`` (so is the callee's body).
    no_grad: bool = False


class CollectiveInRankBranch(Rule):
    """
    ## What it does

    Flags a collective operation that only some ranks of the job reach: a
    call inside a rank guard (a branch of an `if`/`elif`/`else`, a ternary,
    the right side of `and`/`or`, or a `while` whose condition depends on
    the rank), after a rank-dependent early exit (`if rank != 0: return`,
    also one nested in the branch: `if is_master(args): if exists(log):
    return -1` sends the master away while the others go on),
    in a function decorated `@rank_zero_only` / `@accelerator.on_main_process`,
    or inside a rank-staggered block (`with accelerator.main_process_first():`,
    a module's own `torch_distributed_zero_first(...)`). A call of a function
    of the same module that performs a collective, directly or through other
    functions, counts too; the message names the chain. A rank-dependent
    `break`/`return` inside a loop guards the loop's next pass, so the
    collectives of the loop body (those before the exit too) are reached only
    by the ranks that stay, unless the exit condition was all-reduced or
    broadcast first. A helper whose every rank branch performs the same
    collective (rank 0 broadcasts, the others receive) is a collective on
    every call; literal arguments that switch a helper's collective off
    (`fetch(name, sync=False)` for `if sync: dist.barrier()`), by position or
    keyword, through helpers or as a default left standing, are not judged as
    reaching it.

    *Rank-dependent* conditions are those built from `dist.get_rank()` and
    the like (through any import alias), the rank environment variables
    (`RANK`, `LOCAL_RANK`, `SLURM_PROCID`, ...), names and attributes that
    hold a rank or a rank test (`rank`, `local_rank`, `args.local_rank`,
    `accelerator.is_main_process`, `trainer.is_global_zero`,
    `is_world_process_zero()`, ... extensible with `rank-names`), variables
    and `self.` attributes assigned from those, and functions or properties
    of the module that return them. `world_size`, `dist.is_initialized()`,
    `args.distributed` and device counts are the same on every rank.

    Collectives: `barrier`, `monitored_barrier`, `all_reduce`, `reduce`,
    `broadcast`, `broadcast_object_list`, `all_gather`, `all_gather_object`,
    `all_gather_into_tensor`, `gather`, `gather_object`, `scatter`,
    `scatter_object_list`, `reduce_scatter`, `reduce_scatter_tensor`,
    `all_to_all`, `all_to_all_single`, `new_group` of `torch.distributed`,
    `deepspeed.comm` and `ignite.distributed`; distributed checkpointing
    (`dcp.save`/`load`, `get_model_state_dict`, `get_state_dict`);
    `FSDP.summon_full_params`; accelerate's `wait_for_everyone`, `gather`,
    `gather_for_metrics`, `reduce`, `save_state`, `load_state`, `backward`;
    DeepSpeed `engine.save_checkpoint`/`load_checkpoint`; Lightning
    `self.all_gather`, `strategy.barrier`/`broadcast` and
    `self.log(..., sync_dist=True)`, `trainer.save_checkpoint` (it ends in a
    barrier) and Fabric's `save`/`load`/`barrier`/`broadcast`/`all_gather`/
    `all_reduce`; the Hugging Face Trainer's `save_model` (under FSDP and
    DeepSpeed); mpi4py's communicator methods
    (`MPI.COMM_WORLD.bcast`, `comm.Barrier`, `Allreduce`, ...) and Horovod's
    (`hvd.allreduce`, `hvd.broadcast_parameters`, ...); and the implicit
    ones: calling a model wrapped in `DistributedDataParallel` or by
    Fabric's `setup_module`/`setup` (under `torch.no_grad()` too, where DDP
    still broadcasts the module's buffers from rank 0, unless
    `broadcast_buffers=False` or the module is visibly built from layers
    without buffers), also inside a helper the model is passed to
    (`evaluate(model)` calling `net(x)`), calling an FSDP or
    `fully_shard` model (it all-gathers its parameters, under `no_grad`
    too), its `.backward()`, `.state_dict()` of an FSDP-wrapped model, and
    iterating a DataLoader that accelerate prepared (each pass broadcasts
    the RNG state from rank 0).

    A preview variant (`--preview`) also flags a collective under an `if`
    whose test reads state that can differ between ranks without naming
    one: the filesystem (`os.path.exists`, `glob`, `listdir`: a node-local
    disk, a file another rank is still writing) or the clock
    (`time.time() > deadline`).

    Not flagged, because every rank still enters the collective the same
    number of times: a collective whose own branch excludes the exit
    (`if not use_fsdp and not is_rank0: return` ... `if use_fsdp:
    dist.broadcast(...)`); branches that all perform the same collectives in the
    same order; the zero-first idiom of complementary guards in one block
    (`if rank != 0: dist.barrier()` ... `if rank == 0: dist.barrier()`), also
    with an early exit whose branch performs the same collectives as the
    rest of the block; point-to-point operations (`send`, `recv`, `isend`,
    `irecv`, `batch_isend_irecv`), which are meant to run on some ranks;
    anything under a condition that is the same on every rank
    (`if world_size > 1:`).

    ## Why is this bad?

    Every rank of the group must enter a collective. If rank 0 calls
    `dist.barrier()` inside `if rank == 0:`, it waits for ranks that will
    never arrive; the job hangs, on every node, until the NCCL watchdog
    kills it 10–30 minutes later, after the job already waited in the queue.
    A one-GPU test run does not show it.

    ## Example

    ```python
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "ckpt.pt")
        dist.barrier()  # only rank 0 waits here: the job hangs
    ```

    ## Use instead

    ```python
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "ckpt.pt")
    dist.barrier()  # every rank waits for the checkpoint
    ```

    To share a value computed on one rank, compute it under the guard and
    broadcast it outside: `objs = [result if rank == 0 else None]`, then
    `dist.broadcast_object_list(objs, src=0)` on every rank. For FSDP
    checkpoints, gather on every rank and write on one
    (`StateDictOptions(full_state_dict=True, cpu_offload=True)` with
    `get_model_state_dict`, or `FullStateDictConfig(rank0_only=True)`).

    ## Options

    `rank-names`: extra names that hold a rank or a rank test.

    ## Fix safety

    No automatic fix: whether the collective should move out of the branch, or
    the branch should run on every rank, depends on what the code means;
    either edit can change results or deadlock elsewhere.

    ## References

    - [torch.distributed collective functions](https://pytorch.org/docs/stable/distributed.html#collective-functions)
    - [Distributed checkpoint (torch.distributed.checkpoint)](https://pytorch.org/docs/stable/distributed.checkpoint.html)
    """

    code = "DDP001"
    name = "collective-in-rank-branch"
    severity = Severity.ERROR
    summary = "A collective that only some ranks reach: the job hangs."
    requires = frozenset({"rank"})
    tokens = (
        *sorted(COLLECTIVE_FUNCTIONS), *sorted(MPI_COLLECTIVES), *sorted(HOROVOD_COLLECTIVES), "fully_shard",
        "prepare", "prepare_data_loader",
        "wait_for_everyone", "gather_for_metrics", "save_state", "load_state", "save_checkpoint",
        "load_checkpoint", "sync_dist", "DistributedDataParallel", "FullyShardedDataParallel",
        "summon_full_params", "get_model_state_dict", "get_state_dict", "checkpoint", "rendezvous",
        "mesh_reduce", *sorted({method for _, method in FRAMEWORK_COLLECTIVES}), "setup_module", "fabric", "Fabric",
    )  # fmt: skip
    tags = ("correctness", "deadlock")
    #: No guard can be rank-dependent without one of these (see `rank` analysis).
    context_tokens = RANK_TEXT
    #: `utils.reduce_dict()` is a collective and `utils.am_leader()` a rank test.
    facts_replace = frozenset({"tokens", "context_tokens"})

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sites: list[_Site] = []
        #: (function, walk order) of each DDP wrap.
        self.ddp_wraps: list[tuple[cst.FunctionDef | None, int]] = []
        #: How backend-dependent collectives are shown (`accelerator.save_state()`) -> what gathers.
        self.backend_dependent: dict[str, tuple[str, str, str]] = {}
        #: Functions -> (parameter, under no_grad, shown) of each call of a parameter in their body.
        self.forwards: dict[cst.FunctionDef, list[tuple[str, bool, str]]] = defaultdict(list)

    # ------------------------------------------------------------ collection

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if wrapper_of(node, ctx) == "DDP":
            self.ddp_wraps.append((ctx.enclosing_function(), len(self.sites)))
        func = node.func
        shown = collective_name(node, ctx) or wrapped_model_collective(node, ctx, self._wrapped)
        if shown is not None:
            gathers = backend_dependence(node, ctx)
            if gathers is not None:
                self.backend_dependent[shown] = gathers
        extra: dict = {}
        if shown is None and ctx.facts:
            fact = ctx.facts.first(ctx.imported_callees(func))
            if fact is not None and fact.collective and not switched_off(fact.switch, literal_arguments(node)):
                where = f"{message_path(fact.path)}:{fact.line}"
                shown, extra = f"`{ctx.module.code_for_node(func)}()` from {where}", {"imported": fact}
        if shown is None:
            if isinstance(func, cst.Attribute) and func.attr.value == "backward" and not node.args:
                shown, extra = f"`{ctx.module.code_for_node(func)}()`", {"backward": True}
            elif isinstance(func, cst.Name):
                targets = tuple(v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef))
                if not targets:
                    forwarded = parameter_forward(node, ctx)
                    if forwarded is None:
                        return
                    function, parameter = forwarded
                    self.forwards[function].append((parameter, under_no_grad(ctx.stack, ctx), func.value))
                    return
                else:
                    shown, extra = f"`{func.value}()`", {"targets": targets, "models": self._models(node)}
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                shown, extra = f"`self.{func.attr.value}()`", {"method": func.attr.value, "models": self._models(node)}
            else:
                return
        inner, outer = ctx.rank.guards()
        extra["lazy"] = in_lazy_initialization(ctx.stack)
        extra["order"] = len(self.sites)
        extra["varying"] = self._varying_condition()
        extra["loops"] = enclosing_loops(ctx.stack)
        extra["no_grad"] = under_no_grad(ctx.stack, ctx)
        self.sites.append(_Site(node, shown, inner, outer, ctx.enclosing_function(), ctx.statement(), **extra))

    def _varying_condition(self) -> tuple | None:
        """An `if` (without `else`) around the node, within its function, whose
        test reads state that can differ between processes without naming the
        rank: the filesystem (`os.path.exists`, `glob`, `listdir`) or the clock."""
        stack = self.ctx.stack
        for node, child in zip(reversed(stack[:-1]), reversed(stack[1:])):
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                return None
            if isinstance(node, cst.If) and child is node.body and node.orelse is None:
                what = self._per_process_read(node.test)
                if what is not None:
                    return node.test, what
        return None

    def _per_process_read(self, test: cst.CSTNode) -> str | None:
        todo = [test]
        while todo:
            current = todo.pop()
            if isinstance(current, cst.Call):
                names = self.ctx.qualified_names(current.func)
                for name in names:
                    if name in PER_PROCESS_READS:
                        return PER_PROCESS_READS[name]
            todo.extend(c for c in current.children if isinstance(c, (cst.BaseExpression, cst.Arg)))
        return None

    def visit_For(self, node: cst.For) -> None:
        """Iterating a DataLoader that accelerate prepared: each new pass
        synchronises the RNG state from rank 0 (a broadcast)."""
        loader = node.iter
        if not isinstance(loader, cst.Name):
            return
        ctx = self.ctx
        prepared = any(
            isinstance(v, cst.Call) and last_name(v.func) in ("prepare", "prepare_data_loader")
            and "accelerat" in ctx.module.code_for_node(v.func).lower()
            for v in ctx.values_of(loader)
        )  # fmt: skip
        if not prepared:
            return
        shown = f"iterating `{loader.value}`, a DataLoader accelerate prepared (it broadcasts the RNG state each pass)"
        inner, outer = ctx.rank.guards()
        self.sites.append(
            _Site(loader, shown, inner, outer, ctx.enclosing_function(), ctx.statement(), order=len(self.sites))  # type: ignore[arg-type]
        )

    def _wrapped(self, attribute: str) -> tuple[cst.CSTNode, ...]:
        """The wrapping values ``self.<attribute>`` is assigned in this module
        (others, such as ``None`` in ``__init__``, left out)."""
        values = self.ctx.rank.attribute_values.get(attribute) or ()
        return tuple(v for v in values if wrapper_of(v, self.ctx) is not None)

    def _models(self, call: cst.Call) -> tuple[tuple[int, WrappedModel], ...]:
        """The wrapped models a call of a module function passes, by argument index."""
        found = []
        for index, arg in enumerate(call.args):
            if not arg.star:
                model = wrapped_model(arg.value, self.ctx, self._wrapped)
                if model is not None:
                    found.append((index, model))
        return tuple(found)

    # ------------------------------------------------------------ decision

    def finish(self) -> None:
        rank = self.ctx.rank
        # A rank-dependent `break`/`return` in a loop guards its next iteration.
        self.sites = [
            replace(site, guards=site.guards + carried) if (carried := rank.carried_exits(site.loops, site.guards)) else site
            for site in self.sites
        ]  # fmt: skip
        performers = [self._performer(site) for site in self.sites]
        solved = CollectiveChains(performers, rank, rank.graph.bound)
        effective = [
            (site, chain) for site, p in zip(self.sites, performers) if (chain := solved.chain(p) or self._forwarded(site))
        ]  # fmt: skip
        balance = Balance.of((((*site.guards, *site.outer), chain[-1]) for site, chain in effective), rank)
        for site, chain in effective:
            backend = self.backend_dependent.get(chain[-1])
            if site.varying is not None and not rank.selects_ranks(site.guards):
                self._report_varying(site, chain)
            for guard in site.guards:
                if not rank.is_rank_dependent(guard.deps) or balance.balanced(guard):
                    continue
                if guard.exit is not None and _correlated(guard, site.guards):
                    continue  # `if not use_fsdp and not is_rank0: return` ... `if use_fsdp: broadcast()`
                if backend is not None and self._admits_backend(guard.test):
                    continue  # `if is_main_process or distributed_type == DEEPSPEED:`: the maintainers' fix
                self._report(site, chain, guard, backend)
                break

    def _admits_backend(self, test: cst.CSTNode) -> bool:
        """Whether an operand of an ``or`` in `test` names the backends that
        make the collective real (DeepSpeed, FSDP, Megatron-LM)."""
        todo = [test]
        while todo:
            node = todo.pop()
            if isinstance(node, cst.BooleanOperation):
                if isinstance(node.operator, cst.Or):
                    for operand in (node.left, node.right):
                        if _BACKEND_WORDS.search(self.ctx.module.code_for_node(operand)):
                            return True
                todo += [node.left, node.right]
        return False

    def _direct(self, site: _Site) -> tuple[str, ...] | None:
        if site.backward:
            return (f"{site.shown} (the gradient all-reduce of DDP)",) if self._wrapped_before(site) else None
        if site.imported is not None:
            return (site.shown, *site.imported.collective)
        if site.targets or site.method:
            return None
        return (site.shown,)

    def _wrapped_before(self, site: _Site) -> bool:
        """A DDP wrap in another function, or earlier in the site's own: a
        backward before ``model = DDP(model)`` all-reduces nothing."""
        return any(function is not site.function or order < site.order for function, order in self.ddp_wraps)

    def _performer(self, site: _Site) -> Performer:
        direct = None if site.targets or site.method else self._direct(site)
        return Performer(site.node, site.function, site.guards, site.shown, direct, self._targets(site), site.lazy)

    def _forwarded(self, site: _Site) -> tuple[str, ...] | None:
        """A call passing a wrapped model to a helper that calls it: (call, that forward)."""
        for target in self._targets(site):
            forward = self._forward(site, target)
            if forward is not None:
                return (site.shown, forward)
        return None

    def _forward(self, site: _Site, target: cst.FunctionDef) -> str | None:
        """A wrapped model the call passes to a parameter the callee calls
        (``score(ddp_model, batches)`` → ``net(x)``): that forward."""
        if not site.models or target not in self.forwards:
            return None
        bound = bind_to(site.node, target)
        passed = dict(site.models)
        for parameter, no_grad, shown in self.forwards[target]:
            arg = bound.explicit.get(parameter)
            index = next((i for i, a in enumerate(site.node.args) if a is arg), None)
            if index in passed:
                forward = passed[index].forward(shown, no_grad or site.no_grad)
                if forward is not None:
                    return forward
        return None

    def _targets(self, site: _Site) -> tuple[cst.FunctionDef, ...]:
        if site.method is not None:
            return tuple(self.ctx.rank.functions.get(site.method, ()))
        return site.targets

    def _report_varying(self, site: _Site, chain: tuple[str, ...]) -> None:
        test, what = site.varying  # type: ignore[misc]
        shown = chain[0] if len(chain) == 1 else f"{chain[0]} (which calls {' → '.join(chain[1:])})"
        code = self.ctx.module.code_for_node(test)
        self.report(
            site.node,
            f"{shown} runs only where `{code}` holds, and {what} can differ between ranks without naming "
            "one: ranks that disagree never meet and the job hangs; decide on one rank and share the decision "
            "(`dist.broadcast_object_list`), or `all_reduce` a flag",
            related=((test, "the condition that can differ between ranks"),),
            statement=site.statement,
            preview=True,
        )

    def _report(self, site: _Site, chain: tuple[str, ...], guard: Guard, backend: tuple[str, str, str] | None) -> None:
        shown = chain[0] if len(chain) == 1 else f"{chain[0]} (which calls {' → '.join(chain[1:])})"
        code = self.ctx.module.code_for_node
        message = _message(shown, guard, code(guard.test), code(guard.exit) if guard.exit is not None else None)
        self.report(
            site.node,
            _backend_message(message, backend) if backend is not None else message,
            related=((guard.anchor, _RELATED[guard.kind]), *_helper_location(site.imported)),
            statement=site.statement,
            severity=Severity.WARNING if backend is not None else None,
        )


#: Reads whose answer can differ between processes: a node-local or racing
#: path, the wall clock.
PER_PROCESS_READS = {
    "os.path.exists": "the filesystem", "os.path.isfile": "the filesystem", "os.path.isdir": "the filesystem",
    "os.listdir": "the filesystem", "glob.glob": "the filesystem", "os.scandir": "the filesystem",
    "time.time": "the clock", "time.perf_counter": "the clock", "time.monotonic": "the clock",
}  # fmt: skip

_BACKEND_WORDS = re.compile(r"(?i)deepspeed|fsdp|megatron|distributed_type|sharded")


def _backend_message(message: Callable[[Callable], str], backend: tuple[str, str, str]) -> Callable[[Callable], str]:
    backends, gathers, remedy = backend

    def render(span_of: Callable) -> str:
        return f"under {backends} (not plain DDP) {gathers} on every rank here: {message(span_of)}; {remedy}"

    return render


def _correlated(exit_guard: Guard, guards: tuple[Guard, ...]) -> bool:
    """Whether the site's own branch excludes the exit: it runs only where
    the exit's condition is false (so no rank that reaches it has left)."""
    return any(
        g is not exit_guard and g.kind is GuardKind.BRANCH and g.branch == 0 and g.exit is None
        and excludes(g.test, exit_guard.test)
        for g in guards
    )  # fmt: skip


def _helper_location(fact: Fact | None) -> tuple[Related, ...]:
    """The definition of an imported helper, in its own file."""
    if fact is None:
        return ()
    return (Related(fact.path, Span(fact.line, 1, fact.line, 1), "the helper, which performs the collective"),)


_RELATED = {
    GuardKind.BRANCH: "the rank-dependent condition",
    GuardKind.SHORT_CIRCUIT: "the rank-dependent operand",
    GuardKind.LOOP: "the rank-dependent loop condition",
    GuardKind.DECORATOR: "the rank-selecting decorator",
    GuardKind.STAGGERED: "the rank-staggered block",
}


def _message(shown: str, guard: Guard, test: str, exit_code: str | None) -> Callable[[Callable], str]:
    def render(span_of: Callable[[cst.CSTNode], Span]) -> str:
        line = span_of(guard.anchor).line
        hang = "; the other ranks never enter it and the job hangs"
        if guard.kind is GuardKind.STAGGERED:
            return (
                f"{shown} is inside `with {test}:` (line {line}): ranks run this block one after "
                "another, so their collectives cannot match; move it out of the block"
            )
        if guard.kind is GuardKind.DECORATOR:
            return f"{shown} is in a function decorated `@{test}` (line {line}), which runs on some ranks only{hang}"
        if guard.kind is GuardKind.LOOP:
            return f"{shown} is inside `while {test}:` (line {line}), which ranks repeat a different number of times; the collectives cannot match"
        if guard.kind is GuardKind.SHORT_CIRCUIT:
            return f"{shown} runs only on ranks where `{test}` lets the boolean expression continue (line {line}){hang}"
        if guard.loop is not None and guard.exit is not None:
            return (
                f"{shown} runs in every pass of the loop (line {span_of(guard.loop).line}), but ranks where `{test}` "
                f"leave it at `{exit_code}` (line {span_of(guard.exit).line}); the ranks that stay enter it in the "
                "next pass and wait for them forever; decide to stop on every rank (all-reduce or broadcast the condition)"
            )
        if exit_code is not None and guard.nested:
            return (
                f"{shown} is reached only on ranks that do not leave at `{exit_code}` (line "
                f"{span_of(guard.exit).line}), inside `if {test}:` (line {line}); ranks that leave never enter it "
                "and the others hang"
            )
        if exit_code is not None:
            return f"{shown} is reached only on ranks that do not take `if {test}: {exit_code}` (line {line}){hang}"
        if guard.branch == guard.branches - 1:
            return f"{shown} is reached only on ranks where `{test}` is false (line {line}){hang}"
        return f"{shown} is reached only on ranks where `{test}` (line {line}){hang}"

    return render
