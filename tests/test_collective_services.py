"""Unit tests of the services behind issue 31 I, J, K, independent of any rule:
loop-carried exits (`RankAnalysis.carried_exits`), arguments bound per call
site (`CallGraph.bound`, `calls.truth`) and collective chains with balance and
switches (`collectives.CollectiveChains`)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.callgraph import enclosing_loops
from ddplint.analysis.calls import truth
from ddplint.analysis.collectives import CollectiveChains, Performer, collective_name, in_lazy_initialization
from ddplint.engine.context import FileContext
from ddplint.testing import walk_snippet


class _Recorder:
    """Records every call: collectives, calls of module functions, and probes."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.performers: list[Performer] = []
        self.probes: list[tuple] = []
        self.calls: dict[str, cst.Call] = {}

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        guards = ctx.rank.guards()[0]
        function = ctx.enclosing_function()
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.probes.append((guards, enclosing_loops(ctx.stack)))
            return
        shown = collective_name(node, ctx)
        lazy = in_lazy_initialization(ctx.stack)
        if shown is not None:
            self.performers.append(Performer(node, function, guards, shown, (shown,), lazy=lazy))
        elif isinstance(node.func, cst.Name):
            targets = tuple(v for v in ctx.values_of(node.func) if isinstance(v, cst.FunctionDef))
            if targets:
                self.performers.append(Performer(node, function, guards, node.func.value, targets=targets, lazy=lazy))
                self.calls.setdefault(ctx.module.code_for_node(node), node)


def analyse(source: str):
    ctx, recorder = walk_snippet(textwrap.dedent(source), _Recorder, ["rank"])
    return ctx.rank, recorder


def _chains(source: str):
    rank, recorder = analyse(source)
    solved = CollectiveChains(recorder.performers, rank, rank.graph.bound)
    return {f.name.value: chain for f, chain in solved.chains.items()}, solved, recorder


# ---------------------------------------------------------------- I


def _carried(source: str) -> list:
    rank, recorder = analyse(source)
    return [rank.carried_exits(loops, guards) for guards, loops in recorder.probes]


@pytest.mark.parametrize(
    ("source", "carried"),
    [
        ("import torch.distributed as dist\nfor b in x:\n    probe()\n    if dist.get_rank() == 0 and b:\n        break\n", True),
        ("def f(rank):\n    while True:\n        probe()\n        if rank == 0:\n            if late():\n                return\n", True),
        ("def f(rank):\n    for b in x:\n        probe()\n        if rank != 0:\n            continue\n        if b > 3:\n            break\n", True),
        # Not: a shared condition, `continue`, an all-reduced flag, an exit behind an earlier `break`.
        ("def f(rank, n):\n    for step in x:\n        probe()\n        if step >= n:\n            break\n", False),
        ("def f(rank):\n    for b in x:\n        probe()\n        if rank != 0:\n            continue\n", False),
        (
            "import torch.distributed as dist\ndef f(rank):\n    for b in x:\n        probe()\n"
            "        stop = rank == 0 and b\n        dist.all_reduce(stop)\n        if stop:\n            break\n",
            False,
        ),
        (
            "def f(rank):\n    for b in x:\n        probe()\n        if rank == 0 and b:\n            send()\n"
            "            break\n        if done(b):\n            break\n",
            True,
        ),
        # A `break` of an inner loop does not leave the outer one.
        ("def f(rank):\n    for e in x:\n        probe()\n        for b in e:\n            if rank == 0:\n                break\n", False),
    ],
)
def test_loop_carried_exits(source: str, carried: bool) -> None:
    assert bool(_carried(source)[0]) is carried


def test_carried_exit_names_the_failing_test_after_continue() -> None:
    found = _carried("def f(rank):\n    for b in x:\n        probe()\n        if rank != 0:\n            continue\n        break\n")
    guard = found[0][0]
    assert cst.Module([]).code_for_node(guard.test) == "not (rank != 0)"
    assert isinstance(guard.exit, cst.Break)


# ---------------------------------------------------------------- J


@pytest.mark.parametrize(
    ("text", "expected"),
    [("True", True), ("False", False), ("None", False), ("0", False), ("1", True), ("''", False), ("'x'", True),
     ("not False", True), ("flag", None), ("f()", None)],
)  # fmt: skip
def test_truth(text: str, expected) -> None:
    assert truth(cst.parse_expression(text)) is expected


def test_bound_arguments_by_position_keyword_default_and_self() -> None:
    rank, recorder = analyse(
        """
        def fetch(name, sync=True, *, tag=None):
            pass
        class C:
            def save(self, path, wait=True):
                pass
            def run(self):
                self.save("p", False)
        fetch("a", False)
        fetch("b", tag="t")
        fetch(*args)
        """
    )
    graph = rank.graph
    fetch = graph.functions["fetch"][0]
    save = graph.functions["save"][0]
    calls = {cst.Module([]).code_for_node(r_call): r_call for r_call in _all_calls(rank.ctx.module)}
    first = graph.bound(calls['fetch("a", False)'], fetch)
    assert truth(first["sync"]) is False and first["name"].value == '"a"'
    second = graph.bound(calls['fetch("b", tag="t")'], fetch)
    assert truth(second["sync"]) is True
    assert "sync" not in graph.bound(calls["fetch(*args)"], fetch)  # a splat may pass it
    method = graph.bound(calls['self.save("p", False)'], save)
    assert truth(method["wait"]) is False and "self" not in method
    assert graph.constant_truth(calls['fetch("a", False)'], fetch, "sync") is False


def _all_calls(module: cst.Module) -> list[cst.Call]:
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    module.visit(V())
    return found


def test_switch_passed_through_a_helper_and_turned_off_by_position() -> None:
    chains, solved, recorder = _chains(
        """
        import torch.distributed as dist
        def inner(flag):
            if flag:
                dist.barrier()
        def outer(path, sync=True):
            inner(sync)
        def negated(path, skip=False):
            inner(not skip)
        def caller():
            outer("p", False)
        def other():
            negated("p", True)
        """
    )
    assert set(chains) == {"inner", "outer", "negated"}  # caller and other switch it off
    switches = {f.name.value: s for f, s in solved.switches.items()}
    assert switches == {"inner": ("flag", False), "outer": ("sync", False), "negated": ("skip", True)}


# ---------------------------------------------------------------- K


def test_balanced_helper_is_a_collective_on_every_call() -> None:
    chains, _, _ = _chains(
        """
        import torch.distributed as dist
        def share(x):
            if dist.get_rank() == 0:
                dist.broadcast_object_list(x, src=0)
            else:
                dist.broadcast_object_list(x, src=0)
        def send_then_return(x, rank):
            if rank != 0:
                dist.broadcast(x, src=0)
                return x
            dist.broadcast(x, src=0)
        def user(x):
            share(x)
        def one_sided(x, rank):
            if rank == 0:
                dist.barrier()
        def mixed(x, rank):
            if rank == 0:
                dist.broadcast(x, src=0)
            else:
                dist.all_reduce(x)
        def three_ways(x, rank):
            if rank == 0:
                dist.barrier()
            elif rank == 1:
                dist.barrier()
        """
    )
    assert set(chains) == {"share", "send_then_return", "user"}
    assert chains["user"] == ("share", "`dist.broadcast_object_list()`")
