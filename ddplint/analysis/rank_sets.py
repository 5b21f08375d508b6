"""Which ranks get past a rank guard: one, one per node, all but one, some.

``if rank == 0:`` lets one rank through and its ``else`` every rank but
that one; ``if local_rank == 0:`` (or ``args.rank % ngpus_per_node == 0``)
one per node; ``if rank != 0: return`` leaves one for the rest of the
block; ``if rank != src:`` (``src`` the same on every rank) all but one
and its ``else`` one; a guard that tests the rank any other way (``if rank in ranks:``,
``while step < rank_steps[rank]:``) some data-dependent set. Operands that
are the same on every rank narrow nothing with ``and``; with ``or`` they
make the set depend on the configuration, except an operand that holds only
in a one-process run (``if not args.distributed or rank == 0:``). Names
assigned a rank test (``is_leader = rank == 0``, ``args.save_logs =
args.logs and is_master(args)``) are followed to it.

Two phases, because names resolve only where they are: `TestShape.of` reads
a test during the walk into a small tree whose leaves keep their symbolic
rank dependencies; `RankSets.evaluate` answers after the walk, when those
are final.
"""

from __future__ import annotations

from dataclasses import replace

from ddplint import knowledge
from ddplint.analysis.guards import (
    EQUAL, NODE_ZERO, NONZERO, NOT_ONE, ONE, OTHER, UNEQUAL, ZERO, RankView, Runs, TestShape, larger, smaller,
)
from ddplint.analysis.names import last_name
from ddplint.lazy import cst

#: Predicates true on the global rank 0 (or the main process) only.
MAIN_PREDICATES = knowledge.texts(knowledge.NAME, knowledge.MAIN)
#: Predicates true on one process per node.
NODE_PREDICATES = knowledge.texts(knowledge.NAME, knowledge.NODE_MAIN)
#: Predicates true on one (other) rank: the last stage of a pipeline holds the loss.
ONE_RANK_PREDICATES = knowledge.texts(knowledge.NAME, knowledge.ONE)
#: Words in a rank's text that make it a rank within the node.
_LOCAL_WORDS = ("local", "gpu", "device")
_MAX_DEPTH = 6
#: The test kind of a helper whose result is true on these ranks (`Runs` names).
_PICKED = {"ONE": ZERO, "PER_NODE": NODE_ZERO, "ALL_BUT_ONE": NONZERO}

