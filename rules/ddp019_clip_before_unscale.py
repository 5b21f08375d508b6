"""DDP019 clip-before-unscale."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.analysis.callgraph import branch_path, compatible
from ddplint.analysis.names import last_name
from ddplint.analysis.rewrite import ProposedFix, insert_before
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

CLIPS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_value_", "torch.nn.utils.clip_grad_norm",
    }
)  # fmt: skip
#: Receivers whose `clip_grad_norm_` unscales first (accelerate, Fabric, DeepSpeed engines).
_UNSCALING_OWNERS = ("accelerator", "fabric", "engine", "booster", "trainer", "strategy")


@dataclass(frozen=True)
class _Event:
    kind: str  # "backward", "unscale", "clip", "step", "call" (of a module function: a clip if it clips)
    scaler: str | None
    node: cst.Call
    statement: cst.CSTNode
    function: cst.FunctionDef | None
    #: For a step: the optimizer it steps (as written).
    optimizer: str | None = None
    #: The `if` branches it is in (`callgraph.branch_path`).
    path: tuple = ()
    #: For a call: the module functions it may run, or the method name of `self.<name>()`.
    targets: tuple = ()
    method: str | None = None
    #: The tests of those branches as written, with the branch taken (0 body, 1 else).
    conditions: frozenset = frozenset()


class ClipBeforeUnscale(Rule):
    """
    ## What it does

    Flags `torch.nn.utils.clip_grad_norm_`/`clip_grad_value_` (or a
    model's own `clip_grad_norm_`, as FSDP has) between
    `scaler.scale(loss).backward()` and `scaler.step(optimizer)` when no
    `scaler.unscale_(optimizer)` comes between the backward and the clip.

    A call of a function of the module that clips the gradients it finds
    (DINO's `clip_gradients(model, clip)`, a closure, a trainer's
    `self.clip_grads()`) counts as a clip where it is called. An
    `unscale_` counts only when it runs whenever the clip does: one under
    `if step % log_every == 0:` leaves every other step's clip scaled (the
    same test around the scaled backward, `if use_amp:`, is fine).

    Not flagged: a clip after `scaler.unscale_(optimizer)` (also through a
    local name, `scaler = self.scaler`), the
    `clip_grad_norm_` of accelerate, Fabric, DeepSpeed engines and other
    trainers (they unscale first), and clipping without a `GradScaler`.

    ## Why is this bad?

    After `scaler.scale(loss).backward()` the gradients are multiplied by
    the loss scale (65,536 at first, changing as training goes). Clipping
    them to `max_norm` clips a norm that is thousands of times too large:
    the clip almost always fires, cutting every step's gradient to a tiny
    fraction, and how much depends on the current scale. Training is
    slow or diverges with no error.

    ## Example

    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead

    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety

    `--fix` inserts `scaler.unscale_(optimizer)` before the clip, with the
    scaler and optimizer of the `scaler.step(...)` that follows: safe,
    since `scaler.step` skips its own unscale when `unscale_` already ran
    this step. With no such step in the function the fix is advice only.

    ## References

    - [Automatic mixed precision: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    """

    code = "DDP019"
    name = "clip-before-unscale"
    severity = Severity.WARNING
    summary = "Gradients clipped while still scaled by GradScaler: the clip uses a norm far too large."
    tokens = ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")
    context_tokens = ("scale",)
    tags = ("correctness", "mixed-precision")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.events: list[_Event] = []
        #: The module's functions and methods by name, for `self.<name>()` calls.
        self.functions: dict[str, list[cst.FunctionDef]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.setdefault(node.name.value, []).append(node)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        kind, scaler, optimizer = None, None, None
        if isinstance(func, cst.Attribute):
            method, receiver = func.attr.value, func.value
            scaled = _scaled(receiver, ctx)
            if method == "backward" and scaled is not None:
                kind, scaler = "backward", _owner(scaled.func, ctx)  # type: ignore[arg-type]
            elif method == "unscale_":
                kind, scaler = "unscale", _owner(func, ctx)
            elif method == "step" and node.args and "scaler" in (last_name(receiver) or "").lower():
                kind, scaler, optimizer = "step", _owner(func, ctx), ctx.module.code_for_node(node.args[0].value)
        if kind is None and self._is_clip(node):
            kind = "clip"
        targets: tuple = ()
        called: str | None = None
        if kind is None:
            if isinstance(func, cst.Name):
                targets = tuple(v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef))
            elif isinstance(func, cst.Attribute) and last_name(func.value) in ("self", "cls"):
                called = func.attr.value
            if targets or called:
                kind = "call"
        if kind is not None:
            path = branch_path(ctx.stack)
            self.events.append(
                _Event(
                    kind, scaler, node, ctx.statement(), ctx.enclosing_function(), optimizer, path, targets, called,
                    _conditions(ctx.stack),
                )
            )

    def _is_clip(self, node: cst.Call) -> bool:
        if self.ctx.qualified_names(node.func) & CLIPS:
            return True
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("clip_grad_norm_", "clip_grad_value_"):
            owner = (last_name(func.value) or "").lower()
            return not any(word in owner for word in _UNSCALING_OWNERS)
        return False

    def finish(self) -> None:
        clipping = self._clipping_functions()
        for index, event in enumerate(self.events):
            if not (event.kind == "clip" or (event.kind == "call" and self._targets(event) & clipping)):
                continue
            before = [e for e in self.events[:index] if e.function is event.function and compatible(e.path, event.path)]
            backward = next((e for e in reversed(before) if e.kind in ("backward", "step")), None)
            if backward is None or backward.kind != "backward":
                continue  # no scaled backward since the last step
            scaler = backward.scaler
            if any(_unscales(e, scaler, event, backward) for e in before[before.index(backward):]):
                continue
            step = next(
                (e for e in self.events[index + 1 :] if e.function is event.function and e.kind == "step" and e.scaler == scaler),
                None,
            )
            where = "" if event.kind == "clip" else f" (`{cst.Module([]).code_for_node(event.node.func)}()` clips them)"
            self.report(
                event.node,
                f"the gradients are still multiplied by `{scaler}`'s loss scale here{where} (after "
                f"`{scaler}.scale(...).backward()`), so the clip compares a norm thousands of times too large "
                f"with its threshold; call `{scaler}.unscale_(optimizer)` before clipping",
                statement=event.statement,
                fix=self._fix(event, scaler, step),
            )

    def _targets(self, call: _Event) -> set:
        return set(call.targets or self.functions.get(call.method or "", ()))

    def _clipping_functions(self) -> set:
        """Module functions that clip whatever gradients they find: a clip with
        no scaled backward or `unscale_` before it in the function (DINO's
        `clip_gradients(model, clip)`, a closure), and the functions that call
        one the same way, to a fixed point."""
        found: set = set()
        changed = True
        while changed:
            changed = False
            for index, event in enumerate(self.events):
                function = event.function
                if function is None or function in found:
                    continue
                if not (event.kind == "clip" or (event.kind == "call" and self._targets(event) & found)):
                    continue
                earlier = [e for e in self.events[:index] if e.function is function]
                if not any(e.kind in ("backward", "unscale", "step") for e in earlier):
                    found.add(function)
                    changed = True
        return found

    def _fix(self, clip: _Event, scaler: str | None, step: _Event | None) -> ProposedFix:
        statement = clip.statement
        if step is None or scaler is None or not isinstance(statement, cst.SimpleStatementLine):
            return ProposedFix.display_only("Unscale the gradients before clipping")
        unscale = cst.parse_statement(f"{scaler}.unscale_({step.optimizer})\n")
        return ProposedFix(f"Insert `{scaler}.unscale_({step.optimizer})` before the clip", (insert_before(statement, unscale),))


def _scaled(receiver: cst.BaseExpression, ctx) -> cst.Call | None:
    """`scaler.scale(loss)`, directly or through a name bound to it."""
    candidates = [receiver]
    if isinstance(receiver, cst.Name):
        candidates = [v for v in ctx.values_of(receiver) if isinstance(v, cst.BaseExpression)]
    for value in candidates:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "scale":
            return value
    return None


def _owner(func: cst.Attribute, ctx) -> str:
    """The scaler as written; a local name bound once to another expression
    (`scaler = self.scaler`) is shown as that expression, so both match."""
    receiver = func.value
    if isinstance(receiver, cst.Name):
        values = ctx.values_of(receiver)
        if len(values) == 1 and isinstance(values[0], (cst.Name, cst.Attribute)):
            receiver = values[0]
    return cst.Module([]).code_for_node(receiver)


def _unscales(event: _Event, scaler: str | None, clip: _Event, backward: _Event) -> bool:
    """An `unscale_` of the scaler that runs whenever the clip does on a scaled
    step: not in a branch the clip is outside of (`if step % log_every == 0:
    scaler.unscale_(...)`), unless the scaled backward is under the same test
    (`if use_amp: scaler.scale(loss).backward()` ... `if use_amp: scaler.unscale_(...)`)."""
    if event.kind != "unscale" or event.scaler != scaler:
        return False
    extra = event.conditions - clip.conditions
    return extra <= backward.conditions


def _conditions(stack) -> frozenset:
    """The `if` tests around the innermost node, within its function, as
    (test as written, 0 body or 1 else)."""
    found = []
    code = cst.Module([]).code_for_node
    for node, child in zip(stack[:-1], stack[1:]):
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            found = []
        elif isinstance(node, cst.If):
            if child is node.body:
                found.append((code(node.test), 0))
            elif child is node.orelse:
                found.append((code(node.test), 1))
    return frozenset(found)
