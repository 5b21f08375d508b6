"""LibCST as ddplint loads it: the same answers, for less time.

`ddplint.lazy.libcst()` gives LibCST's node classes a metaclass whose
isinstance test is the type's own; `parse_module` skips the checks of the
nodes the parser builds. Neither may change an answer.
"""

from __future__ import annotations

import abc
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
