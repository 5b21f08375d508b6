"""Each rule's precision on the ecosystem check of real training repositories.

Written by ``python bench/ecosystem.py --training DIR --record`` from the judged
findings in bench/ecosystem/verdicts.tsv (a test checks the two agree); do not
edit by hand. Precision is right / (right + wrong): harmless findings, true but
not worth a warning, count for neither side. Rules with no finding on the check
have no measurement.
"""

from __future__ import annotations

#: What was measured: the repositories of bench/ecosystem/training-repos.txt.
CHECK = "22 training repositories (bench/ecosystem/training-repos.txt)"

#: code -> (findings, right, wrong, harmless), every rule run with --preview.
MEASURED: dict[str, tuple[int, int, int, int]] = {
    # measured:start
    "DDP001": (69, 66, 2, 1),
    "DDP001 (preview)": (2, 0, 0, 2),
    "DDP002": (9, 9, 0, 0),
    "DDP004": (17, 0, 17, 0),
    "DDP005": (36, 9, 0, 27),
    "DDP006": (22, 18, 1, 3),
    "DDP007": (60, 52, 1, 7),
    "DDP008": (121, 108, 2, 11),
    "DDP010": (3, 2, 0, 1),
    "DDP012": (47, 46, 1, 0),
    "DDP013": (1, 1, 0, 0),
    "DDP015": (2, 0, 1, 1),
    "DDP016": (17, 3, 5, 9),
    "DDP019": (1, 1, 0, 0),
    "DDP022": (2, 2, 0, 0),
    "DDP023": (12, 6, 0, 6),
    "DDP024": (27, 0, 2, 25),
    "DDP025": (1, 1, 0, 0),
    # measured:end
}


def precision(code: str) -> float | None:
    """right / (right + wrong) on the check, or None when nothing was judged."""
    counts = MEASURED.get(code)
    if counts is None:
        return None
    _, right, wrong, _ = counts
    return right / (right + wrong) if right + wrong else None


def findings(code: str) -> int:
    """How many findings the rule made on the check."""
    counts = MEASURED.get(code)
    return counts[0] if counts is not None else 0


def shown(code: str) -> str:
    """`0.93 (70 findings)`, or `–` when not measured."""
    value = precision(code)
    return "–" if value is None else f"{value:.2f} ({findings(code)})"


def sarif_precision(code: str) -> str:
    """GitHub code scanning's precision scale from the measured precision
    (docs/precision.md): very-high from 0.95, high from 0.9, medium from
    0.75, low below; medium when the rule was not measured."""
    value = precision(code)
    if value is None:
        return "medium"
    if value >= 0.95:
        return "very-high"
    if value >= 0.9:
        return "high"
    if value >= 0.75:
        return "medium"
    return "low"
