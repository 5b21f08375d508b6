"""The semantic model, tested with no rule involved: every snippet of
tests/semantic/ answers as its annotations say (see the README there)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddplint.analysis.guards import Runs
from ddplint.testing import lint, model_of

SNIPPETS = Path(__file__).resolve().parent / "semantic"
ANNOTATION_RE = re.compile(r"#\s*(?P<kind>runs|per-rank|repeated|unreduced|on-cpu):\s*(?P<value>[a-z-]+)\s*$")
RUNS = {
    "all": Runs.ALL, "all-but-one": Runs.ALL_BUT_ONE, "per-node": Runs.PER_NODE, "some": Runs.SOME,
    "one": Runs.ONE, "launcher": Runs.LAUNCHER, "single": Runs.SINGLE, "unknown": Runs.UNKNOWN,
}  # fmt: skip
YES_NO = {"yes": True, "no": False}


def annotations(path: Path) -> list[tuple[int, str, str]]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if match := ANNOTATION_RE.search(line):
            found.append((number, match.group("kind"), match.group("value")))
    return found


CASES = [(path, *a) for path in sorted(SNIPPETS.glob("*.py")) for a in annotations(path)]


def test_every_snippet_is_annotated() -> None:
    snippets = sorted(SNIPPETS.glob("*.py"))
    assert snippets
    assert all(annotations(path) for path in snippets)


@pytest.mark.parametrize(
    ("path", "line", "kind", "value"), CASES, ids=[f"{p.name}:{line}:{kind}" for p, line, kind, _ in CASES]
)
def test_the_model_answers_as_annotated(path: Path, line: int, kind: str, value: str) -> None:
    model = model_of(path.read_text(encoding="utf-8"), str(path))
    if kind == "runs":
        assert model.runs(line) is RUNS[value]
    elif kind == "per-rank":
        assert model.per_rank(line) is YES_NO[value]
    elif kind == "unreduced":
        assert model.unreduced(line) is YES_NO[value]
    elif kind == "on-cpu":
        assert model.on_cpu(line) is YES_NO[value]
    else:
        assert model.repeated(line) is YES_NO[value]


def test_model_of_refuses_a_line_without_a_statement() -> None:
    model = model_of("x = 1\n\ny = 2\n")
    assert model.per_rank(1) is False
    with pytest.raises(KeyError):
        model.runs(2)


def test_lint_selects_rules() -> None:
    source = "import torch.distributed as dist\n\nif dist.get_rank() == 0:\n    dist.barrier()\n"
    assert [f.rule for f in lint(source)] == ["DDP001"]
    assert lint(source, select=["DDP006"]) == []
