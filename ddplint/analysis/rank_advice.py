"""The advice of a finding in the module's own words: the rank-0 test or the
rank it already writes where the finding is (`RankAdvice`), for the rules
that suggest guarding with the rank or adding it (DDP006, DDP007, DDP008,
DDP022, DDP024) instead of a fixed `dist.get_rank()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.analysis.collectives import ACCELERATOR_CLASSES
from ddplint.analysis.conditions import conjuncts
from ddplint.analysis.guards import NODE_ZERO, ZERO, Runs, TestShape
from ddplint.analysis.tree import children, descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.guards import Site
    from ddplint.analysis.rank import RankAnalysis


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


#: Conventional names of an `accelerate.Accelerator` (a parameter, an attribute).
_ACCELERATOR_NAMES = frozenset({"accelerator"})
_LOCAL_WORDS = ("local", "gpu", "device")


@dataclass(frozen=True)
class RankTest:
    """A rank-0 test as the module would write it where a finding is."""

    #: `rank == 0`, `is_master(args)`, `accelerator.is_main_process`.
    text: str
    #: Its opposite, for `disable=` and early returns: `rank != 0`, `not is_master(args)`.
    negated: str
    #: The rank it compares, when it compares one (`rank`, `args.rank`), else None.
    rank: str | None = None


class RankAdvice:
    """The module's preferred rank-0 test and rank, as source text that is
    valid where a finding is (the advice of DDP006, DDP007, DDP008, DDP022,
    DDP024).

    In order: a test that selects rank 0 written in the same function (`if
    rank == 0:`, `if is_master(args):`, `if not accelerator.is_main_process:
    return`), one written elsewhere in the module whose names resolve at the
    site (a module helper `is_main_process()`, `self.is_global_zero` in a
    method of the same class), a rank bound in scope (`rank = dist.get_rank()`,
    `args.rank`, an `accelerator`), and `dist.get_rank() == 0` (with the
    module's own alias of `torch.distributed`) when nothing else is there.
    Each candidate is read again at the site by the rank analysis, so a name
    that is a loop counter there is not taken for the rank.
    """

    def __init__(self, rank: RankAnalysis) -> None:
        self.rank_analysis = rank
        self.ctx = rank.ctx
        self._module_tests: list[tuple[cst.BaseExpression, cst.FunctionDef | None]] | None = None
        #: Answers from tests, by (function, per_node, compared): the same across one function.
        self._memo: dict[tuple[int, bool, bool], RankTest | None] = {}
        self._attributes: dict[cst.FunctionDef, list[cst.Attribute]] = {}

    def test(self, site: Site, per_node: bool = False) -> RankTest:
        """The rank-0 test to suggest at `site`; with `per_node`, one process
        per node (`local_rank == 0`) is preferred, the global rank 0 accepted."""
        found = self.own_test(site, per_node)
        if found is not None:
            return found
        dist = self._distributed_alias()
        return RankTest(f"{dist}.get_rank() == 0", f"{dist}.get_rank() != 0", f"{dist}.get_rank()")

    def own_test(self, site: Site, per_node: bool = False) -> RankTest | None:
        """`test`, when the module has one of its own (no `dist.get_rank()` fallback)."""
        with self._at(site):
            return self._from_tests(site, per_node) or self._from_scope(site, per_node)

    def rank(self, site: Site) -> str:
        """A global-rank expression to suggest at `site` (`rank`, `args.rank`,
        `accelerator.process_index`, else `dist.get_rank()`)."""
        with self._at(site):
            for candidate in (self._from_tests(site, False, compared=True), self._from_scope(site, False)):
                if candidate is not None and candidate.rank is not None:
                    return candidate.rank
        return f"{self._distributed_alias()}.get_rank()"

    # ------------------------------------------------------------ candidates

    def _at(self, site: Site):
        scopes = self.ctx.scopes
        return scopes.restored(site.scopes) if site.scopes is not None else _Nothing()  # type: ignore[arg-type]

    def _from_tests(self, site: Site, per_node: bool, compared: bool = False) -> RankTest | None:
        key = (id(site.function), per_node, compared)
        if key not in self._memo:
            self._memo[key] = self._search_tests(site, per_node, compared)
        return self._memo[key]

    def _search_tests(self, site: Site, per_node: bool, compared: bool) -> RankTest | None:
        tests = self._tests()
        owner = self.rank_analysis.graph.owner
        same = [t for t, function in tests if function is site.function]
        other = [
            t for t, function in tests
            if function is not site.function and (not _uses_self(t) or (
                function is not None and site.function is not None
                and owner.get(function) is not None and owner.get(function) is owner.get(site.function)
            ))
        ]  # fmt: skip
        for group in (same, other):
            best: RankTest | None = None
            for test in group:
                found = self._selects_zero(test, per_node, check_names=group is other)
                if found is None or (compared and found[0].rank is None):
                    continue
                if found[1] or not per_node:
                    return found[0]
                best = best or found[0]
            if best is not None:
                return best
        return None

    def _selects_zero(self, test: cst.BaseExpression, per_node: bool, check_names: bool) -> tuple[RankTest, bool] | None:
        """`test` (or its opposite) as a rank-0 test valid here, and whether it is per node."""
        if check_names and not all(self.ctx.scopes.lookup(name) is not None for name in _free_names(test)):
            return None
        rank = self.rank_analysis
        shape = rank.shapes.of(test)
        if not _zero_leaves(shape, rank):
            return None  # `rank == src`, `is_last_stage()`: one rank, but not rank 0
        sets = rank.execution.sets
        for truthy in (True, False):
            runs = sets.evaluate(shape, truthy)
            if runs is Runs.ONE or (per_node and runs is Runs.PER_NODE):
                written = test if truthy else _opposite(test)
                if written is None:
                    return None
                return _rank_test(written), runs is Runs.PER_NODE
        return None

    def _tests(self) -> list[tuple[cst.BaseExpression, cst.FunctionDef | None]]:
        """The operands of the module's `if`/`while`/ternary tests that
        compare a value with 0 or call a main-process predicate, with their function (read once)."""
        if self._module_tests is None:
            rank = self.rank_analysis
            if not rank.final:
                raise RuntimeError("rank advice is read after the walk (the walk collects the module's tests)")
            self._module_tests = [(part, f) for test, f in rank.branch_tests for part in conjuncts(test) if _candidate(part)]
        return self._module_tests

    def _from_scope(self, site: Site, per_node: bool) -> RankTest | None:
        """A rank or an accelerator bound where the site is."""
        ctx = self.ctx
        rank = self.rank_analysis
        candidates: list[cst.BaseExpression] = []
        scopes = ctx.scopes
        names: dict[str, None] = {}
        for scope in reversed(scopes.stack):
            names.update(dict.fromkeys(scope.names))
        for name in names:
            binding = scopes.lookup(name)
            if binding is None:
                continue
            if _accelerator(name, binding.values, ctx):
                return RankTest(f"{name}.is_main_process", f"not {name}.is_main_process", f"{name}.process_index")
            if (
                rank.is_rank_name(name) and not name.startswith(("is_", "should_")) and binding.values
                and not any(isinstance(v, (cst.FunctionDef, cst.ClassDef)) for v in binding.values)
            ):  # a variable or a parameter (not `def seed_rank`, a loop counter or an import)
                candidates.append(cst.Name(name))
        if site.function is not None:  # `args.rank`, `self.global_rank` read in the function
            candidates += self._rank_attributes(site.function)
        best: RankTest | None = None
        for candidate in candidates:
            code = cst.Module([]).code_for_node(candidate)
            if not rank.expression_is_rank_dependent(candidate):
                continue
            local = any(word in code.lower() for word in _LOCAL_WORDS)
            test = RankTest(f"{code} == 0", f"{code} != 0", code)
            if local == per_node:
                return test
            if per_node:
                best = best or test
        return best

    def _rank_attributes(self, function: cst.FunctionDef) -> list[cst.Attribute]:
        """`args.rank`, `self.global_rank` read in `function` (scanned once per function)."""
        found = self._attributes.get(function)
        if found is None:
            found = []
            called = set()
            for node in descendants(function):
                if isinstance(node, cst.Call):
                    called.add(id(node.func))  # `dist.get_rank()`: a function, not a rank
                elif id(node) not in called and isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
                    name = node.attr.value
                    if self.rank_analysis.is_rank_name(name) and not name.startswith(("is_", "should_")):
                        found.append(node)
            self._attributes[function] = found
        return found

    def _distributed_alias(self) -> str:
        for name, binding in self.ctx.scopes.final_module_names.items():
            if binding.qualnames == frozenset({"torch.distributed"}):
                return name
        return "dist"


def _accelerator(name: str, values: tuple[cst.CSTNode, ...], ctx) -> bool:
    """An `Accelerator()`, or a name `accelerator` that holds no literal
    (Lightning's `accelerator="gpu"` is a string)."""
    if any(isinstance(v, cst.Call) and ctx.qualified_names(v.func) & ACCELERATOR_CLASSES for v in values):
        return True
    if name not in _ACCELERATOR_NAMES:
        return False
    for value in values:
        if isinstance(value, cst.Param):
            if value.default is not None:
                return False  # `accelerator="gpu"`, `accelerator=None`
        elif not isinstance(value, cst.Call):
            return False
    return True


def _zero_leaves(shape: TestShape, rank: RankAnalysis) -> bool:
    """Whether every rank-dependent leaf of `shape` tests for rank 0 (of the job or the node)."""
    if shape.op != "leaf":
        return all(_zero_leaves(child, rank) for child in shape.children)
    return shape.kind in (ZERO, NODE_ZERO) or not rank.is_rank_dependent(shape.deps)


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _candidate(test: cst.CSTNode) -> bool:
    """A test shaped like a rank-0 test (`x == 0`, `x != 0`, a predicate, `not` of one)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _candidate(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        return isinstance(operator, (cst.Equal, cst.NotEqual)) and (
            _is_zero(test.left) or _is_zero(test.comparisons[0].comparator)
        )
    target = test.func if isinstance(test, cst.Call) else test
    return isinstance(target, (cst.Name, cst.Attribute))


def _opposite(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`not X` -> `X`, `x != 0` -> `x == 0`; None for other tests."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        if isinstance(comparison.operator, cst.NotEqual):
            return test.with_changes(comparisons=[comparison.with_changes(operator=cst.Equal())])
    return None


def _rank_test(test: cst.BaseExpression) -> RankTest:
    code = cst.Module([]).code_for_node
    text = code(test).strip()
    if isinstance(test, cst.Comparison):
        comparison = test.comparisons[0]
        subject = comparison.comparator if _is_zero(test.left) else test.left
        negated = code(test.with_changes(comparisons=[comparison.with_changes(operator=cst.NotEqual())])).strip()
        return RankTest(text, negated, code(subject).strip())
    return RankTest(text, f"not {text}")


def _free_names(test: cst.CSTNode) -> list[str]:
    """The names `test` reads (not attribute names or keywords)."""
    found: list[str] = []
    todo: list[cst.CSTNode] = [test]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Name):
            found.append(node.value)
        elif isinstance(node, cst.Attribute):
            todo.append(node.value)
        elif isinstance(node, cst.Arg):
            todo.append(node.value)
        else:
            todo.extend(children(node))
    return found


def _uses_self(test: cst.CSTNode) -> bool:
    return any(name in ("self", "cls") for name in _free_names(test))
