"""The walker analysis that gathers a module's summary, in the lint walk.

Runs only when the whole-project analysis asks for summaries. It reuses the
rank analysis (return values of functions, module-level variables) and the
collective catalogue; what it adds is bookkeeping per top-level function:
the collectives its body performs, the module functions and imported names
it calls, and whether it replaces ``builtins.print`` (DETR's
``setup_for_distributed``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from typing import TYPE_CHECKING, Callable, Mapping

from ddplint.analysis.callgraph import in_main_block
from ddplint.knowledge import LOGGING_CONFIGURATION
from ddplint.analysis.calls import export_switch, literal_arguments
from ddplint.analysis.classes import imported_bases
from ddplint.analysis.collectives import CollectiveChains, Performer, collective_name, in_lazy_initialization
from ddplint.analysis.data import dataset_kind
from ddplint.analysis.execution import Runs
from ddplint.analysis.guards import larger
from ddplint.analysis.file_io import writes_a_path
from ddplint.analysis.loops import is_step
from ddplint.analysis.rank_zero import replaces_print, sets_print
from ddplint.analysis.seeding import ClassCalls, draws_noise, is_hf_trainer, sets_train_mode
from ddplint.lazy import cst
from ddplint.project.summary import EXTERNAL_ROOTS, Symbol

if TYPE_CHECKING:
    from ddplint.analysis.rank import Site
    from ddplint.analysis.semantic import SemanticModel


def _external(qualname: str) -> bool:
    """Imported names that are never a linted module's: the standard library, torch, numpy."""
    return qualname.split(".", 1)[0] in EXTERNAL_ROOTS


