"""The prefilter's text probes answer exactly what their regular expressions would.

The probes check substrings first and word boundaries by hand; a probe that
said "absent" where the expression matches would make the prefilter skip a
file a rule fires on.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ddplint.analysis.distributed import runs_per_rank
from ddplint.analysis.probe import Probe
from ddplint.engine.prefilter import DISTRIBUTED_TEXT, TextScan, applicable
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


def test_facts_waive_only_what_a_helper_can_stand_for() -> None:
    """With facts about imported helpers, DDP001 needs neither a collective
    nor a rank test in the text (`sync()` and `is_leader()` stand for them);
    no fact stands for a DataLoader, a `__getitem__` or a save, so the rules
    needing those stay off."""
    rules = tuple(r for r in all_rules() if r.code != "DDP000")
    scan = TextScan("from utils import sync, is_leader, Captions\n\ndef main():\n    if is_leader():\n        sync()\n")
    assert applicable(rules, scan) == ()
    assert [r.code for r in applicable(rules, scan, imports_facts=True)] == ["DDP001"]
