"""One solver for the fixed points the analyses need.

Which functions are rank-dependent, which run on every rank, which perform
a collective on every call, which facts a module exports once its imports'
facts are known: each is a least fixed point of a monotone step over a
finite set of keys. `solve` computes it once, the same way for all of them,
instead of a ``while changed:`` loop written again in every module.

The contract: `transfer(key, known)` says what `key` is, given what is known
of the others so far (`known` maps each key solved so far to its value), or
None for "nothing yet". It must be monotone: a value, once given, may only
grow (`grows(old, new)` says whether `new` is larger), so the loop ends. With
`readers` (for each key, the keys whose transfer reads it) only those are
revisited after a change; without it every key is, round after round, in
`keys` order, which is what the hand-written loops did.

A step that is not monotone would loop forever; `solve` stops after `limit`
rounds and returns what it has (a linter answers, never hangs).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Rounds after which a step that keeps changing is given up on.
LIMIT = 10_000


def _differs(old: object, new: object) -> bool:
    return old != new


def solve(
    keys: Iterable[K],
    transfer: Callable[[K, Mapping[K, V]], V | None],
    *,
    start: Mapping[K, V] | None = None,
    readers: Mapping[K, Iterable[K]] | None = None,
    grows: Callable[[V, V], bool] = _differs,
    limit: int = LIMIT,
) -> dict[K, V]:
    """The least fixed point of `transfer` over `keys`, from `start`."""
    order = list(dict.fromkeys(keys))
    known: dict[K, V] = dict(start or {})
    if readers is None:
        for _ in range(limit):
            changed = False
            for key in order:
                new = transfer(key, known)
                if new is not None and (key not in known or grows(known[key], new)):
                    known[key] = new
                    changed = True
            if not changed:
                break
        return known
    pending = dict.fromkeys(order)
    steps = limit * max(1, len(order))
    while pending and steps:
        steps -= 1
        key = next(iter(pending))
        del pending[key]
        new = transfer(key, known)
        if new is not None and (key not in known or grows(known[key], new)):
            known[key] = new
            pending.update(dict.fromkeys(readers.get(key, ())))
    return known


def closure(seeds: Iterable[K], edges: Iterable[tuple[K, Iterable[K]]]) -> set[K]:
    """`seeds` and every key with an edge to a member, to a fixed point: the
    callers, transitively, of the functions that perform a collective."""
    found = set(seeds)
    back: dict[K, list[K]] = {}
    for source, targets in edges:
        for target in targets:
            back.setdefault(target, []).append(source)
    pending = list(found)
    while pending:
        for source in back.get(pending.pop(), ()):
            if source not in found:
                found.add(source)
                pending.append(source)
    return found
