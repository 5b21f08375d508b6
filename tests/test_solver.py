"""The one fixed-point solver (ddplint/solver.py) the analyses share."""

from __future__ import annotations

from ddplint.solver import closure, solve

RANKS = {"none": 0, "one": 1, "some": 2, "all": 3}


def test_closure_reaches_every_transitive_caller_and_nothing_else():
    calls = [("main", ["train"]), ("train", ["sync"]), ("sync", ["barrier"]), ("log", ["fmt"]), ("cycle", ["cycle"])]
    assert closure(["barrier"], calls) == {"barrier", "sync", "train", "main"}
    assert closure([], calls) == set()


def test_solve_without_readers_matches_a_while_changed_loop():
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": []}

    def reach(key, known):
        return True if key == "c" or any(t in known for t in edges[key]) else None

    assert solve(edges, reach) == {"a": True, "b": True, "c": True}


def test_solve_joins_to_the_largest_value_with_and_without_readers():
    callers = {"main": [], "worker": ["main", "guarded"], "guarded": []}
    level = {"main": "all", "guarded": "one"}

    def runs(key, known):
        seen = [known[c] for c in callers[key] if c in known]
        if key in level:
            seen.append(level[key])
        return max(seen, key=RANKS.get) if seen else None

    def grows(old, new):
        return RANKS[new] > RANKS[old]

    readers = {"main": ["worker"], "guarded": ["worker"]}
    assert solve(callers, runs, grows=grows) == {"main": "all", "worker": "all", "guarded": "one"}
    assert solve(callers, runs, grows=grows, readers=readers) == {"main": "all", "worker": "all", "guarded": "one"}


def test_solve_starts_from_known_values():
    assert solve(["x", "y"], lambda k, known: True if "seed" in known else None, start={"seed": True}) == {
        "seed": True, "x": True, "y": True,
    }  # fmt: skip


def test_a_step_that_never_settles_stops_at_the_limit():
    counter = iter(range(10**9))
    result = solve(["k"], lambda k, known: next(counter), limit=50)
    assert result["k"] == 49
    result = solve(["k"], lambda k, known: next(counter), readers={"k": ["k"]}, limit=50)
    assert set(result) == {"k"}
