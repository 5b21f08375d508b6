"""The module's call graph: who calls which of its functions, from where.

Recorded in the engine's one walk, for the rank analysis and the execution
model (`execution.py`). A *reference* is a call of a module function, a
method called on ``self``/``cls`` or on an object of a module class built in
the module (``meter = ProgressMeter(...); meter.display(i)``), or a function
handed to another call (``mp.spawn(main_worker, ...)``,
``register_save_state_pre_hook(save_hook)``). Each keeps the guards around
it, the function it is in, the loops around it and the rank dependence of
its arguments, so that who runs a function can be derived from who runs
its callers. A function handed to a module function that only calls it
(``run_on_main(export)`` with ``def run_on_main(work): if rank == 0:
work()``) runs where those calls of the parameter run, not where it is
handed over.

Launchers are data: `LAUNCH_FUNCTIONS` start one worker process per rank
and return in the parent (``torch.multiprocessing.spawn``); with
`INDEXED_LAUNCHES` the worker's first parameter is its process index, a
local rank.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Counter, Sequence

from ddplint.knowledge import ONE_PROCESS_KEYWORDS
from ddplint.analysis.calls import bind_to, bound_values, truth
from ddplint.analysis.collectives import COLLECTIVE_FAMILIES, collective_name
from ddplint.analysis.guards import Runs
from ddplint.analysis.loops import is_step
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import name_reads
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.guards import Deps, Guard, RankView
    from ddplint.analysis.guards import TestShape

#: Calls that start worker processes, one per rank, and wait in the parent.
INDEXED_LAUNCHES = frozenset(
    {
        "torch.multiprocessing.spawn", "torch.multiprocessing.spawn.spawn",
        "torch.multiprocessing.start_processes", "torch.multiprocessing.spawn.start_processes",
        "torch_xla.distributed.xla_multiprocessing.spawn",
    }
)  # fmt: skip
#: Launchers whose worker does not receive its index (detectron2's `launch(main, num_gpus, ...)`).
LAUNCH_FUNCTIONS = INDEXED_LAUNCHES | frozenset({"detectron2.engine.launch", "detectron2.engine.launch.launch"})

#: Calls that show the code around them runs as one process per rank: it
#: joins the process group, builds a per-rank framework object or wraps a model.
PER_RANK_EVIDENCE = frozenset(
    {
        "init_process_group", "init_distributed", "init_distributed_mode", "init_dist", "setup_for_distributed",
        "Accelerator", "PartialState", "DistributedDataParallel", "FullyShardedDataParallel", "fully_shard",
        "launch_from_torch", "init_device_mesh", "DDP", "FSDP", "Fabric",
    }
)  # fmt: skip
_DEEPSPEED_INITIALIZE = frozenset({"deepspeed.initialize"})

#: Callbacks registered with a framework run where the framework's trigger
#: runs: accelerate calls its save hooks from `save_state`.
HOOK_TRIGGERS = {
    "register_save_state_pre_hook": "save_state",
    "register_load_state_pre_hook": "load_state",
}
_TRIGGERS = frozenset(HOOK_TRIGGERS.values())
_DEFINITIONS = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
#: Last names of calls whose qualified names the graph needs (launchers, `deepspeed.initialize`).
_QUALIFIED_WHEN = frozenset({name.rsplit(".", 1)[1] for name in LAUNCH_FUNCTIONS} | {"initialize"})

_SELF = ("self", "cls")
#: Last names of calls that may be collectives (`collectives.collective_name` decides).
_COLLECTIVE_LASTS = frozenset(name for names, _ in COLLECTIVE_FAMILIES for name in names)


@dataclass(frozen=True, eq=False)
class Reference:
    """A call of (or a reference to) a function of the module, and its guards.

    `arguments` holds the rank dependencies of a call's arguments as
    (keyword or None, deps) in order, to tell what a parameter receives;
    `loops` the loops around the call within its function; `launch` whether
    the reference hands a worker to a launcher (``mp.spawn(worker)``).
    """

    targets: tuple[cst.FunctionDef, ...]
    method: str | None
    guards: tuple[Guard, ...]
    function: cst.FunctionDef | None
    arguments: tuple[tuple[str | None, Deps], ...] = ()
    loops: tuple[cst.CSTNode, ...] = ()
    launch: bool = False
    #: The launcher passes the process index as the first argument.
    indexed: bool = False
    #: At module level, inside ``if __name__ == "__main__":``.
    main_block: bool = False
    #: The ``if`` branches it is in, within its function (`branch_path`).
    path: tuple[tuple[int, int], ...] = ()
    #: Only a one-process run makes the call (`if not args.distributed:`).
    single: bool = False
    #: A framework call that runs the hooks registered for it (`accelerator.save_state`).
    trigger: str | None = None
    #: The argument expressions, as (keyword or None, node), for constant switches.
    values: tuple[tuple[str | None, cst.BaseExpression], ...] = ()
    #: (class, method name) pairs the call may run, resolved after the walk.
    members: tuple[tuple[cst.ClassDef, str], ...] = ()
    #: The functions are handed to a call of module functions, bound to these
    #: parameters (one per function called; none where a binding is not seen).
    handed_as: tuple[cst.Param, ...] = ()
    #: A call of its function's own parameter (``work()``): it runs what the
    #: function's callers hand it (resolved after the walk).
    param: cst.Param | None = None
    #: The most ranks the functions run on where an imported helper calls
    #: what it is handed (`Fact.handed`: ``on_main(export)`` runs it on one).
    bound: Runs | None = None


class CallGraph:
    """Walker part of the rank analysis: functions, methods and references."""

    def __init__(self, rank: RankView) -> None:
        self.rank = rank
        self.ctx = rank.ctx
        #: Module functions and methods by name (methods on `self` resolve by name).
        self.functions: dict[str, list[cst.FunctionDef]] = defaultdict(list)
        #: Methods of each class of the module, by name.
        self.methods: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = defaultdict(dict)
        self.owner: dict[cst.FunctionDef, cst.ClassDef] = {}
        self._walked: list[Reference] = []
        self._references: list[Reference] | None = None
        self._calls_of: dict[cst.FunctionDef, list[Reference]] | None = None
        #: Functions (and classes) whose own code shows they run once per rank.
        self.evidence: set[cst.CSTNode] = set()
        #: Loops that take an optimisation step, and functions that do.
        self.training_loops: set[cst.CSTNode] = set()
        self.trains: set[cst.FunctionDef] = set()
        #: Functions containing a launch call (None: module level), with the
        #: branch path of each launch call in them.
        self.launchers: dict[cst.FunctionDef | None, list[tuple[tuple[int, int], ...]]] = defaultdict(list)
        #: Parameters -> (function, position among the positional parameters; -1 keyword-only).
        self.parameters: dict[cst.Param, tuple[cst.FunctionDef, int]] = {}
        self._parameter_names: set[str] = set()
        #: Each parameter's calls in its own function (``work()``), outside lambdas.
        self.parameter_calls: dict[cst.Param, list[Reference]] = defaultdict(list)
        self._reads: dict[cst.FunctionDef, Counter[str]] = {}
        self._handed_to: dict[cst.Param, tuple[cst.FunctionDef, ...]] | None = None
        #: Hooks registered for each trigger (`register_save_state_pre_hook(save_hook)`).
        self.hooks: dict[str, list[cst.FunctionDef]] = defaultdict(list)
        #: Every name a `def` or `class` of the module binds (`prepare`).
        self.defined: frozenset[str] = frozenset()
        #: Functions defined at module level (not methods, not nested).
        self.top_level: set[cst.FunctionDef] = set()
        #: The guards around the definitions of those under an ``if`` (``if RANK == 0: def report(...)``).
        self.defined_under: dict[cst.FunctionDef, tuple[Guard, ...]] = {}
        #: Collectives in module-level functions, with their guards (rank
        #: dependence is final after the walk): one under no rank guard
        #: shows that every rank runs the function.
        self.collectives: list[tuple[cst.FunctionDef, tuple[Guard, ...]]] = []
        #: The tests of the ``if`` statements in module-level functions, read
        #: for rank sets (`RankView.visit_If`): a test that picks one rank
        #: shows that more than one runs the function.
        self.rank_tests: list[tuple[cst.FunctionDef, TestShape]] = []

    # ------------------------------------------------------------ walker hooks

    def prepare(self, module: cst.Module) -> None:
        """Read the names the module's `def`s and `class`es bind, anywhere, once
        (so `mp.spawn(worker)` above `def worker` resolves): from the text,
        which is faster than a walk and may only over-approximate."""
        self.defined = frozenset(_DEFINITIONS.findall(self.ctx.source))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions[node.name.value].append(node)
        if not any(isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for n in self.ctx.stack[:-1]):
            self.top_level.add(node)
            inner, outer = self.rank.guards()
            if inner or outer:
                self.defined_under[node] = (*inner, *outer)
        owner = _class_of(self.ctx.stack)
        if owner is not None:
            self.methods[owner].setdefault(node.name.value, node)
            self.owner[node] = owner
        positional = (*node.params.posonly_params, *node.params.params)
        for index, param in enumerate(positional):
            self.parameters[param] = (node, index)
        for param in node.params.kwonly_params:
            self.parameters[param] = (node, -1)  # passed by keyword only
        self._parameter_names.update(p.name.value for p in (*positional, *node.params.kwonly_params))

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        last = last_name(func)
        names = ctx.qualified_names(func) if last in _QUALIFIED_WHEN else frozenset()
        launch = bool(names & LAUNCH_FUNCTIONS)
        self._note_evidence(last, names, node)
        if is_step(node):
            self._note_step()
        if last in _COLLECTIVE_LASTS and self.top_level:
            self._note_collective(node)
        targets, members = self._targets(func)
        method = None
        if not targets and isinstance(func, cst.Attribute) and last_name(func.value) in _SELF:
            if func.attr.value in self.defined:  # a method of the module's classes, by name
                method = func.attr.value
        handed = self._handed(node) if node.args else []
        passed = [t for _, _, functions in handed for t in functions]
        param = self.called_parameter(func)
        if launch:
            self.launchers[ctx.enclosing_function()].append(branch_path(ctx.stack))
        attribute = func.attr.value if isinstance(func, cst.Attribute) else None
        if attribute in HOOK_TRIGGERS:
            self.hooks[HOOK_TRIGGERS[attribute]].extend(passed)  # they run where the trigger runs
            return
        trigger = attribute if attribute in _TRIGGERS else None
        if not (targets or members or method or passed or trigger or param):
            return
        function = ctx.enclosing_function()
        rank = self.rank
        stack = ctx.stack
        where = dict(
            guards=rank.guards()[0], function=function, loops=enclosing_loops(stack),
            main_block=function is None and in_main_block(stack), path=branch_path(stack),
            single=rank.single_process.here(stack),
        )  # fmt: skip
        if targets or members or method or param:
            arguments = tuple(
                (arg.keyword.value if arg.keyword else None, rank.deps(arg.value)) for arg in node.args if not arg.star
            )
            values = tuple((arg.keyword.value if arg.keyword else None, arg.value) for arg in node.args if not arg.star)
            reference = Reference(
                targets, method, arguments=arguments, values=values, members=members, param=param, **where
            )
            self._walked.append(reference)
            if param is not None:
                self.parameter_calls[param].append(reference)
        if passed:  # mp.spawn(train, ...), threading.Thread(target=worker), run_on_main(export)
            indexed = bool(names & INDEXED_LAUNCHES)
            bounds = {} if targets or members or launch else self._imported_bounds(func)
            for slot, arg, functions in handed:
                self._walked.append(Reference(
                    functions, None, launch=launch, indexed=indexed, handed_as=_bound_params(node, targets, arg),
                    bound=bounds.get(slot), **where,
                ))  # fmt: skip
        if trigger:
            self._walked.append(Reference((), None, trigger=trigger, **where))

    def in_launcher(self, function: cst.FunctionDef | None, path: tuple[tuple[int, int], ...]) -> bool:
        """Whether code at `path` in `function` runs in the launcher parent:
        the function starts workers, and the code is on the launch's path
        (before or after it, not in a branch that excludes it)."""
        return any(compatible(path, launch) for launch in self.launchers.get(function, ()))

    # ------------------------------------------------------------ resolution

    @property
    def references(self) -> list[Reference]:
        """Every call of (or reference to) a module function, in walk order;
        after the walk, a function handed to module functions that only call
        it is referenced where they call it (`_handed_over`)."""
        if not self.rank.final:
            return self._walked
        if self._references is None:
            self._references = self._handed_over()
        return self._references

    def _handed_over(self) -> list[Reference]:
        """The walked references, with each function handed to module
        functions that only call it referenced at those calls, under their
        guards; handed elsewhere too, or kept or passed on by one of them, it
        stays referenced where it is handed (it may run there)."""
        if not self.parameter_calls:
            return self._walked
        found: list[Reference] = []
        for reference in self._walked:
            if reference.param is not None:
                continue  # it runs what its function is handed: below
            moved = self._moved(reference) if reference.handed_as else None
            found.extend([reference] if moved is None else moved)
        return found

    def _moved(self, reference: Reference) -> list[Reference] | None:
        """The references of the functions `reference` hands over at the calls
        of the parameter they are bound to, in each callee; None where a callee
        does more with it than call it."""
        moved = []
        for param in reference.handed_as:
            if not self.only_called(self.parameters[param][0], param):
                return None
            moved += [dataclasses.replace(call, targets=reference.targets, param=None) for call in self.parameter_calls[param]]
        return moved

    def _handed(self, call: cst.Call) -> list[tuple[int | str, cst.Arg, tuple[cst.FunctionDef, ...]]]:
        """The module functions `call` hands over, by argument, with its slot
        (position among the positional ones, or keyword: how `Fact.handed` keys it)."""
        found = []
        position = 0
        for arg in call.args:
            if arg.star:
                position = -1  # `*args`: the positions after it are unknown
                continue
            functions = self._function_values(arg.value)
            if functions:
                found.append((arg.keyword.value if arg.keyword is not None else position, arg, functions))
            if arg.keyword is None and position >= 0:
                position += 1
        return found

    def _imported_bounds(self, func: cst.BaseExpression) -> dict[int | str, Runs]:
        """Argument slot -> the most ranks an imported helper runs what it is
        handed there on (`Fact.handed`), from the project's facts."""
        facts = self.ctx.facts
        if not facts.facts:
            return {}
        fact = facts.first(self.ctx.imported_callees(func))
        if fact is None or not fact.handed:
            return {}
        return {slot: Runs[runs] for slot, runs in fact.handed}

    def only_called(self, function: cst.FunctionDef, param: cst.Param) -> bool:
        """Whether `function` does nothing with `param` but call it (outside lambdas)."""
        calls = self.parameter_calls.get(param)
        if not calls:
            return False
        reads = self._reads.get(function)
        if reads is None:
            reads = self._reads[function] = name_reads(function.body)
        return reads[param.name.value] == len(calls)

    def handed_to(self, param: cst.Param) -> tuple[cst.FunctionDef, ...]:
        """The module functions the module's calls hand to `param`'s function
        as that parameter (final after the walk)."""
        if self._handed_to is None:
            found: dict[cst.Param, dict[cst.FunctionDef, None]] = defaultdict(dict)
            for reference in self._walked:
                for param in reference.handed_as:
                    found[param].update(dict.fromkeys(reference.targets))
            self._handed_to = {p: tuple(functions) for p, functions in found.items()}
        return self._handed_to.get(param, ())

    def called_parameter(self, func: cst.BaseExpression) -> cst.Param | None:
        """The parameter of the enclosing function that `func` calls (``work()``),
        if it does, and not in a lambda (which may run anywhere, later)."""
        if not (isinstance(func, cst.Name) and func.value in self._parameter_names):
            return None
        values = self.ctx.values_of(func)
        if len(values) != 1 or not isinstance(values[0], cst.Param):
            return None
        owner = self.parameters.get(values[0])
        if owner is None:
            return None
        for node in reversed(self.ctx.stack):
            if isinstance(node, cst.Lambda):
                return None
            if isinstance(node, cst.FunctionDef):
                return values[0] if node is owner[0] else None
        return None

    def _function_values(self, node: cst.BaseExpression) -> tuple[cst.FunctionDef, ...]:
        if isinstance(node, cst.Name) and node.value in self.defined:
            return tuple(v for v in self.ctx.values_of(node) if isinstance(v, cst.FunctionDef))
        return ()

    def _targets(self, func: cst.BaseExpression) -> tuple[tuple[cst.FunctionDef, ...], tuple]:
        """Module functions a call may run: a function by name; and (class,
        method) pairs, resolved after the walk (a class may be defined below
        its use): a class's ``__init__``, a method of an object built from a
        module class."""
        if isinstance(func, cst.Name):
            if func.value not in self.defined:
                return (), ()
            functions = tuple(v for v in self.ctx.values_of(func) if isinstance(v, cst.FunctionDef))
            classes = tuple((v, "__init__") for v in self.ctx.values_of(func) if isinstance(v, cst.ClassDef))
            return functions, classes
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in self.defined
            and not (isinstance(func.value, cst.Name) and func.value.value in _SELF)
        ):
            return (), tuple((cls, func.attr.value) for cls in self._classes_of(func.value))
        return (), ()

    def _classes_of(self, receiver: cst.BaseExpression) -> list[cst.ClassDef]:
        """The module classes an object (a name, or a constructor call) may be built from."""
        values = self.ctx.values_of(receiver) if isinstance(receiver, cst.Name) else (receiver,)
        classes = []
        for value in values:
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
                classes += [v for v in self.ctx.values_of(value.func) if isinstance(v, cst.ClassDef)]
        return classes

    def targets_of(self, reference: Reference) -> tuple[cst.FunctionDef, ...]:
        """The functions a reference may reach (methods on `self` resolve by name)."""
        if reference.method is not None:
            return tuple(self.functions.get(reference.method, ()))
        if reference.trigger is not None:
            return tuple(self.hooks.get(reference.trigger, ()))
        if reference.members:
            found = [self.methods.get(cls, {}).get(name) for cls, name in reference.members]
            return reference.targets + tuple(f for f in found if f is not None)
        return reference.targets

    def calls_to(self, function: cst.FunctionDef) -> list[Reference]:
        """The module's calls of `function` (launches left out), in walk order
        (after the walk, from an index built when first asked)."""
        if not self.rank.final:
            return [r for r in self._walked if not r.launch and function in self.targets_of(r)]
        if self._calls_of is None:
            calls_of: dict[cst.FunctionDef, list[Reference]] = {}
            for reference in self.references:
                if not reference.launch:
                    for target in dict.fromkeys(self.targets_of(reference)):
                        calls_of.setdefault(target, []).append(reference)
            self._calls_of = calls_of
        return self._calls_of.get(function, [])

    def class_of(self, function: cst.FunctionDef) -> cst.ClassDef | None:
        return self.owner.get(function)

    def bound(self, call: cst.Call, function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
        """Parameter name -> what this call hands `function` for it (the
        argument, positional or keyword, else the default): a method called on
        its receiver (``self.save(path, False)``) or a class built
        (``Cls(...)`` -> ``__init__``) fills ``self`` first."""
        positional = (*function.params.posonly_params, *function.params.params)
        bound_self = bool(positional) and positional[0].name.value in _SELF and (
            isinstance(call.func, cst.Attribute) or function.name.value == "__init__"
        )
        return bound_values(call, function, bound_self)

    def constant_truth(self, call: cst.Call, function: cst.FunctionDef, name: str) -> bool | None:
        """The truth of the literal this call hands `function`'s parameter
        `name` (``fetch("weights", False)``, or a default left standing), if known."""
        return truth(self.bound(call, function).get(name))

    def constant_argument(self, param: cst.Param) -> str | None:
        """`"True"`/`"False"`/`"None"` when every call of the parameter's
        function in the module passes that literal (or leaves that default):
        `save_progress(..., safe_serialization=True)` at every call site."""
        owner = self.parameters.get(param)
        if owner is None:
            return None
        function, index = owner
        calls = self.calls_to(function)
        if not calls:
            return None
        positional = (*function.params.posonly_params, *function.params.params)
        bound_self = bool(positional) and positional[0].name.value in _SELF
        found: set[str] = set()
        for call in calls:
            offset = 1 if bound_self else 0
            given = param.default
            for position, (keyword, value) in enumerate(call.values):
                if keyword == param.name.value or (keyword is None and index >= 0 and position + offset == index):
                    given = value
            if not (isinstance(given, cst.Name) and given.value in ("True", "False", "None")):
                return None
            found.add(given.value)
        return found.pop() if len(found) == 1 else None

    # ------------------------------------------------------------ evidence

    def _note_evidence(self, last: str | None, names: frozenset, node: cst.Call) -> None:
        """The innermost function whose code shows it runs per rank; a class
        too when it is its `__init__` (a trainer that joins the group). A
        `Fabric(devices=1)` (one node) is a one-process run: no evidence."""
        if last not in PER_RANK_EVIDENCE and not names & _DEEPSPEED_INITIALIZE:
            return
        if _one_process(node):
            return
        function = next((n for n in reversed(self.ctx.stack) if isinstance(n, cst.FunctionDef)), None)
        if function is None:
            return
        self.evidence.add(function)
        owner = self.owner.get(function)
        if owner is not None and function.name.value == "__init__":
            self.evidence.add(owner)

    def _note_collective(self, node: cst.Call) -> None:
        function = self.ctx.enclosing_function()
        if function is None or function not in self.top_level or self.rank.single_process.here(self.ctx.stack):
            return
        if collective_name(node, self.ctx) is not None:
            self.collectives.append((function, self.rank.guards()[0]))

    def _note_step(self) -> None:
        stack = self.ctx.stack
        for loop in enclosing_loops(stack):
            self.training_loops.add(loop)
        for node in reversed(stack):
            if isinstance(node, cst.FunctionDef):
                self.trains.add(node)
                break


def _bound_params(call: cst.Call, functions: tuple[cst.FunctionDef, ...], arg: cst.Arg) -> tuple[cst.Param, ...]:
    """The parameter `arg` of `call` binds in each of `functions`; none where
    one of them takes it unseen (``*args``, ``**kwargs``)."""
    found = []
    for function in functions:
        name = next((n for n, a in bind_to(call, function).explicit.items() if a is arg), None)
        params = function.params
        param = next((p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value == name), None)
        if param is None:
            return ()
        found.append(param)
    return tuple(found)


def enclosing_loops(stack: Sequence[cst.CSTNode]) -> tuple[cst.CSTNode, ...]:
    """The loops around the innermost node of `stack`, innermost first, within its function."""
    loops = []
    for node, child in zip(reversed(stack[:-1]), reversed(stack[1:])):
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            break
        if isinstance(node, (cst.For, cst.While)) and child is node.body:
            loops.append(node)
    return tuple(loops)


def branch_path(stack: Sequence[cst.CSTNode]) -> tuple[tuple[int, int], ...]:
    """The ``if`` branches around the innermost node, within its function:
    (id of the ``if``, 0 for its body or 1 for its ``else``/``elif``)."""
    path = []
    for node, child in zip(stack[:-1], stack[1:]):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            path = []
        elif isinstance(node, cst.If):
            if child is node.body:
                path.append((id(node), 0))
            elif child is node.orelse:
                path.append((id(node), 1))
    return tuple(path)


def compatible(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    """Whether two branch paths can both run (no ``if`` taken both ways)."""
    taken = dict(a)
    return all(taken.get(owner, branch) == branch for owner, branch in b)


def in_main_block(stack: Sequence[cst.CSTNode]) -> bool:
    """Whether the node is inside a module-level ``if __name__ == "__main__":``."""
    for index, node in enumerate(stack):
        if isinstance(node, cst.If) and index + 1 < len(stack) and stack[index + 1] is node.body:
            if is_main_test(node.test):
                return True
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return False
    return False


def is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"`."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = [s.value for s in sides if isinstance(s, cst.Name)]
    strings = [s.evaluated_value for s in sides if isinstance(s, cst.SimpleString)]
    return names == ["__name__"] and strings == ["__main__"]


def _class_of(stack: Sequence[cst.CSTNode]) -> cst.ClassDef | None:
    """The class whose body directly defines the function at the top of `stack`."""
    if len(stack) >= 3 and isinstance(stack[-3], cst.ClassDef) and stack[-2] is stack[-3].body:
        return stack[-3]
    return None


def _one_process(call: cst.Call) -> bool:
    """Whether a call names one device on one node (`Fabric(devices=1)`,
    `devices=[0]`): a one-process run whoever calls it."""
    given = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    devices = given.get(ONE_PROCESS_KEYWORDS[0])
    if devices is None or not _is_one(devices):
        return False
    nodes = given.get(ONE_PROCESS_KEYWORDS[1])
    return nodes is None or _is_one(nodes)


def _is_one(value: cst.BaseExpression) -> bool:
    if isinstance(value, (cst.List, cst.Tuple)):
        return len(value.elements) == 1 and not isinstance(value.elements[0], cst.StarredElement)
    return isinstance(value, cst.Integer) and value.evaluated_value == 1
