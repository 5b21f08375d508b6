"""The services behind DDP026 and DDP031, asked with no rule involved: the
shape of a loop's micro-batches (`analysis.accumulation`) and which values
are a DeepSpeed engine or its optimizer (`analysis.engines`)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.accumulation import micro_batches
from ddplint.knowledge import DEEPSPEED_ENGINE, DEEPSPEED_OPTIMIZER
from ddplint.analysis.engines import DeepSpeedParts
from ddplint.testing import walk_snippet


def _walk(source: str, probe_cls):
    return walk_snippet(textwrap.dedent(source), probe_cls)[1]


class _LoopProbe:
    """The shape of every loop: (backwards on every iteration, steps, accumulates) or None."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.shapes: list = []

    def visit_For(self, node) -> None:
        enclosing = tuple(n for n in reversed(self.ctx.stack[:-1]) if isinstance(n, (cst.For, cst.While)))
        shape = micro_batches(node, enclosing)
        self.shapes.append(None if shape is None else (len(shape.backwards), len(shape.steps), shape.accumulates))


@pytest.mark.parametrize(
    ("source", "shapes"),
    [
        # the step under a modulo test: accumulation
        (
            """
            for i, x in enumerate(loader):
                model(x).sum().backward()
                if (i + 1) % k == 0:
                    optimizer.step()
            """,
            [(1, 1, True)],
        ),
        # a boundary word gates it too; the backward under a non-periodic test still runs every iteration
        (
            """
            for x in loader:
                if loss is not None:
                    loss.backward()
                if is_accumulation_boundary:
                    opt.step()
            """,
            [(1, 1, True)],
        ),
        # an inner micro-batch loop, the step after it in the outer loop
        (
            """
            for batch in loader:
                for micro in range(k):
                    model(batch[micro]).sum().backward()
                optimizer.step()
            """,
            [(1, 1, False), (1, 1, True)],
        ),
        # a step on every iteration (a logging test beside it changes nothing)
        (
            """
            for i, x in enumerate(loader):
                model(x).sum().backward()
                optimizer.step()
                if i % 100 == 0:
                    print(i)
            """,
            [(1, 1, False)],
        ),
        # no backward on every iteration, or no step anywhere
        ("for x in loader:\n    if i % k == 0:\n        loss.backward()\n        optimizer.step()\n", [None]),
        ("for x in loader:\n    loss.backward()\n", [None]),
    ],
)
def test_micro_batch_shapes(source: str, shapes) -> None:
    assert _walk(source, _LoopProbe).shapes == shapes


class _PartProbe:
    """`DeepSpeedParts.part` of each `probe(x)` argument."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.seen: list = []

    def visit_Call(self, node) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.seen.append(DeepSpeedParts(self.ctx).part(node.args[0].value))


_INIT = "deepspeed.initialize(args=a, model=m, model_parameters=p)"


@pytest.mark.parametrize(
    ("source", "seen"),
    [
        (f"import deepspeed\ndef f():\n    e, o, _, _ = {_INIT}\n    probe(e)\n    probe(o)\n", [DEEPSPEED_ENGINE, DEEPSPEED_OPTIMIZER]),
        (f"import deepspeed\ne, o, _, _ = {_INIT}\nprobe(e)\nprobe(o)\n", [DEEPSPEED_ENGINE, DEEPSPEED_OPTIMIZER]),
        (f"import deepspeed\ndef f():\n    e = {_INIT}[0]\n    probe(e)\n", [DEEPSPEED_ENGINE]),
        # a parameter whose callers pass the engine
        (
            f"import deepspeed\ndef step(engine):\n    probe(engine)\ndef main():\n    e, o, _, _ = {_INIT}\n    step(e)\n",
            [DEEPSPEED_ENGINE],
        ),
        # `self.` attributes unpacked in another method
        (
            f"import deepspeed\nclass R:\n    def setup(self):\n        self.e, self.o, _, _ = {_INIT}\n"
            "    def run(self):\n        probe(self.o)\n",
            [DEEPSPEED_OPTIMIZER],
        ),
        # the same name bound to something else in another function is not the optimizer
        (
            f"import deepspeed\ndef f():\n    m, optimizer, _, _ = {_INIT}\n"
            "def g(net):\n    optimizer = torch.optim.AdamW(net.parameters())\n    probe(optimizer)\n",
            [None],
        ),
        ("import torch\ndef f(o):\n    probe(o)\n", [None]),
    ],
)
def test_deepspeed_parts(source: str, seen) -> None:
    assert _walk(source, _PartProbe).seen == seen
