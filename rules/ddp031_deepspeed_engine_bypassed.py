"""DDP031 deepspeed-engine-bypassed."""

from __future__ import annotations

from ddplint.analysis.engines import DeepSpeedParts
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class DeepspeedEngineBypassed(Rule):
    """
    ## What it does

    Flags training code that goes around the engine `deepspeed.initialize`
    returns: `loss.backward()` on a value computed from the engine's
    forward (`loss = engine(batch)`, `criterion(engine(x), y)`,
    `engine(**batch).loss`), and `optimizer.step()` on the optimizer
    `deepspeed.initialize` returned, in a function that calls neither
    `engine.backward(...)` nor `engine.step()`. The engine and its optimizer
    are followed through tuple unpacking, `self.` attributes, helper
    parameters and `deepspeed.initialize(...)[0]`.

    ## Why is this bad?

    The engine does the distributed work in its own `backward` and `step`:
    loss scaling, gradient averaging across data-parallel ranks (or ZeRO's
    reduce-scatter), the accumulation boundary, clipping, the overflow check
    and the scheduler. A plain `loss.backward()` skips that before DeepSpeed
    0.18.3: the gradients are never reduced and each rank steps with its own.
    From 0.18.3 (deepspeedai/DeepSpeed#7665) `tensor.backward()` is accepted
    when PyTorch has the hooks it needs, but mixed precision still needs
    `engine.scale(loss)`; `optimizer.step()` still skips the engine's step.

    ## Example

    ```python
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
    for batch in loader:
        loss = engine(batch)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead

    ```python
    engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params)
    for batch in loader:
        loss = engine(batch)
        engine.backward(loss)
        engine.step()
    ```

    ## References

    - [DeepSpeed training API](https://deepspeed.readthedocs.io/en/latest/training.html)
    """

    code = "DDP031"
    name = "deepspeed-engine-bypassed"
    severity = Severity.ERROR
    summary = "`loss.backward()` or `optimizer.step()` around a DeepSpeed engine: its gradient reduction does not run."
    preview = True
    tokens = ("backward", "step")
    context_tokens = ("deepspeed",)
    tags = ("correctness", "deepspeed")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.parts: DeepSpeedParts | None = None

    def visit_Call(self, node: cst.Call) -> None:
        if self.parts is None:
            self.parts = DeepSpeedParts(self.ctx)
        found = self.parts.bypass(node)
        if found is not None:
            kind, value = found
            shown, called = self.ctx.module.code_for_node(value), self.ctx.module.code_for_node(node.func)
            self.report(node, MESSAGES[kind].format(called=called, engine=shown))


MESSAGES = {
    "backward": "`{called}()` back-propagates the output of DeepSpeed engine `{engine}` around it: before DeepSpeed "
    "0.18.3 its loss scaling and gradient reduction never run and each rank steps with its own gradients (0.18.3+ "
    "accepts it but needs `{engine}.scale(loss)` under fp16/bf16); call `{engine}.backward(loss)`",
    "step": "`{called}()` steps the optimizer `deepspeed.initialize` returned around its engine: the engine's gradient "
    "reduction, accumulation boundary, clipping and scheduler do not run; call the engine's `step()`",
}
