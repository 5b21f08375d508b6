"""The prefilter's text probes answer exactly what their regular expressions would.

The probes check substrings first and word boundaries by hand; a probe that
said "absent" where the expression matches would make the prefilter skip a
file a rule fires on.
"""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddplint.analysis.distributed import runs_per_rank
from ddplint.analysis.probe import Probe, words_of
from conftest import FIXTURES
from ddplint.rule import all_rules_settings
from ddplint.engine import check_source
from ddplint.engine.prefilter import DISTRIBUTED_TEXT, TextScan, applicable, context_probe, summary_worthy
from ddplint.project.facts import NO_FACTS, Fact, FileFacts
from ddplint.project.role import ProjectRole
from ddplint.result import FileResult
from ddplint.rule import all_rules

WORDS = ("amp", "log", "save", "init_process_group", "deepspeed.initialize", "RANK")
PIECES = st.sampled_from(
    [*WORDS, "example", "_", ".", " ", "\n", "x", "9", "é", "ß", "λ", "·", "ampé", "Ramp", "(", "[", "'", "import ", "from ",
     "torch", "distributed", "accelerate", "\u0660", "\u2003", "from torch import nn, distributed"]
)  # fmt: skip
TEXTS = st.lists(PIECES, max_size=12).map("".join)


