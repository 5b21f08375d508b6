"""DDP006 unguarded-save."""

from __future__ import annotations

from ddplint.analysis.execution import Runs
from ddplint.analysis.file_io import FILE_WRITE_TOKENS, file_write, own_file, under_file_lock
from ddplint.analysis.rank import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class UnguardedSave(Rule):
    """
    ## What it does

    In distributed code, flags a file write that every rank executes:
    `torch.save`, `X.save_pretrained`, `np.save`/`np.savez`,
    `safetensors.torch.save_file`, `torch.jit.save`, `open(path, "w"|"wb"|
    "a"|"x")` (the `json.dump`/`pickle.dump` into that file are the same
    write, reported once at the `open`), `Path.write_text`/`write_bytes`,
    `shutil.copy*`/`copytree`/`move`, and a checkpointer's `save(name)` (a
    periodic checkpointer's `step(iteration)`) where it writes on every rank:
    fvcore's `Checkpointer(model, save_dir)` (its `save_to_disk` defaults to
    true), detectron2's `DetectionCheckpointer(..., save_to_disk=True)` (by
    default it writes on the main process only).

    A write is guarded, and not flagged, when it is under a rank guard
    (`if rank == 0:`, `if accelerator.is_main_process:`, after
    `if not is_main: return`, in a function decorated `@rank_zero_only`),
    when it is in a function that the module calls only from guarded code
    (`if is_main_process(): save_checkpoint()`), or when its path depends
    on the rank (`f"ckpt_rank{rank}.pt"`, sharded saves). Nor is a write
    that only a one-process run reaches: under `if not dist.is_initialized():`,
    `if args.local_rank == -1:`, `if world_size == 1:`, in the `else` of
    `if args.distributed:`, after `if dist.is_initialized(): return`, or
    under a flag the distributed setup asserts off (`assert not opt.evolve`
    in `if LOCAL_RANK != -1:`). Nor is a write into an in-memory buffer
    (`io.BytesIO`, `os.devnull`), nor one inside `with FileLock(path):` (the
    processes take turns on purpose), or under a fresh per-process temporary path
    (`tempfile.mkdtemp()`). A function nobody calls is judged when its own
    body shows that every rank runs it (it tests the rank or enters an
    unguarded collective), unless another module of the project calls it
    (its callers decide). Collective
    checkpoint APIs (`dcp.save`, `accelerator.save_state`) and
    `accelerator.save`, which writes on the main process only, are not
    writes of this kind.

    ## Why is this bad?

    Every rank writes the same file at the same time: N× the I/O on a
    shared file system, interleaved or truncated files when the writes
    race, and readers (the next job, a resumed run) that load a checkpoint
    another rank is still writing.

    ## Example

    ```python
    for epoch in range(epochs):
        train_one_epoch(model, loader)
        torch.save(model.module.state_dict(), f"ckpt_{epoch}.pt")
    ```

    ## Use instead

    ```python
    for epoch in range(epochs):
        train_one_epoch(model, loader)
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), f"ckpt_{epoch}.pt")
        dist.barrier()  # readers wait for the file
    ```

    ## Fix safety

    With `--unsafe-fixes`, the statement goes under a rank-0 test the module
    already writes: an earlier `if rank == 0:` / `if dist.get_rank() == 0:` /
    `if accelerator.is_main_process:` in the same function, or a module-level
    predicate such as `is_main_process()`. Only a statement that is one
    expression (`torch.save(...)`) is wrapped; one that binds a name is not (the name
    would be missing on the other ranks). Unsafe because the other ranks stop
    doing it: review that no rank needs its own copy. With no such test in reach the fix is advice only.

    ## References

    - [Saving and loading models in DDP](https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints)
    """

    code = "DDP006"
    name = "unguarded-save"
    severity = Severity.WARNING
    summary = "Every rank writes the same file."
    requires = frozenset({"rank", "rank_zero"})
    distributed_only = True
    tokens = FILE_WRITE_TOKENS
    tags = ("correctness", "performance")

    def trigger_Call(self, node: cst.Call) -> bool:
        # (inside `with FileLock(path):` the processes write in turn, on purpose)
        return file_write(node, self.ctx) is not None and not under_file_lock(self.ctx)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        if own_file(node, self.ctx):
            return  # a rank-specific path, `io.BytesIO()`, a file under this process's `tempfile.mkdtemp()`
        runs = self.ctx.rank.runs(site)  # asked second: who runs a write of its own file matters not
        if not runs.many:
            return
        who = "all of them" if runs is Runs.ALL else "they all"
        self.report(
            node,
            f"{file_write(node, self.ctx)} runs on {runs.value}, so {who} write the same file; "
            f"wrap it in `if {self.ctx.rank_advice.test(site).text}:` or make the path rank-specific",
            fix=self.ctx.rank_zero.wrap_fix(site, "Write it on rank 0 only, or make the path rank-specific"),
        )
