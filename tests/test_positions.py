"""Positions found one statement at a time are LibCST's own, node for node.

The engine places a file's reported nodes by generating only the statement
that holds each (`ddplint.engine.positions.Positions`); LibCST's
`PositionProvider` generates the whole module. Both must give every node
the same range, whatever the source's shape.
"""

from __future__ import annotations

import ast

from pathlib import Path

import libcst as cst
import pytest

from ddplint.engine.positions import Positions, resolve_positions
from ddplint.engine.source import SourceError, decode_source

ROOT = Path(__file__).resolve().parent.parent

SHAPES = {
    "decorators": (
        "import functools\n\n# a comment\n@functools.lru_cache(\n    maxsize=None,\n)\n"
        "# between\n@staticmethod\n\nasync def f(x, *, y=1):\n    return x\n"
    ),
    "elif chains": (
        "def g(a):\n    if a == 1:\n        x = 1\n    elif a == 2: x = 2; y = 3\n"
        "    elif (a ==\n          3):\n        pass\n    else:\n        x = 4\n"
    ),
    "one-line suites": "if True: a = 1; b = 2\nwhile False: break\nfor i in range(3): print(i); continue\n",
    "semicolons after non-ASCII": "s = 'é日本'; t = s; u = f'{t!r:>{10}}'\n",
    "continuation lines": "total = (1 +\n         2) + \\\n    3\nfoo(a,\n  b=[\n      1,\n  ])\n",
    "tabs": "class A:\n\tdef m(self):\n\t\tif self:\n\t\t\treturn (1,\n 2)\n",
    "crlf": "def f():\r\n    x = 1\r\n    return x\r\n\r\nclass B:\r\n    pass\r\n",
    "form feed": "x = 1\n\x0c\ndef f():\n    return 2\n",
    "try and with": (
        "async def h():\n    async with a() as b, c():\n        pass\n    try:\n        pass\n"
        "    except* ValueError as e:\n        raise\n    else:\n        pass\n    finally:\n        del b\n"
    ),
    "match": (
        "match command.split():\n    case [action]:\n        go(action)\n    case [action, obj] if obj:\n"
        "        pass\n    case _:\n        pass\n"
    ),
    "nested classes": (
        "class Outer:\n    '''doc'''\n    x: int = 1\n\n    class Inner(Base, metaclass=M):\n"
        "        @property\n        def p(self): return self.x\n\n    lam = lambda s: s\n"
    ),
    "globals and imports": "from . import (a,\n    b)\nimport os.path as p\nglobal q\nassert q, 'm'\n",
    "empty module": "",
    "comments only": "# nothing here\n\n# still nothing\n",
}


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


def _every_node(root: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node below `root`, whitespace, comments and punctuation included."""
    collector = _Collector()
    root.visit(collector)
    return collector.nodes[1:]


def _assert_same(source: str, sample: int = 1, given_tree: bool = False) -> None:
    """Every `sample`-th node asked first, on its own (the generation stops
    at it), then every node, the module's statements first (their whole code
    generated once). With `given_tree`, `Positions` starts from the CPython
    tree the engine already has instead of parsing its own."""
    module = cst.parse_module(source)
    whole = resolve_positions(module)
    lazy = Positions(module, source, ast.parse(source) if given_tree else None)
    nodes = _every_node(module)
    # The module's own blank and comment lines lie in no statement: asked
    # first, they would have the whole module generated. Asked last.
    outside = {id(n) for line in (*module.header, *module.footer) for n in [line, *_every_node(line)]}
    inside = [n for n in nodes if id(n) not in outside]
    for node in [*inside[::sample], *module.body, *inside]:
        assert lazy[node] == whole[node], (type(node).__name__, cst.Module([]).code_for_node(node))
    assert lazy._whole is None, "every node in a statement is placed without generating the whole module"
    for node in nodes:
        assert lazy[node] == whole[node], (type(node).__name__, cst.Module([]).code_for_node(node))


@pytest.mark.parametrize("given_tree", [False, True], ids=["own tree", "given tree"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_node_is_where_libcst_puts_it(name: str, given_tree: bool) -> None:
    _assert_same(SHAPES[name], given_tree=given_tree)


def _sources() -> list[Path]:
    """A spread of the fixtures and model snippets (every sixth: the shapes
    above cover the syntax; these, the code the rules report on)."""
    files = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "tests" / "semantic").glob("*.py"))
    return files[::6]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_nodes_are_where_libcst_puts_them(path: Path) -> None:
    try:
        source = decode_source(path.read_bytes())
        cst.parse_module(source)
    except (SourceError, cst.ParserSyntaxError):
        pytest.skip("LibCST cannot parse it (a DDP000 fixture)")
    _assert_same(source, sample=7)


def test_a_node_asked_first_inside_a_long_statement_gets_its_own_range() -> None:
    # Asked alone, the generation stops at the node: its range must not be cut short.
    source = "class C:\n" + "".join(f"    def m{i}(self):\n        return {i}\n" for i in range(50))
    module = cst.parse_module(source)
    whole = resolve_positions(module)
    target = module.body[0].body.body[30].body.body[0].body[0].value  # `30`
    assert Positions(module, source)[target] == whole[target]
    decorated = cst.parse_module("@a\n@b(\n  1)\ndef f(): pass\n")
    decorator = decorated.body[0].decorators[1]
    assert Positions(decorated, decorated.code)[decorator] == resolve_positions(decorated)[decorator]


class _Held(cst.CSTVisitor):
    """Each node with the innermost and the outermost statement that hold it."""

    def __init__(self) -> None:
        self.statements: list[cst.CSTNode] = []
        self.held: list[tuple[cst.CSTNode, cst.CSTNode, cst.CSTNode]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.statements:
            self.held.append((node, self.statements[-1], self.statements[0]))
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.statements.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.statements and self.statements[-1] is original_node:
            self.statements.pop()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_node_placed_by_the_statement_it_was_reported_in_is_where_libcst_puts_it(name: str) -> None:
    """A reported node comes with its statement (`Positions.hint`): the
    innermost one, an outer one, or (a rule's slip) one that does not hold
    it; its range, and the innermost statement that holds it, are the same
    as without the hint, and a line of simple statements that holds it
    places it without an index of every node."""
    source = SHAPES[name]
    module = cst.parse_module(source)
    whole = resolve_positions(module)
    finder = _Held()
    module.visit(finder)
    plain = Positions(module, source)
    elsewhere = module.body[-1] if module.body else module
    for node, inner, outer in finder.held:
        for statement in (inner, outer, elsewhere):
            hinted = Positions(module, source)
            hinted.hint(node, statement)
            assert hinted[node] == whole[node], (type(node).__name__, type(statement).__name__)
            if statement is inner and isinstance(inner, cst.SimpleStatementLine):
                assert hinted._anchor_of is None, "placed from its statement alone"
            hinted = Positions(module, source)
            hinted.hint(node, statement)
            assert hinted.statement_of(node) == plain.statement_of(node)
