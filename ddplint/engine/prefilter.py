"""The text prefilter: which rules can fire on a file, and whether its
module summary can hold facts, from its text alone (its code: comments and
prose left out, `code_text`).

A rule declares the tokens without which it cannot fire; a file containing
none of the enabled rules' tokens (and no summary worth walking for) is
never given to LibCST. Every test is a `Probe`: substring checks first, the
exact regular expression only where they pass, each run once per file.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Iterator

from ddplint.knowledge import HF_TRAINER_PACKAGES, NOISE_TEXT, RANK_TEXT, STEP_TEXT, TRAIN_MODE_TEXT, covering_needles
from ddplint.analysis.code_text import code_text
from ddplint.analysis.collectives import COLLECTIVE_FAMILIES
from ddplint.analysis.data import ITERABLE_DATASETS, MAP_DATASETS
from ddplint.analysis.distributed import RANK_HELPER_IMPORT, launched_per_rank, runs_per_rank
from ddplint.analysis.probe import AllOf, AnyOf, Probe, words_of

if TYPE_CHECKING:
    from ddplint.rule import Rule


#: Text every distributed module contains (with `runs_per_rank`, a necessary
#: condition of `FileContext.in_distributed_context`), for `distributed_only` rules.
DISTRIBUTED_TEXT = AnyOf((
    Probe.of_substrings(("torch.distributed",)),
    Probe.of_words(("DistributedDataParallel", "init_process_group", "init_distributed")),
    Probe(("distributed",), re.compile(r"\bfrom\s+torch\s+import\s[^\n]*\bdistributed\b"), words=True),
    Probe(
        ("accelerate", "deepspeed", "lightning", "pytorch_lightning"),
        re.compile(r"\b(?:import|from)\s+(?:accelerate|deepspeed|lightning|pytorch_lightning)\b"),
        words=True,
    ),
    # A module testing its rank with a project helper (`from .utils.dist import is_main_process`).
    RANK_HELPER_IMPORT,
    # A Hugging Face trainer script launched by torchrun (it reads WORLD_SIZE).
    Probe(
        ("LOCAL_RANK", "WORLD_SIZE"),
        re.compile(r"\bfrom\s+(?:transformers|trl)\b[^\n]*\bimport\b[^\n]*Trainer\b|\b(?:transformers|trl)\.\w*Trainer\("),
    ),
))  # fmt: skip


class TextScan:
    """What the prefilter found in one file's text, each probe run once
    (the whole-project analysis asks twice: without and with facts). The
    probes read its code alone (`code_text`: no comments, no prose)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.code = code_text(text)
        self._found: dict[Probe | AnyOf | AllOf, bool] = {}
        self._distributed: bool | None = None
        self._words: frozenset[str] | None = None
        #: needle -> whether the text contains it (the probes share needles: `barrier` is in five)
        self._contains: dict[str, bool] = {}

    def has(self, probe: Probe | AnyOf | AllOf) -> bool:
        found = self._found.get(probe)
        if found is None:
            if self._words is None:
                self._words = words_of(self.code)
            found = self._found[probe] = probe.matches(self.code, self._words, self._has_substring)
        return found

    def _has_substring(self, needle: str) -> bool:
        found = self._contains.get(needle)
        if found is None:
            found = self._contains[needle] = needle in self.code
        return found

    @property
    def distributed(self) -> bool:
        if self._distributed is None:
            self._distributed = self.has(DISTRIBUTED_TEXT) and (
                runs_per_rank(self.text) or launched_per_rank(self.text)
            )
        return self._distributed


def applicable(
    rules: tuple[type[Rule], ...],
    scan: TextScan,
    extra_context: tuple[str, ...] = (),
    met_by_facts: frozenset[str] = frozenset(),
    per_rank: bool = False,
) -> tuple[type[Rule], ...]:
    """The rules that can fire on the scanned text: those whose tokens it
    contains (and, for distributed-only rules, that looks distributed). The
    others are not run, and a file no rule applies to is never parsed. The
    requirements that facts about imported helpers meet (`met_by_facts`,
    `FileFacts.meets`) are waived where the rule lets them be
    (`Rule.facts_replace`: a collective helper's name stands for the
    collective, a rank helper's for the rank test). With `per_rank` (other
    modules call the module's functions on many ranks), it is distributed
    code whatever its text."""
    kept = []
    for rule in rules:
        waived = rule.facts_replace & met_by_facts
        if any(need not in waived for need in _unmet(rule, scan, extra_context)):
            continue
        if rule.distributed_only and not (per_rank or scan.distributed):
            continue
        kept.append(rule)
    return tuple(kept)


