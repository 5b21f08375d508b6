"""Who runs a line: the execution model every per-rank rule asks.

For a recorded `Site`, `ExecutionModel.runs(site)` says which processes of
a distributed job execute it, once the walk is over:

* the launcher parent only (`Runs.LAUNCHER`): code of a function that starts
  the workers (``mp.spawn(main_worker, ...)``), what only it calls, and the
  ``if __name__ == "__main__":`` block of such a module;
* a one-process run only (`Runs.SINGLE`: ``if not dist.is_initialized():``);
* a set of ranks, from the guards around the site and around the calls of
  its function: every rank, every rank but one (the ``else`` of
  ``if rank == 0:``), one per node (``if local_rank == 0:``), one rank, or
  some data-dependent set;
* `Runs.UNKNOWN` when nothing in the module runs the function: its callers
  are elsewhere. A function whose own code shows that it runs on every rank
  (it joins the process group, builds an `Accelerator`, wraps a model) is an
  entry point even so, and so is a hook that Lightning calls in every process
  (`LIGHTNING_EVERY_PROCESS_HOOKS` of a `LightningModule`/`LightningDataModule`).
  In a distributed module, so is a module-level function whose body tests
  the rank for one rank (``if rank == 0:``, ``if not is_main_process():``)
  or enters a collective under no rank guard (``dist.barrier()``): more than
  one rank runs it (`body_entries`), unless its name says it is a one-rank
  helper (``save_on_master``), it is a test, or another module calls it
  (a whole-project run: `called_elsewhere`); callers in the module always
  win, since an entry point has none.

`repeated(site)` says whether the site runs again and again: inside a
training loop (one that takes optimisation steps), a loop around one (the
epoch loop), or in a function such a loop calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

from ddplint.knowledge import ONE_RANK_FUNCTION_WORDS
from ddplint.analysis.classes import base_names
from ddplint.analysis.guards import _LEVEL, SELECTING, Guard, GuardKind, RankView, Runs, Site, larger, smaller
from ddplint.analysis.rank_sets import RankSets
from ddplint.lazy import cst
from ddplint.solver import closure, solve

if TYPE_CHECKING:
    from ddplint.analysis.callgraph import CallGraph


#: Hooks that Lightning runs in every process of the job (`prepare_data`, not
#: among them, runs on one process per node; per-step hooks are left out).
LIGHTNING_EVERY_PROCESS_HOOKS = frozenset(
    {
        "setup", "configure_model", "configure_sharded_model", "train_dataloader", "val_dataloader",
        "test_dataloader", "predict_dataloader",
    }
)  # fmt: skip
_LIGHTNING_PACKAGES = ("lightning.", "pytorch_lightning.")
_LIGHTNING_CLASSES = frozenset({"LightningModule", "LightningDataModule"})

#: Rank sets a rank test picks that show more than one rank gets to the test.
_PICKS = frozenset({Runs.ONE, Runs.PER_NODE, Runs.ALL_BUT_ONE})


class ExecutionModel:
    """After the walk: who runs each function of the module, and each site."""

    def __init__(self, rank: RankView, graph: CallGraph) -> None:
        self.rank = rank
        self.graph = graph
        self.sets = RankSets(rank)
        self._workers: dict[cst.FunctionDef, Runs] | None = None
        self._external_workers: dict[cst.FunctionDef, Runs] | None = None
        self._parent: set | None = None
        self._repeated: set | None = None
        self._training: set | None = None
        #: Functions whose runners some question found unknown (their callers
        #: are elsewhere): where facts from the callers' modules could matter.
        self.asked_unknown: set[cst.FunctionDef] = set()
        self._body_entries: set[cst.FunctionDef] | None = None
        self._local: dict[cst.FunctionDef, Runs] | None = None
        self._entry_names: dict[cst.FunctionDef, str] | None = None
        self._bounds: dict[cst.FunctionDef, dict[str, Runs]] | None = None

    # ------------------------------------------------------------ answers

    def runs(self, site: Site) -> Runs:
        """Who executes `site` (final after the walk)."""
        special = self._special(site)
        if special is not None:
            return special
        base = self.function_runs(site.function)
        if base not in _LEVEL:
            return base
        return smaller(base, self.guards_runs(site.guards))

    def _special(self, site: Site) -> Runs | None:
        """Who executes `site` when the guards around it, not its function's
        runners, decide: a one-process run, the launcher, a dead branch,
        module-level code of a module that is not per-rank code."""
        if site.single_process:
            return Runs.SINGLE
        if self._launcher_code(site.function, site.path, site.main_block):
            return Runs.LAUNCHER
        if self._dead(site.guards):
            return Runs.UNKNOWN
        if site.function is None and not self._module_level_per_rank():
            return Runs.UNKNOWN
        return None

    def runs_by_entry(self, site: Site) -> tuple[tuple[str, Runs], ...]:
        """Who executes `site` on many ranks (`Runs.many`) as a function of who
        calls the module's entries (`entry_names`) from other modules, with no
        question recorded: ``("", runs)`` where the module's own code decides
        (its entry points, its module-level code), ``(entry, runs)`` where a
        call of `entry` made by every rank would (by ``ALL_BUT_ONE``: the
        smaller of the two). The most ranks over all of them is `runs(site)`
        given those callers (widest paths: the smallest guard on each path,
        the largest over paths), so the project composes them across modules."""
        if self._special(site) is not None:
            return ()
        guards = self.guards_runs(site.guards)
        found = []
        base = Runs.ALL if site.function is None else self._local_workers().get(site.function)  # module level: all
        own = None if base is None else smaller(base, guards)
        if own is not None and own.many:
            found.append(("", own))
        for entry, bound in self.entry_bounds().get(site.function, {}).items():  # (none for module level)
            runs = smaller(bound, guards)
            if runs.many and (own is None or _LEVEL[runs] > _LEVEL[own]):
                found.append((entry, runs))
        return tuple(found)

    def _dead(self, guards: Iterable[Guard]) -> bool:
        """A branch no call of the function takes: `if safe_serialization:`
        ... `else: torch.save(...)` where every call passes `True`."""
        for guard in guards:
            if guard.kind is not GuardKind.BRANCH or guard.branches != 2 or guard.exit is not None:
                continue  # (exits are not branches no call takes)
            test, negated = guard.test, False
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, negated = test.expression, True
            if not isinstance(test, cst.Name):
                continue
            params = [d[1] for d in guard.deps if isinstance(d, tuple) and d[0] == "param"]  # read during the walk
            if len(params) != 1 or params[0].name.value != test.value:
                continue
            constant = self.graph.constant_argument(params[0])
            if constant is None:
                continue
            truthy = (constant == "True") != negated
            if truthy != (guard.branch == 0):
                return True
        return False

    def _launcher_code(self, function: cst.FunctionDef | None, path: tuple, main_block: bool) -> bool:
        """Code on the path of a launch call; at module level only in the
        ``__main__`` block (a spawned worker imports the rest again)."""
        return (function is not None or main_block) and self.graph.in_launcher(function, path)

    def function_runs(self, function: cst.FunctionDef | None) -> Runs:
        """Who executes the body of `function` (None: module-level code)."""
        if function is None:
            return Runs.ALL
        found = self.workers().get(function)
        if found is not None:
            return found
        if function in self.parent():
            return Runs.LAUNCHER
        self.asked_unknown.add(function)
        return Runs.UNKNOWN

    def guards_runs(self, guards: Iterable[Guard]) -> Runs:
        """The ranks that get past all of `guards`."""
        result = Runs.ALL
        for guard in guards:
            result = smaller(result, self._guard_runs(guard))
        return result

    def reference_runs(self, reference) -> Runs:
        """The most ranks that reach a reference's targets through it, given
        that its function runs: its guards, and what an imported helper does
        with a function handed to it (`Reference.bound`)."""
        runs = self.guards_runs(reference.guards)
        return runs if reference.bound is None else smaller(runs, reference.bound)

    def handed_runs(self, function: cst.FunctionDef) -> tuple[tuple[int | str, str], ...]:
        """For each parameter `function` only calls (``work()`` under ``if
        rank == 0:``), by position and by name, the most ranks those calls run
        on when `function` runs on every rank, where that is fewer (`Fact.handed`)."""
        graph = self.graph
        params = function.params
        first = len(params.posonly_params)
        slots = [
            *(((i,), p) for i, p in enumerate(params.posonly_params)),
            *(((i, p.name.value), p) for i, p in enumerate(params.params, start=first)),
            *(((p.name.value,), p) for p in params.kwonly_params),
        ]
        found: list[tuple[int | str, str]] = []
        for keys, param in slots:
            if not graph.only_called(function, param):
                continue
            calls = graph.parameter_calls[param]
            if any(call.single or self._dead(call.guards) for call in calls):
                continue
            runs = Runs.ONE
            for call in calls:
                runs = larger(runs, self.guards_runs(call.guards))
            if runs is not Runs.ALL:
                found.extend((key, runs.name) for key in keys)
        return tuple(found)

    def _guard_runs(self, guard: Guard) -> Runs:
        if guard.kind not in SELECTING or guard.nested or not self.rank.is_rank_dependent(guard.deps):
            return Runs.ALL  # a nested exit: the ranks it sends away are a data-dependent few
        if guard.kind is GuardKind.DECORATOR:
            return Runs.PER_NODE if "local" in self.rank.ctx.module.code_for_node(guard.test) else Runs.ONE
        if guard.shape is None:
            return Runs.SOME  # a `while` on the rank, an elif chain
        if guard.kind is GuardKind.SHORT_CIRCUIT:
            owner = guard.owner
            return self.sets.evaluate(guard.shape, isinstance(owner.operator, cst.And))  # type: ignore[attr-defined]
        if guard.exit is not None:
            return self.sets.evaluate(guard.shape, False)
        return self.sets.evaluate(guard.shape, guard.branch == 0)

    def repeated(self, site: Site) -> bool:
        """Whether the site runs once per step or epoch (final after the walk)."""
        if self._in_training(site.loops):
            return True
        return site.function is not None and site.function in self._repeated_functions()

    @property
    def is_launcher_module(self) -> bool:
        return any(r.launch for r in self.graph.references)

    def launched_workers(self) -> set[cst.FunctionDef]:
        """The functions handed to a launcher (`mp.spawn(main_worker, ...)`)."""
        return {t for r in self.graph.references if r.launch for t in r.targets}

    def launched_parameters(self) -> set[cst.Param]:
        """First parameters of the workers an indexed launcher starts: the process index."""
        found = set()
        for reference in self.graph.references:
            if reference.indexed:
                for target in reference.targets:
                    positional = (*target.params.posonly_params, *target.params.params)
                    if positional:
                        found.add(positional[0])
        return found

    # ------------------------------------------------------------ reach

    def workers(self) -> dict[cst.FunctionDef, Runs]:
        """Functions that ranks run, with the ranks (a fixed point over the calls)."""
        if self._workers is None:
            self._workers = self._solve_workers()
        return self._workers

    def _local_workers(self) -> dict[cst.FunctionDef, Runs]:
        """`workers` as if no other module called the module's functions."""
        if self._local is None:
            self._local = self._solve_workers(elsewhere=False) if self.rank.facts.callers else self.workers()
        return self._local

    def _solve_workers(self, local: bool = True, elsewhere: bool = True) -> dict[cst.FunctionDef, Runs]:
        """`workers`; with `local` False, only what the callers in other
        modules reach; with `elsewhere` False, without those callers."""
        graph = self.graph
        runs: dict[cst.FunctionDef, Runs] = {f: Runs.ALL for f in self._entry_points()} if local else {}
        for function, called in self._called_from_elsewhere() if elsewhere else ():
            runs[function] = larger(runs.get(function, called), called)
        # Each function: the most ranks any call of it reaches (a caller's ranks,
        # narrowed by the guards around the call and around the definition).
        calls: dict[cst.FunctionDef, list] = {}
        readers: dict = {}
        for reference in graph.references:
            guards = self.reference_runs(reference)
            for target in graph.targets_of(reference):
                here = guards
                if target in graph.defined_under:  # `if RANK == 0: def report(...)`: rank 0's version
                    here = smaller(here, self.guards_runs(graph.defined_under[target]))
                calls.setdefault(target, []).append((reference, here))
                readers.setdefault(reference.function, []).append(target)

        def reached(target: cst.FunctionDef, known: Mapping) -> Runs | None:
            found = known.get(target)
            for reference, guards in calls[target]:
                caller = self._caller_runs(reference, known)
                if caller is not None:
                    here = smaller(caller, guards)
                    found = here if found is None else larger(found, here)
            return found

        return solve(calls, reached, start=runs, readers=readers, grows=lambda old, new: _LEVEL[new] > _LEVEL[old])

    def _module_level_per_rank(self) -> bool:
        """Whether the module's own code shows it runs per rank: a module that
        is distributed code only because other modules call its functions per
        rank (a helper library) has its module-level code judged by no one."""
        ctx = self.rank.ctx
        facts = ctx.facts
        # (a module that only imports a rank helper of any name is a helper library too:
        # its `__main__` block is a one-process tool)
        return not (facts.callers or facts.rank_helper) or getattr(ctx, "distributed_by_text", True)

    def from_elsewhere(self, function: cst.FunctionDef | None) -> bool:
        """Whether other modules call `function` per rank, directly or through
        the module's functions they call (whole-project facts): the program
        around it is theirs."""
        if function is None:
            return False
        if self.rank.facts.callers:
            if self._external_workers is None:
                self._external_workers = self._solve_workers(local=False)
            if function in self._external_workers:
                return True
        self.asked_unknown.add(function)  # callers elsewhere would change the answer
        return False

    def _called_from_elsewhere(self) -> list[tuple[cst.FunctionDef, Runs]]:
        """The caller -> callee direction across modules: top-level functions
        and methods of top-level classes (``Class.method``) that other modules
        call on many ranks (whole-project facts), with who runs them there."""
        callers = self.rank.facts.callers
        if not callers:
            return []
        return [(function, Runs[callers[name]]) for function, name in self.entry_names().items() if name in callers]

    def entry_names(self) -> dict[cst.FunctionDef, str]:
        """The functions other modules can call, by the name they call them:
        top-level functions, and the methods of top-level classes (through
        an instance) as ``Class.method``."""
        if self._entry_names is None:
            body = self.rank.ctx.module.body
            top = self.top_level_functions()
            names: dict[cst.FunctionDef, str] = {}
            for functions in self.graph.functions.values():
                for function in functions:
                    cls = self.graph.class_of(function)
                    if cls is None and function in top:
                        names[function] = function.name.value
                    elif cls is not None and cls in body and function in cls.body.body:
                        names[function] = f"{cls.name.value}.{function.name.value}"
            self._entry_names = names
        return self._entry_names

    def entry_bounds(self) -> dict[cst.FunctionDef, dict[str, Runs]]:
        """For each function, the entries (`entry_names`) whose calls by every
        rank would make it run on many ranks, with the most ranks such a call
        reaches it on (the guards on the way narrow it)."""
        if self._bounds is not None:
            return self._bounds
        graph = self.graph
        edges: dict[cst.FunctionDef, list[tuple[cst.FunctionDef, Runs]]] = {}
        for reference in graph.references:
            caller = reference.function
            if caller is None or reference.launch or reference.single:
                continue  # module-level calls and launches run whoever calls the entries; one-process runs never many
            if self._launcher_code(caller, reference.path, reference.main_block):
                continue
            guards = self.reference_runs(reference)
            for target in graph.targets_of(reference):
                here = guards
                if target in graph.defined_under:
                    here = smaller(here, self.guards_runs(graph.defined_under[target]))
                if here.many:
                    edges.setdefault(caller, []).append((target, here))
        bounds: dict[cst.FunctionDef, dict[str, Runs]] = {f: {name: Runs.ALL} for f, name in self.entry_names().items()}
        todo = list(bounds)
        while todo:
            caller = todo.pop()
            reached = bounds[caller]
            for target, here in edges.get(caller, ()):
                known = bounds.setdefault(target, {})
                grew = False
                for entry, bound in reached.items():
                    runs = smaller(bound, here)
                    if runs.many and (entry not in known or _LEVEL[runs] > _LEVEL[known[entry]]):
                        known[entry] = runs
                        grew = True
                if grew:
                    todo.append(target)
        self._bounds = bounds
        return bounds

    def unknown_top_level(self) -> tuple[str, ...]:
        """The entries (`entry_names`) whose callers in other modules would
        change an answer given: those that reach, through the module's calls,
        a function whose runners a question found unknown (`asked_unknown`)."""
        names = self.entry_names()
        reaching = closure(self.asked_unknown, _calls(self.graph))
        return tuple(sorted({names[f] for f in reaching if f in names}))

    def top_level_functions(self) -> set[cst.FunctionDef]:
        """The module's top-level functions (those other modules import)."""
        body = self.rank.ctx.module.body
        found: set[cst.FunctionDef] = set()
        for statement in body:
            if isinstance(statement, cst.FunctionDef):
                found.add(statement)
            elif isinstance(statement, (cst.If, cst.Try)):  # `if TYPE_CHECKING:`/`try:` definitions
                found.update(s for s in statement.body.body if isinstance(s, cst.FunctionDef))
        return found

    def _caller_runs(self, reference, runs: dict) -> Runs | None:
        if reference.launch:
            return Runs.ALL  # the workers: one per rank, whoever launched them
        if reference.single:
            return None  # only a one-process run makes this call
        if self._launcher_code(reference.function, reference.path, reference.main_block):
            return None  # the launcher's own calls
        if reference.function is None:
            return Runs.ALL if self._module_level_per_rank() else None
        return runs.get(reference.function)

    def _entry_points(self) -> list[cst.FunctionDef]:
        """Functions nobody in the module calls whose own code runs per rank,
        or that call such code (`main()` calling a `setup()` that joins the group)."""
        graph = self.graph
        called = {t for r in graph.references for t in graph.targets_of(r)}
        evidence = closure(graph.evidence, _calls(graph))
        entries = []
        body = self.body_entries()
        for functions in graph.functions.values():
            for function in functions:
                if function in called:
                    continue
                owner = graph.class_of(function)
                if function in evidence or function in body or (owner is not None and owner in evidence):
                    entries.append(function)
                elif owner is not None and function.name.value in LIGHTNING_EVERY_PROCESS_HOOKS:
                    if self._lightning_class(owner):
                        entries.append(function)
        return entries

    def body_entries(self, elsewhere: bool = True) -> set[cst.FunctionDef]:
        """Module-level functions whose own body shows that more than one rank
        runs them: a rank test that picks one rank (or all but one), or a
        collective under no rank guard; and the module-level functions that
        call them. Only in a distributed module, and not a function named as
        a one-rank helper (``save_on_master``), a test, or one another module
        of the project calls (its callers decide; not asked with
        `elsewhere` False). Only those the module does not call."""
        if self._body_entries is None:
            self._body_entries = self._body_candidates()
        if not elsewhere:
            return self._body_entries
        called = self.rank.facts.called_elsewhere
        return {f for f in self._body_entries if f.name.value not in called} if called else self._body_entries

    def _body_candidates(self) -> set[cst.FunctionDef]:
        graph, rank = self.graph, self.rank
        found: set[cst.FunctionDef] = set()
        if (graph.collectives or graph.rank_tests) and rank.ctx.in_distributed_context:
            found = {f for f, guards in graph.collectives if not rank.selects_ranks(guards)}
            for function, shape in graph.rank_tests:
                if function not in found and (
                    self.sets.evaluate(shape, True) in _PICKS or self.sets.evaluate(shape, False) in _PICKS
                ):
                    found.add(function)
            # A function defined under a rank guard (`if RANK == 0: def report(...)`)
            # is one rank's version: its body shows nothing of who calls it.
            versions = {f for f, guards in graph.defined_under.items() if rank.any_rank_guard(guards)}
            found -= versions
            if found:
                found = closure(found, ((f, t) for f, t in _calls(graph) if f in graph.top_level and f not in versions))
            called = {t for r in graph.references for t in graph.targets_of(r)}
            found = {f for f in found if f not in called and not _one_rank_helper(f.name.value)}
        return found

    def _lightning_class(self, owner: cst.ClassDef) -> bool:
        """Whether a module class derives from Lightning's `LightningModule`/`LightningDataModule`."""
        return any(
            name.startswith(_LIGHTNING_PACKAGES) and name.rsplit(".", 1)[-1] in _LIGHTNING_CLASSES
            for name in base_names(owner, self.rank.ctx)
        )

    def parent(self) -> set:
        """Functions only the launcher runs (before and after it starts the workers)."""
        if self._parent is not None:
            return self._parent
        graph = self.graph
        launched = (
            t for r in graph.references if not r.launch and self._launcher_code(r.function, r.path, r.main_block)
            for t in graph.targets_of(r)
        )  # fmt: skip
        self._parent = closure(launched, _called_by(graph))
        return self._parent

    # ------------------------------------------------------------ repetition

    def _in_training(self, loops: Iterable[cst.CSTNode]) -> bool:
        training = self._training_loops()
        return any(loop in training for loop in loops)

    def _training_loops(self) -> set:
        """Loops that take a step, loops around them, and loops calling a function that trains (read once)."""
        if self._training is not None:
            return self._training
        graph = self.graph
        trains = closure(graph.trains, _calls(graph))
        loops = set(graph.training_loops)
        for reference in graph.references:
            if not reference.launch and any(t in trains for t in graph.targets_of(reference)):
                loops.update(reference.loops)
        self._training = loops
        return loops

    def _repeated_functions(self) -> set:
        if self._repeated is not None:
            return self._repeated
        graph = self.graph
        found: set = set()
        for reference in graph.references:
            if not reference.launch and self._in_training(reference.loops):
                found.update(graph.targets_of(reference))
        self._repeated = closure(found, _called_by(graph))
        return self._repeated


def _calls(graph) -> list[tuple[cst.FunctionDef, tuple]]:
    """(caller, its callees) of each call in a function, launches left out:
    `closure` over them gives the callers, transitively, of a set."""
    return [(r.function, tuple(graph.targets_of(r))) for r in graph.references if r.function is not None and not r.launch]


def _called_by(graph) -> list[tuple[cst.FunctionDef, tuple]]:
    """(callee, (its caller,)) of each call in a function, launches left out:
    `closure` over them gives the callees, transitively, of a set."""
    return [
        (target, (r.function,)) for r in graph.references if r.function is not None and not r.launch
        for target in graph.targets_of(r)
    ]  # fmt: skip


def _one_rank_helper(name: str) -> bool:
    """A function named as a one-rank helper (``save_on_master``) or a test (``test_save``)."""
    lowered = name.lower()
    return lowered.startswith("test") or any(word in lowered for word in ONE_RANK_FUNCTION_WORDS)
