"""DDP007 unguarded-log."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.analysis.names import last_name
from ddplint.analysis.rank import Site
from ddplint.analysis.rank_zero import RankZeroTests
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Output every rank produces wherever it is called.
OUTPUT_FUNCTIONS = frozenset(
    {
        "builtins.print", "wandb.init", "wandb.log", "mlflow.start_run",
        "torch.utils.tensorboard.SummaryWriter", "torch.utils.tensorboard.writer.SummaryWriter",
        "tensorboardX.SummaryWriter",
    }
)  # fmt: skip
MLFLOW_LOGGING = "mlflow.log_"
PROGRESS_BARS = frozenset(
    {
        "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.rich.tqdm",
        "tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange",
    }
)  # fmt: skip
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
LOGGER_NAMES = frozenset({"logger", "log", "LOGGER", "LOG", "_logger", "_log", "logging"})
#: Loggers that log on the main process only.
RANK_AWARE_LOGGER_FACTORIES = frozenset({"accelerate.logging.get_logger"})
#: Helpers that replace `builtins.print` with a rank-0-only version (DETR,
#: DeiT, MAE, torchvision's references: `utils.init_distributed_mode(args)`).
PRINT_SILENCERS = frozenset({"init_distributed_mode", "setup_for_distributed"})


class UnguardedLog(Rule):
    """
    ## What it does

    In distributed code, flags output that every rank produces: `print(...)`,
    `wandb.init`/`wandb.log`, `SummaryWriter(...)` (the writer's `add_*`
    calls follow from it), `mlflow.start_run`/`mlflow.log_*`, `tqdm(...)`/
    `trange(...)` without a `disable=` tied to the rank, and `logging`/loguru
    logger calls inside a training loop (a loop that calls `.backward()` or
    `optimizer.step()`).

    Not flagged: calls under a rank guard or in functions the module only
    calls from guarded code, and output only a one-process run reaches
    (`if not args.distributed:`; see DDP006); error reporting in `except`
    clauses (each rank that fails should say so); `print` of rank-dependent text
    (`print(f"[rank {rank}] ...")`, deliberately per rank);
    `accelerator.print`, Lightning's `self.log`/`self.print`,
    `rank_zero_info`/`rank_zero_warn`, a module's own `print_rank_0`;
    loggers from `accelerate.logging.get_logger` (main process only by
    default); loggers whose level or filter the module sets from the rank
    (`logger.setLevel(logging.INFO if rank == 0 else logging.WARN)`,
    `logging.basicConfig(level=...)` likewise); logger calls outside
    training loops.

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
    summary = "Every rank prints or logs the same output."
    requires = frozenset({"rank", "loops"})
    distributed_only = True
    tokens = ("print", "wandb", "SummaryWriter", "mlflow", "tqdm", "trange", "logger", "logging", "log",
              "loguru", "LOGGER")  # fmt: skip
    tags = ("observability",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sites: list[_Output] = []
        self.quiet_loggers: set[str] = set()
        self.quiet_logging = False
        self.print_silenced = False
        self.rank_zero = RankZeroTests(ctx)

    def visit_If(self, node: cst.If) -> None:
        self.rank_zero.note(node)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if last_name(node.func) in PRINT_SILENCERS or self._imported_silencer(node.func):
            self.print_silenced = True
        names = ctx.qualified_names(node.func)
        if not names and not isinstance(node.func, cst.Attribute):
            return
        shown = _Shown(ctx.module, node.func)
        if names & OUTPUT_FUNCTIONS or any(n and n.startswith(MLFLOW_LOGGING) for n in names):
            deps = ctx.rank.deps_of_all(a.value for a in node.args) if "builtins.print" in names else frozenset()
            if not self._in_except():
                self.sites.append(_Output(ctx.rank.site(node, deps), shown, tests_before=self.rank_zero.mark()))
        elif names & PROGRESS_BARS:
            disable = next((a.value for a in node.args if a.keyword and a.keyword.value == "disable"), None)
            deps = ctx.rank.deps(disable) if disable is not None else frozenset()
            if not self._in_except():
                self.sites.append(_Output(ctx.rank.site(node, deps), shown, progress_bar=True))
        elif isinstance(node.func, cst.Attribute):
            self._logging_call(node, node.func, shown)

    def _imported_silencer(self, func: cst.BaseExpression) -> bool:
        """A helper from another linted module that replaces `builtins.print`."""
        facts = self.ctx.facts
        if not facts:
            return False
        fact = facts.first(self.ctx.scopes.imported_qualnames(func))
        return fact is not None and fact.silences_print

    def _logging_call(self, node: cst.Call, func: cst.Attribute, shown: _Shown) -> None:
        ctx = self.ctx
        method, receiver = func.attr.value, func.value
        logger = last_name(receiver)
        if method in ("setLevel", "addFilter") and ctx.rank.deps_of_all(a.value for a in node.args):
            self.quiet_loggers.add(ctx.module.code_for_node(receiver))
        elif method == "basicConfig" and logger == "logging":
            if ctx.rank.deps_of_all(a.value for a in node.args):
                self.quiet_logging = True
        elif method in LOG_METHODS:
            kind = self._logger_kind(receiver)
            loops = ctx.loops.enclosing_loops()
            if kind is not None and loops and not self._in_except():
                self.sites.append(
                    _Output(ctx.rank.site(node), shown, loops, kind, ctx.module.code_for_node(receiver), tests_before=self.rank_zero.mark())
                )

    def _in_except(self) -> bool:
        """Error reporting: every rank that fails says so, and should."""
        return any(isinstance(n, cst.ExceptHandler) for n in self.ctx.stack)

    def _logger_kind(self, receiver: cst.BaseExpression) -> str | None:
        """"loguru", "logging" (stdlib or unknown logger), or None (not a logger)."""
        ctx = self.ctx
        names = ctx.qualified_names(receiver)
        if any(n and n.startswith("loguru") for n in names):
            return "loguru"
        if "logging" in names:
            return "logging"
        binding = ctx.scopes.lookup(receiver.value) if isinstance(receiver, cst.Name) else None
        if binding is not None and not binding.values and None not in binding.qualnames and not names & {"logging"}:
            return None  # imported from another module, configured there (YOLOv5's LOGGER)
        values = binding.values if binding is not None else ()
        for value in values:
            if isinstance(value, cst.Call) and ctx.qualified_names(value.func) & RANK_AWARE_LOGGER_FACTORIES:
                return None
        if any(isinstance(v, cst.Call) and last_name(v.func) in ("getLogger", "get_logger") for v in values):
            return "logging"
        return "logging" if last_name(receiver) in LOGGER_NAMES else None

    def finish(self) -> None:
        rank, loops = self.ctx.rank, self.ctx.loops
        for output in self.sites:
            site = output.site
            if self.print_silenced and str(output.shown).startswith("`print("):
                continue
            if output.logger is not None:
                if not any(loops.is_training_loop(loop) for loop in output.loops):
                    continue
                if output.receiver in self.quiet_loggers or (self.quiet_logging and output.logger == "logging"):
                    continue
            if rank.is_rank_dependent(site.deps) or not rank.runs_on_every_rank(site):
                continue
            where = " in the training loop" if output.logger is not None else ""
            fix = (
                "pass `disable=dist.get_rank() != 0`"
                if output.progress_bar
                else "guard it with `if dist.get_rank() == 0:`"
            )
            self.report(
                site.node,
                f"{output.shown} runs on every rank{where}, so its output is repeated once per rank; {fix}",
                statement=site.statement,
                fix=ProposedFix.display_only("Pass `disable=` for ranks other than 0") if output.progress_bar
                else self.rank_zero.wrap_fix(site, output.tests_before, "Print it on rank 0 only"),
            )


class _Shown:
    """`callee(...)`, rendered only if a finding needs it."""

    def __init__(self, module: cst.Module, func: cst.BaseExpression) -> None:
        self.module, self.func = module, func

    def __str__(self) -> str:
        return f"`{self.module.code_for_node(self.func)}(...)`"


@dataclass(frozen=True)
class _Output:
    """An output call to judge after the walk; loggers also need their loops."""

    site: Site
    shown: _Shown
    loops: tuple = ()
    logger: str | None = None
    receiver: str | None = None
    progress_bar: bool = False
    #: How many rank-0 tests the module had written before it (for the fix).
    tests_before: int = 0
