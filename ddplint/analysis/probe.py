"""Cheap text tests: substrings first, a regular expression only where they occur.

A regular-expression alternation (``\\b(?:save|open|log)\\b``) scans a whole
file to learn that none of its words is there: over transformers' files the
prefilter's searches took 14 s of a 102 s lint. ``str.__contains__`` answers
the same question at memory speed, and most files lack most tokens, so each
test first checks the substrings every match must contain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import AbstractSet, Callable, Iterable


@dataclass(frozen=True, eq=False)
class Probe:
    """A text test: one of `needles` occurs (as a whole word, with `words`),
    and then `pattern`, if given, matches.

    Every match of `pattern` must contain one of `needles`: the needles
    only make the answer cheaper, never different.
    """

    needles: tuple[str, ...]
    pattern: re.Pattern[str] | None = None
    words: bool = False

    @classmethod
    def of_words(cls, words: Iterable[str]) -> Probe:
        """Any of `words` as a whole word (as ``\\b`` delimits one)."""
        return cls(tuple(sorted(words)), words=True)

    @classmethod
    def of_substrings(cls, needles: Iterable[str]) -> Probe:
        """Any of `needles` anywhere."""
        return cls(tuple(sorted(needles)))

    def matches(
        self, text: str, words: AbstractSet[str] | None = None, contains: Callable[[str], bool] | None = None
    ) -> bool:
        """Whether `text` matches; `words` (`words_of(text)`, when the caller
        has it) answers for the needles that are whole words at once, and
        `contains` (``needle in text``, remembered by a caller that asks many
        probes) for the others."""
        if not self.words:
            found = any(map(contains, self.needles)) if contains else any(needle in text for needle in self.needles)
        elif words is not None:
            found = not words.isdisjoint(self._plain) or any(_has_word(text, word) for word in self._other)
        else:
            found = any(_has_word(text, word) for word in self.needles)
        return found and (self.pattern is None or self.pattern.search(text) is not None)

    @cached_property
    def _plain(self) -> frozenset[str]:
        """The needles `words_of` can hold: runs of word characters."""
        return frozenset(n for n in self.needles if _WORD.fullmatch(n))

    @cached_property
    def _other(self) -> tuple[str, ...]:
        return tuple(n for n in self.needles if n not in self._plain)


@dataclass(frozen=True, eq=False)
class AnyOf:
    """Matches where one of its probes does."""

    probes: tuple[Probe | AllOf, ...]

    def matches(
        self, text: str, words: AbstractSet[str] | None = None, contains: Callable[[str], bool] | None = None
    ) -> bool:
        return any(probe.matches(text, words, contains) for probe in self.probes)


@dataclass(frozen=True, eq=False)
class AllOf:
    """Matches where each of its probes does."""

    probes: tuple[Probe, ...]

    def matches(
        self, text: str, words: AbstractSet[str] | None = None, contains: Callable[[str], bool] | None = None
    ) -> bool:
        return all(probe.matches(text, words, contains) for probe in self.probes)


#: A run of word characters: what ``\\b...\\b`` delimits.
_WORD = re.compile(r"\w+")


def words_of(text: str) -> frozenset[str]:
    """Every run of word characters in `text`: a word probe's needle occurs
    as a whole word exactly when it is one of them (one scan of the text for
    all the probes of a file, instead of a search per needle). An ASCII text
    (most source) is split at its other characters, twice as fast as the
    regular expression; ``\\w`` decides beyond ASCII."""
    if text.isascii():
        return frozenset(text.translate(_ASCII_NON_WORD).split())
    return frozenset(_WORD.findall(text))


#: Every ASCII character that is not a word character (``\\w``), as a space.
_ASCII_NON_WORD = str.maketrans({chr(c): " " for c in range(128) if not re.fullmatch(r"\w", chr(c))})


def _has_word(text: str, word: str) -> bool:
    """Whether `word` occurs in `text` with no word character (``\\w``) on
    either side: ``re.search(r"\\bamp\\b")`` without the regular expression
    engine, which tries the pattern at every position of the text."""
    size, end = len(text), len(word)
    start = text.find(word)
    while start != -1:
        after = start + end
        if (start == 0 or not _is_word_char(text[start - 1])) and (after == size or not _is_word_char(text[after])):
            return True
        start = text.find(word, start + 1)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"
