"""DDP007 unguarded-log."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddplint.analysis.blocks import leaves_after
from ddplint.analysis.execution import Runs
from ddplint.analysis.guards import DIRECT
from ddplint.analysis.names import last_name
from ddplint.analysis.rank import Site
from ddplint.analysis.rank_zero import RankZeroTests, replaces_print, sets_print
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Writers and runs that each rank that calls them creates once more: a
#: duplicated run or event file even when called once.
WRITERS = frozenset(
    {
        "wandb.init", "mlflow.start_run", "torch.utils.tensorboard.SummaryWriter",
        "torch.utils.tensorboard.writer.SummaryWriter", "tensorboardX.SummaryWriter", "logging.FileHandler",
    }
)  # fmt: skip
#: Output that repeats when it runs in the training loop (or what it calls).
REPEATED_OUTPUT = frozenset({"builtins.print", "wandb.log"})
MLFLOW_LOGGING = "mlflow.log_"
#: Per-process values: output that prints them is per rank on purpose.
PER_PROCESS = frozenset({"os.getpid", "torch.cuda.current_device", "socket.gethostname", "platform.node"})
PROGRESS_BARS = frozenset(
    {
        "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.rich.tqdm",
        "tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange",
    }
)  # fmt: skip
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
#: Loggers that log on the main process only.
RANK_AWARE_LOGGER_FACTORIES = frozenset({"accelerate.logging.get_logger"})
#: Helpers that replace `builtins.print` with a rank-0-only version (DETR,
#: DeiT, MAE, torchvision's references: `utils.init_distributed_mode(args)`).
PRINT_SILENCERS = frozenset({"init_distributed_mode", "setup_for_distributed"})
#: Functions that set up logging; given the rank, they set it up per rank.
_LOGGER_SETUP = re.compile(r"^(?:setup|set_up|create|init|build|get|make)_?(?:logging|logger)s?$", re.IGNORECASE)
#: A keyword that names the ranks a logger call emits on (ColossalAI's `logger.info(msg, ranks=[0])`).
RANKS_KEYWORDS = frozenset({"ranks", "rank", "main_process_only"})


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
    requires = frozenset({"rank"})
    distributed_only = True
    tokens = ("print", "wandb", "SummaryWriter", "mlflow", "tqdm", "trange", "logger", "logging", "log",
              "loguru", "LOGGER", "FileHandler")  # fmt: skip
    tags = ("observability",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sites: list[_Output] = []
        #: Loggers (as written) and `logging` itself, with the rank dependence of their level or filter.
        self.levels: list[tuple[str | None, object]] = []
        self.print_silenced = False
        self.rank_zero = RankZeroTests(ctx)
        #: Whether the module mentions a per-process value at all (a cheap filter).
        self.per_process_words = any(word in ctx.source for word in ("getpid", "current_device", "gethostname", "node("))

    def visit_If(self, node: cst.If) -> None:
        self.rank_zero.note(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        # `builtins.print = print_pass` (MoCo, SimSiam), in a function of the module or at its top.
        if any(replaces_print(t.target, self.ctx) for t in node.targets):
            self.print_silenced = True

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = last_name(node.func) or ""
        if name in PRINT_SILENCERS or sets_print(node, ctx):
            self.print_silenced = True
        self._imported_helper(node.func)
        if isinstance(node.func, cst.Name) and _LOGGER_SETUP.search(name):
            self.levels.append((None, ctx.rank.deps_of_all(a.value for a in node.args)))
        names = ctx.qualified_names(node.func)
        if not names and not isinstance(node.func, cst.Attribute):
            return
        shown = _Shown(ctx.module, node.func)
        if names & WRITERS:
            if self._in_except():
                return
            self.sites.append(_Output(ctx.rank.site(node), shown, kind=_WRITER))
        elif names & REPEATED_OUTPUT or any(n and n.startswith(MLFLOW_LOGGING) for n in names):
            if self._in_except():
                return
            deps = ctx.rank.deps_of_all(a.value for a in node.args) if "builtins.print" in names else frozenset()
            if self.per_process_words and self._per_process_text(node):
                return
            kind = _PRINT if "builtins.print" in names else _TRACKER
            self.sites.append(_Output(ctx.rank.site(node, deps), shown, kind=kind, tests_before=self.rank_zero.mark(),
                                      leaves=leaves_after(ctx.stack)))
        elif names & PROGRESS_BARS:
            if self._in_except():
                return
            disable = next((a.value for a in node.args if a.keyword and a.keyword.value == "disable"), None)
            deps = ctx.rank.deps(disable) if disable is not None else frozenset()
            self.sites.append(_Output(ctx.rank.site(node, deps), shown, kind=_PROGRESS))
        elif isinstance(node.func, cst.Attribute):
            self._logging_call(node, node.func, shown)

    def _per_process_text(self, node: cst.Call) -> bool:
        """`print(os.getpid(), ...)`: which process speaks is the message."""
        todo: list[cst.CSTNode] = [a.value for a in node.args]
        while todo:
            current = todo.pop()
            if isinstance(current, cst.Call) and self.ctx.qualified_names(current.func) & PER_PROCESS:
                return True
            todo.extend(c for c in current.children if isinstance(c, cst.BaseExpression) or isinstance(c, cst.FormattedStringExpression))
        return False

    def _imported_helper(self, func: cst.BaseExpression) -> None:
        """A helper from another linted module that replaces `builtins.print`,
        or that configures `logging` per rank (also through the helpers it
        calls): it quiets `print`, or the module's `logging` loggers, on the other ranks."""
        facts = self.ctx.facts
        fact = facts.first(self.ctx.imported_callees(func)) if facts else None
        if fact is None:
            return
        if fact.silences_print:
            self.print_silenced = True
        if fact.silences_logging:
            self.levels.append((None, _RANK))

    def _logging_call(self, node: cst.Call, func: cst.Attribute, shown: _Shown) -> None:
        ctx = self.ctx
        method, receiver = func.attr.value, func.value
        logger = last_name(receiver)
        if method in ("setLevel", "addFilter", "addHandler"):
            self.levels.append((ctx.module.code_for_node(receiver), ctx.rank.deps_of_all(a.value for a in node.args)))
            self.levels.append((ctx.module.code_for_node(receiver), _guard_deps(ctx)))
        elif method == "basicConfig" and logger == "logging":
            self.levels.append((None, ctx.rank.deps_of_all(a.value for a in node.args)))
        elif _LOGGER_SETUP.search(method):
            # `setup_logging(out, rank=rank)`, `create_logger(out, dist_rank=rank)`: rank-aware set-up.
            self.levels.append((None, ctx.rank.deps_of_all(a.value for a in node.args)))
        elif method in LOG_METHODS:
            if any(a.keyword is not None and a.keyword.value in RANKS_KEYWORDS for a in node.args):
                return  # the call names the ranks it emits on
            if self._problem_report(method):
                return  # news about this rank: each rank that hits it should say so
            kind = self._logger_kind(receiver)
            if kind is not None and not self._in_except():
                self.sites.append(
                    _Output(ctx.rank.site(node), shown, kind=_LOGGER, logger=kind,
                            receiver=ctx.module.code_for_node(receiver), tests_before=self.rank_zero.mark(),
                            leaves=leaves_after(ctx.stack))
                )  # fmt: skip

    def _problem_report(self, method: str) -> bool:
        """An error under a condition, or a warning in the `else` of a success test."""
        stack = self.ctx.stack
        if method in ("error", "exception", "critical"):
            return any(isinstance(n, (cst.If, cst.Else)) for n in stack)
        return method in ("warning", "warn") and any(isinstance(n, cst.Else) for n in stack)

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
        if isinstance(receiver, cst.Name):
            binding = ctx.scopes.lookup(receiver.value)
            if binding is None or not binding.values:
                return None  # imported (configured there, YOLOv5's LOGGER), or a parameter: unknown
            values: list = [v for v in binding.values if isinstance(v, cst.BaseExpression)]
        elif isinstance(receiver, cst.Attribute):
            values = list(ctx.rank.attribute_values.get(receiver.attr.value, ()))  # `self.logger = ...`
        else:
            return None
        for value in values:
            if isinstance(value, cst.Call):
                if ctx.qualified_names(value.func) & RANK_AWARE_LOGGER_FACTORIES:
                    return None
                if last_name(value.func) in ("getLogger", "get_logger"):
                    return "logging"
        return None  # a logger object of some other class: its own business

    def finish(self) -> None:
        rank = self.ctx.rank
        quiet = {name for name, deps in self.levels if rank.is_rank_dependent(deps)}  # type: ignore[arg-type]
        for output in self.sites:
            site = output.site
            if output.kind == _PRINT and self.print_silenced:
                continue
            if output.kind == _LOGGER and (output.receiver in quiet or (None in quiet and output.logger == "logging")):
                continue
            if rank.is_rank_dependent(site.deps):
                continue
            runs = rank.runs(site)
            if not runs.many:
                continue
            if output.kind in _REPEATING and (output.leaves or not rank.execution.repeated(site)):
                continue  # one-time output, or a message on the way out
            self._report(output, runs)

    def _report(self, output: _Output, runs: Runs) -> None:
        site = output.site
        who = "every rank" if runs is Runs.ALL else "every rank but one"
        test = self.ctx.rank_advice.test(site)
        if output.kind == _WRITER:
            what = f"{output.shown} runs on {who}, so each of them opens its own run or file"
            fix: ProposedFix | None = ProposedFix.display_only("Create it on rank 0 only")
            advice = f"create it on rank 0 only (`if {test.text}:`)"
        elif output.kind == _PROGRESS:
            what = f"{output.shown} runs on {who}, so their progress bars overwrite each other"
            fix = ProposedFix.display_only("Pass `disable=` for ranks other than 0")
            advice = f"pass `disable={test.negated}`"
        else:
            what = f"{output.shown} runs on {who} at every step or epoch, so its output is repeated once per rank"
            fix = self.rank_zero.wrap_fix(site, output.tests_before, "Print it on rank 0 only")
            advice = f"guard it with `if {test.text}:`"
        self.report(site.node, f"{what}; {advice}", statement=site.statement, fix=fix)


