"""Who runs a line: the shared vocabulary of guards, sites and rank sets.

The small types that the rank analysis (`rank`), the call graph
(`callgraph`), the execution model (`execution`) and the rank-set reader
(`rank_sets`) pass between them, and `RankView`, what the last three ask of
the rank analysis. They live below all four so that none of them imports
another upwards (tests/test_layers.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.single_process import SingleProcessCode
    from ddplint.analysis.view import ModelView

#: The dependency "this value is a rank source".
DIRECT = "rank"

Deps = frozenset  # of DIRECT | cst.FunctionDef | ("attr", name)


class GuardKind(enum.Enum):
    """How a guard selects the ranks that run the code under it."""

    BRANCH = "branch"  # if/elif/else, ternary, and the rest of a block after an early exit
    SHORT_CIRCUIT = "short-circuit"
    LOOP = "while"
    DECORATOR = "decorator"
    STAGGERED = "staggered"


@dataclass(frozen=True, eq=False)
class Guard:
    """One construct deciding whether the node under it runs on this rank.

    For `BRANCH` guards, `owner` is the ``if`` (the head of an elif chain) or
    the ternary, `branch` the index of the branch the node is in (the last
    index is the ``else``, explicit or implicit), and `branches` how many
    there are. `test` is the condition shown in messages; `anchor` the node
    for the related location; `scope` the function the guard is in (None:
    module level); `exit` the early-exit statement when the node is after
    ``if ...: return`` rather than inside a branch.
    """

    kind: GuardKind
    owner: cst.CSTNode
    deps: Deps
    test: cst.CSTNode
    anchor: cst.CSTNode
    branch: int = 0
    branches: int = 1
    scope: cst.CSTNode | None = None
    exit: cst.CSTNode | None = None
    #: The test read for the rank-set question (`rank_sets`), for branches and operands.
    shape: TestShape | None = None
    #: The exit is nested deeper in the branch (``if is_master: if exists(log): return``):
    #: some of the ranks the test selects may leave, so only DDP001 counts it.
    nested: bool = False
    #: A loop-carried exit (`RankAnalysis.carried_exits`): the loop whose next
    #: pass the ranks that took `exit` never run.
    loop: cst.CSTNode | None = None


@dataclass(frozen=True, eq=False)
class Site:
    """A node a rule wants to judge after the walk, with what it needs then:
    its statement (for ``# noqa``), guards, function, and the rank
    dependencies of its arguments."""

    node: cst.CSTNode
    statement: cst.CSTNode
    guards: tuple[Guard, ...]
    function: cst.FunctionDef | None
    deps: Deps = frozenset()
    #: Whether only a job of one process runs it (`if not dist.is_initialized():`).
    single_process: bool = False
    #: The loops around it within its function, innermost first.
    loops: tuple[cst.CSTNode, ...] = ()
    #: At module level, inside ``if __name__ == "__main__":``.
    main_block: bool = False
    #: The ``if`` branches it is in, within its function (`callgraph.branch_path`).
    path: tuple[tuple[int, int], ...] = ()
    #: Where the walk was (a `scope.ScopeMark`): names resolve there after the walk.
    scopes: object = None


#: Guard kinds that select ranks (a staggered block runs on every rank).
SELECTING = frozenset({GuardKind.BRANCH, GuardKind.SHORT_CIRCUIT, GuardKind.LOOP, GuardKind.DECORATOR})


class Runs(enum.Enum):
    """Who executes a line in a distributed job."""

    ALL = "every rank"
    ALL_BUT_ONE = "every rank but one"
    PER_NODE = "one rank per node"
    SOME = "some ranks"
    ONE = "one rank"
    LAUNCHER = "the launcher process"
    SINGLE = "a one-process run only"
    UNKNOWN = "unknown"

    @property
    def many(self) -> bool:
        """More than one rank runs it, on every job of more than two ranks."""
        return self in (Runs.ALL, Runs.ALL_BUT_ONE)


#: Rank sets ordered by size: a union is the larger, an intersection the smaller.
ORDER = (Runs.ONE, Runs.SOME, Runs.PER_NODE, Runs.ALL_BUT_ONE, Runs.ALL)
_LEVEL = {runs: index for index, runs in enumerate(ORDER)}


def smaller(a: Runs, b: Runs) -> Runs:
    return a if _LEVEL[a] <= _LEVEL[b] else b


def larger(a: Runs, b: Runs) -> Runs:
    return a if _LEVEL[a] >= _LEVEL[b] else b


# Leaf kinds: the ranks on which the leaf holds, and those on which it fails.
ZERO = "zero"  # rank 0 (of the job, or of the node for a local rank)
NODE_ZERO = "node-zero"
ONE = "one"  # one rank other than 0
NONZERO = "nonzero"  # `if rank:`, `rank > 0`
NOT_ONE = "not-one"  # `rank != 3`: every rank but one
#: `rank == src` / `rank != src`: one rank (every rank but one) when exactly
#: one side is rank-dependent (known after the walk), else data-dependent.
EQUAL = "equal"
UNEQUAL = "unequal"
OTHER = "other"  # data-dependent


@dataclass(frozen=True, eq=False)
class TestShape:
    """A guard's test as a tree: ``not``/``and``/``or`` over leaves."""

    op: str  # "leaf", "not", "and", "or"
    children: tuple[TestShape, ...] = ()
    deps: Deps = frozenset()
    kind: str = OTHER
    #: Whether the leaf being true (or false) means a one-process run.
    single_if_true: bool = False
    single_if_false: bool = False
    #: The leaf's expression (after following `is_leader = rank == 0`).
    node: cst.CSTNode | None = None
    #: For `EQUAL`/`UNEQUAL` leaves: the rank dependencies of each side.
    sides: tuple[Deps, ...] = ()


class RankView(Protocol):
    """What the call graph, the execution model and the rank-set reader ask
    of the rank analysis (`rank.RankAnalysis`)."""

    ctx: ModelView
    single_process: SingleProcessCode
    #: Whether the walk is over (rank answers, and what the call graph
    #: indexes from its references, are final only then).
    final: bool

    def deps(self, node: cst.CSTNode, depth: int = 0) -> Deps: ...

    def guards(self) -> tuple[tuple[Guard, ...], tuple[Guard, ...]]: ...

    def is_rank_dependent(self, deps: Deps) -> bool: ...

    def is_rank_name(self, name: str) -> bool: ...

    def holder_shape(self, node: cst.Name) -> TestShape | None: ...