class SummaryCollector:
    """Walker analysis: what the module summary needs, per top-level name.

    Without `symbols` (a module no linted file imports, or one whose text
    holds no facts) it only records the imported names the module calls;
    without `consulted` (no facts can reach the module), not those.
    """

    def __init__(self, ctx: SemanticModel, symbols: bool = True, consulted: bool = True, calls: bool = False) -> None:
        self.ctx = ctx
        #: The top-level class being walked, with what the summary needs of it.
        self._class: tuple[cst.ClassDef, str | None, tuple[str, ...], ClassCalls, bool] | None = None
        self.symbols_wanted = symbols
        self.consulted_wanted = consulted
        self.calls_wanted = calls
        #: Calls of imported names a linted module may define, where they are
        #: (who makes them is known after the walk): `per_rank_calls`.
        self.linted_sites: list[tuple[tuple[str, ...], Site]] = []
        self.top_functions: dict[str, cst.FunctionDef] = {}
        #: The methods of top-level classes, by ``Class.method``.
        self.methods: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, Symbol] = {}
        #: Collectives and calls of module functions in module functions, for `CollectiveChains`.
        self.performers: list[Performer] = []
        #: Module functions and imported names each function calls, with the
        #: call's guards inside it (rank-dependence is known after the walk).
        self.calls: dict[cst.FunctionDef, list[tuple[cst.FunctionDef, tuple]]] = defaultdict(list)
        self.imported_calls: dict[cst.FunctionDef, list[tuple[str, cst.Call, tuple]]] = defaultdict(list)
        self.silencers: set[cst.FunctionDef] = set()
        #: Calls configuring a `logging` logger (`addHandler`, `setLevel`), per
        #: function: their guards and the rank dependence of their arguments.
        self.logging_setups: dict[cst.FunctionDef, list[tuple[tuple, object]]] = defaultdict(list)
        #: The module replaces `builtins.print` when it is imported (at its top level).
        self.silences_on_import = False
        #: Functions that draw noise, put a model in train mode, take a step.
        self.noise: set[cst.FunctionDef] = set()
        self.train_modes: set[cst.FunctionDef] = set()
        self.steps: set[cst.FunctionDef] = set()
        #: Module-level functions, the methods of top-level classes (other modules
        #: reach them through an instance) and the functions nested in them.
        self.module_functions: set[cst.FunctionDef] = set()
        #: Every imported name the module calls.
        self.called: set[str] = set()
        #: Calls of imported names that a linted module may define, with their
        #: guards and function: where a collective helper would change DDP001.
        self.helper_calls: list[tuple[tuple[str, ...], tuple, tuple, cst.FunctionDef | None]] = []
        #: Imported names called as a statement of their own (`comm.synchronize()`): if
        #: they perform a collective, they order a rank-zero write before a read (DDP021).
        self.statement_calls: dict[cst.FunctionDef | None, set[str]] = defaultdict(set)
        #: The guards of each function's writes to a path (`torch.save`, `save_pretrained`, ...).
        self.writes: dict[cst.FunctionDef | None, list[tuple]] = defaultdict(list)

    def _top_level(self) -> bool:
        """Whether the node being visited is outside every function and class."""
        return not any(isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for n in self.ctx.stack[:-1])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self.symbols_wanted:
            return
        for ancestor in reversed(self.ctx.stack[:-1]):
            if isinstance(ancestor, cst.ClassDef):
                if self._class is not None and self._class[0] is ancestor and self.ctx.stack[-2] is ancestor.body:
                    # A method of a top-level class: other modules reach it through an instance.
                    self.methods.setdefault(f"{ancestor.name.value}.{node.name.value}", node)
                    self.module_functions.add(node)
                return
            if isinstance(ancestor, cst.Lambda):
                return
            if isinstance(ancestor, cst.FunctionDef):
                if ancestor in self.module_functions:
                    self.module_functions.add(node)
                return
        self.top_functions.setdefault(node.name.value, node)
        self.module_functions.add(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = imported_bases(node, self.ctx)
        if self.consulted_wanted:
            self.called |= bases  # a Dataset base class from another module
        if self.symbols_wanted and self._top_level():
            via = tuple(sorted(q for q in bases if not _external(q)))
            self._class = (node, dataset_kind(node, self.ctx), via, ClassCalls(), is_hf_trainer(bases))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        if self._class is None or self._class[0] is not node:
            return
        _, kind, via, calls, hf_trainer = self._class
        self._class = None
        # A Dataset that draws per sample, or a trainer whose methods step a model in train mode
        # (read from the calls the walk saw in it: regenerating a class's code cost more than the walk).
        random = (kind is not None and calls.draws) or calls.trains
        symbol = Symbol(dataset=kind, dataset_via=via, random=random, hf_trainer=hf_trainer)
        self.classes.setdefault(node.name.value, symbol)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        if self._class is not None:
            self._class[3].note(node)
        called = ctx.imported_callees(func)
        linted = tuple(q for q in called if not _external(q))  # names a linted module may define
        if linted and self.calls_wanted and ctx.runs("rank"):
            arguments = ctx.rank.deps_of_all(a.value for a in node.args)
            self.linted_sites.append((linted, ctx.rank.site(node, arguments)))
        if called and self.consulted_wanted:
            self.called |= called  # a helper's print silencing or dataset matters wherever it is called
            # Without the rank analysis no rule judges collectives.
            if linted and ctx.runs("rank"):
                inner, outer = ctx.rank.guards()
                self.helper_calls.append((linted, inner, outer, ctx.enclosing_function()))
                if len(ctx.stack) > 1 and isinstance(ctx.stack[-2], cst.Expr):
                    self.statement_calls[ctx.enclosing_function()].update(linted)
        if self.consulted_wanted and ctx.runs("rank") and writes_a_path(node, ctx):
            self.writes[ctx.enclosing_function()].append(ctx.rank.guards()[0])
        if not self.symbols_wanted:
            return
        if sets_print(node, ctx):
            self._replaces_print()
        function = ctx.enclosing_function()
        if function not in self.module_functions:
            return
        if isinstance(func, cst.Attribute) and func.attr.value in LOGGING_CONFIGURATION and ctx.runs("rank"):
            arguments = ctx.rank.deps_of_all(a.value for a in node.args)
            self.logging_setups[function].append((ctx.rank.guards()[0], arguments))
        if draws_noise(node, ctx):
            self.noise.add(function)
        elif sets_train_mode(node):
            self.train_modes.add(function)
        elif is_step(node):
            self.steps.add(function)
        shown = collective_name(node, ctx)
        if shown is not None:
            self._perform(node, function, shown, direct=(shown,))
            return
        local = [v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef)] if isinstance(func, cst.Name) else []
        if not (local or linted):
            return
        condition = self._condition()
        self.calls[function].extend((callee, condition) for callee in local)
        if local:
            self._perform(node, function, f"`{ctx.module.code_for_node(func)}()`", targets=tuple(local))
        for qualname in linted:
            self.imported_calls[function].append((qualname, node, condition))

    def _perform(self, node: cst.Call, function: cst.FunctionDef, shown: str, **what) -> None:
        lazy = in_lazy_initialization(self.ctx.stack)
        self.performers.append(Performer(node, function, self.ctx.rank.guards()[0], shown, lazy=lazy, **what))

    def _condition(self) -> tuple | None:
        """The guards of the call inside its function; None when it only runs
        to initialize a cached value (``if _GROUP is None:``), not every call."""
        return None if in_lazy_initialization(self.ctx.stack) else self.ctx.rank.guards()[0]

    def _every_call(self, condition: tuple | None) -> bool:
        """Whether a call with this condition runs whenever its function does,
        on every rank that calls it (final after the walk)."""
        return condition is not None and not self.ctx.rank.selects_ranks(condition)

    def leave_Assign(self, node: cst.Assign) -> None:
        if self.symbols_wanted and any(replaces_print(t.target, self.ctx) for t in node.targets):
            self._replaces_print()

    def _replaces_print(self) -> None:
        """`builtins.print = rank0_print` here: in a module function, calling
        it silences `print`; at the top level (outside every function and
        class), importing the module does, so calling any of its names does too."""
        function = self.ctx.enclosing_function()
        if function in self.module_functions:
            self.silencers.add(function)
        elif function is None and self._top_level() and not in_main_block(self.ctx.stack):
            self.silences_on_import = True

    # ------------------------------------------------------------ after the walk

    def consulted(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """The imported names whose rank dependence the lint asked about, those
        it calls or derives classes from, the facts quieting output it asked
        of them, and those of its calls that a collective would make a DDP001
        finding (see `ModuleSummary.consulted`)."""
        consulted = self.ctx.rank.consulted if self.ctx.runs("rank") else ()  # no rank analysis: nothing asked
        rank = tuple(sorted(q for q in consulted if not _external(q)))
        quieted = tuple(sorted(self.ctx.outputs.asked)) if self.ctx.runs("outputs") else ()
        return rank, tuple(sorted(q for q in self.called if not _external(q))), quieted, self._collective_relevant()

    def per_rank_calls(self) -> tuple[tuple[str, str, str], ...]:
        """Imported names the module calls on many ranks (`Runs.many`), in a
        module that runs per rank: their callee runs there too. Each as
        (name, entry, runs), who makes the call as a function of who calls
        the module's entries (`ExecutionModel.runs_by_entry`): the project
        follows chains of calls through modules without linting them again.
        A call with a rank-dependent argument is left out (the callee may
        write `ckpt_{rank}.pt`, seed with the rank: its lint cannot see the
        argument)."""
        ctx = self.ctx
        if not (self.linted_sites and ctx.runs("rank") and ctx.in_distributed_context):
            return ()
        rank = ctx.rank
        found: dict[tuple[str, str], Runs] = {}
        for names, site in self.linted_sites:
            if rank.is_rank_dependent(site.deps) or rank.staggered(site.guards):
                continue  # (`with torch_distributed_zero_first(rank):` orders what the callee does)
            for entry, runs in rank.execution.runs_by_entry(site):
                for name in names:
                    found[(name, entry)] = larger(found.get((name, entry), runs), runs)
        own = {name: runs for (name, entry), runs in found.items() if not entry}
        return tuple(sorted(
            (name, entry, runs.name) for (name, entry), runs in found.items()
            if not entry or name not in own or larger(own[name], runs) is not own[name]
        ))  # fmt: skip

    def _collective_relevant(self) -> tuple[str, ...]:
        """Imported names called under a rank guard, or in a function that a
        call under a rank guard reaches: only there does a collective inside
        them hang some ranks (elsewhere every rank makes the call, and the
        module's own summary passes the collective on to its importers); and
        those called as a statement of their own in a function that writes a
        path under a rank guard, where a collective is the barrier between the
        write and the other ranks' read (DDP021)."""
        if not self.helper_calls:
            return ()
        guarded = self.ctx.rank.any_rank_guard
        reached = self._reached_under_rank_guards(guarded)
        names = {
            q for linted, inner, outer, function in self.helper_calls
            if function in reached or guarded(inner) or guarded(outer) for q in linted
        }  # fmt: skip
        selects = self.ctx.rank.selects_ranks
        for function, called in self.statement_calls.items():
            if any(selects(guards) for guards in self.writes.get(function, ())):
                names |= called
        return tuple(sorted(names))

    def _reached_under_rank_guards(self, guarded: Callable[[tuple], bool]) -> set[cst.FunctionDef]:
        """Module functions that a call (or reference) under a rank guard
        reaches, directly or through the functions it calls."""
        rank = self.ctx.rank
        inside: dict[cst.FunctionDef | None, list] = defaultdict(list)
        todo: list[cst.FunctionDef] = []
        for reference in rank.references:
            inside[reference.function].append(reference)
            if guarded(reference.guards) or reference.bound is not None:  # (`on_main(report)`: an imported helper's)
                todo.extend(rank.targets_of(reference))
        reached: set[cst.FunctionDef] = set()
        while todo:
            function = todo.pop()
            if function not in reached:
                reached.add(function)
                for reference in inside.get(function, ()):
                    todo.extend(rank.targets_of(reference))
        return reached

    def entries(self) -> tuple[str, ...]:
        """The top-level functions judged entry points by their own body
        (`ModuleSummary.entries`), whether or not another module calls them."""
        return tuple(sorted(f.name.value for f in self.ctx.rank.execution.body_entries(elsewhere=False)))

    def symbols(self, lines: Mapping[str, int]) -> dict[str, Symbol]:
        """The module's top-level symbols with their facts.

        A collective (or a call of a collective helper) under a rank test of
        the function itself is judged by DDP001 where it is; whether a call
        performs it depends on the arguments, so it does not make the
        function a collective helper. Silencing ``print`` counts anywhere.
        """
        solved = self._chains()
        chains = solved.chains if solved is not None else {}
        switches = solved.switches if solved is not None else {}
        rank = self.ctx.rank
        code = functools.cache(self.ctx.module.code_for_node)  # a call reached from many functions is shown once
        symbols: dict[str, Symbol] = {}
        for name, (deps, seen) in rank.module_values.items():
            via = tuple(sorted(q for q in seen if not _external(q)))
            symbols[name] = Symbol(rank=rank.is_rank_dependent(deps), rank_via=via)
        for name, function in [*self.top_functions.items(), *self.methods.items()]:
            reach = self._reach(function, all_calls=True)
            collective_reach = self._reach(function, all_calls=False)
            local_rank, rank_via = rank.function_imports(function)
            collective_via = {
                (q, f"`{code(call.func)}()`", literal_arguments(call))
                for g in collective_reach
                for q, call, condition in self.imported_calls.get(g, ())
                if self._every_call(condition)
            }
            switch = switches.get(function)
            symbols[name] = Symbol(
                line=lines.get(name, 0),
                rank=local_rank,
                rank_via=tuple(sorted(q for q in rank_via if not _external(q))),
                collective=chains.get(function, ()),
                collective_via=tuple(sorted(collective_via, key=repr)),
                switch=None if switch is None else export_switch(function, *switch),
                silences_print=self.silences_on_import or any(g in self.silencers for g in reach),
                # Per-rank randomness each call brings: noise drawn, or a model stepped in train mode.
                random=bool(reach & self.noise) or bool(reach & self.train_modes and reach & self.steps),
                silences_via=tuple(sorted({q for g in reach for q, _, _ in self.imported_calls.get(g, ())})),
                silences_logging=any(self._configures_logging_per_rank(g) for g in reach),
                picks=rank.return_picks(function),
                # What it runs a function handed to it on (methods take `self` first: left out).
                handed=rank.execution.handed_runs(function) if name in self.top_functions else (),
            )
        for name, symbol in self.classes.items():
            # Instantiating a class of a module that silences `print` on import: it was imported.
            symbols[name] = dataclasses.replace(symbol, line=lines.get(name, 0), silences_print=self.silences_on_import)
        return symbols

    def _configures_logging_per_rank(self, function: cst.FunctionDef) -> bool:
        """A handler added (a level set) on some ranks only, or a level
        that depends on the rank (dinov2's and Detectron2's `setup_logging`:
        stdout on the main process only, a `.rankN` file for the others)."""
        rank = self.ctx.rank
        return any(
            rank.selects_ranks(guards) or rank.is_rank_dependent(arguments)  # type: ignore[arg-type]
            for guards, arguments in self.logging_setups.get(function, ())
        )

    def _callees(self, function: cst.FunctionDef, all_calls: bool) -> list[cst.FunctionDef]:
        return [c for c, condition in self.calls.get(function, ()) if all_calls or self._every_call(condition)]

    def _reach(self, function: cst.FunctionDef, all_calls: bool) -> set[cst.FunctionDef]:
        """`function` and the module functions it calls, transitively (with
        `all_calls` False: only the calls it makes every time it runs)."""
        seen: set[cst.FunctionDef] = set()
        todo = [function]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(self._callees(current, all_calls))
        return seen

    def _chains(self) -> CollectiveChains | None:
        """Module functions that perform a collective on every call, with the
        chain of calls to it (a helper whose rank branches all perform it
        counts) and the parameters that switch them off."""
        if not self.performers:
            return None
        rank = self.ctx.rank
        return CollectiveChains(self.performers, rank, rank.graph.bound)