@given(TEXTS, st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True))
def test_words_probe_is_a_word_boundary_search(text: str, words: list[str]) -> None:
    expected = re.search(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", text) is not None
    assert Probe.of_words(words).matches(text) is expected
    assert Probe.of_words(words).matches(text, words_of(text)) is expected  # the prefilter's way: one scan per file


@given(st.one_of(st.text(st.characters(max_codepoint=127)), st.text(), TEXTS))
def test_words_of_are_the_runs_of_word_characters(text: str) -> None:
    """Split at the other characters (ASCII text) or searched (any other), the words are those of ``\\w+``."""
    assert words_of(text) == frozenset(re.findall(r"\w+", text))


@given(TEXTS)
def test_distributed_probe_matches_its_expression(text: str) -> None:
    expression = re.compile(
        r"torch\.distributed|\bfrom\s+torch\s+import\s[^\n]*\bdistributed\b|\bDistributedDataParallel\b|"
        r"\b(?:import|from)\s+(?:accelerate|deepspeed|lightning|pytorch_lightning)\b|"
        r"\binit_process_group\b|\binit_distributed\b"
    )
    assert DISTRIBUTED_TEXT.matches(text) is (expression.search(text) is not None)


def test_substring_probe_and_examples() -> None:
    assert Probe.of_substrings(("rank",)).matches("is_frank")
    assert not Probe.of_words(("amp",)).matches("example = clamp(sample)")
    assert Probe.of_words(("amp",)).matches("from torch.cuda import amp")
    assert not Probe.of_words(("amp",)).matches("ampé")  # a Unicode letter continues the word, as for `\b`
    assert runs_per_rank("rank = dist.get_rank()") and not runs_per_rank("os.environ['RANK'] = '0'\nget_rank()")


@pytest.mark.parametrize(
    ("facts", "enabled"),
    [
        ({"sync": Fact("utils.py", 1, collective=("`dist.barrier()`",)), "first_in_job": Fact("utils.py", 5, rank=True)}, ["DDP001"]),
        ({"sync": Fact("utils.py", 1, collective=("`dist.barrier()`",))}, []),  # no rank test: nothing stands for it
        ({"first_in_job": Fact("utils.py", 5, rank=True)}, []),  # no collective
        ({"Captions": Fact("utils.py", 9, dataset="map", random=True)}, []),  # a fact standing for neither
    ],
    ids=["collective-and-rank-helpers", "collective-helper", "rank-helper", "dataset"],
)
def test_facts_waive_only_what_a_helper_can_stand_for(facts, enabled) -> None:
    """With facts about imported helpers, DDP001 needs neither a collective
    nor a rank test in the text, where a collective helper (`sync()`) and a
    rank helper of any name (`first_in_job()`) stand for them; other facts stand for
    neither. No fact stands for a DataLoader, a `__getitem__` or a save, so
    the rules needing those stay off."""
    rules = tuple(r for r in all_rules() if r.code not in ("DDP000", "DDP100"))  # those two run outside the walk
    scan = TextScan("from utils import sync, first_in_job, Captions\n\ndef main():\n    if first_in_job():\n        sync()\n")
    assert applicable(rules, scan) == ()
    assert [r.code for r in applicable(rules, scan, met_by_facts=FileFacts(facts).meets)] == enabled


STEP_SPELLINGS = [
    "loss.backward()", "loss . backward ()", "scaler.scale(loss).backward()", "accelerator.backward(loss)",
    "optimizer.step()", "(optimizer\n    .step())", "optimizer.step \\\n()", "(optimizer.\r\n step())",
    "self.optimizer.step()", "opt.step(closure)",
]  # fmt: skip


@pytest.mark.parametrize("call", STEP_SPELLINGS)
def test_the_step_pattern_sees_every_spelling_of_a_step(call: str) -> None:
    """DDP013 runs only where a loop can take an optimisation step: its context
    pattern must match wherever the walk's `is_step` finds one, however the
    call is spaced, commented or continued."""
    from ddplint.analysis.loops import is_step
    from ddplint.analysis.tree import descendants
    from ddplint.lazy import cst

    text = f"for x, y in loader:\n    loss = criterion(model(x), y)\n    total += loss\n    {call}\n"
    module = cst.parse_module(text)
    assert any(is_step(n) for n in descendants(module) if isinstance(n, cst.Call))
    assert "DDP013" in {r.code for r in applicable(all_rules(), TextScan(text))}


@pytest.mark.parametrize("gap", [" " * 100_000, "\\\n" * 50_000, " \t\r\n" * 50_000])
def test_the_step_pattern_reads_a_long_gap_once(gap: str) -> None:
    """Each dot of the text starts a try, and the gap after it splits one way
    only: linear in the text (a pattern that let `# a # b` be one comment or
    two tried 2**n ways, and a linted repository never finished)."""
    probe = context_probe(next(r for r in all_rules() if r.code == "DDP013"), ())
    assert not probe.matches(f"loss = f(x)\nx.{gap}stop()\n")
    assert probe.matches(f"loss = f(x)\n(x.{gap}step())\n")
    assert not probe.matches("loss = 'step" + "x.# a" * 200_000 + "'\n")


def test_a_loss_and_the_word_step_without_a_step_call_do_not_wake_the_loss_rule() -> None:
    text = "step = 0\nfor batch in loader:\n    loss = criterion(model(batch))\n    losses.append(loss)\n    step += 1\n"
    assert "DDP013" not in {r.code for r in applicable(all_rules(), TextScan(text))}
    assert check_source("eval.py", text, all_rules_settings(), prefilter=False).findings == ()  # nothing was lost


def _summarized(text: str, facts: FileFacts = NO_FACTS) -> FileResult:
    """The result for `text` as a module another linted file imports."""
    role = ProjectRole(facts=facts, summarize=True, imported=True, importer=False)
    return check_source("module.py", text, all_rules_settings(), True, role)


def test_a_module_whose_rank_tests_are_all_methods_exports_them_as_methods() -> None:
    """Other modules reach a method through their instances (`Class.method`):
    a module whose only rank test is a method's is walked for its summary."""
    project = FIXTURES / "projects" / "class_first"
    methods_only = _summarized((project / "methods_only.py").read_text())
    helpers = _summarized((project / "ranks.py").read_text())
    assert methods_only.parsed and set(methods_only.summary.symbols) == {"Shard.owner"}
    assert helpers.parsed and set(helpers.summary.symbols) == {"is_leader", "LEADER", "Placement.local_slot", "Launcher.node"}


def test_modules_the_summary_prefilter_skips_have_no_facts_of_their_own() -> None:
    """Walked anyway (a fact about an import makes the walk happen), every
    module the summary prefilter skips yields no fact of its own, only facts
    hinging on imports (which reach it, and re-walk it, later). The modules:
    the fixtures, and each fixture with its code moved into a class (a
    method's facts are facts too: moving code into a class hides nothing)."""
    unrelated = FileFacts({"elsewhere.helper": Fact("elsewhere.py", 1, rank=True)})
    skipped = []
    for path in sorted(FIXTURES.rglob("*.py")):
        for text in _module_and_class_variant(path.read_bytes().decode("utf-8", errors="replace")):
            if summary_worthy(TextScan(text)):
                continue
            skipped.append(path)
            symbols = _summarized(text, unrelated).summary.symbols
            own = {n: s for n, s in symbols.items() if s.rank or s.collective or s.silences_print or s.dataset or s.hf_trainer or s.random or s.silences_logging or s.picks}
            assert not own, f"{path}: {own}\n{text}"
    assert len(skipped) >= 50, skipped  # the property is checked on many modules


def _module_and_class_variant(text: str) -> list[str]:
    """`text`, and the same code as the body of a class (imports stay at the
    top); none for a module CPython rejects."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []  # the syntax-error rule's fixtures
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    rest = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))] or [ast.Pass()]
    wrapped = ast.Module(body=[*imports, ast.ClassDef("Wrapped", [], [], rest, [])], type_ignores=[])
    variant = ast.unparse(ast.fix_missing_locations(wrapped))
    try:
        compile(variant, "variant.py", "exec", ast.PyCF_ONLY_AST)
    except SyntaxError:
        return [text]
    return [text, variant]
