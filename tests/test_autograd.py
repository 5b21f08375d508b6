"""The autograd service (`analysis.autograd`), asked with no rule involved:
where autograd records no graph, what a statement accumulates, what a
backward back-propagates, whether a value accumulated in a loop keeps its
graph alive, whether a variable is used as a tensor."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.autograd import accumulations, backpropagated, under_no_grad, used_as_tensor
from ddplint.engine.context import FileContext
from ddplint.testing import walk_snippet


class _Probe:
    """Answers `under_no_grad` at each `probe()` call, and keeps the loops' answers."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.no_grad: list[bool] = []
        self.accumulated: list[tuple[cst.CSTNode, cst.CSTNode, str, cst.BaseExpression]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.no_grad.append(under_no_grad(self.ctx.stack, self.ctx))
        self._accumulation(node)

    def visit_AugAssign(self, node) -> None:
        self._accumulation(node)

    visit_Assign = visit_AugAssign

    def _accumulation(self, node) -> None:
        loops = self.ctx.loops.enclosing_loops()
        for name, value in accumulations(node):
            if loops:
                self.accumulated.append((node, loops[0], name, value))


def _walk(source: str) -> tuple[FileContext, _Probe]:
    return walk_snippet(textwrap.dedent(source), _Probe, {"loops"})  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("with torch.no_grad():\n    probe()\n", [True]),
        ("with torch.inference_mode(), open(p) as f:\n    probe()\n", [True]),
        ("with torch.set_grad_enabled(False):\n    probe()\n", [True]),
        ("with torch.set_grad_enabled(True):\n    probe()\n", [False]),
        ("@torch.no_grad()\ndef evaluate():\n    def inner():\n        probe()\n", [True]),
        ("@torch.inference_mode\ndef evaluate():\n    probe()\n", [True]),
        ("with torch.no_grad():\n    pass\nprobe()\n", [False]),
        ("from torch import no_grad as ng\nwith ng():\n    probe()\n", [True]),
        ("with no_grad():\n    probe()\n", [False]),  # not torch's
    ],
)
def test_under_no_grad(source: str, expected: list[bool]) -> None:
    _, probe = _walk("import torch\n" + source)
    assert probe.no_grad == expected


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("total += loss", [("total", "loss")]),
        ("self.total += loss * n", [("self.total", "loss * n")]),
        ("total = total + loss", [("total", "loss")]),
        ("losses.append(loss)", [("losses", "loss")]),
        ("history[key] = loss", [("history", "loss")]),
        ("total = loss", []),
        ("total -= loss", []),
        ("losses.append(a, b)", []),
        ("f().total += loss", []),
    ],
)
def test_accumulations(statement: str, expected: list[tuple[str, str]]) -> None:
    node = cst.parse_statement(statement + "\n").body[0]  # type: ignore[attr-defined]
    node = node.value if isinstance(node, cst.Expr) else node
    code = cst.Module([]).code_for_node
    assert [(name, code(value)) for name, value in accumulations(node)] == expected


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("loss.backward()", "loss"),
        ("(loss / k).backward()", "(loss / k)"),
        ("accelerator.backward(loss)", "loss"),
        ("self.engine.backward(loss)", "loss"),
        ("scaler.scale(loss).backward()", "loss"),
        ("optimizer.step()", None),
    ],
)
def test_backpropagated(call: str, expected: str | None) -> None:
    found = backpropagated(cst.parse_expression(call))  # type: ignore[arg-type]
    assert (None if found is None else cst.Module([]).code_for_node(found)) == expected


@pytest.mark.parametrize(
    ("body", "keeps"),
    [
        # a criterion's loss, back-propagated and summed with its graph
        ("loss = criterion(model(x), y)\n    loss.backward()\n    total += loss", True),
        # a HF model output's loss, named like a loss
        ("loss = model(**x).loss\n    opt.step()\n    total += loss", True),
        # detached, or converted to a number
        ("loss = criterion(model(x), y)\n    loss.backward()\n    total += loss.item()", False),
        ("loss = criterion(model(x), y).item()\n    opt.step()\n    total += loss", False),
        # gradient accumulation: the sum itself is back-propagated
        ("loss = criterion(model(x), y)\n    total = total + loss\n    total.backward()", False),
        # re-bound in every iteration: nothing outlives it
        ("loss = criterion(model(x), y)\n    loss.backward()\n    total = 0\n    total += loss", False),
        # named like a loss but not from a model or criterion
        ("loss = 0.5\n    opt.step()\n    total += loss", False),
    ],
)
def test_loop_keeps_graph(body: str, keeps: bool) -> None:
    ctx, probe = _walk(f"total = 0\nfor x, y in loader:\n    {body}\n")
    (node, loop, name, value), *_ = probe.accumulated
    assert ctx.loops.body(loop).keeps_graph(name, value, ctx) is keeps


@pytest.mark.parametrize(
    ("uses", "as_tensor"),
    [
        ("print(total / n)\n    return float(total)", False),
        ("losses.clear()\n    print(len(losses))", False),
        ("return losses", True),
        ("return model, losses", True),
        ("dist.all_reduce(total)", True),
        ("total.cpu()", True),
        ("self.history = {'loss': losses}", True),
    ],
)
def test_used_as_tensor(uses: str, as_tensor: bool) -> None:
    function = cst.parse_module(f"def f():\n    total += loss\n    losses.append(loss)\n    {uses}\n").body[0]
    accumulation = function.body.body[0]  # type: ignore[attr-defined]
    name = "losses" if "losses" in uses else "total"
    assert used_as_tensor(function, name, accumulation) is as_tensor
