"""DDP001 collective-in-rank-branch."""

from __future__ import annotations

from typing import Callable

from ddplint.knowledge import GUARD_KINDS_SHOWN, RANK_TEXT
from ddplint.analysis.collective_calls import COLLECTIVE_TOKENS
from ddplint.analysis.guards import Guard, GuardKind
from ddplint.lazy import cst
from ddplint.model import Related, Severity, Span
from ddplint.rule import Rule


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
    functions, counts too; the message names the chain. So does a call of a
    parameter (`work()` in `def on_main(work): if rank == 0: work()`) when
    the module hands it such a function (`on_main(sync_stats)`). A rank-dependent
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
    tokens = COLLECTIVE_TOKENS
    tags = ("correctness", "deadlock")
    #: No guard can be rank-dependent without one of these (see `rank` analysis).
    context_tokens = RANK_TEXT
    #: `utils.reduce_dict()` is a collective and `utils.am_leader()` a rank test.
    facts_replace = frozenset({"tokens", "context_tokens"})

    def trigger_Call(self, node: cst.Call) -> bool:
        return self.ctx.collective_calls.record(node)

    def trigger_For(self, node: cst.For) -> bool:
        return self.ctx.collective_calls.record(node)

    def check_For(self, node: cst.CSTNode, site) -> None:
        self.check_Call(node, site)

    def check_Call(self, node: cst.CSTNode, site) -> None:
        calls = self.ctx.collective_calls
        reached = calls.reach(node)
        if reached is None:
            return
        if (varying := calls.varying(reached)) is not None:
            test, what = varying
            self.report(
                reached.site.node,
                f"{reached.shown} runs only where `{self.ctx.module.code_for_node(test)}` holds, and {what} can differ "
                "between ranks without naming one: ranks that disagree never meet and the job hangs; decide on one "
                "rank and share the decision (`dist.broadcast_object_list`), or `all_reduce` a flag",
                related=((test, "the condition that can differ between ranks"),),
                preview=True,
            )
        guard = calls.skipping_guard(reached)
        if guard is None:
            return
        code = self.ctx.module.code_for_node
        message = _message(reached.shown, guard, code(guard.test), code(guard.exit) if guard.exit is not None else None)
        fact, backend = reached.site.imported, reached.backend
        where = () if fact is None else (Related(fact.path, Span(fact.line, 1, fact.line, 1), _HELPER),)
        self.report(
            reached.site.node,
            _backend_message(message, backend) if backend is not None else message,
            related=((guard.anchor, GUARD_KINDS_SHOWN[guard.kind.name]), *where),
            severity=Severity.WARNING if backend is not None else None,
        )


_HELPER = "the helper, which performs the collective"


def _backend_message(message: Callable[[Callable], str], backend: tuple[str, str, str]) -> Callable[[Callable], str]:
    backends, gathers, remedy = backend

    def render(span_of: Callable) -> str:
        return f"under {backends} (not plain DDP) {gathers} on every rank here: {message(span_of)}; {remedy}"

    return render


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
