"""The models service (ddplint/analysis/wrappers.py): which names hold a
wrapped model, the bare module, forwards around the wrapper, wrap order and
saved state dicts, asked of snippets with no rule involved."""

from __future__ import annotations

import contextlib
import textwrap
from typing import Iterator

import libcst as cst

from ddplint.analysis.wrappers import CONVERT, OPTIMIZER, SHARD, WRAP, Models
from ddplint.testing import ModelOf, model_of


def _model(source: str) -> ModelOf:
    return model_of(textwrap.dedent(source))


@contextlib.contextmanager
def _at(m: ModelOf, line: int) -> Iterator[tuple[Models, cst.CSTNode]]:
    """The service with names resolved as at the statement on `line`, and that statement's first small statement."""
    node, _ = m.statements[line]
    stack, mark = m.positions[node]
    m.model.stack[:] = stack
    try:
        with m.model.scopes.restored(mark):
            yield m.model.models, node.body[0] if isinstance(node, cst.SimpleStatementLine) else node
    finally:
        m.model.stack.clear()


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Visitor(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(Visitor())
    return found


WRAPPED = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def train(net, loader, ddp, model_ema):
    model = DDP(net)
    maybe = DDP(net) if ddp else net
    raw = model.module
    for x in loader:
        out = model.module(x)
        out = raw(x)
        out = net(x)
        ema = model_ema.module(x)
        sd = model.module.state_dict()
        model = model.module
"""


def test_names_bound_to_a_wrapper_hold_one_and_the_bare_module_is_followed() -> None:
    m = _model(WRAPPED)
    with _at(m, 8) as (models, statement):  # raw = model.module
        assert models.holds_wrapper(cst.Name("model"))
        assert models.holds_wrapper(cst.Name("maybe"))  # a conditional wrap
        assert not models.holds_wrapper(cst.Name("net"))
    with _at(m, 11) as (models, statement):  # out = raw(x)
        assert models.holds_bare_module(cst.Name("raw"))
        assert not models.holds_bare_module(cst.Name("net"))


def test_forwards_around_the_wrapper_are_bypasses_but_copies_and_state_are_not() -> None:
    m = _model(WRAPPED)
    answers = {}
    for line in (10, 11, 12, 13, 14):
        with _at(m, line) as (models, statement):
            call = _calls(statement)[0]
            m.model.stack.append(call)  # the call is the node being checked
            answers[line] = models.bypass(call)
    assert answers[10] is not None and (answers[10].shown, answers[10].receiver, answers[10].known) == ("model.module", "model", True)
    assert answers[11] is not None and answers[11].shown == "raw" and answers[11].receiver == ""
    assert answers[12] is None  # the bare model was never wrapped here
    assert answers[13] is None  # an EMA copy
    assert answers[14] is None  # state, not a forward


def test_rebinding_a_wrapper_to_its_bare_module() -> None:
    m = _model(WRAPPED)
    with _at(m, 15) as (models, statement):
        assert models.rebound_to_bare(statement) == "model"
    with _at(m, 8) as (models, statement):
        assert models.rebound_to_bare(statement) is None  # another name: not a rebinding


def test_an_attribute_assigned_a_wrapper_in_any_method_holds_one() -> None:
    m = _model(
        """
        import torch

        class Trainer:
            def step(self, x, helper):
                self.model.module(x)
                helper.module(x)

            def setup(self, net):
                self.model = torch.nn.parallel.DistributedDataParallel(net)
                self.teacher = build(net)
                self.given = net
        """
    )
    models = m.model.models
    assert models.attribute("model") is True  # assigned after its use, in another method
    assert models.attribute("teacher") is False
    assert models.attribute("given") is None  # only a parameter: the caller decides
    with _at(m, 7) as (models, statement):
        call = _calls(statement)[0]
        m.model.stack.append(call)
        bypass = models.bypass(call)
    assert bypass is not None and not bypass.known  # a parameter's `.module`: maybe a wrapper


def test_every_value_wrapped_or_only_on_distributed_runs() -> None:
    m = _model(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP

        def save(net, world_size):
            always = DDP(net)
            sometimes = net
            if world_size > 1:
                sometimes = DDP(net)
            unwrapped = DDP(net)
            unwrapped = unwrapped.module
            parallel = torch.nn.DataParallel(net)
            torch.save(always.state_dict(), "a.pt")
        """
    )
    with _at(m, 13) as (models, statement):
        assert models.wrapped(cst.Name("always")) is True
        assert models.wrapped(cst.Name("sometimes")) is False
        assert models.wrapped(cst.Name("unwrapped")) is None
        assert models.wrapped(cst.Name("parallel")) is True
        assert models.wrapped(cst.Name("net")) is None
        save, state_dict = _calls(statement)
        assert models.saved_state_dicts(save) == [state_dict]
        assert not models.handles_key_prefix(state_dict.func.value)  # type: ignore[attr-defined]


def test_saved_state_dicts_are_followed_through_dicts_and_one_name() -> None:
    m = _model(
        """
        import torch

        def save(model, path):
            sd = model.state_dict()
            torch.save({"model": sd, "epoch": 1}, path)
            torch.save(sd, path + ".copy")
            other = model.state_dict()
            model.load_state_dict(torch.load(path))
        """
    )
    with _at(m, 5) as (models, statement):
        state_dict = _calls(statement)[0]
    with _at(m, 6) as (models, statement):
        assert models.saved_state_dicts(_calls(statement)[0]) == [state_dict]
    with _at(m, 7) as (models, statement):
        assert models.saved_state_dicts(_calls(statement)[0]) == []  # written by the save before
    with _at(m, 8) as (models, statement):
        call = _calls(statement)[0]
        assert models.handles_key_prefix(call.func.value)  # type: ignore[attr-defined]  # loaded back into `model`


def test_a_module_that_strips_the_prefix_handles_it() -> None:
    m = _model(
        """
        def clean(state):
            return {k.replace("module.", ""): v for k, v in state.items()}
        """
    )
    assert m.model.models.handles_key_prefix(cst.Name("anything"))


def test_wrap_order_per_function_and_model() -> None:
    m = _model(
        """
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.nn.parallel import DistributedDataParallel as DDP

        def build(model, other):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            model = FSDP(model.cuda())
            kept = FSDP(other, use_orig_params=True)
            ddp = DDP(other)
            torch.nn.SyncBatchNorm.convert_sync_batchnorm(other)
        """
    )
    steps = {}
    for line in (7, 8, 9, 10, 11):
        with _at(m, line) as (models, statement):
            steps[line] = [models.step(call) for call in _calls(statement)]
    optimizer = next(s for s in steps[7] if s is not None)
    assert (optimizer.kind, optimizer.model) == (OPTIMIZER, "model")
    shard = next(s for s in steps[8] if s is not None)
    assert (shard.kind, shard.model) == (SHARD, "model")  # `model.cuda()` is `model`
    assert all(s is None for s in steps[9])  # FSDP keeps the original parameters
    wrap, convert = steps[10][0], steps[11][0]
    assert wrap is not None and wrap.kind == WRAP and convert is not None and convert.kind == CONVERT
    models = m.model.models
    assert [s.kind for s in models.steps_around(optimizer)[1]] == [SHARD]
    assert [s.kind for s in models.steps_around(convert)[0]] == [WRAP]  # same model, `other`
