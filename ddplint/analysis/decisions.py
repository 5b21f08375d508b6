"""Per-rank values and the decisions made on them.

A value is *per-rank* when each rank computes it from its own batch (a
loss, an accuracy, an early-stopping object fed one) and no collective made
it the same on every rank before it is read: ``val_loss = evaluate(model,
loader)`` with an ``evaluate`` of the module that reduces nothing, or
``loss = criterion(out, y)``. It is *shared* once passed to a collective or
to a reducing helper (``dist.all_reduce(val_loss)``, ``reduce_tensor(loss)``,
``meter.synchronize_between_processes()``, ``accelerator.gather(...)``),
and unknown (never per-rank) when it comes from a helper the linter cannot
see. Counters, epochs, step limits and clocks are not per-rank values: their
names are not a loss's or a metric's.

`PerRankValues.unreduced(test, function)` answers for a condition (the test
of an ``if`` that leaves a loop); `PerRankValues.reaches_collective(nodes,
function)` whether code reaches a collective (an explicit one, a reducing
helper, a backward in a module that wraps a model in DDP/FSDP/DeepSpeed),
through the module's helpers too.
Both are asked after the walk (DDP027).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

from ddplint.knowledge import (
    LOCAL_VALUE_WORDS, NOT_LOCAL_VALUE_WORDS, REDUCING_METHODS, REDUCING_WORDS, WRAPS_MODELS_TEXT,
)  # fmt: skip
from ddplint.analysis.collectives import collective_name, wrapped_model
from ddplint.analysis.names import dotted_name, last_name, name_words
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

SHARED, LOCAL, PLAIN = "shared", "local", "plain"
#: Library modules whose functions compute on the rank's own values.
_COMPUTING = ("torch.", "math.", "numpy.", "np.", "builtins.", "statistics.")
#: Builtins that build a constant from a literal: `float("inf")`.
_CONSTANT_BUILDERS = frozenset({"float", "int", "bool", "str"})
_DEPTH = 4
_EVALUATION = re.compile(r"(?i)eval|valid|test")
_WRAPPERS = re.compile(WRAPS_MODELS_TEXT)


def looks_local(dotted: str) -> bool:
    """Whether a name is a loss's or a metric's (`val_loss`, `best_acc`), not `loss_scale`."""
    words = name_words(dotted.rsplit(".", 1)[-1])
    return bool(words & LOCAL_VALUE_WORDS) and not words & NOT_LOCAL_VALUE_WORDS


@dataclass(frozen=True)
class StopDecision:
    """A loop exit decided on a per-rank value: the exit's keyword (`break`,
    `return`, `continue`), the condition, the value it reads, and the
    collective the ranks that go on reach (as shown in messages)."""

    leave: str
    test: cst.BaseExpression
    value: str
    collective: str


class PerRankValues:
    """Which values each rank computes on its own, unreduced (asked after the walk)."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self._states: dict[tuple[int, str], str] = {}
        self._reaches: dict[int, str | None] = {}
        #: id(function) -> its calls, and the values it assigns by dotted target (one walk of its body each)
        self._bodies: dict[int, tuple[list[cst.Call], dict[str, list[cst.CSTNode]]]] = {}

    # ------------------------------------------------------------ values

    def unreduced(self, test: cst.CSTNode, function: cst.FunctionDef | None) -> str | None:
        """The first per-rank value the condition reads (as written), or None."""
        scope = function if function is not None else self.ctx.module  # a script's module-level loop
        for node in _reads(test):
            while isinstance(node, (cst.Name, cst.Attribute)):  # `stopper.early_stop`, then `stopper`
                dotted = dotted_name(node)
                if dotted is not None and dotted != "self" and self.state(dotted, scope) == LOCAL:
                    return dotted
                node = node.value if isinstance(node, cst.Attribute) else None
        for call in (n for n in (test, *descendants(test)) if isinstance(n, cst.Call)):
            if self._evaluates_locally(call, function):  # `if local_loss(model, loader) < tol:`
                return self.ctx.module.code_for_node(call)
        return None

    def _evaluates_locally(self, call: cst.Call, function: cst.FunctionDef | None) -> bool:
        """A call of a module helper named like a loss or an evaluation whose body reduces nothing."""
        targets = [t for t, _ in self.ctx.flow.call_targets(call, function)]
        named = any(looks_local(t.name.value) or _EVALUATION.search(t.name.value) for t in targets)
        return named and not any(self._body_reduces(t) for t in targets)

    def state(self, dotted: str, function: cst.FunctionDef, depth: int = 0) -> str:
        """SHARED, LOCAL or PLAIN for the name `dotted` read in `function`."""
        key = (id(function), dotted)
        if key not in self._states:
            self._states[key] = PLAIN  # while solving it (`best = min(best, loss)`)
            self._states[key] = self._state(dotted, function, depth)
        return self._states[key]

    def _state(self, dotted: str, function: cst.FunctionDef, depth: int) -> str:
        if depth > _DEPTH:
            return PLAIN
        states = {self.value_state(v, function, depth + 1) for v in self._body(function)[1].get(dotted, ())}
        if SHARED in states or self._reduced_in(dotted, function):
            return SHARED
        if looks_local(dotted):
            return LOCAL if LOCAL in states else PLAIN
        return LOCAL if self._fed(dotted, function, depth) else PLAIN

    def value_state(self, value: cst.CSTNode, function: cst.FunctionDef, depth: int = 0) -> str:
        """SHARED when the expression reduces or calls a helper that may, LOCAL
        when it computes on per-rank values, else PLAIN."""
        found = PLAIN
        for node in (value, *descendants(value, into_functions=False)):
            if isinstance(node, cst.Call):
                state = self._call_state(node, function)
            elif isinstance(node, (cst.Name, cst.Attribute)) and not _is_callee(node, value):
                dotted = dotted_name(node)
                state = self.state(dotted, function, depth + 1) if dotted and dotted != "self" else PLAIN
            else:
                continue
            if state == SHARED:
                return SHARED
            if state == LOCAL:
                found = LOCAL
        return found

    def _call_state(self, call: cst.Call, function: cst.FunctionDef) -> str:
        if self.reduces(call):
            return SHARED
        targets = [t for t, _ in self.ctx.flow.call_targets(call, function if isinstance(function, cst.FunctionDef) else None)]
        if targets:  # a helper of the module: shared if it reduces
            return SHARED if any(self._body_reduces(t) for t in targets) else LOCAL
        func = call.func
        if isinstance(func, cst.Name) and func.value in _CONSTANT_BUILDERS:
            return PLAIN  # `float("inf")`; `float(loss)` is per-rank through `loss`
        imported = self.ctx.scopes.imported_qualnames(func)
        if imported and not any(n.startswith(_COMPUTING) for n in imported):
            fact = self.ctx.facts.first(imported) if self.ctx.facts else None
            if fact is None:
                return SHARED  # a helper the linter cannot see: it may reduce
            return SHARED if fact.collective else LOCAL
        if isinstance(func, cst.Attribute) and re.search(r"(?i)eval|valid|test", func.attr.value):
            return SHARED  # `trainer.evaluate()`: an evaluation of an object not in sight
        return LOCAL

    def reduces(self, call: cst.Call) -> bool:
        """A collective, or a helper or method named like one that reduces."""
        name = (last_name(call.func) or "").lower()
        return (
            name in REDUCING_METHODS or any(word in name for word in REDUCING_WORDS)
            or collective_name(call, self.ctx) is not None
        )  # fmt: skip

    def _body_reduces(self, target: cst.FunctionDef) -> bool:
        return any(isinstance(n, cst.Call) and self.reduces(n) for n in descendants(target.body, into_functions=False))

    def _reduced_in(self, dotted: str, function: cst.FunctionDef) -> bool:
        """`dist.all_reduce(loss)`, `meter.synchronize_between_processes()` in the function."""
        for call in self._body(function)[0]:
            if not self.reduces(call):
                continue
            receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
            if receiver is not None and dotted_name(receiver) == dotted:
                return True
            if any(dotted_name(a.value) == dotted for a in call.args):
                return True
        return False

    def _fed(self, dotted: str, function: cst.FunctionDef, depth: int) -> bool:
        """An object called with a per-rank value: `stopper(val_loss)`, `stopper.step(val_loss)`."""
        for call in self._body(function)[0]:
            func = call.func
            callee = func.value if isinstance(func, cst.Attribute) else func
            if dotted_name(callee) != dotted or self.reduces(call) or self.ctx.scopes.imported_qualnames(callee):
                continue  # `math.isfinite(loss)` feeds no object
            if any(self.value_state(a.value, function, depth + 1) == LOCAL for a in call.args):
                return True
        return False

    def _body(self, function: cst.FunctionDef | cst.Module) -> tuple[list[cst.Call], dict[str, list[cst.CSTNode]]]:
        """The calls in `function` (nested functions aside) and the values it
        assigns to each dotted name (`x = v`, `x += v`, `a, x = v`, `(x := v)`),
        read once: a loop asks about many names in one function."""
        found = self._bodies.get(id(function))
        if found is None:
            found = self._bodies[id(function)] = _read_body(function)
        return found

    # ------------------------------------------------------------ exits

    def unreduced_exit(self, node: cst.CSTNode, stack: Sequence[cst.CSTNode], function: cst.FunctionDef | None,
                       loops: Sequence[cst.CSTNode]) -> StopDecision | None:
        """For a `break`/`return`/`continue` (its ancestors `stack`, the loops
        around it in its function `loops`, innermost first): the innermost
        `if` around it inside the loop whose test reads a per-rank value, when
        the code the other ranks run next reaches a collective: the loop's
        next pass; after a `break` also what follows the loop; after a
        `continue`, the rest of the body. None for rank tests (DDP001's) and
        Lightning modules and callbacks (Lightning decides when to stop)."""
        if not loops or _in_lightning(stack, self.ctx):
            return None
        loop = loops[0]
        for test in _tests_up_to(stack, loop):
            value = self.unreduced(test, function)
            if value is None or self.ctx.rank.expression_is_rank_dependent(test):
                continue
            if isinstance(node, cst.Continue):
                collective = self.reaches_collective(_rest_of_body(stack, loop), function)
            else:
                collective = self.reaches_collective((loop,), function)
                if collective is None and isinstance(node, cst.Break):
                    collective = self.reaches_collective(following(stack, loop), function)
            leave = {cst.Break: "break", cst.Continue: "continue"}.get(type(node), "return")
            return StopDecision(leave, test, value, collective) if collective is not None else None
        return None

    # ------------------------------------------------------------ collectives

    def reaches_collective(self, nodes: Iterable[cst.CSTNode], function: cst.FunctionDef | None) -> str | None:
        """How to show the first collective the code reaches (directly or
        through the module's helpers), or None."""
        for node in nodes:
            for call in (n for n in (node, *descendants(node, into_functions=False)) if isinstance(n, cst.Call)):
                shown = self._call_collective(call, function, 0)
                if shown is not None:
                    return shown
        return None

    @property
    def _wraps_models(self) -> bool:
        """The module wraps a model whose backward all-reduces (DDP, FSDP, a
        DeepSpeed engine): a backward of some other graph (a latent optimised
        per sample) is no collective."""
        return bool(_WRAPPERS.search(self.ctx.source))

    def _call_collective(self, call: cst.Call, function: cst.FunctionDef | None, depth: int) -> str | None:
        ctx = self.ctx
        code = ctx.module.code_for_node(call.func)
        if collective_name(call, ctx) is not None or self.reduces(call):
            return f"`{code}()`"
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward" and self._wraps_models:
            return f"`{code}()` (the gradient all-reduce)"
        passed = next((a.value for a in call.args if isinstance(a.value, cst.Name) and wrapped_model(a.value, ctx)), None)
        if passed is not None:  # `train_one_epoch(ddp_model, ...)`, wherever it is defined
            return f"`{code}()` (given the wrapped `{passed.value}`, whose forward synchronises the ranks)"
        if ctx.facts:
            fact = ctx.facts.first(ctx.scopes.imported_qualnames(call.func))
            if fact is not None and fact.collective:
                return f"`{code}()` (which calls {' → '.join(fact.collective)})"
        if depth >= 3:
            return None
        for target, _ in ctx.flow.call_targets(call, function):
            key = id(target)
            if key not in self._reaches:
                self._reaches[key] = None
                inner = (c for c in descendants(target.body, into_functions=False) if isinstance(c, cst.Call))
                self._reaches[key] = next(
                    (s for c in inner if (s := self._call_collective(c, target, depth + 1)) is not None), None
                )
            if self._reaches[key] is not None:
                return f"`{code}()` (which reaches {self._reaches[key]})"
        return None


