"""The collective-calls service (`analysis/collective_calls.py`), independent
of any rule: which recorded calls perform a collective (and through which
chain of module functions), and which guard lets some ranks skip it."""

from __future__ import annotations

import textwrap

import libcst as cst

from ddplint.engine.context import FileContext
from ddplint.testing import walk_snippet


class _Recorder:
    """Records every call and `for` loop, as a rule's trigger would."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.nodes: dict[str, cst.CSTNode] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.collective_calls.record(node):
            self.nodes.setdefault(self.ctx.module.code_for_node(node), node)

    def visit_For(self, node: cst.For) -> None:
        if self.ctx.collective_calls.record(node):
            self.nodes.setdefault(f"for {self.ctx.module.code_for_node(node.iter)}", node)


def analyse(source: str) -> tuple[FileContext, dict[str, cst.CSTNode]]:
    ctx, recorder = walk_snippet(textwrap.dedent(source), _Recorder, ["rank"])
    return ctx, recorder.nodes


def skipped_by(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """The test of the guard that lets ranks skip the collective `node` performs."""
    reached = ctx.collective_calls.reach(node)
    assert reached is not None
    guard = ctx.collective_calls.skipping_guard(reached)
    return None if guard is None else ctx.module.code_for_node(guard.test)


def test_a_helper_that_performs_a_collective_is_reached_through_its_chain() -> None:
    ctx, nodes = analyse(
        """
        import torch.distributed as dist

        def sync():
            dist.barrier()

        def save(rank):
            if dist.get_rank() == 0:
                sync()
            print("saved")
        """
    )
    reached = ctx.collective_calls.reach(nodes["sync()"])
    assert reached is not None and reached.shown == "`sync()` (which calls `dist.barrier()`)"
    assert skipped_by(ctx, nodes["sync()"]) == "dist.get_rank() == 0"
    assert 'print("saved")' not in nodes  # a builtin: not even a candidate


def test_branches_that_perform_the_same_collective_let_no_rank_skip_it() -> None:
    ctx, nodes = analyse(
        """
        import torch.distributed as dist

        def share(t):
            if dist.get_rank() == 0:
                dist.broadcast(t, src=0)
            else:
                dist.broadcast(t, src=0)
        """
    )
    assert skipped_by(ctx, nodes["dist.broadcast(t, src=0)"]) is None


def test_a_function_without_collectives_reaches_none() -> None:
    ctx, nodes = analyse(
        """
        import torch.distributed as dist

        def log(x):
            print(x)

        if dist.get_rank() == 0:
            log(1)
        """
    )
    assert ctx.collective_calls.reach(nodes["log(1)"]) is None


def test_an_exit_its_own_branch_excludes_lets_no_rank_skip_it() -> None:
    ctx, nodes = analyse(
        """
        import torch.distributed as dist

        def save(t, use_fsdp):
            if not use_fsdp and dist.get_rank() != 0:
                return
            if use_fsdp:
                dist.broadcast(t, src=0)
        """
    )
    assert skipped_by(ctx, nodes["dist.broadcast(t, src=0)"]) is None


def test_a_rank_dependent_break_guards_the_next_pass_of_the_loop() -> None:
    ctx, nodes = analyse(
        """
        import torch.distributed as dist

        def train(loader):
            for batch in loader:
                dist.all_reduce(batch)
                if dist.get_rank() == 0 and batch.sum() > 3:
                    break
        """
    )
    assert skipped_by(ctx, nodes["dist.all_reduce(batch)"]) == "dist.get_rank() == 0 and batch.sum() > 3"


def test_a_condition_on_the_filesystem_can_differ_between_ranks() -> None:
    ctx, nodes = analyse(
        """
        import os
        import torch.distributed as dist

        def resume(path):
            if os.path.exists(path):
                dist.barrier()
        """
    )
    calls = ctx.collective_calls
    reached = calls.reach(nodes["dist.barrier()"])
    assert calls.skipping_guard(reached) is None
    test, what = calls.varying(reached)
    assert (ctx.module.code_for_node(test), what) == ("os.path.exists(path)", "the filesystem")
