"""Which rules run: ``select`` / ``extend-select`` / ``ignore`` by code or prefix.

Semantics follow Ruff. Selections are applied in layers (the config file,
then the command line). A layer with ``select`` starts afresh; otherwise it
adjusts the previous layer's set. Within a layer, the most specific matching
selector wins (``ignore = ["DDP01"]`` with ``extend-select = ["DDP012"]``
keeps DDP012), and `ignore` wins a tie. ``ALL`` matches every rule.

The starting set is the rules enabled by default. Preview rules join it, and
any selector's matches, only with preview on; a preview rule named by its
exact code runs without it (the user asked for that rule). Rules off by
default join only when a selector matches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

ALL = "ALL"


def all_codes() -> tuple[str, ...]:
    """Every registered rule code, sorted."""
    from ddplint.rule import all_rules

    return tuple(rule.code for rule in all_rules())


def matches(selector: str, code: str) -> bool:
    """Whether `selector` (a code, a prefix, or ALL) selects `code`."""
    return selector == ALL or code.startswith(selector)


def is_known_selector(selector: str) -> bool:
    """Whether `selector` selects at least one registered rule."""
    selector = selector.upper()
    if not selector:
        return False  # every code starts with "": it would select them all
    return selector == ALL or any(code.startswith(selector) for code in all_codes())


def _specificity(selectors: Iterable[str], code: str) -> int:
    return max((0 if s == ALL else len(s) for s in selectors if matches(s, code)), default=-1)


@dataclass(frozen=True)
class Selection:
    """One layer of rule selection."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def apply(
        self, enabled: frozenset[str], codes: Iterable[str], preview_codes: frozenset[str] = frozenset()
    ) -> frozenset[str]:
        """The enabled set after this layer, given the one before it; the
        `preview_codes` join only by their exact code."""
        result = set() if self.select is not None else set(enabled)
        positive = (*(self.select or ()), *self.extend_select)
        for code in codes:
            chosen, ignored = _specificity(positive, code), _specificity(self.ignore, code)
            if code in preview_codes and chosen != len(code):
                chosen = -1
            if ignored >= 0 and ignored >= chosen:
                result.discard(code)
            elif chosen >= 0:
                result.add(code)
        return frozenset(result)


def resolve(layers: Iterable[Selection], preview: bool = False) -> frozenset[str]:
    """The enabled codes after all layers, starting from the default rules."""
    from ddplint.rule import all_rules

    rules = all_rules()
    codes = tuple(rule.code for rule in rules)
    held = frozenset() if preview else frozenset(rule.code for rule in rules if rule.preview)
    enabled = frozenset(rule.code for rule in rules if rule.default_enabled and rule.code not in held)
    for layer in layers:
        enabled = layer.apply(enabled, codes, held)
    return enabled
