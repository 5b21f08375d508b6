"""Rank analysis: which values differ between ranks, and which code only some
ranks reach (SPEC §2 "rank-dependent" and "rank guard").

Computed once per file, in the engine's walk, for every rule that declares
``requires = {"rank"}``. Two parts:

*Rank dependence* of an expression is a set of symbolic dependencies,
computed where the expression is (so names resolve in their scope):
`DIRECT` (a rank source: ``dist.get_rank()``, ``os.environ["RANK"]``,
``args.local_rank``, ``trainer.is_global_zero``, ...), a module function
whose return value may be rank-dependent, or an attribute name whose
assignments (``self.is_main = rank == 0``) or properties may be. After the
walk the function and attribute dependencies are solved to a fixed point,
so helpers of helpers, defined anywhere in the module, work.

*Guards* of a node are the enclosing constructs that decide whether this
rank runs it, up to the enclosing function: branches of ``if``/``elif``/
``else`` and ternaries, the right operand of ``and``/``or``, ``while``
bodies, the rest of a block after an ``if ...: return`` (treated as the
implicit ``else`` of that ``if``), rank-zero decorators, and rank-staggered
``with`` blocks (``main_process_first()``). A guard is a rank guard when
its condition is rank-dependent.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ddplint import knowledge
from ddplint.analysis.blocks import LEAVING_CALLS, early_exits, last_statement, nested_exits
from ddplint.analysis.callgraph import CallGraph, Reference, branch_path, enclosing_loops, in_main_block
from ddplint.analysis.conditions import conjuncts, disjuncts, excludes, implies
from ddplint.analysis.execution import ExecutionModel
from ddplint.analysis.guards import DIRECT, SELECTING, Deps, Guard, GuardKind, Runs, Site, TestShape
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.rank_sets import RankSets, ShapeReader
from ddplint.analysis.single_process import SingleProcessCode, is_unset_test
from ddplint.analysis.values import is_none_literal
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst
from ddplint.solver import solve

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: Names and attributes that hold a rank or a rank test by convention.
DEFAULT_RANK_NAMES = knowledge.texts(knowledge.NAME)

RANK_SUFFIX, NOT_RANKS = knowledge.RANK_SUFFIX, knowledge.NOT_RANKS
RANK_FUNCTIONS = knowledge.texts(knowledge.FUNCTION)
RANK_ENV = knowledge.texts(knowledge.ENV)
#: Decorators whose function body runs on some ranks only.
RANK_ZERO_DECORATORS = knowledge.texts(knowledge.DECORATOR)
#: Context managers that run their body on different ranks at different times.
STAGGERED_METHODS = knowledge.texts(knowledge.CONTEXT)
#: Function names that return a rank whichever module defines them.
RANK_CALL_NAMES = knowledge.texts(knowledge.CALL)

_ENV_GETTERS = frozenset({"os.environ.get", "os.getenv"})
#: Collectives after which their first argument holds the same value on every rank.
_SYNCHRONISING = frozenset({"broadcast_object_list", "broadcast", "all_reduce", "all_gather_object", "all_gather"})
#: Names whose value is the same on every rank whatever it was computed with.
UNIFORM_VALUE_NAMES = frozenset(
    {"world_size", "WORLD_SIZE", "num_processes", "num_replicas", "n_gpu", "ngpus", "num_gpus", "nprocs", "ngpus_per_node"}
)
#: Calls whose result carries their arguments' rank dependence. Other calls do
#: not: `model.to(device)` differs per rank, `getattr(model, "name")` does not.
_TRANSPARENT = frozenset(
    {f"builtins.{name}" for name in ("int", "str", "bool", "float", "abs", "min", "max", "round", "divmod", "hash")}
    | {f"os.path.{name}" for name in ("join", "abspath", "expanduser", "normpath", "realpath")}
    | {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"}
)
#: String-building methods: `"ckpt_{}.pt".format(rank)`, `"_".join([...])`.
_TRANSPARENT_METHODS = frozenset({"format", "join", "joinpath", "replace", "with_name", "with_suffix"})
#: Attributes in the rank names that are not rank tests on some receivers:
#: HF's `TrainerControl.should_save` means "save at this step" on every rank.
_UNIFORM_ON = {"should_save": frozenset({"control"})}
_MAX_DEPTH = 12

_NONE: Deps = frozenset()
_DIRECT: Deps = frozenset({DIRECT})

class RankAnalysis:
    """Walker analysis: rank dependence and rank guards for one module."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self.rank_names = DEFAULT_RANK_NAMES | frozenset(ctx.settings.rank_names)
        self.returns: dict[cst.FunctionDef, set] = defaultdict(set)
        self.attributes: dict[str, set] = defaultdict(set)
        self.attribute_values: dict[str, list[cst.BaseExpression]] = defaultdict(list)
        self.staggered_functions: set[str] = set()
        self._solved: dict | None = None
        #: A parameter was first asked after `_solved` was computed.
        self._unsolved = False
        #: Parameters whose rank dependence some expression hinges on.
        self._asked_params: set[cst.Param] = set()
        #: Set when the walk is over: rank answers are final only then.
        self.final = False
        #: Facts about imported helpers (whole-project analysis).
        self.facts = ctx.facts
        #: With `ctx.summarize`: the imported names each function's return
        #: value, and each module-level variable, flows from.
        self.return_imports: dict[cst.FunctionDef, set[str]] = defaultdict(set)
        #: With `ctx.summarize`: the tests each module function returns, read
        #: for rank sets (None once it returns anything else): `return_picks`.
        self.return_shapes: dict[cst.FunctionDef, list[TestShape] | None] = {}
        self.module_values: dict[str, tuple[Deps, set[str]]] = {}
        self._imports_seen: set[str] | None = None
        #: The last `guards()` answer, with the walk position it holds for.
        self._guards: tuple[tuple[int, int, int], tuple[tuple[Guard, ...], tuple[Guard, ...]]] | None = None
        #: (id(node), depth) -> deps, during one `deps` query.
        self._memo: dict[tuple[int, int], Deps] | None = None
        #: With `ctx.summarize`: every imported name whose rank dependence was
        #: asked for; facts about other names cannot change this module's findings.
        self.consulted: set[str] = set()
        #: (function, name) of values a collective made the same on every rank.
        self.synchronized: set[tuple[cst.FunctionDef | None, str]] = set()
        #: The test of each `if`, `while` and ternary in source order, with its
        #: function (rank advice reads them after the walk: no walk of its own).
        self.branch_tests: list[tuple[cst.BaseExpression, cst.FunctionDef | None]] = []
        #: Each block's early exits, scanned once (shared with the single-process check).
        self.exit_cache: dict = {}
        #: id(if statement) -> (it, the names its body assigns): asked for every node under it
        self.assigned_cache: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}
        self.single_process = SingleProcessCode(ctx, lambda node: DIRECT in self.deps(node), self.exit_cache)
        #: Who calls which function of the module, and who runs each line.
        self.graph = CallGraph(self)
        self.execution = ExecutionModel(self, self.graph)
        self.shapes = ShapeReader(self)
        self._shape_memo: dict[int, TestShape] = {}
        #: Loop -> the `break`/`return`/`sys.exit()` that leave it, each with the
        #: branch guards around it inside the loop (`carried_exits`).
        self.loop_exits: dict[cst.CSTNode, list[tuple[cst.CSTNode, tuple[Guard, ...]]]] = defaultdict(list)
        self._carried: dict[tuple[int, int], Guard | None] = {}
        #: id(value) -> the rank guards (`if rank == 0:`) of the assignment of
        #: a name to it: a name that is None elsewhere holds it on those ranks only.
        self._guarded_values: dict[int, tuple[Guard, ...]] = {}

    @property
    def functions(self) -> dict[str, list[cst.FunctionDef]]:
        """The module's functions and methods, by name."""
        return self.graph.functions

    @property
    def references(self) -> list[Reference]:
        """Every call of (or reference to) a module function, in walk order."""
        return self.graph.references

    # ------------------------------------------------------------ walker hooks

    def visit_Assert(self, node: cst.Assert) -> None:
        self.single_process.note_assert(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.graph.visit_FunctionDef(node)
        if node.name.value.endswith("_first") and any(
            _decorator_name(d) == "contextmanager" for d in node.decorators
        ):
            self.staggered_functions.add(node.name.value)

    def visit_Module(self, node: cst.Module) -> None:
        self.graph.prepare(node)

    def visit_Break(self, node: cst.Break) -> None:
        self._note_exit(node, leaves_function=False)

    def visit_While(self, node: cst.While) -> None:
        self.branch_tests.append((node.test, self.ctx.enclosing_function()))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.branch_tests.append((node.test, self.ctx.enclosing_function()))

    def visit_If(self, node: cst.If) -> None:
        function = self.ctx.enclosing_function()
        self.branch_tests.append((node.test, function))
        if function is not None and function in self.graph.top_level and self._test_deps(node.test):
            self.graph.rank_tests.append((function, self._shape(node.test)))

    def visit_Call(self, node: cst.Call) -> None:
        self.graph.visit_Call(node)
        if dotted_name(node.func) in LEAVING_CALLS:
            self._note_exit(node, leaves_function=True)
        if last_name(node.func) in _SYNCHRONISING and node.args and isinstance(node.args[0].value, cst.Name):
            # `dist.broadcast_object_list(stop, src=0)`: from here on every rank holds the same `stop`.
            self.synchronized.add((self.ctx.enclosing_function(), node.args[0].value.value))

    def leave_Module(self, node: cst.Module) -> None:
        self.final = True

    def visit_Return(self, node: cst.Return) -> None:
        self._note_exit(node, leaves_function=True)
        function = self.ctx.enclosing_function()
        if function is not None and node.value is not None:
            if self.ctx.summarize and not any(isinstance(n, cst.ClassDef) for n in self.ctx.stack):
                with self._tracing_imports() as seen:  # module functions: other modules may call them
                    self.returns[function] |= self.deps(node.value)
                self.return_imports[function] |= seen
                shapes = self.return_shapes.setdefault(function, [])
                if shapes is not None:
                    test = isinstance(node.value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Call))
                    self.return_shapes[function] = [*shapes, self._shape(node.value)] if test else None
            else:
                self.returns[function] |= self.deps(node.value)

    def _note_exit(self, node: cst.CSTNode, leaves_function: bool) -> None:
        """Record an exit inside loops, with its branch guards within each loop
        it leaves (a `break` leaves the innermost one). Recorded where the exit
        is, so a condition all-reduced just before it reads as shared."""
        stack = self.ctx.stack
        loops = enclosing_loops(stack)
        if not loops:
            return
        # Ranks sent away by an earlier `break`/`return` have left already; those
        # sent on by `continue` stay in the loop, and only the rest take this exit.
        inner = [
            g for g in self.guards()[0]
            if g.kind is GuardKind.BRANCH and (g.exit is None or isinstance(g.exit, cst.Continue))
        ]  # fmt: skip
        if not inner:
            return
        for loop in loops if leaves_function else loops[:1]:
            index = next(i for i, n in enumerate(stack) if n is loop)
            inside = {id(n) for n in stack[index + 1 :]}
            inside |= {id(s) for b in stack[index + 1 :] if isinstance(b, cst.IndentedBlock) for s in b.body}
            guards = tuple(g for g in inner if id(g.owner) in inside)
            if guards:
                self.loop_exits[loop].append((node, guards))

    def carried_exits(self, loops: Iterable[cst.CSTNode], guards: Iterable[Guard]) -> tuple[Guard, ...]:
        """Guards from rank-dependent exits of the loops around a node (after
        the walk): ranks that leave a loop at ``if rank == 0 and bad: break``
        (or `return`) never run its next iteration, so every collective of the
        loop body, written before the exit too, is reached by the others only.
        Exits the node's own `guards` already cover are left out."""
        owners = {id(g.owner) for g in guards}
        found = []
        for loop in loops:
            for exit_node, exit_guards in self.loop_exits.get(loop, ()):
                guard = self._carried_guard(loop, exit_node, exit_guards)
                if guard is not None and id(guard.owner) not in owners:
                    owners.add(id(guard.owner))
                    found.append(guard)
        return tuple(found)

    def _carried_guard(self, loop: cst.CSTNode, exit_node: cst.CSTNode, guards: tuple[Guard, ...]) -> Guard | None:
        key = (id(loop), id(exit_node))
        if key in self._carried:
            return self._carried[key]
        ranked = [g for g in guards if self.is_rank_dependent(g.deps)]
        guard = None
        if ranked:
            innermost = guards[0]
            simple = innermost.exit is None and innermost.branch == 0 and innermost.branches == 2
            # `if rank == 0 and bad: ...; break`: the `if` is the owner, so an exit branch that
            # performs the loop's collectives (rank 0 sends "stop" and leaves) balances it.
            owner = innermost.owner if simple else loop
            deps = frozenset().union(*(g.deps for g in ranked))
            anchor = test = ranked[0].test
            if ranked[0].branch:  # the exit is where the test fails: `if rank != 0: continue` ... `break`
                test = cst.UnaryOperation(cst.Not(), test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
            guard = Guard(GuardKind.BRANCH, owner, deps, test, anchor, 1, 2, innermost.scope, exit=exit_node, loop=loop)
        self._carried[key] = guard
        return guard

    def _tracing_imports(self) -> _ImportTrace:
        return _ImportTrace(self)

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._record_attribute(target.target, node.value)
            if self.ctx.summarize and isinstance(target.target, cst.Name) and len(self.ctx.scopes.stack) == 1:
                with self._tracing_imports() as seen:
                    deps = self.deps(node.value)
                self.module_values[target.target.value] = (deps, seen)
        bound = node.targets[0].target
        if (
            isinstance(bound, cst.Name) and not is_none_literal(node.value)
            and any(is_none_literal(v) for v in self.ctx.values_of(bound))  # (the binding before this one)
        ):
            # `writer = SummaryWriter(...)` under `if rank == 0:`, after `writer = None`.
            guards = tuple(
                g for g in self.guards()[0]
                if g.kind is GuardKind.BRANCH and g.shape is not None and g.branches == 2 and not g.nested
            )  # fmt: skip
            if guards:
                self._guarded_values[id(node.value)] = guards

    def holder_shape(self, node: cst.Name) -> TestShape | None:
        """For a name that is None on some paths and bound to a value only
        under rank guards on the others (``writer = None`` / ``if rank == 0:
        writer = SummaryWriter(...)``): the test of those guards, which its
        truth (or ``is not None``) repeats; else None."""
        guards = self._holder_guards(node)
        if not guards:
            return None
        alternatives = []
        for chain in guards:
            parts = [g.shape if g.branch == 0 else TestShape("not", (g.shape,)) for g in chain]
            shape = parts[0]
            for part in parts[1:]:
                shape = TestShape("and", (shape, part))
            alternatives.append(shape)
        result = alternatives[0]
        for other in alternatives[1:]:
            result = TestShape("or", (result, other))
        return result

    def _holder_guards(self, node: cst.Name) -> list[tuple[Guard, ...]]:
        if not self._guarded_values:
            return []
        values = self.ctx.values_of(node)
        if not any(is_none_literal(v) for v in values):
            return []
        chains = [self._guarded_values.get(id(v)) for v in values if not is_none_literal(v)]
        if not chains or not all(chains):
            return []
        return chains  # type: ignore[return-value]

    def _test_deps(self, test: cst.BaseExpression) -> Deps:
        """The rank dependence of a guard's test: its value's, and that of the
        rank guards of the names it tests that only those guards bind (`holder_shape`)."""
        deps = self.deps(test)
        if not self._guarded_values:
            return deps
        found: set = set(deps)
        todo: list[cst.BaseExpression] = [test]
        while todo:
            current = todo.pop()
            if isinstance(current, cst.UnaryOperation) and isinstance(current.operator, cst.Not):
                todo.append(current.expression)
            elif isinstance(current, cst.BooleanOperation):
                todo.extend((current.left, current.right))
            elif isinstance(current, cst.Comparison) and _is_none_test(current):
                todo.append(current.left)
            elif isinstance(current, cst.Name):
                for chain in self._holder_guards(current):
                    for guard in chain:
                        found |= guard.deps
        return frozenset(found)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._record_attribute(node.target, node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        """``args.seed += local_rank``: the attribute differs per rank (tracked
        by name, like an assignment; the increment is not its whole value)."""
        target = node.target
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            self.attributes[target.attr.value] |= self.deps(node.value)

    def _record_attribute(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``self.is_main = rank == 0``, ``args.gpu = gpu``: the attribute may
        hold what the value holds (attributes are tracked by name)."""
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            name = target.attr.value
            self.attributes[name] |= self.deps(value)
            self.attribute_values[name].append(value)
            self.shapes.note_attribute(name, value)

    # ------------------------------------------------------------ dependence

    def deps(self, node: cst.CSTNode, depth: int = 0) -> Deps:
        """The symbolic rank dependencies of `node`'s value, here.

        Bindings cannot change during one query, so each (node, depth) is
        computed once per query: names whose values share sub-expressions
        (``x = a + b; y = x * x``) would otherwise fan out exponentially.
        """
        if depth:
            return self._memoized(node, depth)
        self._memo = {}
        try:
            return self._memoized(node, depth)
        finally:
            self._memo = None

    def _memoized(self, node: cst.CSTNode, depth: int) -> Deps:
        key = (id(node), depth)
        memo = self._memo
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._deps(node, depth)
        return found

    def _deps(self, node: cst.CSTNode, depth: int) -> Deps:
        if depth > _MAX_DEPTH:
            return _NONE
        depth += 1
        if isinstance(node, cst.Name):
            return self._name_deps(node, depth)
        if isinstance(node, cst.Attribute):
            if self.is_rank_name(node.attr.value):
                if last_name(node.value) in _UNIFORM_ON.get(node.attr.value, ()):
                    return _NONE
                if node.attr.value not in self.rank_names and node.attr.value in self.attributes:
                    return frozenset({("attr", node.attr.value)})  # `*_rank` by name only: what it is assigned
                return _DIRECT
            if self.ctx.qualified_name(node) in RANK_FUNCTIONS or self._imported_rank(node):
                return _DIRECT
            return frozenset({("attr", node.attr.value)})
        if isinstance(node, cst.Call):
            return self._call_deps(node, depth)
        if isinstance(node, cst.Subscript):
            if self._is_rank_env(node):
                return _DIRECT
            return self._union([node.value, *(e.slice for e in node.slice)], depth)
        if isinstance(node, cst.Comparison) and (_is_none_test(node) or is_unset_test(node)):
            # `rank is None`, `local_rank != -1`: "was a rank given / is this run
            # distributed?", the same answer on every rank.
            return _NONE
        return self._union(_value_children(node), depth)

    def deps_of_all(self, nodes: Iterable[cst.CSTNode]) -> Deps:
        """The union of the rank dependencies of `nodes`."""
        return self._union(nodes, 0)

    def _union(self, nodes: Iterable[cst.CSTNode], depth: int) -> Deps:
        result: set = set()
        for child in nodes:
            result |= self.deps(child, depth)
        return frozenset(result)

    def is_rank_name(self, name: str) -> bool:
        """A name or attribute that holds a rank or a rank test by convention."""
        if name in self.rank_names:
            return True
        lowered = name.lower()
        return lowered.endswith(RANK_SUFFIX) and lowered not in NOT_RANKS

    def _name_deps(self, node: cst.Name, depth: int) -> Deps:
        if node.value in UNIFORM_VALUE_NAMES:
            return _NONE  # `world_size, rank = get_world_size_and_rank()`: only `rank` differs
        if self.synchronized and (self.ctx.enclosing_function(), node.value) in self.synchronized:
            return _NONE  # broadcast or all-reduced above: the same on every rank
        values = self.ctx.values_of(node)
        if self.is_rank_name(node.value):
            # A loop variable `for rank in range(world_size)` is not this process's rank.
            binding = self.ctx.scopes.lookup(node.value)
            if binding is not None and not binding.values and None in binding.qualnames:
                return _NONE
            if values and all(isinstance(v, (cst.Integer, cst.SimpleString)) or _is_flag(v) for v in values):
                return _NONE  # a constant, or a flag parameter (`negative_all_rank=False`)
            return _DIRECT
        if not values and self._imported_rank(node):
            return _DIRECT
        result: set = set()
        for value in values:
            if isinstance(value, cst.FunctionDef):
                continue  # a function object, not a call of it
            if isinstance(value, cst.BaseExpression):
                result |= self.deps(value, depth)
            elif isinstance(value, cst.AugAssign):  # `seed += rank` (the earlier value is not kept)
                result |= self.deps(value.value, depth)
            elif isinstance(value, cst.Param) and value in self.graph.parameters:
                if value not in self._asked_params:  # what the callers pass, or a launcher's process index
                    self._asked_params.add(value)
                    self._unsolved = self._solved is not None  # asked after the walk: solve it too
                result.add(("param", value))
        binding = self.ctx.scopes.lookup(node.value)
        if binding is not None:
            for iterable, index in binding.iterated:
                result |= self._iterated_deps(iterable, index, depth)
        return frozenset(result)

    def _iterated_deps(self, iterable: cst.BaseExpression, index: int | None, depth: int) -> Deps:
        """The rank dependence of a loop target: what it iterates over
        (`for f in files[rank::world_size]`), or the start of a range
        (`for i in range(rank, n, world_size)`: each rank its own `i`; the
        stop or step alone only change how many). `index` is the name's
        position in a tuple target: `enumerate`'s counter is the same on
        every rank, `zip`'s k-th name iterates over its k-th argument."""
        names = self.ctx.qualified_names(iterable.func) if isinstance(iterable, cst.Call) else frozenset()
        args = iterable.args if isinstance(iterable, cst.Call) else ()
        if "builtins.enumerate" in names and args:
            return _NONE if index == 0 else self._iterated_deps(args[0].value, None, depth)
        if "builtins.zip" in names and index is not None:
            return self._iterated_deps(args[index].value, None, depth) if index < len(args) else _NONE
        if "builtins.range" in names:
            return self.deps(args[0].value, depth) if index is None and len(args) >= 2 else _NONE
        return self.deps(iterable, depth)

    def _call_deps(self, node: cst.Call, depth: int) -> Deps:
        func = node.func
        names = self.ctx.qualified_names(func)
        if names & RANK_FUNCTIONS:
            return _DIRECT
        if names & _ENV_GETTERS and node.args and _string(node.args[0].value) in RANK_ENV:
            return _DIRECT
        last = last_name(func)
        if last is not None and (last in RANK_CALL_NAMES or self.is_rank_name(last) or is_rank_getter(last)):
            return _DIRECT
        if self._imported_rank(func):
            return _DIRECT
        result: set = set()
        if names & _TRANSPARENT:  # int(os.environ["RANK"]), str(rank), os.path.join(out, f"r{rank}")
            result |= self._union((a.value for a in node.args), depth)
        elif isinstance(func, cst.Attribute) and func.attr.value in _TRANSPARENT_METHODS:
            result |= self._union([func.value, *(a.value for a in node.args)], depth)
        if isinstance(func, cst.Name):
            result.update(v for v in self.ctx.values_of(func) if isinstance(v, cst.FunctionDef))
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            result.add(("method", func.attr.value))
        return frozenset(result)

    def _imported_rank(self, node: cst.BaseExpression) -> bool:
        """Whether `node` is an imported helper (or value) the project knows
        to be rank-dependent; records the import while tracing."""
        if not (self.ctx.summarize or self.facts):
            return False
        imported = self.ctx.scopes.imported_qualnames(node)
        if not imported:
            return False
        if self.ctx.summarize:
            self.consulted |= imported
        if self._imports_seen is not None:
            self._imports_seen |= imported
        return self.facts.rank(imported)

    def return_picks(self, function: cst.FunctionDef) -> str | None:
        """Which ranks a module function's result is true on, when every
        `return` gives a rank test that picks the same ones
        (``return int(os.environ.get("RANK", 0)) == 0``: ``ONE``): a `Runs`
        member's name, for callers in other modules testing it
        (`Fact.picks`); None otherwise. Final after the walk."""
        shapes = self.return_shapes.get(function)
        if not shapes:
            return None
        sets = RankSets(self)
        picks = {sets.evaluate(shape, True) for shape in shapes}
        if len(picks) != 1:
            return None
        (runs,) = picks
        return runs.name if runs in (Runs.ONE, Runs.PER_NODE, Runs.ALL_BUT_ONE) else None

    def function_imports(self, function: cst.FunctionDef) -> tuple[bool, set[str]]:
        """(rank-dependent here, imported names it hinges on) for a function's
        return value, following the module's own helpers."""
        seen: set = set()
        todo = [function]
        imports: set[str] = set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            imports |= self.return_imports.get(current, set())
            todo.extend(d for d in self.returns.get(current, ()) if isinstance(d, cst.FunctionDef))
        return self.is_rank_dependent(frozenset(self.returns.get(function, ()))), imports

    def _is_rank_env(self, node: cst.Subscript) -> bool:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return False
        return "os.environ" in self.ctx.qualified_names(node.value) and (
            _string(node.slice[0].slice.value) in RANK_ENV
        )

    def _solve(self) -> dict:
        """The functions, ``("attr", name)`` attributes and ``("param", p)``
        parameters whose value is rank-dependent (a fixed point over the whole
        module), each mapped to True."""
        if self._solved is not None and not self._unsolved:
            return self._solved
        if not self.final:
            raise RuntimeError("rank dependence asked before the walk ended; ask in finish()")
        # A parameter first asked after the walk (a write's path checked in a
        # deferred check): the fixed point only grows, so go on from it.
        start = self._solved if self._solved is not None else dict.fromkeys(
            (("param", p) for p in self.execution.launched_parameters()), True
        )
        self._unsolved = False
        attributes = dict.fromkeys((*self.attributes, *self.functions))
        keys = (*self.returns, *(("attr", name) for name in attributes), *(("param", p) for p in self._asked_params))
        self._solved = solve(keys, self._dependent, start=start)
        return self._solved

    def _dependent(self, key, known: Mapping) -> bool | None:
        """One step of `_solve`: whether `key` is rank-dependent given `known`."""
        if key in known:
            return True
        if isinstance(key, cst.FunctionDef):
            return self._resolves(self.returns[key], known) or None
        kind, name = key
        if kind == "param":
            return self._bound_to_rank(name, known) or None
        if name in self.attributes and self._resolves(self.attributes[name], known):
            return True
        return any(f in known and _is_property(f) for f in self.functions.get(name, ())) or None

    def _bound_to_rank(self, param: cst.Param, solved: Mapping) -> bool:
        """Whether every call of the parameter's function in the module passes
        it a rank-dependent value (and there is at least one)."""
        owner = self.graph.parameters.get(param)
        if owner is None:
            return False
        function, index = owner
        name = param.name.value
        calls = self.graph.calls_to(function)
        if not calls:
            return False
        positional = (*function.params.posonly_params, *function.params.params)
        bound_self = bool(positional) and positional[0].name.value in ("self", "cls")
        for call in calls:
            offset = 1 if bound_self and (call.method is not None or self.graph.class_of(function) is not None) else 0
            given = None
            for position, (keyword, deps) in enumerate(call.arguments):
                if keyword == name or (keyword is None and position + offset == index):
                    given = deps
            if given is None or not self._resolves(given, solved):
                return False
        return True

    def _resolves(self, deps: Deps, solved: Mapping) -> bool:
        for dep in deps:
            if dep == DIRECT or dep in solved:  # a function, ("attr", name), ("param", p)
                return True
            if isinstance(dep, tuple) and dep[0] == "method" and any(f in solved for f in self.functions.get(dep[1], ())):
                return True
        return False

    def is_rank_dependent(self, deps: Deps) -> bool:
        """Whether `deps` make a value rank-dependent; final after the walk
        (asking earlier raises: the answer could still change)."""
        if DIRECT in deps:
            return True
        if not deps:
            return False
        return self._resolves(deps, self._solve())

    def site(self, node: cst.CSTNode, deps: Deps = frozenset()) -> Site:
        """Record where `node` is, for a decision after the walk."""
        stack = self.ctx.stack
        single = self.single_process.here(stack)
        function = self.ctx.enclosing_function()
        main = function is None and in_main_block(stack)
        return Site(
            node, self.ctx.statement(), self.guards()[0], function, deps, single, enclosing_loops(stack), main,
            branch_path(stack), self.ctx.scopes.mark(),
        )  # fmt: skip

    def runs_on_every_rank(self, site: Site) -> bool:
        """Whether every rank executes the site (after the walk; see `execution`)."""
        return self.execution.runs(site) is Runs.ALL

    def runs(self, site: Site) -> Runs:
        """Who executes the site (after the walk): `execution.Runs`."""
        return self.execution.runs(site)

    def any_rank_guard(self, guards: Iterable[Guard]) -> bool:
        """Whether one of `guards` is rank-dependent, of any kind (DDP001 also
        flags collectives in rank-staggered blocks; final after the walk)."""
        return any(self.is_rank_dependent(g.deps) for g in guards)

    def staggered(self, guards: Iterable[Guard]) -> bool:
        """Whether one of `guards` is a rank-staggered block (`main_process_first()`):
        every rank runs it, rank 0 first (final after the walk)."""
        return any(g.kind is GuardKind.STAGGERED and self.is_rank_dependent(g.deps) for g in guards)

    def selects_ranks(self, guards: Iterable[Guard]) -> bool:
        """Whether some guard lets only some ranks through (final after the walk)."""
        return any(g.kind in SELECTING and self.is_rank_dependent(g.deps) for g in guards)

    def targets_of(self, reference: Reference) -> tuple[cst.FunctionDef, ...]:
        """The functions a reference may reach (methods resolve by name)."""
        return self.graph.targets_of(reference)

    def reached_unguarded(self, function: cst.FunctionDef | None) -> bool:
        """Whether every rank runs `function` (None: module-level code)."""
        return self.execution.function_runs(function) is Runs.ALL

    def expression_is_rank_dependent(self, node: cst.CSTNode) -> bool:
        """`is_rank_dependent(deps(node))`, for use after the walk."""
        return self.is_rank_dependent(self.deps(node))

    # ------------------------------------------------------------ guards

    def guards(self) -> tuple[tuple[Guard, ...], tuple[Guard, ...]]:
        """The potential rank guards of the node being visited: (inner, outer).

        `inner` are the guards that decide whether this rank runs the node
        when its function runs, innermost first, with the function's
        rank-selecting decorators. `outer` are the guards around the
        definitions of the enclosing functions: a function defined in a
        branch (a callback passed on from there) is taken to run in that
        branch, which only matters for comparing branches. Only guards with
        dependencies are returned; whether those make them rank guards is
        known after the walk (`is_rank_dependent(guard.deps)`).
        """
        stack = self.ctx.stack
        # Several analyses and rules ask about the same node: the answer holds
        # while the walk is on it and no binding changed.
        key = (id(stack[-1]) if stack else 0, len(stack), self.ctx.scopes.generation)
        if self._guards is not None and self._guards[0] == key:
            return self._guards[1]
        start = _function_start(stack)
        inner: list[Guard] = []
        outer: list[Guard] = []
        scope: cst.CSTNode | None = None
        for index in range(len(stack) - 1):
            node, child = stack[index], stack[index + 1]
            if isinstance(node, (cst.FunctionDef, cst.Lambda)) and child is node.body:
                if isinstance(node, cst.FunctionDef):
                    (inner if index + 1 == start else outer).extend(self._decorator_guards(node, scope))
                scope = node
                continue
            (inner if index >= start else outer).extend(self._guards_at(stack, index, scope))
        inner.reverse()
        outer.reverse()
        result = (tuple(inner), tuple(outer))
        self._guards = (key, result)
        return result

    def _guards_at(self, stack: Sequence[cst.CSTNode], index: int, scope: cst.CSTNode | None) -> Iterable[Guard]:
        node, child = stack[index], stack[index + 1]
        if isinstance(node, cst.If):
            if _is_elif(stack, index):
                return  # handled with the head of its chain
            guard = self._branch_guard(stack, index, scope)
            if guard is not None:
                yield guard
        elif isinstance(node, cst.IfExp) and child is not node.test:
            deps = self._test_deps(node.test)
            if deps:
                branch = 0 if child is node.body else 1
                yield Guard(GuardKind.BRANCH, node, deps, node.test, node.test, branch, 2, scope, shape=self._shape(node.test))
        elif isinstance(node, cst.BooleanOperation) and child is node.right:
            deps = self._test_deps(node.left)
            if deps:
                yield Guard(GuardKind.SHORT_CIRCUIT, node, deps, node.left, node.left, scope=scope, shape=self._shape(node.left))
        elif isinstance(node, cst.While) and child is node.body:
            deps = self.deps(node.test)
            if deps:
                yield Guard(GuardKind.LOOP, node, deps, node.test, node.test, scope=scope)
        elif isinstance(node, cst.With):
            if child is node.body:
                yield from self._staggered_guards(node, scope)
        elif isinstance(node, (cst.IndentedBlock, cst.Module, cst.SimpleStatementSuite)):
            yield from self._early_exit_guards(node, child, scope)

    def _shape(self, test: cst.BaseExpression) -> TestShape:
        """The test read for rank sets, once per test (where the walk first guards by it)."""
        found = self._shape_memo.get(id(test))
        if found is None:
            found = self._shape_memo[id(test)] = self.shapes.of(test)
        return found

    def _branch_guard(self, stack: Sequence[cst.CSTNode], index: int, scope: cst.CSTNode | None) -> Guard | None:
        """The guard of an if/elif/else chain whose head is `stack[index]`."""
        head = stack[index]
        members = _chain(head)
        # Which member's body (or the final else) contains the node?
        position, member = 0, head
        for offset in range(index, len(stack) - 1):
            node, child = stack[offset], stack[offset + 1]
            if node is not member:
                continue
            if child is member.test:
                return None  # the condition itself runs on every rank that got here
            if child is member.body:
                break
            if isinstance(child, cst.Else):
                position = len(members)
                break
            member, position = child, position + 1
        own = members[min(position, len(members) - 1)].test
        tests = [
            m.test for m in members[: position + 1]
            if m.test is own or position == len(members) or not excludes(own, m.test)
        ]  # fmt: skip
        if position < len(members):
            tests = [t for t in tests if t is not own] + _undecided(own, stack, index, self.assigned_cache)
        deps = self._union(tests, 0)
        if self._guarded_values:
            deps = deps.union(*(self._test_deps(t) for t in tests))
        if not deps:
            return None
        shape = self._shape(own) if len(members) == 1 else None
        return Guard(GuardKind.BRANCH, head, deps, own, own, position, len(members) + 1, scope, shape=shape)

    def _early_exit_guards(self, block: cst.CSTNode, child: cst.CSTNode, scope: cst.CSTNode | None) -> Iterable[Guard]:
        """`if <cond>: ... return` earlier in `block`: the rest is its else branch."""
        for statement in early_exits(block, child, cache=self.exit_cache):
            deps = self._test_deps(statement.test)
            if deps:
                yield Guard(
                    GuardKind.BRANCH, statement, deps, statement.test, statement.test, 1, 2,
                    scope, exit=last_statement(statement.body), shape=self._shape(statement.test),
                )  # fmt: skip
        for statement, leave in nested_exits(block, child, self.exit_cache):
            deps = self._test_deps(statement.test)
            if deps:
                yield Guard(
                    GuardKind.BRANCH, statement, deps, statement.test, statement.test, 1, 2,
                    scope, exit=leave, shape=self._shape(statement.test), nested=True,
                )  # fmt: skip

    def _decorator_guards(self, function: cst.FunctionDef, scope: cst.CSTNode | None) -> Iterable[Guard]:
        for decorator in function.decorators:
            if _decorator_name(decorator) in RANK_ZERO_DECORATORS:
                yield Guard(GuardKind.DECORATOR, function, _DIRECT, decorator.decorator, decorator, scope=scope)

    def _staggered_guards(self, node: cst.With, scope: cst.CSTNode | None) -> Iterable[Guard]:
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            func = call.func
            name = last_name(func)
            if name in STAGGERED_METHODS or (isinstance(func, cst.Name) and name in self.staggered_functions):
                yield Guard(GuardKind.STAGGERED, node, _DIRECT, call, item, scope=scope)


class _ImportTrace:
    """``with analysis._tracing_imports() as seen:`` collects, in `seen`, the
    imported names the rank dependencies computed inside flow from (only
    while summarizing a module for the whole-project analysis)."""

    def __init__(self, analysis: RankAnalysis) -> None:
        self.analysis = analysis
        self.seen: set[str] = set()
        self.outer: set[str] | None = None

    def __enter__(self) -> set[str]:
        if self.analysis.ctx.summarize:
            self.outer = self.analysis._imports_seen
            self.analysis._imports_seen = self.seen
        return self.seen

    def __exit__(self, *exc: object) -> None:
        if self.analysis.ctx.summarize:
            self.analysis._imports_seen = self.outer
            if self.outer is not None:
                self.outer |= self.seen


def is_conventional_rank_call(name: str) -> bool:
    """Whether a call of a function with this last name is rank-dependent
    whichever module defines it (without configured `rank-names`)."""
    lowered = name.lower()
    return (
        name in RANK_CALL_NAMES or name in DEFAULT_RANK_NAMES or is_rank_getter(name)
        or (lowered.endswith(RANK_SUFFIX) and lowered not in NOT_RANKS)
    )  # fmt: skip


def is_rank_getter(name: str) -> bool:
    """Megatron-style `get_tensor_model_parallel_rank()`, `get_data_parallel_rank()`."""
    return name.startswith("get_") and name.endswith("rank") and name[4:] not in NOT_RANKS


def _string(node: cst.CSTNode) -> str | None:
    return node.evaluated_value if isinstance(node, cst.SimpleString) else None


def _value_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The sub-expressions whose values flow into `node`'s value."""
    if isinstance(node, cst.Comparison):
        return [node.left, *(c.comparator for c in node.comparisons)]
    if isinstance(node, (cst.BooleanOperation, cst.BinaryOperation)):
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    if isinstance(node, cst.IfExp):
        return [node.test, node.body, node.orelse]
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return [e.value for e in node.elements]
    if isinstance(node, cst.FormattedString):
        return [p.expression for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
    if isinstance(node, cst.NamedExpr):
        return [node.value]
    if isinstance(node, cst.Await):
        return [node.expression]
    if isinstance(node, cst.Index):  # `shards[rank]`
        return [node.value]
    if isinstance(node, cst.Slice):  # `files[rank::world_size]`: the step alone is the same slice everywhere
        return [part for part in (node.lower, node.upper) if part is not None]
    return []


def _is_none_test(node: cst.Comparison) -> bool:
    return all(
        isinstance(c.operator, (cst.Is, cst.IsNot)) and isinstance(c.comparator, cst.Name) and c.comparator.value == "None"
        for c in node.comparisons
    )


def _decorator_name(decorator: cst.Decorator) -> str | None:
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    name = dotted_name(expr)
    return name.rsplit(".", 1)[-1] if name else None


def _is_flag(value: cst.CSTNode) -> bool:
    """A parameter whose default is `True`/`False`: a switch, not a rank."""
    return (
        isinstance(value, cst.Param)
        and isinstance(value.default, cst.Name)
        and value.default.value in ("True", "False")
    )


def _is_property(function: cst.FunctionDef) -> bool:
    return any(_decorator_name(d) in ("property", "cached_property") for d in function.decorators)


def _function_start(stack: Sequence[cst.CSTNode]) -> int:
    """Index of the first stack entry inside the innermost function body."""
    for index in range(len(stack) - 1, 0, -1):
        node, child = stack[index - 1], stack[index]
        if isinstance(node, (cst.FunctionDef, cst.Lambda)) and child is node.body:
            return index
    return 0


def _undecided(
    test: cst.BaseExpression, stack: Sequence[cst.CSTNode], index: int, cache: dict[int, tuple[cst.CSTNode, frozenset[str]]]
) -> list[cst.CSTNode]:
    """The operands of the ``and`` chain `test` (an ``if`` at `stack[index]`)
    that the node at the end of `stack` may still find false: a disjunction
    one of whose operands the test of a branch nested under it makes true
    (``if kind != Kind.LEGACY or rank == 0:`` ... ``if kind == Kind.GLOBAL:``)
    holds there on every rank, unless the body assigns the subject between."""
    known = _nested_tests(stack, index)
    parts = conjuncts(test)
    if not known:
        return parts
    body = stack[index]
    return [
        part for part in parts
        if not any(
            implies(fact, operand) and not _assigns(body, fact, cache)
            for operand in disjuncts(part) for fact in known
        )
    ]  # fmt: skip


def _nested_tests(stack: Sequence[cst.CSTNode], index: int) -> list[cst.CSTNode]:
    """The operands of the tests of the ``if`` branches (within the same
    function) under `stack[index]` whose bodies hold the node."""
    known: list[cst.CSTNode] = []
    for offset in range(index + 1, len(stack) - 1):
        node, child = stack[offset], stack[offset + 1]
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(node, cst.If) and child is node.body:
            known += conjuncts(node.test)
    return known


def _assigns(body: cst.CSTNode, test: cst.CSTNode, cache: dict[int, tuple[cst.CSTNode, frozenset[str]]]) -> bool:
    """Whether `body` assigns a name the test reads (its subject may change)."""
    cached = cache.get(id(body))
    if cached is None or cached[0] is not body:
        cached = cache[id(body)] = (body, _assigned_names(body))
    return any(isinstance(n, cst.Name) and n.value in cached[1] for n in (test, *descendants(test)))


def _assigned_names(body: cst.CSTNode) -> frozenset[str]:
    """The names `body` assigns anywhere (targets of assignments, loops, walruses)."""
    names: set[str] = set()
    for node in descendants(body):
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For)):
            targets = [node.target]
        for target in targets:
            names.update(n.value for n in (target, *descendants(target)) if isinstance(n, cst.Name))
    return frozenset(names)


def _is_elif(stack: Sequence[cst.CSTNode], index: int) -> bool:
    return index > 0 and isinstance(stack[index - 1], cst.If) and stack[index - 1].orelse is stack[index]


def _chain(head: cst.If) -> list[cst.If]:
    members = [head]
    while isinstance(members[-1].orelse, cst.If):
        members.append(members[-1].orelse)
    return members
