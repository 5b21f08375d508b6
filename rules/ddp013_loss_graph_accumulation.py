"""DDP013 loss-graph-accumulation."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from ddplint.analysis.collectives import NO_GRAD_CONTEXTS
from ddplint.analysis.loops import is_step
from ddplint.analysis.names import last_name
from ddplint.analysis.rewrite import ProposedFix, method_call
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule

#: Methods and functions that release the autograd graph of a tensor.
DETACHING = frozenset({"item", "detach", "tolist", "numpy", "detach_"})
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})


@dataclass(frozen=True)
class _Accumulation:
    node: cst.CSTNode
    statement: cst.CSTNode
    loop: cst.CSTNode
    accumulator: str
    value: cst.BaseExpression
    #: Where the accumulator's other uses are looked for (the function, else the module).
    scope: cst.CSTNode


@dataclass
class _LoopFacts:
    """What happens inside one loop body (nested blocks included)."""

    backward: set[str]
    assigned: dict[str, list[cst.BaseExpression]]


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
    # loss: (backward | loss) and (backward | step) is "backward, or a loss and a step".
    tokens = ("backward", "loss")
    context_tokens = ("backward", "step")
    tags = ("memory",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.candidates: list[_Accumulation] = []
        self.facts: dict[int, _LoopFacts] = defaultdict(lambda: _LoopFacts(set(), defaultdict(list)))

    # ------------------------------------------------------------ collection

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._candidate(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = _accumulator(target.target)
            value = node.value
            if isinstance(target.target, cst.Subscript):
                self._candidate(node, target.target, value)
            elif name is not None and isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
                if _accumulator(value.left) == name:
                    self._candidate(node, target.target, value.right)
                    continue
            if isinstance(target.target, cst.Name):
                for loop in self.ctx.loops.enclosing_loops():
                    self.facts[id(loop)].assigned[target.target.value].append(value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "append" and len(node.args) == 1:
            self._candidate(node, func.value, node.args[0].value)
        elif is_step(node) and isinstance(func, cst.Attribute) and func.attr.value == "backward":
            target = _backpropagated(func.value, node)
            name = _accumulator(target) if target is not None else None
            if name is not None:
                for loop in self.ctx.loops.enclosing_loops():
                    self.facts[id(loop)].backward.add(name)

    def _candidate(self, node: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        loops = self.ctx.loops.enclosing_loops()
        name = _accumulator(target)
        if not loops or name is None or self._under_no_grad():
            return
        scope = self.ctx.enclosing_function() if "." not in name else None
        self.candidates.append(_Accumulation(node, self.ctx.statement(), loops[0], name, value, scope or self.ctx.module))

    def _under_no_grad(self) -> bool:
        for node in self.ctx.stack:
            if isinstance(node, cst.With):
                for item in node.items:
                    if isinstance(item.item, cst.Call) and self.ctx.qualified_names(item.item.func) & NO_GRAD_CONTEXTS:
                        return True
        return False

    # ------------------------------------------------------------ decision

    def finish(self) -> None:
        loops = self.ctx.loops
        for item in self.candidates:
            if not loops.is_training_loop(item.loop):
                continue
            facts = self.facts[id(item.loop)]
            if item.accumulator in facts.backward:
                continue  # gradient accumulation: the sum is back-propagated
            if any(not _mentions(v, item.accumulator) for v in facts.assigned.get(item.accumulator, ())):
                continue  # re-bound in every iteration: nothing outlives it
            if self._carries_graph(item.value, facts):
                self.report(
                    item.node,
                    f"`{self.ctx.module.code_for_node(item.value)}` keeps its autograd graph alive in "
                    f"`{item.accumulator}` across iterations, so memory grows every step; accumulate "
                    "`.item()` (or `.detach()`) instead",
                    statement=item.statement,
                    fix=self._fix(item),
                )

    def _fix(self, item: _Accumulation) -> ProposedFix:
        """Accumulate `.item()`; `.detach()` (unsafe: review) when the
        accumulator is used as a tensor elsewhere (a method, a torch call)."""
        shown = self.ctx.module.code_for_node(item.value)
        if _used_as_tensor(item.scope, item.accumulator, item.node):
            return ProposedFix(f"Accumulate `{shown}.detach()`",
                               ((item.value, method_call(item.value, "detach")),), Applicability.UNSAFE)
        return ProposedFix(f"Accumulate `{shown}.item()`", ((item.value, method_call(item.value, "item")),))

    def _carries_graph(self, value: cst.BaseExpression, facts: _LoopFacts, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(value, cst.BinaryOperation):
            return self._carries_graph(value.left, facts, depth + 1) or self._carries_graph(value.right, facts, depth + 1)
        if isinstance(value, (cst.Attribute, cst.Subscript)):
            return _output_loss(value) and self._graph_expression(value.value)
        if not isinstance(value, cst.Name):
            return False
        if value.value in facts.backward:
            return True
        if "loss" not in value.value.lower():
            return False
        assigned = facts.assigned.get(value.value, ())
        return bool(assigned) and all(self._graph_expression(v) for v in assigned)

    def _graph_expression(self, value: cst.BaseExpression) -> bool:
        """Whether an assigned value is a loss with history: a model or criterion
        call (`criterion(out, y)`, `F.cross_entropy(...)`, `self.compute_loss(...)`),
        its `.loss`/`["loss"]`, or arithmetic on those; never a detached value."""
        if isinstance(value, cst.BinaryOperation):
            return self._graph_expression(value.left) or self._graph_expression(value.right)
        if isinstance(value, (cst.Attribute, cst.Subscript)):
            return _output_loss(value) and self._graph_expression(value.value)
        if not isinstance(value, cst.Call):
            return isinstance(value, cst.Name) and value.value in _MODEL_WORDS
        if last_name(value.func) in DETACHING or self.ctx.qualified_names(value.func) & CONVERSIONS:
            return False
        if any(n and n.startswith("torch.nn.functional.") for n in self.ctx.qualified_names(value.func)):
            return True
        callee = (last_name(value.func) or "").lower()
        return any(word in callee for word in _MODEL_WORDS) or self._graph_expression(value.func)


#: Callee names that produce a loss or the outputs it is computed from.
_MODEL_WORDS = ("loss", "criterion", "model", "forward", "net", "module")


def _output_loss(node: cst.BaseExpression) -> bool:
    """`outputs.loss` / `outputs["loss"]` (HF model outputs)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "loss"
    key = node.slice[0].slice if isinstance(node, cst.Subscript) and len(node.slice) == 1 else None
    return isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) and key.value.evaluated_value == "loss"


