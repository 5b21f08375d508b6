"""Resolved facts about imported names, as one importing file sees them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Iterable, Mapping


#: The text requirements a rule may let facts meet (`Rule.facts_replace`).
REPLACEABLE = frozenset({"tokens", "context_tokens"})


@dataclass(frozen=True)
class Fact:
    """What the project knows about one top-level name of a linted module.

    `collective` is the chain of calls from the name's body to a collective
    (``("`dist.all_reduce()`",)``), empty when it performs none; `path` and
    `line` locate the definition, for messages and related locations.
    """

    path: str
    line: int
    rank: bool = False
    collective: tuple[str, ...] = ()
    silences_print: bool = False
    dataset: str | None = None
    #: A Dataset class that draws random numbers per sample (augmentation).
    random: bool = False
    #: Calling it configures `logging` per rank (a handler on the main process only).
    silences_logging: bool = False
    #: The parameter that turns `collective` off, as `ddplint.analysis.calls.ExportedSwitch`
    #: (``append_log(path, msg, barrier=False)`` performs nothing): None when always on.
    switch: tuple[str, int, bool, bool | None] | None = None
    #: A class deriving from a Hugging Face trainer (directly or through the
    #: project's own classes): it reseeds every rank with `args.seed` itself.
    hf_trainer: bool = False
    #: The ranks its result is true on, a `Runs` member's name (``ONE`` for
    #: ``return int(os.environ.get("RANK", 0)) == 0``): a rank test whatever its name.
    picks: str | None = None
    #: What it runs a function handed to it on, by argument (position or
    #: keyword): ``((1, "ONE"), ("work", "ONE"))`` for ``def on_main(args,
    #: work): if rank == 0: work()``.
    handed: tuple[tuple[int | str, str], ...] = ()

    @property
    def relevant(self) -> bool:
        """Whether the fact can change a finding."""
        return (
            self.rank or bool(self.collective) or self.silences_print or self.dataset is not None or self.random
            or self.silences_logging
            or self.hf_trainer or bool(self.handed)
        )  # fmt: skip

    def stands_for(self, requirement: str) -> bool:
        """Whether the fact meets a requirement that a rule lets facts replace
        (`Rule.facts_replace`): a collective helper stands for the collective
        its tokens name, a rank helper for the rank test its context tokens name."""
        if requirement == "tokens":
            return bool(self.collective)
        return requirement == "context_tokens" and (self.rank or self.picks is not None)

    def to_json(self) -> list:
        switch = None if self.switch is None else list(self.switch)
        return [
            self.path, self.line, self.rank, list(self.collective), self.silences_print, self.dataset, self.random,
            self.silences_logging, switch, self.hf_trainer, self.picks, [list(h) for h in self.handed],
        ]  # fmt: skip

    @classmethod
    def from_json(cls, data: list) -> Fact:
        path, line, rank, collective, silences, dataset, random, logging, *rest = data
        switch = tuple(rest[0]) if rest and rest[0] is not None else None
        hf_trainer = bool(rest[1]) if len(rest) > 1 else False
        picks = rest[2] if len(rest) > 2 else None
        handed = tuple((slot, runs) for slot, runs in rest[3]) if len(rest) > 3 else ()
        return cls(
            path, line, rank, tuple(collective), silences, dataset, random, logging, switch, hf_trainer, picks, handed
        )


@dataclass(frozen=True)
class FileFacts:
    """Facts keyed by the qualified names the importing file uses for them
    (``utils.is_primary`` after ``import utils``, ``.dist.barrier`` after
    ``from .dist import barrier``), as ddplint's scope analysis spells them."""

    facts: Mapping[str, Fact] = field(default_factory=dict)
    #: The caller -> callee direction: the module's own top-level functions
    #: that code in other modules calls on many ranks, with who runs them
    #: (a `Runs` member's name: ``ALL``, ``ALL_BUT_ONE``).
    callers: Mapping[str, str] = field(default_factory=dict)
    #: The module's own top-level functions that other linted modules import
    #: or call: their callers decide who runs them (`ModuleSummary.entries`).
    called_elsewhere: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        """Whether there are facts about imported names or about the module's callers."""
        return bool(self.facts) or bool(self.callers)

    def first(self, names: Iterable[str | None]) -> Fact | None:
        """The fact of the first of `names` that has one."""
        for name in names:
            if name is not None:
                fact = self.facts.get(name)
                if fact is not None:
                    return fact
        return None

    def rank(self, names: Iterable[str | None]) -> bool:
        """Whether one of `names` returns (or holds) a rank-dependent value."""
        return any(n is not None and (f := self.facts.get(n)) is not None and f.rank for n in names)

    @property
    def rank_helper(self) -> bool:
        """Whether the module imports a project helper (or value) that returns the
        rank or tests it, whatever its name (``first_in_job()``): its own rank
        tests come from the project, so it runs as one process per rank."""
        return any(fact.rank for fact in self.facts.values())

    @property
    def meets(self) -> frozenset[str]:
        """The text requirements of rules that these facts meet (`Fact.stands_for`)."""
        return frozenset(need for need in REPLACEABLE if any(f.stands_for(need) for f in self.facts.values()))

    def tokens(self) -> frozenset[str]:
        """The last components of the names, for the text prefilter."""
        return frozenset(name.rsplit(".", 1)[-1] for name in self.facts)

    def digest(self) -> str:
        """A stable hash, part of the importing file's cache key."""
        payload = json.dumps(
            [sorted((k, v.to_json()) for k, v in self.facts.items()), sorted(self.callers.items()), sorted(self.called_elsewhere)]
        )
        return hashlib.sha256(payload.encode()).hexdigest()


NO_FACTS = FileFacts()
