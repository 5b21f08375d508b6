"""DDP006 unguarded-save."""

from __future__ import annotations

from ddplint.analysis.execution import Runs
from ddplint.analysis.file_io import checkpointer_writes, destination, in_memory, per_process_path, under_file_lock
from ddplint.analysis.names import last_name
from ddplint.analysis.rank import Site
from ddplint.analysis.rank_zero import RankZeroTests
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Functions that write files, by qualified name.
WRITE_FUNCTIONS = frozenset(
    {
        "torch.save", "torch.jit.save", "numpy.save", "numpy.savez", "numpy.savez_compressed",
        "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move",
        "safetensors.torch.save_file", "safetensors.numpy.save_file",
    }
)  # fmt: skip
#: Methods that write files on any receiver.
WRITE_METHODS = frozenset({"save_pretrained", "write_text", "write_bytes"})
OPEN_FUNCTIONS = frozenset({"builtins.open", "io.open", "codecs.open"})
_WRITE_MODES = frozenset("wax+")


def _mode_arg(call: cst.Call) -> cst.BaseExpression | None:
    """The mode argument of an ``open(...)`` call."""
    for index, arg in enumerate(call.args):
        if (arg.keyword is None and index == 1) or (arg.keyword is not None and arg.keyword.value == "mode"):
            return arg.value
    return None


def _write_mode(call: cst.Call) -> bool:
    """Whether an ``open(...)`` call's literal mode writes."""
    mode = _mode_arg(call)
    return isinstance(mode, cst.SimpleString) and bool(_WRITE_MODES & set(mode.evaluated_value))


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
    requires = frozenset({"rank"})
    distributed_only = True
    tokens = ("save", "save_pretrained", "savez", "savez_compressed", "save_file", "open", "write_text",
              "write_bytes", "copy", "copy2", "copyfile", "copytree", "move", "PeriodicCheckpointer")  # fmt: skip
    tags = ("correctness", "performance")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.rank_zero = RankZeroTests(ctx)
        #: The rank-0 tests known before each write (a fix reuses only those).
        self.tests_before: dict[cst.Call, int] = {}

    def visit_If(self, node: cst.If) -> None:
        self.rank_zero.note(node)

    def trigger_Call(self, node: cst.Call) -> bool:
        if self._write(node) is None or under_file_lock(self.ctx):
            return False  # (inside `with FileLock(path):` the processes write in turn, on purpose)
        self.tests_before[node] = self.rank_zero.mark()
        return True

    def check_Call(self, node: cst.Call, site: Site) -> None:
        rank = self.ctx.rank
        values = [a.value for a in node.args]
        if isinstance(node.func, cst.Attribute):
            values.append(node.func.value)  # `Path(out, f"{rank}.json").write_text(...)`: the receiver is the path
        if rank.is_rank_dependent(rank.deps_of_all(values)):
            return
        target = destination(node, self.ctx.qualified_names(node.func))
        if target is not None and (in_memory(target, self.ctx) or per_process_path(target, self.ctx)):
            return  # `torch.save(obj, io.BytesIO())`, a file under this process's `tempfile.mkdtemp()`
        runs = rank.runs(site)
        if not runs.many:
            return
        who = "every rank, so all of them write" if runs is Runs.ALL else "every rank but one, so they all write"
        test = self.ctx.rank_advice.test(site).text
        self.report(
            node,
            f"{self._write(node)} runs on {who} the same file; "
            f"wrap it in `if {test}:` or make the path rank-specific",
            fix=self.rank_zero.wrap_fix(site, self.tests_before[node], "Write it on rank 0 only, or make the path rank-specific"),
        )

    def _write(self, node: cst.Call) -> str | None:
        names = self.ctx.qualified_names(node.func)
        code = self.ctx.module.code_for_node
        if names & WRITE_FUNCTIONS:
            return f"`{code(node.func)}()`"
        if names & OPEN_FUNCTIONS and _write_mode(node):
            return f"`{code(node.func)}(..., {code(_mode_arg(node))})`"
        method = last_name(node.func) if isinstance(node.func, cst.Attribute) else None
        if method in WRITE_METHODS or checkpointer_writes(node, self.ctx):
            return f"`{code(node.func)}()`"
        return None
