"""Mixed precision: where gradients are still multiplied by GradScaler's loss
scale, and how a deprecated `torch.cuda.amp` use becomes its `torch.amp` one.

`ScalerSteps` is a walker analysis for rules that ``require`` ``"amp"``. In
each function it records, in source order, the steps of the GradScaler
protocol: scaled backwards (``scaler.scale(loss).backward()``, also through
a name bound to ``scaler.scale(loss)``), ``scaler.unscale_(optimizer)``,
``scaler.step(optimizer)``, gradient clips (``clip_grad_norm_``, a model's
own ``clip_grad_norm_``; not accelerate's, Fabric's or an engine's, which
unscale first), and calls of the module's functions (``clip_gradients(model)``,
``self.clip_grads()``). After the walk `scaled_clip(call)` says whether a
clip runs on scaled gradients. A scaler is compared as written, a local name
bound once to another expression (``scaler = self.scaler``) as that expression.

`modernized(anchor, callee, qualname, ctx)` gives the edits that rewrite a
use of a deprecated device-specific AMP API (``knowledge.DEPRECATED_AMP``)
into ``torch.amp``, and `modern_call` the call alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ddplint.analysis.callgraph import branch_path, compatible
from ddplint.knowledge import (
    CLIP_METHODS,
    DEPRECATED_AMP,
    DEPRECATED_AUTOCAST_POSITIONAL,
    GRADIENT_CLIPS,
    UNSCALING_CLIP_OWNERS,
)
from ddplint.analysis.names import last_name
from ddplint.analysis.rewrite import Replacement, dotted, first_import, insert_before
from ddplint.lazy import cst
from ddplint.solver import closure

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

BACKWARD, UNSCALE, STEP, CLIP, CALL = "backward", "unscale", "step", "clip", "call"


@dataclass(frozen=True)
class ScalerEvent:
    """One step of the protocol: its kind, the scaler (as written; None for
    clips and calls), the call, its function, the optimizer a step steps (as
    written), the ``if`` branches it is in (`callgraph.branch_path`), the
    tests of those branches as written with the branch taken (0 body, 1 else),
    and for a call the module functions it may run or the method name of
    ``self.<name>()``."""

    kind: str
    scaler: str | None
    node: cst.Call
    function: cst.FunctionDef | None
    optimizer: str | None = None
    path: tuple = ()
    conditions: frozenset = frozenset()
    targets: tuple = ()
    method: str | None = None


@dataclass(frozen=True)
class ScaledClip:
    """A clip on scaled gradients: the scaler whose scaled backward came
    before it, the optimizer of the ``<scaler>.step(...)`` that follows it in
    its function (None when none does), and, for a call of a function that
    clips, that call's callee as written (None for the clip itself)."""

    scaler: str
    optimizer: str | None
    through: str | None


