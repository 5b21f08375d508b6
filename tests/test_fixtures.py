"""The fixture harness: every fixture's findings equal its annotations.

See fixtures/README.md for the annotation format.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import FIXTURES, fixture_settings
from ddplint.engine import check_bytes
from ddplint.rule import all_rules

EXPECT_RE = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)\s*$")
#: Single-file fixtures; `projects/` holds multi-file ones (tests/test_project.py).
FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.relative_to(FIXTURES).parts)


def expectations(path: Path) -> Counter[tuple[int, str]]:
    """(line, code) pairs annotated in a fixture, with multiplicity."""
    expected: Counter[tuple[int, str]] = Counter()
    text = path.read_bytes().decode("latin-1")  # ASCII-compatible, never fails
    for number, line in enumerate(text.splitlines(), start=1):
        if match := EXPECT_RE.search(line):
            expected.update((number, code.strip()) for code in match.group("codes").split(","))
    return expected


def actual(path: Path, prefilter: bool = True) -> Counter[tuple[int, str]]:
    """(line, code) pairs ddplint reports for a fixture (suppressed ones left out)."""
    result = check_bytes(str(path), path.read_bytes(), fixture_settings(path), prefilter=prefilter)
    assert not result.notices, result.notices
    return Counter((f.span.line, f.rule) for f in result.findings if f.suppressed is None)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_findings_match_annotations(path: Path) -> None:
    expected, found = expectations(path), actual(path)
    missing, extra = expected - found, found - expected
    assert not missing and not extra, f"missing {sorted(missing)}, unexpected {sorted(extra)}"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_prefilter_is_invisible(path: Path) -> None:
    assert actual(path, prefilter=True) == actual(path, prefilter=False)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_flag_and_clean_fixtures(rule) -> None:
    directory = FIXTURES / rule.code
    files = sorted(directory.glob("*.py"))
    flagged = [p for p in files if any(code == rule.code for _, code in expectations(p))]
    clean = [p for p in files if p.name.startswith("clean_")]
    assert flagged, f"no fixture in {directory} expects {rule.code}"
    assert clean, f"no clean_*.py look-alike fixture in {directory}"
    for path in clean:
        assert not expectations(path), f"{path.name} is named clean_ but has expectations"


def test_annotations_name_real_rules() -> None:
    codes = {rule.code for rule in all_rules()}
    for path in FIXTURE_FILES:
        unknown = {code for _, code in expectations(path)} - codes
        assert not unknown, f"{path}: unknown codes {unknown}"
