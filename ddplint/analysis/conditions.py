"""Reading rank tests as text: which tests are complements of each other
(``rank == 0`` / ``rank != 0``, ``is_main`` / ``not is_main``) and which
exclude an earlier one. Pure syntax: no bindings, no ranks."""

from __future__ import annotations

import re
from typing import Iterator, Sequence

from ddplint.lazy import cst


def excludes(test: cst.CSTNode, earlier: cst.CSTNode) -> bool:
    """Whether `test` being true makes `earlier` false: ``in_order`` excludes
    ``not in_order and should_log()``, so an ``elif in_order:`` branch does not
    depend on the earlier test."""
    negated = _negation(_subject(test))
    todo = [earlier]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
            todo += [node.left, node.right]
        elif _subject(node) == negated:
            return True
    return False


def _negation(text: str) -> str:
    return text[4:] if text.startswith("not ") else f"not {text}"


def polarity(test: cst.CSTNode) -> tuple[str, bool] | None:
    """(subject, positive) for simple rank tests, to pair complementary guards.

    ``rank == 0`` and ``rank != 0``, ``is_main`` and ``not is_main``,
    ``local_rank not in [-1, 0]`` and ``local_rank == 0`` are complementary.
    """
    positive = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        positive, test = not positive, test.expression
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        if isinstance(operator, (cst.NotEqual, cst.NotIn, cst.IsNot, cst.GreaterThan, cst.GreaterThanEqual)):
            positive = not positive
        return _subject(test.left), positive
    if isinstance(test, (cst.Name, cst.Attribute, cst.Call)):
        return _subject(test), positive
    return None


def _subject(node: cst.CSTNode) -> str:
    """The test's subject as text, spaces normalised (asked for every guard
    of every node the walk visits: generating the code once per node)."""
    if node.__class__ is cst.Name:
        return node.value  # type: ignore[attr-defined]
    known = _SUBJECTS.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    if len(_SUBJECTS) > 4096:
        _SUBJECTS.clear()
    text = re.sub(r"\s+", " ", cst.Module([]).code_for_node(node)).strip()
    _SUBJECTS[id(node)] = (node, text)
    return text


#: id(node) -> (node, its subject): LibCST's nodes never change.
_SUBJECTS: dict[int, tuple[cst.CSTNode, str]] = {}


def none_branches(stack: Sequence[cst.CSTNode]) -> Iterator[tuple[str, cst.CSTNode]]:
    """For each ``if X is None:`` / ``else:`` around the last node of `stack`
    whose branch holding it is the one where X is None (the body of
    ``if X is None:``, the ``else`` of ``if X is not None:``): (X as text,
    the other branch), innermost first, up to the enclosing function."""
    for index in range(len(stack) - 2, -1, -1):
        node, child = stack[index], stack[index + 1]
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            return
        if not isinstance(node, cst.If) or not isinstance(node.orelse, cst.Else):
            continue
        test = node.test
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            continue
        operator, comparator = test.comparisons[0].operator, test.comparisons[0].comparator
        if not (isinstance(comparator, cst.Name) and comparator.value == "None"):
            continue
        if isinstance(operator, cst.Is) and child is node.body:
            yield _subject(test.left), node.orelse
        elif isinstance(operator, cst.IsNot) and child is node.orelse:
            yield _subject(test.left), node.body


def mentions(node: cst.CSTNode, subject: str) -> bool:
    """Whether `node` holds the name or attribute `subject` (as `none_branches` spells it)."""
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, (cst.Name, cst.Attribute)) and _subject(current) == subject:
            return True
        todo.extend(current.children)
def conjuncts(test: cst.CSTNode) -> list[cst.CSTNode]:
    """The operands of a chain of ``and`` (the test itself when it is none)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return conjuncts(test.left) + conjuncts(test.right)
    return [test]


def disjuncts(test: cst.CSTNode) -> list[cst.CSTNode]:
    """The operands of a chain of ``or`` (the test itself when it is none)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return disjuncts(test.left) + disjuncts(test.right)
    return [test]


def implies(known: cst.CSTNode, test: cst.CSTNode) -> bool:
    """Whether `known` being true makes `test` true, read as text: the same
    test, or a subject equal to one constant tested against another
    (``kind == Kind.GLOBAL`` makes ``kind != Kind.LEGACY`` and
    ``kind not in (Kind.LEGACY, Kind.LOCAL)`` true)."""
    if _subject(known) == _subject(test):
        return True
    equal = _equality(known)
    if equal is None:
        return False
    subject, values = equal
    if not values:
        return False
    other = _inequality(test)
    if other is None or other[0] != subject:
        return False
    return all(_distinct(v, w) for v in values for w in other[1])


def _equality(test: cst.CSTNode) -> tuple[str, list[cst.CSTNode]] | None:
    """(subject, constants) of ``x == C`` / ``x in (C, D)``."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    if isinstance(target.operator, cst.Equal):
        values = [target.comparator]
    elif isinstance(target.operator, cst.In) and isinstance(target.comparator, (cst.Tuple, cst.List, cst.Set)):
        values = [e.value for e in target.comparator.elements if isinstance(e, cst.Element)]
        if len(values) != len(target.comparator.elements):
            return None
    else:
        return None
    return _subject(test.left), values


def _inequality(test: cst.CSTNode) -> tuple[str, list[cst.CSTNode]] | None:
    """(subject, constants) of ``x != C`` / ``x not in (C, D)`` / ``not x == C``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        if isinstance(inner, cst.Comparison) and len(inner.comparisons) == 1:
            operator = inner.comparisons[0].operator
            if isinstance(operator, cst.Equal):
                return _subject(inner.left), [inner.comparisons[0].comparator]
        return None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    if isinstance(target.operator, cst.NotEqual):
        return _subject(test.left), [target.comparator]
    if isinstance(target.operator, cst.NotIn) and isinstance(target.comparator, (cst.Tuple, cst.List, cst.Set)):
        values = [e.value for e in target.comparator.elements if isinstance(e, cst.Element)]
        if len(values) == len(target.comparator.elements):
            return _subject(test.left), values
    return None


def _distinct(one: cst.CSTNode, other: cst.CSTNode) -> bool:
    """Two constants certainly different: literals of different values, or
    members of one enumeration spelled differently (``Kind.A``, ``Kind.B``)."""
    literals = (cst.Integer, cst.Float, cst.SimpleString)
    if isinstance(one, literals) and isinstance(other, literals):
        return type(one) is type(other) and one.evaluated_value != other.evaluated_value
    if isinstance(one, cst.Attribute) and isinstance(other, cst.Attribute):
        return _subject(one.value) == _subject(other.value) and one.attr.value != other.attr.value and (
            one.attr.value.isupper() and other.attr.value.isupper()
        )  # fmt: skip
    return False
