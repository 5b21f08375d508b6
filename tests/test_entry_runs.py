"""Who runs a line as a function of who calls the module's entries from
other modules (`ExecutionModel.runs_by_entry`), as the whole-project
analysis composes it through chains of modules without linting them again.

The oracle: composed with any callers, it answers what the model itself
answers when its lint is given those callers (`FileFacts.callers`), for
every statement of the semantic snippets and the fixture projects."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddplint.analysis.guards import Runs, larger, smaller
from ddplint.project.facts import FileFacts
from ddplint.testing import ModelOf, model_of

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    [*(ROOT / "tests" / "semantic").glob("*.py"), *(ROOT / "fixtures" / "projects").rglob("*.py")],
    key=lambda p: str(p.relative_to(ROOT)),
)

ENTRIES = """\
import torch.distributed as dist


def shared(path):
    save(path)


def save(path):
    open(path, "w").write("x")


def on_leader(path):
    if dist.get_rank() == 0:
        save(path)


def all_but_leader(path):
    if dist.get_rank() != 0:
        shared(path)


class Trainer:
    def fit(self):
        self.step()

    def step(self):
        shared("x")

    def wrapped(self):
        def nested():
            save("y")

        nested()


def main():
    dist.init_process_group("gloo")
    on_leader("z")
"""
WRITE_LINE = 9  # `open(path, "w")` in `save`


def composed(model: ModelOf, line: int, callers: dict[str, str]) -> Runs | None:
    """The most ranks `runs_by_entry` gives the line, given `callers`."""
    found = None
    for entry, runs in model.model.rank.execution.runs_by_entry(model.statements[line][1]):
        if entry:
            if entry not in callers:
                continue
            runs = smaller(Runs[callers[entry]], runs)
        found = runs if found is None else larger(found, runs)
    return found


def test_each_entry_bounds_the_ranks_its_callers_bring() -> None:
    model = model_of(ENTRIES)
    by_entry = dict(model.model.rank.execution.runs_by_entry(model.statements[WRITE_LINE][1]))
    assert by_entry == {
        "shared": Runs.ALL,
        "save": Runs.ALL,
        "all_but_leader": Runs.ALL_BUT_ONE,  # its guard lets every rank but one through
        "Trainer.step": Runs.ALL,
        "Trainer.fit": Runs.ALL,  # through `self.step()`
        "Trainer.wrapped": Runs.ALL,  # through a function nested in the method
    }  # `on_leader`: one rank, never many; `main`, its only caller here, runs on every rank but reaches it as one
    assert composed(model, WRITE_LINE, {}) is None
    assert composed(model, WRITE_LINE, {"all_but_leader": "ALL"}) is Runs.ALL_BUT_ONE
    assert composed(model, WRITE_LINE, {"all_but_leader": "ALL", "Trainer.fit": "ALL_BUT_ONE"}) is Runs.ALL_BUT_ONE
    assert composed(model, WRITE_LINE, {"on_leader": "ALL"}) is None


def test_an_entry_whose_answer_was_unknown_is_named_with_its_callers() -> None:
    """A question about `save` (nobody in the module runs it on many ranks)
    is answered again when the callers of any entry that reaches it change."""
    model = model_of(ENTRIES)
    assert model.runs(WRITE_LINE) is Runs.ONE  # `main` -> `on_leader` -> rank 0
    model = model_of(ENTRIES.replace("    on_leader(\"z\")\n", "    pass\n"))
    assert model.runs(WRITE_LINE) is Runs.UNKNOWN
    assert set(model.model.rank.execution.unknown_top_level()) >= {
        "save", "shared", "on_leader", "all_but_leader", "Trainer.step", "Trainer.fit", "Trainer.wrapped"
    }  # fmt: skip


def _variants(entries: list[str]) -> list[dict[str, str]]:
    """Callers to try: none, all entries by every rank (but one), and a few alone."""
    variants: list[dict[str, str]] = [{}]
    if entries:
        variants += [dict.fromkeys(entries, "ALL"), dict.fromkeys(entries, "ALL_BUT_ONE")]
        variants += [{e: "ALL"} for e in entries[:3]] + [{e: "ALL_BUT_ONE"} for e in entries[-2:]]
    return variants


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_composed_by_entry_is_what_the_model_answers_given_the_callers(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    alone = model_of(source, str(path))
    entries = sorted(set(alone.model.rank.execution.entry_names().values()))
    variants = _variants(entries)
    # The summary may come from a lint that had no callers or some (it is linted again
    # when its module-level code stops or starts running per rank: `needs_callers`).
    bases = [(callers, model_of(source, str(path), FileFacts(callers=callers))) for callers in variants[:2]]
    by_text = alone.model.distributed_by_text
    for callers in variants:
        given = model_of(source, str(path), FileFacts(callers=callers))
        for line, (_, site) in given.statements.items():
            runs = given.model.rank.runs(site)
            expected = runs if runs.many else None
            for base_callers, base in bases:
                if not by_text and bool(base_callers) != bool(callers):
                    continue
                assert composed(base, line, callers) is expected, (line, callers, base_callers)
