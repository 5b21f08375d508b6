"""What a process prints, logs, tracks or opens, and what quiets it on the other ranks.

`Outputs` is a walker analysis (``requires = {"rank", "outputs"}``,
`ctx.outputs`). During the walk, `of(call)` says which output a call makes —
a `print`, a logger record, an experiment tracker's log, a progress bar, or a
writer that opens a run or file (`wandb.init`, `SummaryWriter`) — with what a
finding needs later; meanwhile the analysis notes what the module does to
quiet its output on the other ranks: `builtins.print` replaced (DETR's
`setup_for_distributed`, MoCo's `builtins.print = print_pass`), a logger's
level, filter or handler set from the rank, or a helper of another module that
does either. After the walk, `silenced(output)` answers from all of it. The
vocabulary is ddplint/knowledge's "printers, loggers, trackers and silencers".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.analysis.blocks import leaves_after
from ddplint.knowledge import (
    ERROR_LOG_METHODS, LOG_METHODS, LOGGING_CONFIGURATION, LOGGER_FACTORIES, LOGGER_SETUP, OUTPUT_WRITERS, PER_PROCESS_VALUES,
    PER_PROCESS_WORDS, PRINT_SILENCERS, PROGRESS_BARS, PROGRESS_DISABLE, RANK_AWARE_LOGGER_FACTORIES,
    RANKS_KEYWORDS, REPEATED_OUTPUT, TRACKER_LOG_PREFIXES, WARNING_LOG_METHODS,
)  # fmt: skip
from ddplint.analysis.guards import DIRECT
from ddplint.analysis.names import last_name
from ddplint.analysis.rank_zero import replaces_print, sets_print
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: What an output call does.
WRITER, PROGRESS, PRINT, TRACKER, LOGGER = "writer", "progress", "print", "tracker", "logger"
#: Output that is only a problem when it repeats (each call emits one record).
REPEATING = frozenset({PRINT, TRACKER, LOGGER})
_LOGGER_SETUP = re.compile(LOGGER_SETUP, re.IGNORECASE)
#: What sets a logger's level, filter or handler (`logging.basicConfig` configures `logging` itself).
_LEVEL_SETTERS = LOGGING_CONFIGURATION - {"basicConfig"}
#: The rank dependence of a logging set-up done per rank by an imported helper.
_RANK = frozenset({DIRECT})


@dataclass(frozen=True)
class Output:
    """One output call, as `Outputs.of` found it during the walk."""

    kind: str
    #: The rank dependence of what it says (`print`'s arguments) or of a progress bar's `disable=`.
    deps: frozenset = frozenset()
    #: For a logger record: "logging" (stdlib) or "loguru", and the receiver as written.
    logger: str | None = None
    receiver: str | None = None
    #: Its block leaves right after it (`return`, `raise`, `break`, `sys.exit()`): a message on the way out.
    leaves: bool = False


class Outputs:
    """The module's output calls and what quiets them on the other ranks."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        #: Whether `print` is replaced for the process (by the module or a helper it calls).
        self.print_silenced = False
        #: Loggers (as written; None: `logging` itself) with the rank dependence of their level or filter.
        self.levels: list[tuple[str | None, object]] = []
        self._quiet: set[str | None] | None = None
        #: The facts about imported helpers that `silenced` answers were asked of
        #: (`silences_print`, `silences_logging`): other kinds change no answer.
        self.asked: set[str] = set()
        #: Whether the module mentions a per-process value at all (a cheap filter).
        self._per_process_words = any(word in ctx.source for word in PER_PROCESS_WORDS)

    # ------------------------------------------------------------ the walk: silencers

    def visit_Assign(self, node: cst.Assign) -> None:
        # `builtins.print = print_pass` (MoCo, SimSiam), in a function of the module or at its top.
        if any(replaces_print(t.target, self.ctx) for t in node.targets):
            self.print_silenced = True

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        name = last_name(func) or ""
        if name in PRINT_SILENCERS or sets_print(node, ctx):
            self.print_silenced = True
        self._imported_helper(func)
        arguments = lambda: ctx.rank.deps_of_all(a.value for a in node.args)  # noqa: E731
        if isinstance(func, cst.Name) and _LOGGER_SETUP.search(name):
            self.levels.append((None, arguments()))
        if not isinstance(func, cst.Attribute) or self._emits(node):
            return
        method, receiver = func.attr.value, func.value
        if method in _LEVEL_SETTERS:
            self.levels.append((ctx.module.code_for_node(receiver), arguments()))
            self.levels.append((ctx.module.code_for_node(receiver), _guard_deps(ctx)))
        elif (method == "basicConfig" and last_name(receiver) == "logging") or _LOGGER_SETUP.search(method):
            # `setup_logging(out, rank=rank)`, `create_logger(out, dist_rank=rank)`: rank-aware set-up.
            self.levels.append((None, arguments()))

    def _emits(self, node: cst.Call) -> bool:
        """A writer, print, tracker log or progress bar (never a logger set-up)."""
        names = self.ctx.qualified_names(node.func)
        return bool(names & (OUTPUT_WRITERS | REPEATED_OUTPUT | PROGRESS_BARS)) or _tracker_log(names)

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

    # ------------------------------------------------------------ questions

    def of(self, node: cst.Call) -> Output | None:
        """The output `node` makes, asked during the walk where it is visited;
        None for no output, and for output that each rank should make: error
        reporting (in an `except` clause; a logger error under a condition, a
        warning in the `else` of a success test), text that names the process
        (`os.getpid()`), a logger call naming its ranks (`ranks=[0]`), and a
        logger that is not `logging`'s or loguru's (rank-aware, or a class of the project's own)."""
        ctx = self.ctx
        names = ctx.qualified_names(node.func)
        if not names and not isinstance(node.func, cst.Attribute):
            return None
        in_except = lambda: any(isinstance(n, cst.ExceptHandler) for n in ctx.stack)  # noqa: E731
        if names & OUTPUT_WRITERS:
            return None if in_except() else Output(WRITER)
        if names & REPEATED_OUTPUT or _tracker_log(names):
            if in_except():
                return None
            printing = "builtins.print" in names
            deps = ctx.rank.deps_of_all(a.value for a in node.args) if printing else frozenset()
            if self._per_process_words and self._per_process_text(node):
                return None
            return Output(PRINT if printing else TRACKER, deps, leaves=leaves_after(ctx.stack))
        if names & PROGRESS_BARS:
            disable = next((a.value for a in node.args if a.keyword and a.keyword.value == PROGRESS_DISABLE), None)
            deps = ctx.rank.deps(disable) if disable is not None else frozenset()
            return None if in_except() else Output(PROGRESS, deps)
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value in _LEVEL_SETTERS or func.attr.value not in LOG_METHODS:
            return None
        if any(a.keyword is not None and a.keyword.value in RANKS_KEYWORDS for a in node.args):
            return None  # the call names the ranks it emits on
        if self._problem_report(func.attr.value):
            return None  # news about this rank: each rank that hits it should say so
        kind = self._logger_kind(func.value)
        if kind is None or in_except():
            return None
        receiver = ctx.module.code_for_node(func.value)
        return Output(LOGGER, logger=kind, receiver=receiver, leaves=leaves_after(ctx.stack))

    def silenced(self, output: Output) -> bool:
        """Whether the module quiets this output on the other ranks (after the
        walk): `print` replaced, or the logger's level, filter or handler set
        from the rank (for `logging` loggers also `logging` configured so)."""
        if output.kind == PRINT:
            self.asked.add("silences_print")
            return self.print_silenced
        if output.kind != LOGGER:
            return False
        if output.logger == "logging":  # (a helper configures `logging` itself, not other loggers)
            self.asked.add("silences_logging")
        if self._quiet is None:
            rank = self.ctx.rank
            self._quiet = {name for name, deps in self.levels if rank.is_rank_dependent(deps)}  # type: ignore[arg-type]
        return output.receiver in self._quiet or (None in self._quiet and output.logger == "logging")

    def _per_process_text(self, node: cst.Call) -> bool:
        """`print(os.getpid(), ...)`: which process speaks is the message."""
        todo: list[cst.CSTNode] = [a.value for a in node.args]
        while todo:
            current = todo.pop()
            if isinstance(current, cst.Call) and self.ctx.qualified_names(current.func) & PER_PROCESS_VALUES:
                return True
            todo.extend(c for c in current.children if isinstance(c, (cst.BaseExpression, cst.FormattedStringExpression)))
        return False

    def _problem_report(self, method: str) -> bool:
        """An error under a condition, or a warning in the `else` of a success test."""
        stack = self.ctx.stack
        if method in ERROR_LOG_METHODS:
            return any(isinstance(n, (cst.If, cst.Else)) for n in stack)
        return method in WARNING_LOG_METHODS and any(isinstance(n, cst.Else) for n in stack)

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
                if last_name(value.func) in LOGGER_FACTORIES:
                    return "logging"
        return None  # a logger object of some other class: its own business


def _tracker_log(names: frozenset) -> bool:
    """An experiment tracker's logging function (`mlflow.log_metric`)."""
    return any(n and n.startswith(TRACKER_LOG_PREFIXES) for n in names)


def _guard_deps(ctx: ModelView) -> frozenset:
    """The rank dependence of the guards around the node (a handler added on rank 0 only)."""
    deps: set = set()
    for guard in ctx.rank.guards()[0]:
        deps |= guard.deps
    return frozenset(deps)