class ScalerSteps:
    """Walker analysis: the GradScaler protocol of the module's functions."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self.events: list[ScalerEvent] = []
        self._index: dict[int, int] = {}
        #: The module's functions and methods by name, for `self.<name>()` calls.
        self._functions: dict[str, list[cst.FunctionDef]] = {}
        self._clipping: set | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.setdefault(node.name.value, []).append(node)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        func = node.func
        kind, scaler, optimizer, targets, method = None, None, None, (), None
        if isinstance(func, cst.Attribute):
            name, receiver = func.attr.value, func.value
            scaled = self._scaled(receiver)
            if name == "backward" and scaled is not None:
                kind, scaler = BACKWARD, self._owner(scaled.func)  # type: ignore[arg-type]
            elif name == "unscale_":
                kind, scaler = UNSCALE, self._owner(func)
            elif name == "step" and node.args and "scaler" in (last_name(receiver) or "").lower():
                kind, scaler, optimizer = STEP, self._owner(func), ctx.module.code_for_node(node.args[0].value)
        if kind is None and self._is_clip(node):
            kind = CLIP
        if kind is None:
            if isinstance(func, cst.Name):
                targets = tuple(v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef))
            elif isinstance(func, cst.Attribute) and last_name(func.value) in ("self", "cls"):
                method = func.attr.value
            kind = CALL if targets or method else None
        if kind is not None:
            self._index[id(node)] = len(self.events)
            self.events.append(ScalerEvent(kind, scaler, node, ctx.enclosing_function(), optimizer,
                                           branch_path(ctx.stack), _conditions(ctx.stack), targets, method))

    def may_clip(self, call: cst.Call) -> bool:
        """Whether `call` (being visited) clips gradients or calls a module
        function, which may (cheap: for a rule's trigger)."""
        index = self._index.get(id(call))
        return index is not None and self.events[index].kind in (CLIP, CALL)

    def scaled_clip(self, call: cst.Call) -> ScaledClip | None:
        """For a clip, or a call of a module function that clips the gradients
        it finds: the scaler whose scaled backward it follows in its function
        (with no ``scaler.step`` between), when no ``unscale_`` of that scaler
        runs whenever it does in between: one under ``if step % k == 0:``
        leaves the other steps' clip scaled, unless the scaled backward is
        under the same test (final after the walk)."""
        index = self._index.get(id(call))
        if index is None:
            return None
        event = self.events[index]
        if not (event.kind == CLIP or (event.kind == CALL and self._targets(event) & self.clipping_functions())):
            return None
        before = [e for e in self.events[:index] if e.function is event.function and compatible(e.path, event.path)]
        backward = next((e for e in reversed(before) if e.kind in (BACKWARD, STEP)), None)
        if backward is None or backward.kind != BACKWARD or backward.scaler is None:
            return None  # no scaled backward since the last step
        for e in before[before.index(backward):]:
            if e.kind == UNSCALE and e.scaler == backward.scaler and e.conditions - event.conditions <= backward.conditions:
                return None
        step = next((e for e in self.events[index + 1:]
                     if e.function is event.function and e.kind == STEP and e.scaler == backward.scaler), None)
        through = None if event.kind == CLIP else cst.Module([]).code_for_node(event.node.func)
        return ScaledClip(backward.scaler, step.optimizer if step is not None else None, through)

    def clipping_functions(self) -> set:
        """The module's functions that clip whatever gradients they find: a
        clip with no scaled backward, ``unscale_`` or step before it in the
        function (DINO's ``clip_gradients(model, clip)``, a closure), and,
        transitively, the functions that call one that way."""
        if self._clipping is None:
            seeds, edges, seen = set(), [], set()
            for event in self.events:
                function = event.function
                if function is None or id(function) in seen:
                    continue
                if event.kind in (BACKWARD, UNSCALE, STEP):
                    seen.add(id(function))  # what follows runs on gradients this function produced
                elif event.kind == CLIP:
                    seeds.add(function)
                elif event.kind == CALL:
                    edges.append((function, self._targets(event)))
            self._clipping = closure(seeds, edges)
        return self._clipping

    def _targets(self, event: ScalerEvent) -> set:
        return set(event.targets or self._functions.get(event.method or "", ()))

    def _is_clip(self, node: cst.Call) -> bool:
        if self.ctx.qualified_names(node.func) & GRADIENT_CLIPS:
            return True
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in CLIP_METHODS:
            owner = (last_name(func.value) or "").lower()
            return not any(word in owner for word in UNSCALING_CLIP_OWNERS)
        return False

    def _scaled(self, receiver: cst.BaseExpression) -> cst.Call | None:
        """`scaler.scale(loss)`, directly or through a name bound to it."""
        candidates = [receiver]
        if isinstance(receiver, cst.Name):
            candidates = [v for v in self.ctx.values_of(receiver) if isinstance(v, cst.BaseExpression)]
        for value in candidates:
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "scale":
                return value
        return None

    def _owner(self, func: cst.Attribute) -> str:
        """The scaler as written; a local name bound once to another expression
        (`scaler = self.scaler`) is shown as that expression, so both match."""
        receiver = func.value
        if isinstance(receiver, cst.Name):
            values = self.ctx.values_of(receiver)
            if len(values) == 1 and isinstance(values[0], (cst.Name, cst.Attribute)):
                receiver = values[0]
        return cst.Module([]).code_for_node(receiver)


def _conditions(stack: Sequence[cst.CSTNode]) -> frozenset:
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


def modernized(anchor: cst.CSTNode, callee: cst.BaseExpression, qualname: str,
               ctx: ModelView) -> tuple[tuple[cst.CSTNode, Replacement], ...] | None:
    """The edits that rewrite a use of the deprecated AMP API `qualname`
    (`anchor`: its call, or a decorator without a call; `callee`: the name as
    written) into its `torch.amp` replacement, with `import torch` added where
    the module lacks it. None where that is not safe: `callee` is an alias made
    by assignment, `torch` names something else here, `*args`, no import to
    put `import torch` before."""
    new, device, kind, _ = DEPRECATED_AMP[qualname]
    torch = ctx.scopes.names_module("torch")
    if ctx.scopes.imported_qualnames(callee) != frozenset({qualname}) or torch is False:
        return None
    replacement = modern_call(anchor if isinstance(anchor, cst.Call) else None, dotted(new), device, kind)
    if replacement is None:
        return None
    if torch:
        return ((anchor, replacement),)
    first = first_import(ctx.module)
    return None if first is None else ((anchor, replacement), insert_before(first, cst.parse_statement("import torch\n")))


def modern_call(call: cst.Call | None, func: cst.BaseExpression, device: str, kind: str) -> cst.BaseExpression | None:
    """The `torch.amp` call (`func`) that does what the deprecated `call` (None:
    a decorator written without a call) did on `device`, its arguments carried
    over as `kind` ("autocast", "scaler", "decorator") needs; None when they
    cannot be (`*args`)."""
    device_arg = cst.Arg(cst.SimpleString(f'"{device}"'))
    args = list(call.args) if call is not None else []
    if any(a.star for a in args if a.keyword is None and a.star == "*"):
        return None
    no_space = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    if kind == "decorator":  # `@custom_fwd` / `@custom_fwd(cast_inputs=...)`: device_type is keyword-only
        if any(a.keyword is None for a in args):
            return None
        new_args = [cst.Arg(cst.SimpleString(f'"{device}"'), keyword=cst.Name("device_type"), equal=no_space), *args]
    elif kind == "autocast":  # old positionals become keywords: the new signature differs
        positional = [a for a in args if a.keyword is None and not a.star]
        if len(positional) > len(DEPRECATED_AUTOCAST_POSITIONAL):
            return None
        new_args = [device_arg]
        for index, arg in enumerate(args):
            if arg.keyword is None and not arg.star:
                arg = arg.with_changes(keyword=cst.Name(DEPRECATED_AUTOCAST_POSITIONAL[index]), equal=no_space)
            new_args.append(arg)
    else:  # GradScaler(device, init_scale, ...): the old positionals keep their meaning after the device
        new_args = [device_arg, *args]
    if len(new_args) > 1 and new_args[0].comma is cst.MaybeSentinel.DEFAULT:
        new_args[0] = new_args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    if call is None:
        return cst.Call(func=func, args=new_args)
    return call.with_changes(func=func, args=new_args)