def _guard_deps(ctx) -> frozenset:
    """The rank dependence of the guards around the node (a handler added on rank 0 only)."""
    deps: set = set()
    for guard in ctx.rank.guards()[0]:
        deps |= guard.deps
    return frozenset(deps)


class _Shown:
    """`callee(...)`, rendered only if a finding needs it."""

    def __init__(self, module: cst.Module, func: cst.BaseExpression) -> None:
        self.module, self.func = module, func

    def __str__(self) -> str:
        return f"`{self.module.code_for_node(self.func)}(...)`"


#: The rank dependence of a logging set-up done per rank by an imported helper.
_RANK = frozenset({DIRECT})

_WRITER, _PROGRESS, _PRINT, _TRACKER, _LOGGER = "writer", "progress", "print", "tracker", "logger"
#: Output that is only a problem when it repeats.
_REPEATING = frozenset({_PRINT, _TRACKER, _LOGGER})


@dataclass(frozen=True)
class _Output:
    """An output call to judge after the walk."""

    site: Site
    shown: _Shown
    kind: str
    logger: str | None = None
    receiver: str | None = None
    #: How many rank-0 tests the module had written before it (for the fix).
    tests_before: int = 0
    #: Its block leaves right after it (`return`, `raise`, `break`, `sys.exit()`).
    leaves: bool = False
