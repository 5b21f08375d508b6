"""Property-based robustness: no input makes the linter raise.

For random valid modules (hypothesmith) and random mutations of the
fixtures (token insertions and deletions, truncation mid-statement,
indentation swaps), `check_source` never raises or reports an internal
error, DDP000 is reported exactly when `compile()` rejects the text, every
span lies inside the file, the result is deterministic, the
SARIF of it validates, and fixing it yields code Python accepts. CI runs the
bounded default profile (about a minute); run the long one with ``pytest -m fuzz --hypothesis-profile long``.
"""

from __future__ import annotations

import random
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, assert_valid_sarif
from test_ddp000_oracle import compiles
from ddplint.rule import all_rules_settings
from ddplint.engine import check_source
from ddplint.report import Report

pytestmark = pytest.mark.fuzz

ALL = all_rules_settings()
FIXTURE_TEXTS = [p.read_bytes().decode("latin-1") for p in sorted(FIXTURES.rglob("*.py"))]
TOKENS = ["(", ")", ":", "\n", "    ", "if rank == 0:", "dist.barrier()", "def f(", "return", "=", ",", "'", '"""',
          "for epoch in range(3):", "DataLoader(ds, sampler=s, shuffle=True)", "\t", "\\", "#", "lambda", "@"]  # fmt: skip


def check(text: str) -> None:
    first = check_source("fuzz.py", text, ALL, prefilter=False)
    assert not [n for n in first.notices if n.internal], [n.detail for n in first.notices]
    ddp000 = [f.message for f in first.findings if f.rule == "DDP000"]
    assert bool(ddp000) == (not compiles(text)), ddp000  # DDP000 is CPython's verdict
    lines = text.splitlines() or [""]
    for finding in first.findings:
        span = finding.span
        assert 1 <= span.line <= span.end_line <= len(lines) + 1, span
        assert span.column >= 1 and span.end_column >= 1, span
        for related in finding.related:
            assert 1 <= related.span.line <= len(lines) + 1
    again = check_source("fuzz.py", text, ALL, prefilter=False)
    assert again == first
    assert check_source("fuzz.py", text, ALL, prefilter=True).findings == first.findings


@given(hypothesmith.from_grammar())
def test_random_valid_modules(source: str) -> None:
    check(source)


@st.composite
def mutated_fixture(draw) -> str:
    text = draw(st.sampled_from(FIXTURE_TEXTS))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 6))):
        kind = rng.choice(["insert", "delete", "truncate", "dedent", "indent"])
        position = rng.randrange(len(text) + 1)
        if kind == "insert":
            text = text[:position] + rng.choice(TOKENS) + text[position:]
        elif kind == "delete":
            text = text[:position] + text[position + rng.randint(1, 20) :]
        elif kind == "truncate":
            text = text[:position]
        else:
            lines = text.splitlines(keepends=True)
            if lines:
                index = rng.randrange(len(lines))
                lines[index] = lines[index][4:] if kind == "dedent" else "    " + lines[index]
                text = "".join(lines)
    return text


@given(mutated_fixture())
def test_mutated_fixtures(source: str) -> None:
    check(source)


@settings(max_examples=15)
@given(mutated_fixture())
def test_sarif_of_anything_validates(sarif_validator, source: str) -> None:
    from ddplint.reporters import RenderOptions
    from ddplint.reporters.sarif import build_log

    result = check_source("fuzz.py", source, ALL)
    report = Report(list(result.findings), list(result.notices), 1)
    assert_valid_sarif(sarif_validator, build_log(report, RenderOptions(cwd=Path.cwd())))


@settings(max_examples=60)
@given(mutated_fixture())
def test_fixing_anything_keeps_valid_python(source: str) -> None:
    from ddplint.engine.fixer import fix_source
    from ddplint.engine.source import SourceProblem, python_ast

    outcome = fix_source("fuzz.py", source, ALL, unsafe=True)
    assert not [n for n in outcome.result.notices if n.internal], [n.detail for n in outcome.result.notices]
    assert not [n for n in outcome.result.notices if "rejects" in n.message or "converge" in n.message]
    if outcome.text != source:
        assert not isinstance(python_ast(outcome.text, "fuzz.py"), SourceProblem)
