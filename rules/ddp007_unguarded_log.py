"""DDP007 unguarded-log."""

from __future__ import annotations

from ddplint.knowledge import OUTPUT_WORDS
from ddplint.analysis.outputs import PROGRESS, REPEATING, WRITER, Output
from ddplint.analysis.rank import Site
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: What each kind of output does when many ranks run it, the advice, and the fix's title.
_HARM = {
    WRITER: (", so each of them opens its own run or file", "create it on rank 0 only (`if {test}:`)", "Create it on rank 0 only"),
    PROGRESS: (", so their progress bars overwrite each other", "pass `disable={negated}`", "Pass `disable=` for ranks other than 0"),
}  # fmt: skip
_REPEATED = (" at every step or epoch, so its output is repeated once per rank", "guard it with `if {test}:`", "Print it on rank 0 only")


class UnguardedLog(Rule):
    """
    ## What it does

    In distributed code, flags output that more than one rank repeats, and
    writers that every rank opens again:

    - `print(...)`, `logging`/loguru logger calls, `wandb.log` and
      `mlflow.log_*` in the training loop (a loop that calls `.backward()`
      or `optimizer.step()`), in the epoch loop around it, or in a function
      or method such a loop calls (a `ProgressMeter.display()` that prints
      every N steps, a `validate()` run every epoch);
    - progress bars, `tqdm(...)`/`trange(...)`, without a `disable=` tied to
      the rank: they redraw every step;
    - `wandb.init`, `mlflow.start_run`, `SummaryWriter(...)` and
      `logging.FileHandler(...)`: one run, event file or log file per rank.

    "More than one rank": every rank, or every rank but one (the `else` of
    `if rank == 0:`). Output under a rank guard, in a function only guarded
    code calls, in the launcher process that `mp.spawn`s the workers, or in
    a one-process branch (`if not args.distributed:`) is not flagged.

    Also not flagged: one-time output (a start-up or end-of-run `print`
    outside those loops: N copies of one line are noise, not a bug, so the
    rule stays quiet about them); error reporting (in an `except` clause, or
    right before `return`/`raise`/`break`/`sys.exit()` in the same block);
    `print` once the module replaces it on other ranks (DETR's
    `setup_for_distributed`, MoCo's `builtins.print = print_pass`); output
    whose text carries the rank or process (`print(f"[rank {rank}] ...")`,
    `os.getpid()`), logger errors under a condition and warnings in the
    `else` of a success test (news about that rank); `accelerator.print`, Lightning's `self.log`/`self.print`,
    `rank_zero_info`, a module's own `print_rank_0` or logger class (judged
    where it prints); loggers from `accelerate.logging.get_logger`, calls
    naming their ranks (`logger.info(msg, ranks=[0])`), and loggers whose
    level or filter the module sets from the rank.

    ## Why is this bad?

    Every line is printed N times, interleaved, on a 64-GPU job; logs
    become unreadable and large, wandb and TensorBoard get one run or one
    event file per rank, and progress bars of all ranks overwrite each other.

    ## Example

    ```python
    for step, batch in enumerate(loader):
        loss = model(batch).loss
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.3f}")
    ```

    ## Use instead

    ```python
    for step, batch in enumerate(loader):
        loss = model(batch).loss
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            print(f"step {step} loss {loss.item():.3f}")
    ```

    For progress bars: `tqdm(loader, disable=dist.get_rank() != 0)`.

    ## Fix safety

    Progress bars get advice only (`disable=`). With `--unsafe-fixes`, the statement goes under a rank-0 test the module
    already writes: an earlier `if rank == 0:` / `if dist.get_rank() == 0:` /
    `if accelerator.is_main_process:` in the same function, or a module-level
    predicate such as `is_main_process()`. Only a statement that is one
    expression (`print(...)`, `logger.info(...)`) is wrapped; one that binds a name is not (the name
    would be missing on the other ranks). Unsafe because the other ranks stop
    doing it: review that no rank-specific output is lost. With no such test in reach the fix is advice only.

    ## References

    - [accelerate: logging on the main process](https://huggingface.co/docs/accelerate/package_reference/logging)
    """

    code = "DDP007"
    name = "unguarded-log"
    severity = Severity.WARNING
    summary = "More than one rank repeats the same output, or opens the same run or log."
    requires = frozenset({"rank", "rank_zero", "outputs"})
    distributed_only = True
    tokens = OUTPUT_WORDS
    tags = ("observability",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.found: dict[cst.Call, Output] = {}

    def trigger_Call(self, node: cst.Call) -> bool:
        output = self.ctx.outputs.of(node)
        if output is not None:
            self.found[node] = output
        return output is not None

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx, output = self.ctx, self.found[node]
        if ctx.rank.is_rank_dependent(output.deps):
            return
        # The module's own answers first: who runs it, and whether a helper quiets it
        # (facts from other modules), are asked only where they decide.
        if output.kind in REPEATING and (output.leaves or not ctx.rank.execution.repeated(site)):
            return  # one-time output, or a message on the way out
        runs = ctx.rank.runs(site)
        if not runs.many or ctx.outputs.silenced(output):
            return
        harm, advice, title = _HARM.get(output.kind, _REPEATED)
        test = ctx.rank_advice.test(site)
        advice = advice.format(test=test.text, negated=test.negated)
        fix = ctx.rank_zero.wrap_fix(site, title) if output.kind in REPEATING else ProposedFix.display_only(title)
        self.report(node, f"`{ctx.module.code_for_node(node.func)}(...)` runs on {runs.value}{harm}; {advice}", fix=fix)