class ShapeReader:
    """Reads guard tests into `TestShape`s during the walk."""

    def __init__(self, rank: RankView) -> None:
        self.rank = rank
        #: Shapes of the values assigned to attributes (`self.is_main = rank == 0`), by name.
        self.attributes: dict[str, list[TestShape]] = {}

    def note_attribute(self, name: str, value: cst.BaseExpression) -> None:
        if isinstance(value, (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.Call, cst.Attribute, cst.Name)):
            self.attributes.setdefault(name, []).append(self.of(value))

    def of(self, test: cst.BaseExpression, depth: int = 0) -> TestShape:
        if depth > _MAX_DEPTH:
            return self._leaf(test, OTHER)
        depth += 1
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return TestShape("not", (self.of(test.expression, depth),))
        if isinstance(test, cst.BooleanOperation):
            op = "and" if isinstance(test.operator, cst.And) else "or"
            return TestShape(op, (self.of(test.left, depth), self.of(test.right, depth)))
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            holder = self._holder_test(test)
            if holder is not None:
                return holder
            kind = self._comparison(test)
            if kind in (EQUAL, UNEQUAL):
                sides = (self.rank.deps(test.left), self.rank.deps(test.comparisons[0].comparator))
                return replace(self._leaf(test, kind), sides=sides)
            return self._leaf(test, kind)
        if isinstance(test, (cst.Name, cst.Attribute, cst.Call)):
            return self._predicate(test, depth)
        return self._leaf(test, OTHER)

    def _leaf(self, test: cst.BaseExpression, kind: str) -> TestShape:
        single = self.rank.single_process
        return TestShape(
            "leaf", deps=self.rank.deps(test), kind=kind,
            single_if_true=single.implies(test, truthy=True), single_if_false=single.implies(test, truthy=False),
            node=test,
        )  # fmt: skip

    def _predicate(self, test: cst.BaseExpression, depth: int) -> TestShape:
        target = test.func if isinstance(test, cst.Call) else test
        name = last_name(target) or ""
        if name in MAIN_PREDICATES:
            return self._leaf(test, ZERO)
        if name in NODE_PREDICATES:
            return self._leaf(test, NODE_ZERO)
        if name in ONE_RANK_PREDICATES:
            return self._leaf(test, ONE)
        if isinstance(test, cst.Call) and self.rank.ctx.facts:
            # A project helper of any name whose returns pick ranks (`Fact.picks`): `first_in_job()`.
            fact = self.rank.ctx.facts.first(self.rank.ctx.scopes.imported_qualnames(test.func))
            if fact is not None and fact.picks in _PICKED:
                return self._leaf(test, _PICKED[fact.picks])
        if isinstance(test, cst.Name):
            holder = self.rank.holder_shape(test)
            if holder is not None:
                return holder  # `if writer:`, `writer` bound under `if rank == 0:` and None elsewhere
            values = [v for v in self.rank.ctx.values_of(test) if isinstance(v, cst.BaseExpression)]
            if len(values) == 1:
                return self.of(values[0], depth)
        if isinstance(test, cst.Attribute):
            shapes = self.attributes.get(test.attr.value, [])
            if len(shapes) == 1:
                return shapes[0]
        if self.rank.is_rank_name(name):
            if name.startswith(("is_", "should_")):
                return self._leaf(test, NODE_ZERO if "local" in name else ZERO)
            return self._leaf(test, NONZERO)  # `if rank:` is `if rank != 0:`
        return self._leaf(test, OTHER)

    def _holder_test(self, test: cst.Comparison) -> TestShape | None:
        """`writer is not None` (or `is None`) for a name that only rank guards bind (`holder_shape`)."""
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if not (isinstance(operator, (cst.Is, cst.IsNot)) and isinstance(test.left, cst.Name)):
            return None
        if not (isinstance(right, cst.Name) and right.value == "None"):
            return None
        holder = self.rank.holder_shape(test.left)
        if holder is None or isinstance(operator, cst.IsNot):
            return holder
        return TestShape("not", (holder,))

    def _comparison(self, test: cst.Comparison) -> str:
        operator = test.comparisons[0].operator
        left, right = test.left, test.comparisons[0].comparator
        subject, value = (right, left) if _integer(left) is not None else (left, right)
        if isinstance(operator, (cst.In, cst.NotIn)):
            if _literals(value) in ({0, -1}, {0}):
                return self._zero(subject) if isinstance(operator, cst.In) else NONZERO
            return OTHER
        if isinstance(subject, cst.BinaryOperation) and isinstance(subject.operator, cst.Modulo):
            if _integer(value) == 0 and isinstance(operator, (cst.Equal, cst.NotEqual)):
                return NODE_ZERO if isinstance(operator, cst.Equal) else NONZERO
            return OTHER
        number = _integer(value)
        if isinstance(operator, (cst.Equal, cst.NotEqual)):
            if number is None and not _is_last_rank(value):
                if any(isinstance(side, (cst.BaseString, cst.Name)) and not _symbol(side) for side in (left, right)):
                    return OTHER  # `device == "cuda"`, `flag == True`: not a rank number
                return EQUAL if isinstance(operator, cst.Equal) else UNEQUAL  # `rank != src`
            if isinstance(operator, cst.Equal):
                return self._zero(subject) if number == 0 else ONE
            return NONZERO if number == 0 else NOT_ONE  # `rank != 3`: all but one
        if number is not None and subject is left:
            if {cst.LessThan: number == 1, cst.LessThanEqual: number == 0}.get(type(operator)):
                return self._zero(subject)
            if {cst.GreaterThan: number == 0, cst.GreaterThanEqual: number == 1}.get(type(operator)):
                return NONZERO
        return OTHER

    def _zero(self, subject: cst.BaseExpression) -> str:
        text = self.rank.ctx.module.code_for_node(subject).lower()
        return NODE_ZERO if any(word in text for word in _LOCAL_WORDS) else ZERO


