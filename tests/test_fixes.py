"""Autofix: every fix fixture's fixed text, idempotence, and the round trip
over the whole fixture set.

`fixtures/<CODE>/fix_*.py` is fixed (with unsafe fixes when its text says
``# fix: unsafe``) and must equal `fix_*.py.fixed` exactly; the fixed text
must parse and carry no fixable finding of that code, and fixing it again
must change nothing.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conftest import FIXTURES
from ddplint.rule import all_rules_settings
from ddplint.engine import check_source
from ddplint.engine.fixer import applicable, fix_source
from ddplint.engine.source import SourceProblem, python_ast
from ddplint.model import Applicability, Edit, Span
from ddplint.textedit import apply_edits

ALL = all_rules_settings()
FIX_FIXTURES = sorted(FIXTURES.glob("DDP*/fix_*.py"))
SINGLE_FILE_FIXTURES = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.relative_to(FIXTURES).parts)


def _unsafe(text: str) -> bool:
    return "# fix: unsafe" in text


@pytest.mark.parametrize("path", FIX_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fix_fixture_produces_the_expected_text(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected_path = path.with_name(path.name + ".fixed")
    assert expected_path.exists(), f"{path.name} needs {expected_path.name}"
    outcome = fix_source(str(path), text, ALL, unsafe=_unsafe(text))
    assert not outcome.result.notices, outcome.result.notices
    assert outcome.applied > 0
    assert not isinstance(python_ast(outcome.text, str(path)), SourceProblem)
    code = path.parent.name
    left = [f for f in outcome.result.findings if f.rule == code]
    assert not left, [(f.span.line, f.message) for f in left]
    assert outcome.text == expected_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", FIX_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixing_twice_changes_nothing(path: Path) -> None:
    fixed = path.with_name(path.name + ".fixed").read_text(encoding="utf-8")
    again = fix_source(str(path), fixed, ALL, unsafe=True)
    assert again.applied == 0 and again.text == fixed


@pytest.mark.parametrize("path", [p for p in FIX_FIXTURES if _unsafe(p.read_text())], ids=lambda p: p.name)
def test_unsafe_fixes_need_unsafe_fixes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    code = path.parent.name
    outcome = fix_source(str(path), text, ALL, unsafe=False)
    assert outcome.text == text
    pending = [f for f in outcome.result.findings if f.rule == code]
    assert pending and all(f.fix is not None and f.fix.applicability is Applicability.UNSAFE for f in pending)


@pytest.mark.parametrize("path", SINGLE_FILE_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixing_any_fixture_parses_and_adds_no_other_finding(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    before = check_source(str(path), text, ALL)
    outcome = fix_source(str(path), text, ALL, unsafe=True, first=before)
    assert not outcome.result.notices, outcome.result.notices
    if outcome.text == text:
        return
    assert not isinstance(python_ast(outcome.text, str(path)), SourceProblem)
    fixed_codes = {f.rule for f in before.findings if applicable(f, unsafe=True)}
    was = Counter(f.rule for f in before.findings if f.rule not in fixed_codes)
    now = Counter(f.rule for f in outcome.result.findings if f.rule not in fixed_codes)
    assert not now - was, f"new findings after fixing: {now - was}"
    assert fix_source(str(path), outcome.text, ALL, unsafe=True).text == outcome.text


def test_display_only_fixes_are_never_applied() -> None:
    text = (
        "import torch.cuda.amp as amp\n"
        "legacy = amp.autocast\n"
        "with legacy():\n"
        "    pass\n"
    )
    result = check_source("t.py", text, ALL)
    (finding,) = [f for f in result.findings if f.rule == "DDP012"]
    assert finding.fix is not None and finding.fix.applicability is Applicability.DISPLAY_ONLY
    assert fix_source("t.py", text, ALL, unsafe=True).text == text


def test_a_fix_whose_result_python_rejects_leaves_the_file_untouched(monkeypatch) -> None:
    import ddplint.engine.fixer as fixer

    text = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(d, sampler=DistributedSampler(d), shuffle=True)\n"
    real = fixer.apply_edits
    monkeypatch.setattr(fixer, "apply_edits", lambda current, edits: real(current, edits) + "(\n")
    outcome = fix_source("t.py", text, ALL)
    assert outcome.text == text and outcome.applied == 0
    (notice,) = outcome.result.notices
    assert "Python rejects" in notice.message and "left unchanged" in notice.message


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError):
        apply_edits("abcdef\n", [Edit(Span(1, 1, 1, 4), "x"), Edit(Span(1, 3, 1, 5), "y")])
    assert apply_edits("abcdef\n", [Edit(Span(1, 5, 1, 7), "Z"), Edit(Span(1, 1, 1, 1), ">")]) == ">abcdZ\n"
