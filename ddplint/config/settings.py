"""The effective options for linting one file (after config and CLI merge)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ddplint.model import Severity

DEFAULT_MAX_WORKERS_PER_RANK = 8
DEFAULT_MAX_FILE_SIZE = 5 * 10**6
#: LibCST needs about 10 kB and 0.2 ms per short line (2.6 GB and 45 s for
#: 250,000 lines); real source files stay far below this (the longest of
#: CPython's Lib/ has 15,711 lines, of the benchmark corpus 7,063).
DEFAULT_MAX_LINES = 100_000
#: LibCST needs about 3.5 kB and 50-80 us per token, on one line or many
#: (a 4.9 MB line of 600,000 calls: 219 s and 8.4 GB); the most of any of
#: 11,793 files of 60 training repositories is 56,984 (Python's `tokenize`).
DEFAULT_MAX_TOKENS = 300_000


@dataclass(frozen=True)
class Settings:
    """What `lint_source` needs to know besides the file's text.

    `rules` is the set of enabled codes (per-file-ignores already removed);
    `severity` maps codes to overridden levels.
    """

    rules: frozenset[str]
    severity: Mapping[str, Severity] = field(default_factory=dict)
    rank_names: tuple[str, ...] = ()
    max_workers_per_rank: int = DEFAULT_MAX_WORKERS_PER_RANK
    #: Larger files get a note and are not linted (generated or vendored code).
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    #: Longer files get a note and are not linted (as above max-file-size):
    #: this bounds the time and memory of one file.
    max_lines: int = DEFAULT_MAX_LINES
    #: Files of more tokens get a note and are not linted (as above
    #: max-lines): bounds a file dense in code (long lines).
    max_tokens: int = DEFAULT_MAX_TOKENS
    #: Preview rule variants report too (``--preview``, ``preview = true``).
    preview: bool = False

    def key(self) -> str:
        """A stable text of everything that changes findings (for the cache key)."""
        severity = ",".join(f"{c}={s.value}" for c, s in sorted(self.severity.items()))
        return f"{sorted(self.rules)}|{severity}|{sorted(self.rank_names)}|{self.max_workers_per_rank}|{self.max_file_size}|{self.max_lines}|{self.max_tokens}|{self.preview}"

    @classmethod
    def enabling(cls, codes: Iterable[str]) -> Settings:
        """These rules enabled, preview on, no overrides (`ddplint.rule.all_rules_settings()`
        enables every registered rule: settings sit below the rule registry)."""
        return cls(rules=frozenset(codes), preview=True)
