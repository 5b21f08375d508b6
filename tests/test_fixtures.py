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

#: `# expect: CODE[, CODE...]` (must be reported) or `# todo: CODE[, CODE...]` (a known miss:
#: must not be reported yet, and the test fails once it is, so that it gets promoted). Both may
#: end one line (`# expect: DDP001  # todo: DDP007`).
ANNOTATION_RE = re.compile(r"#\s*(?P<kind>expect|todo):\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)\s*(?=#|$)")
#: Single-file fixtures; `projects/` holds multi-file ones (tests/test_project.py).
FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.relative_to(FIXTURES).parts)


def annotations(path: Path, kind: str) -> Counter[tuple[int, str]]:
    """(line, code) pairs annotated `# <kind>:` in a fixture, with multiplicity."""
    found: Counter[tuple[int, str]] = Counter()
    text = path.read_bytes().decode("latin-1")  # ASCII-compatible, never fails
    for number, line in enumerate(text.splitlines(), start=1):
        for match in ANNOTATION_RE.finditer(line):
            if match.group("kind") == kind:
                found.update((number, code.strip()) for code in match.group("codes").split(","))
    return found


def expectations(path: Path) -> Counter[tuple[int, str]]:
    """(line, code) pairs a fixture expects, with multiplicity."""
    return annotations(path, "expect")


def known_misses(path: Path) -> Counter[tuple[int, str]]:
    """(line, code) pairs marked `# todo:`: real findings ddplint does not report yet."""
    return annotations(path, "todo")


def compare(expected: Counter, todo: Counter, found: Counter) -> str | None:
    """Why `found` does not match the annotations, or None when it does."""
    missing, extra = expected - found, found - expected
    promoted = sorted(set(todo) & set(extra))
    if promoted:
        return f"known misses now found, promote `# todo:` to `# expect:`: {promoted}; missing {sorted(missing)}"
    if missing or extra:
        return f"missing {sorted(missing)}, unexpected {sorted(extra)}"
    return None


def actual(path: Path, prefilter: bool = True) -> Counter[tuple[int, str]]:
    """(line, code) pairs ddplint reports for a fixture (suppressed ones left out)."""
    result = check_bytes(str(path), path.read_bytes(), fixture_settings(path), prefilter=prefilter)
    assert not result.notices, result.notices
    return Counter((f.span.line, f.rule) for f in result.findings if f.suppressed is None)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_findings_match_annotations(path: Path) -> None:
    problem = compare(expectations(path), known_misses(path), actual(path))
    assert problem is None, problem


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


def test_a_known_miss_fails_once_found() -> None:
    line = (3, "DDP001")
    assert compare(Counter(), Counter([line]), Counter()) is None
    assert "promote" in compare(Counter(), Counter([line]), Counter([line]))
    assert compare(Counter([line]), Counter(), Counter([line])) is None
    assert "missing" in compare(Counter([line]), Counter(), Counter())


def test_annotations_of_both_kinds_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    path.write_text("x = 1  # expect: DDP001  # todo: DDP007, DDP006\ny = 2  # todo: DDP002\n# expect: nothing\n")
    assert expectations(path) == Counter([(1, "DDP001")])
    assert known_misses(path) == Counter([(1, "DDP007"), (1, "DDP006"), (2, "DDP002")])
