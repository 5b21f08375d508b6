"""A module's summary reads the same from its outline as from its whole tree.

The whole-project analysis builds CPython's tree of each module's outline
(function bodies and the rest of class bodies left out) instead of its whole
tree; every import, ``__all__``, top-level definition and method, with its
line, must come out the same: over tricky shapes here, the fixtures,
ddplint's own modules and part of the standard library.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from ddplint.project.outline import outline_tree
from ddplint.project.summary import imports_summary

SHAPES = {
    "docstrings that look like code": (
        '"""Module.\n\nimport fake\ndef fake(): pass\n"""\nimport os\n\n\n'
        "def f(a,\n      b=')'):\n    '''Body.\nclass Fake:\n    def no(self): ...\n'''\n    return a\n\n\n"
        "class A:\n    \"\"\"Doc.\n\ndef not_a_method(self): pass\n\"\"\"\n\n    def real(self):\n        pass\n"
    ),
    "decorated methods and nested classes": (
        "import functools\n\n\nclass A(Base):\n    @property\n    def x(self):\n        return 1\n\n"
        "    class Inner:\n        def hidden(self):\n            pass\n\n"
        "    @functools.cache\n    async def y(self): return 2\n\n    z = 3\n\n\n@decorator\ndef top(): ...\n"
    ),
    "blocks of the top level": (
        "try:\n    from .fast import kernel\nexcept ImportError:\n    kernel = None\nelse:\n    import extra\n"
        "finally:\n    pass\n\nif TYPE_CHECKING:\n    from typing import Any\n    def typed(x: Any) -> Any: ...\n"
        "elif sys.version_info >= (3, 11):\n    import tomllib as toml\nelse:\n    import tomli as toml\n\n"
        "for name in ('a', 'b'):\n    globals()[name] = 1\n\nwith suppress(ImportError):\n    from . import optional\n"
        "while False:\n    import never\n"
    ),
    "continuations and brackets": (
        "from .utils import (\n    gather,  # a comment with ) and :\n    reduce as r,\n)\n"
        "__all__ = [\n    'gather',\n    \"r\",\n]\nx = \\\n    1\n\n\ndef g(\n    a: dict = {'k': [1, (2,\n 3)]},\n) -> None:\n"
        "    s = '''\n:\n'''\n    return None\n\n\nclass B: pass\nclass C: x = {1:\n  2}\n"
        "class K:\n    def m(self): return 1 + \\\n        1\n    def n(self): pass\n"
    ),
    "one-line bodies and semicolons": (
        "import a; import b as c\ndef f(): return 1\nclass D:\n    def m(self): return 2\n    def n(self): pass; pass\n"
        "if x: import y\nclass E(object): '''doc'''\n"
    ),
    "a match statement and functions in functions": (
        "import re\n\nmatch re.compile('x'):\n    case None:\n        import nothing\n        def in_case():\n"
        "            return 1\n    case _:\n        pass\n\n\ndef outer():\n    import inner_import\n    def inner():\n"
        "        class Local:\n            def m(self): pass\n        return Local\n    return inner\n"
    ),
    "statements the summary does not read, left out": (
        "x = 1; import kept\nconfig = dict(\n    a=1,\n)\nif flag:\n    value = 2\nelse:\n    value = 3\n"
        "async def main():\n    pass\n\n\nasync def runner(): return 1\n"
        "try:\n    run()\nexcept (ValueError,\n        KeyError):\n    @cache\n    def fallback(): ...\n"
        "with open('f') as fh:\n    data = fh.read()\n__all__ = ['kept', 'Model'] + other\n__all__ = ('kept',\n 'Model')\n"
        "@dataclass(frozen=True)\nclass Model(Base, metaclass=Meta):\n    name: str = 'x'\n"
        "    def method(self, a: dict = {'k': 1}, *args,\n               **kw) -> 'Model':\n        return self\n"
        "class Empty(Base): x = 1\nfor i in range(3):\n    print(i)\nelse:\n    from . import late\n"
        "while True:\n    break\n" + ("def typed[T](x: T) -> T: return x\n" if sys.version_info >= (3, 12) else "")
    ),
    "blocks it does not read in, with their clauses": (
        "import asyncio\n\n\nasync def f():\n    async for x in y:\n        import inner\n    else:\n        pass\n\n\n"
        "if True:\n    async with lock:\n        import in_async_with\n    else_value = 1\n"
        "match command:\n    case 'a':\n        import in_case\n    case _:\n        pass\n"
        "if x:\n    pass\nelif y:\n    from . import in_elif\n"
    ),
    "strings with escapes and prefixes": (
        "s = 'it\\'s # not a comment'\nt = r'\\d+' + b\"\\\"\" + f'{s!r:>{10}}'\nu = '''a ''' + \"\"\"b \\\"\"\" c\"\"\"\n"
        "import after_strings\n\n\ndef h():\n    return f'''{\n        s}'''\n\n\nimport last\n"
    ),
}


def _same(text: str) -> None:
    outline = outline_tree(text)
    assert outline is not None
    assert imports_summary(outline) == imports_summary(ast.parse(text))


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_the_outline_summarizes_as_the_whole_tree(text: str) -> None:
    _same(text)


def test_the_outline_summarizes_real_modules_as_their_whole_trees() -> None:
    stdlib = Path(ast.__file__).parent
    ours = Path(outline_tree.__code__.co_filename).parents[1]
    checked = 0
    for path in [*sorted(FIXTURES.rglob("*.py")), *sorted(ours.rglob("*.py")), *sorted(stdlib.glob("*.py"))[:80]]:
        try:
            text = path.read_text(encoding="utf-8")
            full = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue  # CPython rejects it: never summarized
        outline = outline_tree(text)
        if outline is not None:
            assert imports_summary(outline) == imports_summary(full), path
            checked += 1
    assert checked > 500


@pytest.mark.parametrize(
    "text", ["if x:\n\timport os\n", "import os\r\nimport sys\r\n", "import os\n\x0cimport sys\n"], ids=["tab", "crlf", "ff"]
)
def test_text_the_outline_does_not_measure_has_none(text: str) -> None:
    assert outline_tree(text) is None


@pytest.mark.skipif(sys.version_info < (3, 12), reason="quotes reused inside an f-string field: Python 3.12+")
def test_an_f_string_nesting_its_own_quotes_has_no_outline() -> None:
    text = 'class A:\n    x = f"{d["a"]}"\n    def m(self):\n        pass\n'
    assert outline_tree(text) is None
    assert outline_tree('class A:\n    x = f"{d[0]}"\n    def m(self):\n        pass\n') is not None
