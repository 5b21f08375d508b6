"""DDP000 says what CPython says: a file gets DDP000 exactly when
`compile(source, path, "exec")` raises (it executes nothing).

Generated programs nest the statements CPython's compiler rejects in some
contexts and accepts in others (`return`, `yield`, `await`, `break`,
`continue`, `nonlocal`, `global`, `import *`, a walrus over a comprehension
variable, duplicate arguments, starred targets, future imports) inside
functions, classes, loops and comprehensions; coding cookies naming text
and non-text codecs add the decoder's verdict. test_fuzz.py asserts the
same of grammar-random modules and mutated fixtures (the parser's verdict),
and `bench/ddp000_oracle.py` of every file of CPython's Lib/ and of the
benchmark corpus.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddplint.rule import all_rules_settings
from ddplint.engine import check_bytes, check_source
from ddplint.engine.source import SourceProblem, python_ast, syntax_problem

pytestmark = pytest.mark.fuzz

ALL = all_rules_settings()

SIMPLE = [
    "pass", "x = 1", "print(x)", "return", "return x", "yield x", "yield from y", "x = yield", "await x",
    "break", "continue", "nonlocal x", "global x", "global y", "from os import *", "import os", "del x",
    "x += 1", "x: int = 1", "y: int", "[y := 1 for y in z]", "[(w := 1) for y in z]", "[w for y in z if (y := 1)]",
    "{k: (k := 1) for k in z}", "[[(w := 1) for w in y] for y in z]", "f = lambda: (yield)", "f = lambda a, a: 1",
    "*a = b", "a, *b = c", "a, *b, *c = d", "print(*a)", "assert x", "raise", "[await x for x in y]",
    "[x async for x in y]", "from __future__ import annotations", "from __future__ import braces",
    "__debug__ = 1", "f(x for x in y, 1)", "def g(x, *, y, **x): pass", "def h(a, /, a): pass",
    "class D(x for x in y): pass", "match x:\n    case a:\n        pass\n    case 1:\n        pass",
    "match x:\n    case [a, a]:\n        pass", "match x:\n    case 1 | a:\n        pass",
    "match x:\n    case {1: a, 1: b}:\n        pass", "match x:\n    case C(a=1, a=2):\n        pass",
    "try:\n    pass\nexcept* ValueError:\n    break",
]  # fmt: skip
HEADERS = [
    "def f(x):", "def f(a, a):", "async def g():", "class C:", "for x in y:", "async for x in y:", "while x:",
    "if x:", "with a:", "async with a:", "try:",
]  # fmt: skip


@st.composite
def block(draw, depth: int = 0) -> list[str]:
    """Lines of a block: simple statements and compound ones nesting more."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 3 and draw(st.booleans()):
            header = draw(st.sampled_from(HEADERS))
            lines.append(header)
            lines += ["    " + line for line in draw(block(depth + 1))]
            if header == "try:":
                lines.append(draw(st.sampled_from(["finally:", "except ValueError:", "except* ValueError:"])))
                lines += ["    " + line for line in draw(block(depth + 1))]
            elif header.startswith(("for", "while")) and draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + line for line in draw(block(depth + 1))]
        else:
            lines += draw(st.sampled_from(SIMPLE)).splitlines()
    return lines


def compiles(source: str | bytes) -> bool:
    """CPython's verdict (compiling executes nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(source, "gen.py", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def assert_same_verdict(source: str) -> None:
    result = check_source("gen.py", source, ALL)
    assert not [n for n in result.notices if n.internal], [n.detail for n in result.notices]
    ddp000 = [f.message for f in result.findings if f.rule == "DDP000"]
    assert bool(ddp000) == (not compiles(source)), ddp000
    # The whole-project analysis checks through CPython's tree, a file alone without: the same answer.
    tree = python_ast(source, "gen.py")
    assert syntax_problem(source, "gen.py") == (tree if isinstance(tree, SourceProblem) else None)


@given(block())
def test_compile_time_error_shapes(lines: list[str]) -> None:
    assert_same_verdict("\n".join(lines) + "\n")


CODECS = ["utf-8", "latin-1", "ascii", "cp1252", "utf-16", "utf-32", "idna", "unicode_escape", "euc-jp", "hex",
          "rot13", "base64", "zlib", "bz2", "uu", "quopri", "punycode", "undefined", "klingon"]  # fmt: skip


@given(st.sampled_from(CODECS), st.sampled_from(["", "\ufeff"]), block(2), st.binary(max_size=4))
def test_coding_cookies(codec: str, bom: str, lines: list[str], tail: bytes) -> None:
    data = bom.encode() + f"# -*- coding: {codec} -*-\n".encode() + "\n".join(lines).encode() + b"\n" + tail
    result = check_bytes("gen.py", data, ALL)
    assert not [n for n in result.notices if n.internal], [n.detail for n in result.notices]
    ddp000 = [f.message for f in result.findings if f.rule == "DDP000"]
    assert bool(ddp000) == (not compiles(data)), ddp000