def missed_requirements(rule: type[Rule], scan: TextScan, extra_context: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The requirements of `rule` that facts may replace (`Rule.facts_replace`)
    and the scanned text does not meet."""
    return tuple(need for need in _unmet(rule, scan, extra_context) if need in rule.facts_replace)


def _unmet(rule: type[Rule], scan: TextScan, extra_context: tuple[str, ...]) -> Iterator[str]:
    """The text requirements of `rule` the scanned text does not meet, in
    order (`tokens`, then `context_tokens`), each tested when reached."""
    tokens = token_probe(rule)
    if tokens is not None and not scan.has(tokens):
        yield "tokens"
    context = context_probe(rule, extra_context)
    if context is not None and not scan.has(context):
        yield "context_tokens"


@functools.lru_cache(maxsize=None)
def token_probe(rule: type[Rule]) -> Probe | None:
    """Any of the rule's tokens as a word; None for rules without tokens."""
    return None if rule.tokens is None else Probe.of_words(rule.tokens)


@functools.lru_cache(maxsize=None)
def context_probe(rule: type[Rule], extra: tuple[str, ...]) -> Probe | AnyOf | None:
    """The rule's `context_tokens` (substrings; with its `context_pattern`,
    where that matches), or one of the configured extras."""
    if rule.context_tokens is None:
        return None
    if rule.context_pattern is None:
        return Probe.of_substrings((*rule.context_tokens, *extra))
    context = Probe(tuple(sorted(rule.context_tokens)), re.compile(rule.context_pattern))
    return AnyOf((context, Probe.of_substrings(extra))) if extra else context


#: Text without which a module's summary has no facts to walk for: rank
#: tests, collectives (with a distributed library in sight: `torch.gather` is
#: not one), Dataset classes, replacing `builtins.print`.
_SUMMARY_RANK = Probe.of_substrings(RANK_TEXT)
_SUMMARY_COLLECTIVE = AnyOf(tuple(
    AllOf((Probe.of_substrings(covering_needles(names)), *map(Probe.of_substrings, requirements)))
    for names, requirements in COLLECTIVE_FAMILIES
))  # fmt: skip
#: Dataset classes that training code derives its own from (`ImageFolder`).
_DATASET_BASES = tuple(sorted({name.rsplit(".", 1)[-1] for name in MAP_DATASETS | ITERABLE_DATASETS} - {"Dataset"}))
_SUMMARY_OTHER = AnyOf((
    Probe.of_words(("Dataset",)),
    Probe(_DATASET_BASES, re.compile(rf"\bclass\s+\w+\s*\([^)]*\b(?:{'|'.join(_DATASET_BASES)})\b")),
    Probe.of_substrings(("IterableDataset", "DataPipe", "builtins", "__builtin__")),
    AllOf((Probe.of_substrings(TRAIN_MODE_TEXT), Probe.of_substrings(STEP_TEXT))),  # a trainer: per-rank randomness
    # A project trainer derived from Hugging Face's, which reseeds every rank (`class Base(Trainer)`).
    AllOf((Probe.of_substrings(("Trainer",)), Probe.of_words(p.rstrip(".") for p in HF_TRAINER_PACKAGES))),
))  # fmt: skip
#: Noise drawn (per-rank randomness), a fact of module functions only.
_SUMMARY_NOISE = Probe.of_substrings(NOISE_TEXT)


def summary_worthy(scan: TextScan, rank_names: tuple[str, ...] = ()) -> bool:
    """Whether the module may hold facts other modules need (else its summary
    is its imports); `rank_names` are the configured ones. A rank test or a
    collective anywhere may make one: in module-level code, a function, or a
    method (other modules reach `Class.method` through their instances)."""
    if scan.has(_SUMMARY_OTHER):
        return True
    extra = _rank_probe(rank_names)
    return (
        scan.has(_SUMMARY_COLLECTIVE) or scan.has(_SUMMARY_NOISE) or scan.has(_SUMMARY_RANK)
        or (extra is not None and scan.has(extra))
    )  # fmt: skip


@functools.lru_cache(maxsize=16)
def _rank_probe(rank_names: tuple[str, ...]) -> Probe | None:
    return Probe.of_substrings(rank_names) if rank_names else None
