"""What a Dataset's `__getitem__` returns, as far as the default collate cares.

`harmful_returns` reads each `return` of a `__getitem__` and names the
sample shapes that `torch.utils.data.default_collate` cannot batch or
silently mangles: a PIL image (`Image.open`, `.convert`, PIL-only
torchvision transforms composed without `ToTensor`), `None`, a tensor or list
whose length is the sample's own (tokenizer output with no padding to a fixed
length, a whitespace `split()`), a flat list of numbers, an object-dtype
array. Values are followed through local assignments in source order (the
assignments before the use, back to the last one not under a branch),
module-level names, ``self.`` attributes, and the helpers and methods a
return calls; anything else is unknown and never a shape.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from ddplint.knowledge import (
    COMPOSES,
    NUMBER_CALLS,
    OBJECT_DTYPES,
    PIL_FUNCTIONS,
    PIL_IMAGES,
    PIL_METHODS,
    PIL_TRANSFORMS,
    RAGGED_METHODS,
    SEQUENCE_CONSTRUCTORS,
    TO_TENSOR,
    TOKENIZER_METHODS,
)  # fmt: skip
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import children, descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_DEPTH = 10
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "__setitem__"})


class Shape(enum.Enum):
    """A sample value the default collate cannot batch (or mangles)."""

    PIL = "a PIL image"
    NONE = "`None`"
    RAGGED = "a sequence whose length varies per sample"
    FLAT = "a flat Python list of numbers"
    OBJECT = "an object-dtype NumPy array"

    @property
    def collated(self) -> str:
        """What `default_collate` does with a batch of samples of this shape."""
        return _COLLATED[self][0]

    @property
    def remedy(self) -> str:
        """How to return (or batch) the sample instead."""
        return _COLLATED[self][1]


#: What the default collate does with each shape, and the remedy.
_COLLATED = {
    Shape.PIL: (
        "`default_collate` raises `TypeError` on the first batch (it takes tensors, arrays, numbers, strings and containers)",
        "end the transform chain with `ToTensor()`/`PILToTensor()`",
    ),
    Shape.NONE: (
        "`default_collate` raises `TypeError` on the first batch that holds one",
        "skip the bad sample in the dataset, or drop `None`s in a `collate_fn` before calling `default_collate`",
    ),
    Shape.RAGGED: (
        "`torch.stack` in `default_collate` raises `RuntimeError` on the first batch with two lengths",
        "pad/truncate to a fixed length, or pass a padding `collate_fn` (`pad_sequence`)",
    ),
    Shape.FLAT: (
        "`default_collate` silently transposes it into a list of `[batch]` tensors, one per position",
        "return `torch.tensor([...])`",
    ),
    Shape.OBJECT: (
        "`default_collate` raises `TypeError` on the first batch (torch has no object dtype)",
        "convert to a numeric dtype or a tensor, or collate it yourself in a `collate_fn`",
    ),
}


class _Kind(enum.Enum):
    """What else a value is known to be, on the way to a shape."""

    NUMBER = "number"
    TENSOR = "tensor"
    PIL_TRANSFORM = "a transform that keeps PIL images"
    TENSOR_TRANSFORM = "a transform that makes tensors"
    MAYBE_NONE = "a helper's result, None on some path"


def harmful_returns(getitem: cst.FunctionDef, ctx: ModelView) -> list[tuple[cst.Return, Shape]]:
    """The returns of `getitem` whose value is a `Shape` the default collate cannot batch."""
    reader = _Reader(ctx)
    found = []
    for node in descendants(getitem.body, into_functions=False):
        if isinstance(node, cst.Return):
            kind = Shape.NONE if node.value is None else reader.kind(node.value, getitem, 0)
            if kind is _Kind.MAYBE_NONE:
                kind = Shape.NONE
            if isinstance(kind, Shape):
                found.append((node, kind))
    return found


class _Reader:
    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self.flow = ctx.flow
        self._positions: dict[int, dict] = {}
        self._mutated: dict[int, set[str]] = {}
        self._active: set[tuple[int, int]] = set()

    def kind(self, node: cst.CSTNode, function: cst.FunctionDef | None, depth: int) -> Shape | _Kind | None:
        key = (id(node), id(function))
        if depth > _DEPTH or key in self._active:
            return None
        self._active.add(key)
        try:
            return self._kind(node, function, depth + 1)
        finally:
            self._active.discard(key)

    def _kind(self, node: cst.CSTNode, function: cst.FunctionDef | None, depth: int) -> Shape | _Kind | None:
        if isinstance(node, cst.Name):
            if node.value == "None":
                return Shape.NONE
            return None if node.value in ("True", "False") else self._name(node, function, depth)
        if isinstance(node, (cst.Integer, cst.Float)) or (
            isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float))
        ):
            return _Kind.NUMBER
        if isinstance(node, cst.Call):
            return self._call(node, function, depth)
        if isinstance(node, cst.Attribute):
            if node.attr.value in RAGGED_METHODS and self.kind(node.value, function, depth) is Shape.RAGGED:
                return Shape.RAGGED  # `encoding.input_ids`, `encoding.ids`
            return self._same(self.ctx.flow.origins(node, function), None, depth)
        if isinstance(node, cst.Subscript):
            string_key = len(node.slice) == 1 and isinstance(getattr(node.slice[0].slice, "value", None), cst.SimpleString)
            return Shape.RAGGED if string_key and self.kind(node.value, function, depth) is Shape.RAGGED else None
        if isinstance(node, cst.IfExp):
            if any(isinstance(b, cst.Name) and b.value == "None" for b in (node.body, node.orelse)):
                return Shape.NONE  # `return sample if ok else None`
            return self._same((node.body, node.orelse), function, depth)
        if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
            return self._container(node, function, depth)
        if isinstance(node, cst.ListComp) and node.for_in.inner_for_in is None:
            if self.kind(node.for_in.iter, function, depth) is Shape.RAGGED:
                return Shape.RAGGED
            return Shape.FLAT if self.kind(node.elt, function, depth) is _Kind.NUMBER else None
        return None

    def _container(self, node: cst.Tuple | cst.List | cst.Dict, function, depth: int) -> Shape | None:
        values = [e.value for e in node.elements if isinstance(e, (cst.Element, cst.DictElement))]
        kinds = [self.kind(v, function, depth) for v in values]
        harmful = [k for k, v in zip(kinds, values) if isinstance(k, Shape) and (k is not Shape.NONE or isinstance(v, cst.Name))]
        if isinstance(node, cst.List) and len(kinds) > 1 and all(k is _Kind.NUMBER for k in kinds):
            return Shape.FLAT
        return harmful[0] if harmful and len(values) == len(node.elements) else None

    def _same(self, values, function, depth: int) -> Shape | _Kind | None:
        """The kind all `values` share, else None."""
        kinds = {self.kind(v, function, depth) for v in values}
        return kinds.pop() if len(kinds) == 1 else None

    def _name(self, node: cst.Name, function: cst.FunctionDef | None, depth: int) -> Shape | _Kind | None:
        values = self.flow.name_values(node.value, function)
        local = [v for v, where in values if where is function and function is not None]
        if not local:
            if any(isinstance(v, cst.Param) for v, _ in values):
                return None
            kinds = {self.kind(v, where, depth) for v, where in values}
            return kinds.pop() if len(kinds) == 1 else None
        if node.value in self._mutations(function):
            return None
        reaching = self._reaching(node, local, function)
        kind = self._same(reaching, function, depth) if reaching else None
        # `x = self.load(i)` is tested before it is returned; `None` counts where it is written in the return
        return None if kind in (_Kind.MAYBE_NONE, Shape.NONE) else kind

    def _reaching(self, use: cst.CSTNode, values: list, function: cst.FunctionDef) -> list:
        """The assignments of `values` that may reach `use`: those bound before
        it, back to the last one not under a branch the use is not under."""
        layout = self._layout(function)
        if id(use) not in layout:
            return []
        enter, _, chain = layout[id(use)]
        reaching = []
        for value in sorted((v for v in values if id(v) in layout and layout[id(v)][1] < enter), key=lambda v: -layout[id(v)][1]):
            reaching.append(value)
            if chain[: len(layout[id(value)][2])] == layout[id(value)][2]:
                return reaching
        return []  # perhaps unassigned on some path

    def _layout(self, function: cst.FunctionDef) -> dict[int, tuple[int, int, tuple[int, ...]]]:
        """node id -> (order entered, order left, the branches it is under) in `function`."""
        table = self._positions.get(id(function))
        if table is None:
            table = self._positions[id(function)] = {}
            counter = [0]

            def walk(node: cst.CSTNode, chain: tuple[int, ...]) -> None:
                enter = counter[0]
                counter[0] += 1
                for child in children(node):
                    if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                        continue
                    branch = isinstance(child, cst.ExceptHandler) or (
                        isinstance(node, (cst.If, cst.For, cst.While, cst.Try)) and isinstance(child, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Else, cst.If))
                        and not (isinstance(node, cst.Try) and child is node.body)
                    )
                    walk(child, (*chain, id(child)) if branch else chain)
                table[id(node)] = (enter, counter[0], chain)
                counter[0] += 1

            walk(function.body, ())
        return table

    def _mutations(self, function: cst.FunctionDef) -> set[str]:
        """Names changed in place in `function` (`ids.extend(...)`, `ids += ...`, `ids[k] = ...`)."""
        found = self._mutated.get(id(function))
        if found is None:
            found = self._mutated[id(function)] = set()
            for node in descendants(function.body, into_functions=False):
                target = None
                if isinstance(node, cst.AugAssign):
                    target = node.target
                elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _MUTATORS:
                    target = node.func.value
                elif isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript):
                    target = node.target.value
                if isinstance(target, cst.Name):
                    found.add(target.value)
        return found

    def _call(self, call: cst.Call, function: cst.FunctionDef | None, depth: int) -> Shape | _Kind | None:
        names = self.ctx.qualified_names(call.func)
        first = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
        if names & PIL_IMAGES:
            return Shape.PIL
        if names & TO_TENSOR:
            return _Kind.TENSOR if any(".functional." in n for n in names if n) else _Kind.TENSOR_TRANSFORM
        if names & PIL_TRANSFORMS:
            return _Kind.PIL_TRANSFORM
        if names & COMPOSES:
            chain = [self.kind(e.value, function, depth) for e in getattr(first, "elements", ())]
            if _Kind.TENSOR_TRANSFORM in chain:
                return _Kind.TENSOR_TRANSFORM
            return _Kind.PIL_TRANSFORM if chain and all(k is _Kind.PIL_TRANSFORM for k in chain) else None
        if names & PIL_FUNCTIONS:
            return Shape.PIL if first is not None and self.kind(first, function, depth) is Shape.PIL else None
        if any(n and n.startswith("numpy.") for n in names) and _object_dtype(call, self.ctx):
            return Shape.OBJECT
        if names & SEQUENCE_CONSTRUCTORS:
            if first is not None and self.kind(first, function, depth) is Shape.RAGGED:
                return Shape.RAGGED
            return _Kind.TENSOR if any(n and n.startswith("torch.") for n in names) else None
        if names & NUMBER_CALLS:
            return _Kind.NUMBER
        if names and all(n and n.startswith("torch.") for n in names):
            return _Kind.TENSOR
        targets = self.flow.call_targets(call, function)
        if targets:
            if any(t.name.value == "__init__" for t, _ in targets):
                return None  # a module class: a custom transform, a wrapper
            return self._helper([t for t, _ in targets], depth)
        if "tokenizer" in (last_name(call.func) or "").lower():
            return _tokenized(call)  # `tokenizer(text)`, `self.tokenizer(text, ...)`
        if isinstance(call.func, cst.Attribute):
            found = self._method(call, call.func.attr.value, first, function, depth)
            if found is not None:
                return found
        callee = self.kind(call.func, function, depth)
        if callee is _Kind.TENSOR_TRANSFORM:
            return _Kind.TENSOR
        if callee is _Kind.PIL_TRANSFORM and first is not None and self.kind(first, function, depth) is Shape.PIL:
            return Shape.PIL
        return None

    def _method(self, call: cst.Call, method: str, first, function, depth: int) -> Shape | _Kind | None:
        receiver = call.func.value  # type: ignore[union-attr]
        if method == "split" and not call.args:
            return Shape.RAGGED  # `str.split()`: one item per word
        if method in TOKENIZER_METHODS | {"tokenize"} and "tokenizer" in (last_name(receiver) or "").lower():
            return _tokenized(call)
        if method == "astype" and first is not None and self.ctx.qualified_names(first) & OBJECT_DTYPES:
            return Shape.OBJECT
        if method in PIL_METHODS | RAGGED_METHODS:
            kind = self.kind(receiver, function, depth)
            if (kind is Shape.PIL and method in PIL_METHODS) or (kind is Shape.RAGGED and method in RAGGED_METHODS):
                return kind
        return None

    def _helper(self, targets: list[cst.FunctionDef], depth: int) -> Shape | _Kind | None:
        """What calling one of `targets` gives: their returns' common kind;
        MAYBE_NONE when some return is None and the others are not."""
        kinds = set()
        for target in targets:
            nodes = list(descendants(target.body, into_functions=False))
            if any(isinstance(n, (cst.Yield, cst.Await)) for n in nodes):
                return None
            returns = [n for n in nodes if isinstance(n, cst.Return)]
            if not returns:
                return None
            kinds |= {Shape.NONE if r.value is None else self.kind(r.value, target, depth) for r in returns}
        if len(kinds) == 1:
            return kinds.pop()
        return _Kind.MAYBE_NONE if Shape.NONE in kinds else None


def _tokenized(call: cst.Call) -> Shape | None:
    """A tokenizer call's output: ragged unless padded to a fixed length (or unknown arguments)."""
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if any(a.star for a in call.args):
        return None
    padding = keywords.get("padding")
    if keywords.get("pad_to_max_length") is not None:
        return None
    if padding is None:
        return Shape.RAGGED
    if isinstance(padding, cst.Name) and padding.value in ("True", "False"):
        return Shape.RAGGED  # True pads to the longest in the call: this one sample
    if isinstance(padding, cst.SimpleString) and padding.evaluated_value in ("longest", "do_not_pad"):
        return Shape.RAGGED
    return None


def _object_dtype(call: cst.Call, ctx: ModelView) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return bool(ctx.qualified_names(arg.value) & OBJECT_DTYPES)
    return False
