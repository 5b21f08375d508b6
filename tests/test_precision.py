"""The measured precision that docs, `ddplint rule` and SARIF show agrees
with the judged verdicts it is computed from, and the preview rule: a rule
below 0.9 precision on the training repositories is preview (or off)."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO
from ddplint import measured
from ddplint.rule import all_rules

sys.path.insert(0, str(REPO / "bench"))
import training  # noqa: E402

PREVIEW_BAR = 0.9
#: Judged findings (right + wrong) below which a precision is no evidence either
#: way (0 of 1 has a 95 % interval of 0 to 0.975): docs/precision.md.
MIN_JUDGED = 5


def test_measured_table_matches_the_verdicts() -> None:
    counts = training.measured_counts(training.read_verdicts())
    assert measured.MEASURED == counts, "re-record: python bench/ecosystem.py --training DIR --record"


def test_every_open_finding_has_a_verdict() -> None:
    unjudged = [v for v in training.read_verdicts().values() if v.state == "open" and v.verdict == "?"]
    assert not unjudged, f"{len(unjudged)} findings of the last run have no verdict"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rules_below_the_bar_are_not_on_by_default(rule) -> None:
    value = measured.precision(rule.code)
    _, right, wrong, _ = measured.MEASURED.get(rule.code, (0, 0, 0, 0))
    if value is not None and value < PREVIEW_BAR and right + wrong >= MIN_JUDGED:
        assert rule.preview or not rule.default_enabled, f"{rule.code}: precision {value:.2f} but stable"


def test_sarif_precision_uses_github_values() -> None:
    allowed = {"very-high", "high", "medium", "low"}
    assert {measured.sarif_precision(r.code) for r in all_rules()} <= allowed


def test_verdict_file_round_trips(tmp_path) -> None:
    verdicts = training.read_verdicts()
    copy = tmp_path / "verdicts.tsv"
    training.write_verdicts(verdicts, copy)
    assert training.read_verdicts(copy) == verdicts