def _accumulator(node: cst.BaseExpression | None) -> str | None:
    """The name an accumulation target lives in: `total`, `self.total`, `history[k]` -> `history`."""
    if isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return f"{node.value.value}.{node.attr.value}"
    return None


#: Methods of a list accumulator that do not use its elements as tensors.
_LIST_METHODS = frozenset({"append", "extend", "clear", "pop", "insert"})


def _used_as_tensor(scope: cst.CSTNode, name: str, accumulation: cst.CSTNode) -> bool:
    """Whether `name` may be used as a tensor in `scope` outside `accumulation`:
    a method called on it (`total.backward()`, `total.cpu()`), passed to a
    call other than a builtin that takes numbers (`dist.all_reduce(total)`,
    `torch.stack(losses)`), or leaving the function (`return losses`,
    `self.history = losses`), where its users are unknown."""
    todo = [scope]
    while todo:
        node = todo.pop()
        if node is accumulation:
            continue
        if isinstance(node, cst.Attribute) and _accumulator(node.value) == name:
            if node.attr.value not in _LIST_METHODS:
                return True
        elif isinstance(node, cst.Call):
            callee = node.func.value if isinstance(node.func, cst.Name) else None
            if callee not in _NUMBER_BUILTINS and any(_holds(a.value, name) for a in node.args):
                return True
        elif isinstance(node, (cst.Return, cst.Yield)) and node.value is not None and _holds(node.value, name):
            return True
        elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None and _holds(node.value, name):
            return True
        todo.extend(node.children)
    return False


#: Builtins that treat an accumulated float and a scalar tensor alike.
_NUMBER_BUILTINS = frozenset({"print", "len", "float", "int", "str", "repr", "round", "format", "min", "max", "sum", "abs"})


def _holds(node: cst.BaseExpression, name: str) -> bool:
    """`name` itself, or in a tuple/list/dict display (`return model, losses`)."""
    if _accumulator(node) == name and not isinstance(node, cst.Subscript):
        return True
    if isinstance(node, (cst.Tuple, cst.List)):
        return any(_holds(e.value, name) for e in node.elements)
    if isinstance(node, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _holds(e.value, name) for e in node.elements)
    return False


#: Receivers whose `.backward(loss)` back-propagates its argument.
_BACKWARD_OWNERS = ("accelerator", "engine", "optim", "fabric", "booster", "scaler", "trainer", "strategy")


def _backpropagated(receiver: cst.BaseExpression, call: cst.Call) -> cst.BaseExpression | None:
    """What a `.backward` call back-propagates: `loss.backward()` its receiver;
    `accelerator.backward(loss)`, `engine.backward(loss)`, `optimizer.backward(loss)`
    their argument; `scaler.scale(loss).backward()` the scaled loss."""
    if isinstance(receiver, cst.Call) and last_name(receiver.func) == "scale" and receiver.args:
        return receiver.args[0].value
    owner = (last_name(receiver) or "").lower()
    if any(word in owner for word in _BACKWARD_OWNERS) or owner in ("opt", "model"):
        return call.args[0].value if call.args else None
    return receiver


def _mentions(node: cst.CSTNode, name: str) -> bool:
    """Whether `node` reads the variable `name` (`loss` in `loss + w * prior`,
    not in `F.mse_loss(...)` or `prior_loss`)."""
    text = cst.Module([]).code_for_node(node)
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None
