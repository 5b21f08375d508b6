"""DeepSpeed engines: which expressions hold the engine or the optimizer
that ``deepspeed.initialize(...)`` returns, and which values a forward of
the engine produced.

``engine, optimizer, _, _ = deepspeed.initialize(...)`` binds its names by
position, which the value flow leaves opaque (the names stand for
themselves); `DeepSpeedParts` indexes the module's unpackings of
``deepspeed.initialize`` (names and ``self.`` attributes) and reads an
expression through `model.origins`: a parameter whose callers pass the
engine, ``self.engine`` set in another method, ``deepspeed.initialize(...)[0]``.
A value counts only when every origin agrees (``engine if ds else model``
is neither).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ddplint.knowledge import DEEPSPEED_ENGINE, DEEPSPEED_INITIALIZE, DEEPSPEED_OPTIMIZER
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_DEPTH = 8
_INITIALIZE = re.compile(r"\binitialize\b")
#: Methods whose result carries no graph back to the engine.
_DETACHING = frozenset({"detach", "item", "tolist", "numpy"})


class DeepSpeedParts:
    """The module's ``deepspeed.initialize`` results, asked by expression."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        #: id(initialize call) -> {target text: position}
        self.calls: dict[int, dict[str, int]] = {}
        #: target text -> positions it is unpacked from, anywhere in the module
        self.targets: dict[str, set[int]] = {}
        #: id(function) -> whether it calls the engine's own backward/step/scale
        self._driven: dict[int, bool] = {}
        # A call of `initialize` spells the word, however it was imported or aliased (`initialized`,
        # `reinitialize` are other words): most modules are not walked.
        for node in descendants(ctx.module) if _INITIALIZE.search(ctx.source) else ():
            if self.initializes(node):
                self.calls.setdefault(id(node), {})
            if isinstance(node, cst.Assign) and self.initializes(node.value):
                for target in node.targets:
                    if isinstance(target.target, (cst.Tuple, cst.List)):
                        self._record(node.value, target.target)

    def _record(self, call: cst.CSTNode, target: cst.Tuple | cst.List) -> None:
        texts = self.calls.setdefault(id(call), {})
        for index, element in enumerate(target.elements):
            if isinstance(element.value, (cst.Name, cst.Attribute)):
                text = self._text(element.value)
                texts[text] = index
                self.targets.setdefault(text, set()).add(index)

    def initializes(self, node: cst.CSTNode) -> bool:
        """A call of ``deepspeed.initialize``."""
        return isinstance(node, cst.Call) and bool(
            self.ctx.qualified_names(node.func) & DEEPSPEED_INITIALIZE or self._text(node.func) == "deepspeed.initialize"
        )

    @property
    def found(self) -> bool:
        return bool(self.calls)

    def part(self, node: cst.BaseExpression, function: cst.FunctionDef | None = None) -> int | None:
        """The position in ``deepspeed.initialize``'s result (catalogue's
        DEEPSPEED_ENGINE, DEEPSPEED_OPTIMIZER) that `node` holds, when all its origins agree."""
        if not self.calls or not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        origins = self.ctx.origins(node) if function is None else self.ctx.flow.origins(node, function)
        parts = {self._origin_part(origin, node) for origin in origins}
        return parts.pop() if len(parts) == 1 else None

    def _origin_part(self, origin: cst.CSTNode, node: cst.BaseExpression) -> int | None:
        if isinstance(origin, cst.Subscript) and self.initializes(origin.value) and len(origin.slice) == 1:
            index = origin.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                return int(index.value.value)
            return None
        if self.initializes(origin):  # a name the unpacking bound (the whole call is its value)
            return self.calls.get(id(origin), {}).get(self._text(node))
        if isinstance(origin, (cst.Name, cst.Attribute, cst.ClassDef)):  # bound by position: opaque to the flow
            text = self._text(origin) if isinstance(origin, (cst.Name, cst.Attribute)) else self._text(node)
            positions = self.targets.get(text, set())
            return next(iter(positions)) if len(positions) == 1 else None
        return None

    def engine_output(self, node: cst.BaseExpression, function: cst.FunctionDef | None, depth: int = 0) -> cst.BaseExpression | None:
        """The engine whose forward `node` was computed from (``loss =
        criterion(engine(x), y)``, ``engine(**batch).loss``), followed through
        the function's assignments."""
        if depth > _DEPTH:
            return None
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _DETACHING:
                return None  # `engine(z).detach()`: no graph back to the engine
            func = node.func.value if isinstance(node.func, cst.Attribute) and node.func.attr.value == "forward" else node.func
            if self.part(func, function) == 0:  # type: ignore[arg-type]
                return func  # type: ignore[return-value]
            inputs = [a.value for a in node.args]
            if isinstance(node.func, cst.Attribute):
                inputs.append(node.func.value)
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            inputs = [node.value]
        elif isinstance(node, cst.BinaryOperation):
            inputs = [node.left, node.right]
        elif isinstance(node, cst.UnaryOperation):
            inputs = [node.expression]
        elif isinstance(node, cst.Name):
            inputs = []
            for value, where in self.ctx.flow.name_values(node.value, function):
                if where is function and not isinstance(value, cst.Param):
                    found = self.engine_output(value, function, depth + 1)  # type: ignore[arg-type]
                    if found is not None:
                        return found
        else:
            return None
        for value in inputs:
            found = self.engine_output(value, function, depth + 1)
            if found is not None:
                return found
        return None

    def bypass(self, call: cst.Call) -> tuple[str, cst.BaseExpression] | None:
        """("backward", the engine) for ``loss.backward()`` on an engine's
        output, ("step", the optimizer) for ``optimizer.step()`` on the
        optimizer `deepspeed.initialize` returned, in a function (the one being
        visited) that never calls the engine's own ``backward``/``step``/``scale``."""
        func = call.func
        if not self.calls or not isinstance(func, cst.Attribute) or func.attr.value not in ("backward", "step"):
            return None
        function = self.ctx.enclosing_function()
        receiver = self.part(func.value)
        if receiver == DEEPSPEED_ENGINE or self.driven(function):
            return None
        if func.attr.value == "step":
            return ("step", func.value) if receiver == DEEPSPEED_OPTIMIZER else None
        engine = self.engine_output(func.value, function)
        return ("backward", engine) if engine is not None else None

    def driven(self, function: cst.FunctionDef | None) -> bool:
        """Whether `function` (None: the module's top level) calls the engine's own `backward`/`step`/`scale`."""
        key = id(function)
        if key not in self._driven:
            self._driven[key] = any(
                isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                and n.func.attr.value in ("backward", "step", "scale")
                and self.part(n.func.value, function) == DEEPSPEED_ENGINE
                for n in descendants(function or self.ctx.module, into_functions=False)
            )  # fmt: skip
        return self._driven[key]

    def _text(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)
