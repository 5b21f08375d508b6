"""DDP013 loss-graph-accumulation."""

from __future__ import annotations

from ddplint.analysis.autograd import accumulations, under_no_grad, used_as_tensor
from ddplint.analysis.guards import Site
from ddplint.analysis.rewrite import ProposedFix, method_call
from ddplint.knowledge import STEP_CALL
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule


class LossGraphAccumulation(Rule):
    """
    ## What it does

    Inside a training loop (one that calls `.backward()` or
    `optimizer.step()`), flags accumulating a loss tensor that still carries
    its autograd graph into a variable that outlives the iteration:
    `total_loss += loss`, `total_loss = total_loss + loss`,
    `losses.append(loss)`, `history[key] = loss`. The value counts as a loss
    tensor when `.backward()` is called on it in the loop, or when its name
    contains `loss` and it is assigned from a model or criterion call there
    (`loss = criterion(out, y)`, `loss = model(**batch).loss`), or when it is
    arithmetic on such a name (`loss * x.size(0)`).

    Not flagged: `.item()`, `.detach()`, `.tolist()`, `float(loss)`;
    accumulation under `torch.no_grad()`; gradient accumulation, where the
    accumulator is re-assigned in each iteration or has `.backward()`
    called on it in the loop (`loss_sum = loss_sum + loss; loss_sum.backward()`);
    anything outside training loops.

    ## Why is this bad?

    Each accumulated loss keeps the whole autograd graph of its step alive
    (activations included), so memory grows every step instead of reaching
    a plateau, until the GPU runs out of memory hours into the run.

    ## Example

    ```python
    total_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    ## Use instead

    ```python
    total_loss = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    ```

    ## Fix safety

    `--fix` accumulates `loss.item()` instead of `loss` (`total += loss` →
    `total += loss.item()`, `losses.append(loss.item())`): safe when the
    accumulator is only printed, logged as a number or averaged, as it is
    then a float instead of a tensor. When it is also used as a tensor
    elsewhere in the function — a method called on it (`total.cpu()`),
    passed to a call other than `print`/`len`/`sum`-like builtins
    (`dist.all_reduce(total)`, `torch.stack(losses)`), or leaving the
    function (`return losses`), where its users are unknown — the fix accumulates `loss.detach()` instead, and is unsafe (applied
    only with `--unsafe-fixes`): the tensor stays on the device and that code
    needs review. `.item()` waits for the GPU once per step.

    ## References

    - [PyTorch FAQ: my model reports "cuda runtime error(2): out of memory"](https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory)
    """

    code = "DDP013"
    name = "loss-graph-accumulation"
    severity = Severity.WARNING
    summary = "A loss accumulated with its autograd graph: memory grows every step."
    requires = frozenset({"loops"})
    # A graph-carrying value is back-propagated in the loop or named like a
    # loss, in a loop that takes a step (`.backward(`, `optimizer.step(`).
    tokens = ("backward", "loss")
    context_tokens = ("backward", "step")
    context_pattern = STEP_CALL
    tags = ("memory",)

    def trigger_AugAssign(self, node: cst.AugAssign | cst.Assign | cst.Call) -> bool:
        return bool(accumulations(node)) and bool(self.ctx.loops.enclosing_loops())

    trigger_Assign = trigger_Call = trigger_AugAssign

    def check_AugAssign(self, node: cst.AugAssign | cst.Assign | cst.Call, site: Site) -> None:
        loop = self.ctx.loops.enclosing_loops()[0]
        if not self.ctx.loops.is_training_loop(loop) or under_no_grad(self.ctx.stack, self.ctx):
            return
        for accumulator, value in accumulations(node):
            if self.ctx.loops.body(loop).keeps_graph(accumulator, value, self.ctx):
                shown = self.ctx.module.code_for_node(value)
                scope = (self.ctx.enclosing_function() if "." not in accumulator else None) or self.ctx.module
                fix = ProposedFix(f"Accumulate `{shown}.item()`", ((value, method_call(value, "item")),))
                if used_as_tensor(scope, accumulator, node):  # `.detach()` keeps a tensor: its uses need review
                    fix = ProposedFix(f"Accumulate `{shown}.detach()`", ((value, method_call(value, "detach")),),
                                      Applicability.UNSAFE)
                self.report(
                    node,
                    f"`{shown}` keeps its autograd graph alive in `{accumulator}` across iterations, so memory grows "
                    "every step; accumulate `.item()` (or `.detach()`) instead",
                    fix=fix,
                )

    check_Assign = check_Call = check_AugAssign