def following(stack: Sequence[cst.CSTNode], loop: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The statements that run after `loop` ends, up to its function's end."""
    index = next(i for i, n in enumerate(stack) if n is loop)
    child = loop
    for node in reversed(stack[:index]):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return
        if isinstance(node, (cst.IndentedBlock, cst.Module)):
            body = list(node.body)
            if child in body:
                yield from body[body.index(child) + 1 :]
        if isinstance(node, (cst.For, cst.While)) and child is node.body:
            return  # an outer loop: its next pass is the enclosing loop's question
        child = node


def _tests_up_to(stack: Sequence[cst.CSTNode], loop: cst.CSTNode) -> list[cst.BaseExpression]:
    """The tests of the `if`s around the exit inside the loop, innermost first."""
    index = next(i for i, n in enumerate(stack) if n is loop)
    return [n.test for n in reversed(stack[index + 1 :]) if isinstance(n, cst.If)]


def _rest_of_body(stack: Sequence[cst.CSTNode], loop: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements of the loop body after the one holding the exit."""
    index = next(i for i, n in enumerate(stack) if n is loop)
    body = list(stack[index + 1].body)
    child = stack[index + 2]
    return body[body.index(child) + 1 :] if child in body else []


def _in_lightning(stack: Sequence[cst.CSTNode], ctx: ModelView) -> bool:
    """A method of a Lightning module or callback."""
    return any(
        isinstance(node, cst.ClassDef) and any(
            "Callback" in (dotted_name(b.value) or "") or any("lightning" in (q or "") for q in ctx.qualified_names(b.value))
            for b in node.bases
        )
        for node in stack
    )  # fmt: skip


def _reads(test: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The names and attribute chains a condition reads, outermost chain only."""
    todo = [test]
    while todo:
        node = todo.pop(0)
        if isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) is not None:
            yield node
            continue
        if isinstance(node, cst.Call):
            todo.extend(a.value for a in node.args)
            if isinstance(node.func, cst.Attribute):
                todo.append(node.func.value)  # `loss.isnan()`, `stopper.should_stop()`
            continue
        todo.extend(c for c in _children(node))


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    return [c for c in node.children if isinstance(c, (cst.BaseExpression, cst.Arg, cst.ComparisonTarget, cst.BaseSlice, cst.SubscriptElement))]


def _is_callee(node: cst.CSTNode, root: cst.CSTNode) -> bool:
    """Whether `node` is the function a call inside `root` calls (`criterion` in
    `criterion(x)`, `F.cross_entropy`); a method's receiver (`loss` in
    `loss.item()`) is a value and is read."""
    return any(isinstance(n, cst.Call) and n.func is node for n in (root, *descendants(root, into_functions=False)))


def _read_body(function: cst.FunctionDef | cst.Module) -> tuple[list[cst.Call], dict[str, list[cst.CSTNode]]]:
    calls: list[cst.Call] = []
    assigned: dict[str, list[cst.CSTNode]] = {}
    body = function.body if isinstance(function, cst.FunctionDef) else function  # a module: its functions skipped
    for node in descendants(body, into_functions=False):
        if isinstance(node, cst.Call):
            calls.append(node)
        elif isinstance(node, cst.Assign):
            for dotted in dict.fromkeys(d for t in node.targets for d in _bound(t.target)):
                assigned.setdefault(dotted, []).append(node.value)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)) and node.value is not None:
            for dotted in dict.fromkeys(_bound(node.target)):
                assigned.setdefault(dotted, []).append(node.value)
    return calls, assigned


def _bound(target: cst.CSTNode) -> Iterator[str]:
    """The dotted names an assignment target binds (each element of a tuple or list)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _bound(element.value)
        return
    dotted = dotted_name(target)
    if dotted is not None:
        yield dotted
