"""How many DataLoader workers a count asks for (`analysis.workers`), asked of the
model with no rule involved: every core of the node, a number above the
configured max-workers-per-rank, or fine/unknown."""

from __future__ import annotations

import textwrap

import pytest

from ddplint.analysis.workers import NODE_CORES, excess_workers
from ddplint.config.settings import DEFAULT_MAX_WORKERS_PER_RANK as LIMIT
from ddplint.testing import model_of


def excess(source: str) -> str | None:
    """`excess_workers` of the value assigned on the snippet's last line, asked where it stands."""
    source = textwrap.dedent(source).strip() + "\n"
    model = model_of(source)
    node, _ = model.statements[len(source.splitlines())]
    stack, mark = model.positions[node]
    ctx = model.model
    ctx.stack[:] = stack
    try:
        with ctx.scopes.restored(mark):
            return excess_workers(node.body[0].value, ctx)
    finally:
        ctx.stack.clear()


@pytest.mark.parametrize(
    "source",
    [
        "import os\nworkers = os.cpu_count()",
        "import os\nworkers = os.cpu_count() or 4",
        "import multiprocessing as mp\nworkers = mp.cpu_count()",
        "import os\nworkers = len(os.sched_getaffinity(0))",
        "import os\ncores = os.cpu_count()\nworkers = cores",
    ],
)
def test_counts_of_every_core(source: str) -> None:
    assert excess(source) == NODE_CORES


def test_numbers_against_the_configured_limit() -> None:
    above = f"above max-workers-per-rank = {LIMIT}"
    assert excess(f"workers = {LIMIT + 1}") == above
    assert excess(f"count = {LIMIT * 4}\nworkers = count") == above
    assert excess(f"workers = {LIMIT}") is None


@pytest.mark.parametrize(
    "source",
    [
        "import os\nworkers = os.cpu_count() // 8",  # divided among the local ranks
        "import os\nworkers = min(8, os.cpu_count())",
        "import os, sys\ncores = os.cpu_count() if sys.argv else 4\nworkers = cores",
        "def f(n):\n    workers = n",
        "import os\nworkers = len(os.listdir('.'))",
    ],
)
def test_divided_bounded_or_unknown_counts(source: str) -> None:
    assert excess(source) is None
