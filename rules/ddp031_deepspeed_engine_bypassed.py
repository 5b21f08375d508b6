"""DDP031 deepspeed-engine-bypassed."""

from __future__ import annotations

from ddplint.analysis.catalogue import DEEPSPEED_ENGINE, DEEPSPEED_OPTIMIZER
from ddplint.analysis.engines import DeepSpeedParts
from ddplint.analysis.tree import descendants
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
        self._parts: DeepSpeedParts | None = None
        self.driven: dict[int, bool] = {}

    @property
    def parts(self) -> DeepSpeedParts:
        if self._parts is None:
            self._parts = DeepSpeedParts(self.ctx)
        return self._parts

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("backward", "step") or not self.parts.found:
            return
        function = self.ctx.enclosing_function()
        receiver = self.parts.part(func.value)
        if receiver == DEEPSPEED_ENGINE or self._driven(function):
            return  # `engine.backward(loss)`, or a function that drives the engine
        if func.attr.value == "backward":
            engine = self.parts.engine_output(func.value, function)
            if engine is not None:
                shown = self.ctx.module.code_for_node(engine)
                self.report(
                    node,
                    f"`{self.ctx.module.code_for_node(func)}()` back-propagates the output of DeepSpeed engine "
                    f"`{shown}` around it: before DeepSpeed 0.18.3 its loss scaling and gradient reduction never "
                    f"run and each rank steps with its own gradients (0.18.3+ accepts it but needs "
                    f"`{shown}.scale(loss)` under fp16/bf16); call `{shown}.backward(loss)`",
                )
        elif receiver == DEEPSPEED_OPTIMIZER:
            self.report(
                node,
                f"`{self.ctx.module.code_for_node(func)}()` steps the optimizer `deepspeed.initialize` returned "
                "around its engine: the engine's gradient reduction, accumulation boundary, clipping and "
                "scheduler do not run; call `engine.step()`",
            )

    def _driven(self, function: cst.FunctionDef | None) -> bool:
        """Whether `function` calls the engine's own `backward`/`step`/`scale`."""
        key = id(function)
        if key not in self.driven:
            scope = function if function is not None else self.ctx.module
            self.driven[key] = any(
                isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                and n.func.attr.value in ("backward", "step", "scale")
                and self.parts.part(n.func.value, function) == DEEPSPEED_ENGINE
                for n in descendants(scope, into_functions=False)
            )  # fmt: skip
        return self.driven[key]
