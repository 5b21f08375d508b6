"""The prefilter reads a module's code alone: comments and prose left out.

Leaving out too much would make the prefilter skip a file a rule fires on,
so the code text is checked against CPython's own tokenizer: every name it
reads, every string without whitespace and every name in a replacement field
stays, over the fixtures, ddplint's own modules and the standard library's.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

import pytest

from conftest import FIXTURES
from ddplint.analysis.code_text import code_text
from ddplint.analysis.probe import words_of
from ddplint.engine import check_source
from ddplint.rule import all_rules_settings

TRICKY = [
    "x = '#' + rank  # a comment with 'quotes\"\n",
    's = """a docstring\nwith "quotes" and \\""" escaped\n"""\nrank = 1\n',
    "s = 'it\\'s rank'\nworld = 2\n",
    "s = 'a b \\\nc'; local_rank = 0\n",
    "m = f'rank {dist.get_rank()} of {world:{width}}'\n",
    "m = '{} of {}'.format(rank, world) + \"{{literal}} {x[0]}\"\n",
    "m = rf'{path}\\d+ {y!r}' + b'raw bytes' + u'unicode text'\n",
    "env = os.environ['LOCAL_RANK'] if 'RANK' in os.environ else \"cuda:0\"\n",
    "if'a b'in x: gather()\n",
    "q = '''one ' two '' three'''; r = \"\"\"a \" b \"\" c\"\"\"; all_reduce(t)\n",
    "unpaired = f'{x} and }}'; barrier()\n",
    "d = {'key': 'a value', 'other': broadcast}\n",
]


def _names(text: str) -> set[str]:
    """The words code reads, as CPython tokenizes `text`: names, strings
    without whitespace, and the names in f-strings' fields."""
    names: set[str] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME:
            names.add(token.string)
        elif token.type == tokenize.STRING:
            if not any(c in token.string for c in " \t\n"):
                names |= words_of(token.string)
            elif "f" in token.string.split("'")[0].split('"')[0].lower():
                expression = ast.parse(token.string, mode="eval")
                names |= {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)}
                names |= {n.attr for n in ast.walk(expression) if isinstance(n, ast.Attribute)}
    return names


def _corpus() -> list[Path]:
    stdlib = Path(ast.__file__).parent
    ours = Path(code_text.__code__.co_filename).parents[1]
    return [
        *sorted(FIXTURES.rglob("*.py")),
        *sorted(ours.rglob("*.py")),
        *sorted(stdlib.glob("*.py"))[:80],
    ]


def _source(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
        compile(text, str(path), "exec", ast.PyCF_ONLY_AST)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None  # the syntax-error fixtures: never scanned (CPython rejects them first)
    return text


@pytest.mark.parametrize("text", TRICKY)
def test_the_code_text_keeps_every_name_cpython_reads_in_tricky_lines(text: str) -> None:
    assert _names(text) <= words_of(code_text(text)), code_text(text)
    assert _names(text) <= words_of(text)  # the lines hold ASCII names alone


def test_the_code_text_keeps_every_name_cpython_reads_in_real_modules() -> None:
    checked = 0
    for path in _corpus():
        text = _source(path)
        if text is None:
            continue
        seen = _names(text) & words_of(text)  # what a scan of the raw text saw
        missing = seen - words_of(code_text(text))
        assert not missing, f"{path}: {sorted(missing)[:10]}"
        checked += 1
    assert checked > 500


def test_comments_and_prose_are_left_out() -> None:
    text = (
        '"""Gather the outputs on every rank."""\n'
        "# the rank-0 process saves\n"
        "raise ValueError(f'unsupported rank in {path}: {ndim}')\n"
        "parser.add_argument('--local_rank', help='the local rank')\n"
    )
    code = code_text(text)
    assert [prose for prose in ("Gather", "saves", "unsupported", "the local") if prose in code] == []
    assert {"path", "ndim", "local_rank", "parser"} <= words_of(code)
    assert "rank" not in words_of(code)
    assert "'{x} {'" in code_text("s = '{x} {'\n")  # braces that do not pair: the whole string stays


def test_a_rank_word_in_prose_alone_parses_nothing() -> None:
    """A module whose only collective and rank words are prose is settled
    without LibCST; the same module with a rank test around a collective is
    parsed and the finding made."""
    prose = (
        '"""Gather the features; the rank-0 process writes the report."""\n'
        "import torch\n\n\n"
        "def pool(x):\n"
        "    # reduce over the spatial dims (rank-4 input)\n"
        "    if x.ndim != 4:\n"
        "        raise ValueError(f'expected a rank-4 tensor, got {x.ndim}')\n"
        "    return x.mean((2, 3))\n"
    )
    settings = all_rules_settings()
    assert not check_source("pool.py", prose, settings).parsed
    code = prose + "\n\ndef sync(x):\n    if dist.get_rank() == 0:\n        dist.all_reduce(x)\n"
    result = check_source("pool.py", "import torch.distributed as dist\n" + code, settings)
    assert result.parsed and [f.rule for f in result.findings] == ["DDP001"]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="quotes reused inside an f-string field: Python 3.12+")
def test_an_f_string_reusing_its_quotes_keeps_its_fields() -> None:
    text = 'm = f"{", ".join(names)} {dist.get_rank()}"\n'
    assert {"join", "names", "dist", "get_rank"} <= words_of(code_text(text))