class RankSets:
    """After the walk: the ranks on which a `TestShape` holds (or fails)."""

    def __init__(self, rank: RankView) -> None:
        self.rank = rank

    def evaluate(self, shape: TestShape, truthy: bool) -> Runs:
        if shape.op == "not":
            return self.evaluate(shape.children[0], not truthy)
        if shape.op == "leaf":
            if not self.rank.is_rank_dependent(shape.deps):
                return Runs.ALL
            if shape.kind in (EQUAL, UNEQUAL) and sum(map(self.rank.is_rank_dependent, shape.sides)) != 1:
                return Runs.SOME  # `rank == peer_rank`: which ranks pass depends on the data
            return _leaf_runs(shape.kind, truthy)
        left, right = shape.children
        both = (shape.op == "and") == truthy  # every operand holds (or every one fails)
        if both:
            return smaller(self.evaluate(left, truthy), self.evaluate(right, truthy))
        for uniform, other in ((left, right), (right, left)):
            if not self._rank_dependent(uniform):
                if self._single(uniform, truthy):
                    return self.evaluate(other, truthy)  # a distributed run takes the other operand
                return Runs.SOME
        return larger(self.evaluate(left, truthy), self.evaluate(right, truthy))

    def rank_leaf(self, shape: TestShape) -> tuple[cst.CSTNode, bool] | None:
        """The one rank-dependent leaf of a test and whether the test holds
        when it does: ``not is_leader and num_gpus > 1`` -> (``rank == 0``,
        False). None when no single leaf decides."""
        if shape.op == "leaf":
            return (shape.node, True) if shape.node is not None and self._rank_dependent(shape) else None
        if shape.op == "not":
            inner = self.rank_leaf(shape.children[0])
            return (inner[0], not inner[1]) if inner is not None else None
        if shape.op != "and":
            return None
        deciding = [c for c in shape.children if self._rank_dependent(c)]
        return self.rank_leaf(deciding[0]) if len(deciding) == 1 else None

    def _rank_dependent(self, shape: TestShape) -> bool:
        if shape.op == "leaf":
            return self.rank.is_rank_dependent(shape.deps)
        return any(self._rank_dependent(c) for c in shape.children)

    def _single(self, shape: TestShape, truthy: bool) -> bool:
        """Whether `shape` being `truthy` means a one-process run."""
        if shape.op == "not":
            return self._single(shape.children[0], not truthy)
        if shape.op == "leaf":
            return shape.single_if_true if truthy else shape.single_if_false
        either = (shape.op == "and") == truthy
        results = [self._single(c, truthy) for c in shape.children]
        return any(results) if either else all(results)


def _leaf_runs(kind: str, truthy: bool) -> Runs:
    if kind == ZERO:
        return Runs.ONE if truthy else Runs.ALL_BUT_ONE
    if kind == NODE_ZERO:
        return Runs.PER_NODE if truthy else Runs.ALL_BUT_ONE
    if kind in (ONE, EQUAL):
        return Runs.ONE if truthy else Runs.ALL_BUT_ONE
    if kind in (NONZERO, NOT_ONE, UNEQUAL):
        return Runs.ALL_BUT_ONE if truthy else Runs.ONE
    return Runs.SOME


def _integer(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value, 0)
    return None


def _symbol(node: cst.BaseExpression) -> bool:
    """A name that may hold a rank number (not a string, `True`, `False`, `None`)."""
    return isinstance(node, cst.Name) and node.value not in ("True", "False", "None")


def _literals(node: cst.BaseExpression) -> set[int | None]:
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return {_integer(e.value) for e in node.elements}
    return {None}


def _is_last_rank(node: cst.BaseExpression) -> bool:
    """`world_size - 1`: the last rank."""
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract) and _integer(node.right) == 1
