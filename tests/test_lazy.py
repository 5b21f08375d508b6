"""LibCST as ddplint loads it: the same answers, for less time.

`ddplint.lazy.libcst()` gives LibCST's node classes a metaclass whose
isinstance test is the type's own; `parse_module` skips the checks of the
nodes the parser builds. Neither may change an answer.
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path

import libcst as cst
import pytest
from libcst._nodes.base import CSTNode

from ddplint.lazy import libcst, node_classes, parse_module

ROOT = Path(__file__).resolve().parent.parent


def test_node_classes_answer_isinstance_as_their_abc_would() -> None:
    libcst()
    classes = node_classes()
    assert len(classes) > 300
    assert all(type(cls) is not abc.ABCMeta for cls in classes), "every node class has the cheap metaclass"
    for cls in classes:
        for other in classes:
            assert issubclass(other, cls) == abc.ABCMeta.__subclasscheck__(cls, other), (other, cls)
    name = cst.Name("rank")
    assert isinstance(name, cst.BaseExpression) and isinstance(name, CSTNode)
    assert not isinstance(name, (cst.If, cst.BaseStatement, cst.BaseSmallStatement))
    assert not isinstance("rank", cst.Name)


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.py"))[:3] + sorted((ROOT / "fixtures").rglob("*.py"))[::40])
def test_parse_module_builds_the_tree_libcst_builds(path: Path) -> None:
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        expected = cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip("LibCST cannot parse it (a DDP000 fixture)")
    parsed = parse_module(source)
    assert parsed.deep_equals(expected)
    assert parsed.code == source


def test_nodes_built_after_a_parse_are_checked_again() -> None:
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def (:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("still not a name")  # the checks are back after a failed parse too


def test_the_parsers_constructors_build_what_the_classes_own_build() -> None:
    """Every node of a parsed file, built again by the quicker constructor the
    parser uses and by its class's own: equal, with every field given and
    with those left to their defaults (or default factories) left out. Almost
    every node class has a quicker constructor (one that could not be made
    would only be slower)."""
    from ddplint.analysis.tree import children, every_field
    from ddplint.lazy import _parser_constructors

    def every_node(root: CSTNode):  # whitespace and punctuation too
        todo = [root]
        while todo:
            node = todo.pop()
            yield node
            todo.extend(children(node, every_field))

    libcst()
    constructors = {cls: (own, quick) for cls, own, quick in _parser_constructors()}
    assert len(constructors) > 300
    sources = [p.read_text(encoding="utf-8", errors="replace") for p in sorted((ROOT / "ddplint").rglob("*.py"))[::4]]
    sources.append("async def f(*a, b=1, **k) -> int:\n    async with x as (y, z): yield [i async for i in y if i]\n")
    checked = set()
    for source in sources:
        for node in every_node(cst.parse_module(source)):
            cls = type(node)
            if cls not in constructors:
                continue
            own, quick = constructors[cls]
            fields = [f for f in dataclasses.fields(cls) if f.init]
            given = {f.name: getattr(node, f.name) for f in fields}
            defaulted = {f.name: given[f.name] for f in fields if not _is_default(f, given[f.name])}
            for kwargs in (given, defaulted):
                built, expected = cls.__new__(cls), cls.__new__(cls)
                quick(built, **kwargs)
                own(expected, **kwargs)
                assert built.deep_equals(expected), (cls.__name__, sorted(kwargs))
            checked.add(cls)
    assert len(checked) > 100, len(checked)


def _is_default(field, value) -> bool:  # type: ignore[no-untyped-def]
    """Whether `value` is what the field gets when a constructor leaves it out."""
    if field.default is not dataclasses.MISSING:
        return field.default == value
    if field.default_factory is not dataclasses.MISSING:
        made = field.default_factory()
        return made.deep_equals(value) if isinstance(made, CSTNode) and isinstance(value, CSTNode) else made == value
    return False
