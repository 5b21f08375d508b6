"""The mixed-precision service (`analysis.amp`), asked with no rule involved:
which clips run on gradients still multiplied by GradScaler's loss scale,
which module functions clip the gradients they find, and the `torch.amp`
spelling of a deprecated `torch.cuda.amp` call."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.amp import ScaledClip, modern_call
from ddplint.analysis.rewrite import dotted
from ddplint.engine.context import FileContext
from ddplint.testing import walk_snippet


def _scaled_clips(source: str) -> list[ScaledClip | None]:
    """`scaled_clip` of every call the service takes for a clip or a module function's call, in source order."""
    calls: list[cst.Call] = []

    class Probe:
        def __init__(self, ctx: FileContext) -> None:
            self.ctx = ctx

        def visit_Call(self, node: cst.Call) -> None:
            if self.ctx.amp.may_clip(node):
                calls.append(node)

    ctx, _ = walk_snippet(textwrap.dedent(source), Probe, {"amp"})
    return [ctx.amp.scaled_clip(call) for call in calls]


def test_clip_after_scaled_backward() -> None:
    assert _scaled_clips(
        """
        def train(model, scaler, optimizer, loss):
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
        """
    ) == [ScaledClip("scaler", "optimizer", None)]


def test_unscaled_first_or_no_scaler() -> None:
    assert _scaled_clips(
        """
        def train(model, scaler, optimizer, loss):
            scaled = scaler.scale(loss)
            scaled.backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)

        def plain(model, optimizer, loss):
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

        def accelerated(accelerator, model, scaler, loss):
            scaler.scale(loss).backward()
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
        """
    ) == [None, None]  # the accelerator's clip unscales itself: not a clip


def test_unscale_on_some_steps_only() -> None:
    found = _scaled_clips(
        """
        def train(model, scaler, optimizer, loss, step, amp):
            if amp:
                scaler.scale(loss).backward()
            if step % 10 == 0:
                scaler.unscale_(optimizer)
            model.clip_grad_norm_(1.0)
            if amp:
                scaler.unscale_(optimizer)
            model.clip_grad_norm_(1.0)
        """
    )
    assert found == [ScaledClip("scaler", None, None), None]


def test_functions_that_clip_what_they_find() -> None:
    found = _scaled_clips(
        """
        def clip_gradients(model, limit):
            torch.nn.utils.clip_grad_value_(model.parameters(), limit)

        def clip_all(model):
            clip_gradients(model, 3.0)

        class Trainer:
            def clip(self):
                clip_all(self.model)

            def step(self, loss):
                self.scaler.scale(loss).backward()
                self.clip()
                clip_all(self.model)
                scaler = self.scaler
                scaler.step(self.optimizer)
        """
    )
    # the clip in `clip_gradients` and the calls in `clip_all` and `clip` run on no scaled gradients of their own
    assert found == [None, None, None, ScaledClip("self.scaler", "self.optimizer", "self.clip"),
                     ScaledClip("self.scaler", "self.optimizer", "clip_all")]


@pytest.mark.parametrize(
    ("call", "kind", "expected"),
    [
        ("torch.cuda.amp.autocast(True, torch.float16)", "autocast",
         'torch.amp.autocast("cuda", enabled=True, dtype=torch.float16)'),
        ("GradScaler(init_scale=2.0**16)", "scaler", 'torch.amp.GradScaler("cuda", init_scale=2.0**16)'),
        ("custom_fwd(cast_inputs=torch.float32)", "decorator",
         'torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)'),
        ("autocast(*flags)", "autocast", None),
        ("custom_fwd(torch.float32)", "decorator", None),
    ],
)
def test_modern_call(call: str, kind: str, expected: str | None) -> None:
    new = {"autocast": "torch.amp.autocast", "scaler": "torch.amp.GradScaler", "decorator": "torch.amp.custom_fwd"}[kind]
    found = modern_call(cst.parse_expression(call), dotted(new), "cuda", kind)  # type: ignore[arg-type]
    assert (None if found is None else cst.Module([]).code_for_node(found)) == expected


def test_modern_call_of_a_bare_decorator() -> None:
    found = modern_call(None, dotted("torch.amp.custom_bwd"), "cuda", "decorator")
    assert cst.Module([]).code_for_node(found) == 'torch.amp.custom_bwd(device_type="cuda")'  # type: ignore[arg-type]
