"""Which rules run: ``select`` / ``extend-select`` / ``ignore`` by code or prefix.

Semantics follow Ruff. Selections are applied in layers (the config file,
then the command line). A layer with ``select`` starts afresh; otherwise it
adjusts the previous layer's set. Within a layer, the most specific matching
selector wins (``ignore = ["DDP01"]`` with ``extend-select = ["DDP012"]``
keeps DDP012), and `ignore` wins a tie. ``ALL`` matches every rule.
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
    return selector == ALL or any(code.startswith(selector) for code in all_codes())


def _specificity(selectors: Iterable[str], code: str) -> int:
    return max((0 if s == ALL else len(s) for s in selectors if matches(s, code)), default=-1)


@dataclass(frozen=True)
class Selection:
    """One layer of rule selection."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def apply(self, enabled: frozenset[str], codes: Iterable[str]) -> frozenset[str]:
        """The enabled set after this layer, given the one before it."""
        result = set() if self.select is not None else set(enabled)
        positive = (*(self.select or ()), *self.extend_select)
        for code in codes:
            chosen, ignored = _specificity(positive, code), _specificity(self.ignore, code)
            if ignored >= 0 and ignored >= chosen:
                result.discard(code)
            elif chosen >= 0:
                result.add(code)
        return frozenset(result)


def resolve(layers: Iterable[Selection]) -> frozenset[str]:
    """The enabled codes after all layers, starting from every rule."""
    codes = all_codes()
    enabled = frozenset(codes)
    for layer in layers:
        enabled = layer.apply(enabled, codes)
    return enabled
