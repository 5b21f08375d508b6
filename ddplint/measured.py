"""Each rule's precision on the ecosystem check of real training repositories.

Written by ``python bench/ecosystem.py --training DIR --record`` from the judged
findings in bench/ecosystem/verdicts.tsv (a test checks the two agree); do not
edit by hand. Precision is right / (right + wrong): harmless findings, true but
not worth a warning, count for neither side. Rules with no finding on the check
have no measurement.
"""

from __future__ import annotations

#: What was measured: the repositories of bench/ecosystem/training-repos.txt.
CHECK = "45 training repositories (bench/ecosystem/training-repos.txt)"

#: code -> (findings, right, wrong, harmless), every rule run with --preview.
MEASURED: dict[str, tuple[int, int, int, int]] = {
    # measured:start
    "DDP000": (1, 1, 0, 0),
    "DDP001": (75, 69, 4, 2),
    "DDP001 (preview)": (2, 0, 0, 2),
    "DDP002": (9, 9, 0, 0),
    "DDP003": (1, 0, 1, 0),
    "DDP005": (53, 18, 0, 35),
    "DDP006": (74, 64, 5, 5),
    "DDP007": (71, 60, 2, 9),
    "DDP008": (138, 112, 10, 16),
    "DDP010": (5, 2, 1, 2),
    "DDP012": (77, 76, 1, 0),
    "DDP013": (1, 1, 0, 0),
    "DDP015": (5, 0, 1, 4),
    "DDP016": (20, 3, 2, 15),
    "DDP019": (1, 1, 0, 0),
    "DDP022": (5, 4, 0, 1),
    "DDP023": (26, 16, 0, 10),
    "DDP024": (1, 1, 0, 0),
    "DDP025": (4, 4, 0, 0),
    "DDP026": (3, 3, 0, 0),
    "DDP029": (25, 9, 4, 12),
    "DDP031": (8, 8, 0, 0),
    "DDP033": (1, 1, 0, 0),
    "DDP034": (26, 1, 0, 25),
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
