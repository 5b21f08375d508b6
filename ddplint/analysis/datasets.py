"""What a Dataset class holds: the attributes `__getitem__` reads per sample,
and what `__init__` (and the helpers it calls) stores in them.

The question behind it: DataLoader workers are forked and share the parent's
pages copy-on-write, so a Python container of many objects (a list of dicts
from `json.load`, the paths `glob.glob` found, a pandas frame with text
columns) that every sample read touches is copied into every worker. Values
are read syntactically inside the class's methods, with the call graph for
module helpers (`make_dataset(root)`) and for arguments every construction
site gives `__init__`. Nothing here walks the module: the class and its
methods are the only subtrees read, once per question.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ddplint.knowledge import (
    CONTAINER_PASS_THROUGH, FRAME_ARRAYS, FRAME_INDEXERS, FRAME_PRESERVING_METHODS, LIST_GROWERS, PANDAS_FRAMES,
    PYTHON_CONTAINER_CALLS, PYTHON_CONTAINER_METHODS, ROW_READERS, TEXT_COLUMN_WORDS, TUPLE_ITERATORS,
)  # fmt: skip
from ddplint.analysis.data import (
    appended_attributes, appended_in_loops, attribute_uses, local_values, reachable_methods, self_assignments,
)  # fmt: skip
from ddplint.analysis.hierarchy import class_methods
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

    #: A function's local names and the values assigned to them (a type only:
    #: evaluating `cst.` at import would load LibCST for `ddplint rule` too).
    Locals = dict[str, list[cst.BaseExpression]]

_DEPTH = 6


def held_python_objects(classdef: cst.ClassDef, ctx: ModelView) -> list[tuple[str, cst.CSTNode]]:
    """(attribute, assignment) for each ``self.attr = ...`` in the class's
    `__init__` (its own or a module base class's) that stores a Python
    container of objects, or a pandas DataFrame, that `__getitem__` (or a
    method it calls) reads per sample: ``self.attr[idx]``, ``self.df.iloc[idx]``.
    An empty list counts when the builder methods fill the attribute with
    Python objects (``self.samples.append((path, label))`` in a loop,
    ``self.samples.extend(glob(...))``), a local name when `__init__` grows it
    so. In source order; empty for a class without both methods."""
    table = class_methods(classdef, ctx.values_of)  # through the module base classes
    init = table.get("__init__")
    if init is None or "__getitem__" not in table:
        return []
    indexed, rows = per_sample_reads(classdef, table)
    values = ObjectValues(ctx)
    locals_ = local_values(init)
    builders = reachable_methods(classdef, "__init__", table=table)
    filled = set().union(*(appended_attributes(m) for m in builders))
    filled |= {name for m in builders for name in values.grown(m, _self_name, local_values(m))}
    grown = values.grown(init, lambda n: n.value if isinstance(n, cst.Name) else None, locals_)
    found = []
    for attr, value, statement in self_assignments(init):
        if attr in rows and values.frame(value, locals_):
            found.append((attr, statement))
        elif attr not in indexed:
            continue
        elif values.python_container(value, locals_, function=init) or (attr in filled and _empty_list(value)):
            found.append((attr, statement))
        elif isinstance(value, cst.Name) and value.value in grown:
            found.append((attr, statement))
    return found


def per_sample_reads(classdef: cst.ClassDef, table: dict[str, cst.FunctionDef]) -> tuple[set[str], set[str]]:
    """(indexed, rows): the attributes `__getitem__` and the methods it calls
    (`table`: the instance's methods, `classes.class_methods`) subscript by a
    computed index (``self.samples[idx]``), and those they read as DataFrame
    rows (``self.df.iloc[idx]``, ``self.df.loc[idx, "path"]``, ``self.df["path"][idx]``)."""
    indexed: set[str] = set()
    rows: set[str] = set()
    for method in reachable_methods(classdef, "__getitem__", table=table):
        indexed |= attribute_uses(method)[0]
        rows |= _frame_rows(method)
    return indexed, rows


class ObjectValues:
    """What an expression inside a class's methods holds: a Python container
    of many objects, a pandas DataFrame. `locals_` are the values assigned to
    the method's local names (`data.local_values`)."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx

    def python_container(
        self, value: cst.BaseExpression, locals_: Locals, depth: int = 0, function: cst.FunctionDef | None = None
    ) -> bool:
        """Whether `value` is a Python list/dict/set of objects read from data:
        `json.load`, `pickle.load`, `glob.glob`, `f.readlines()`, `.tolist()`,
        `list(open(path))`, `list(zip(paths, labels))`, a comprehension (not a
        name-to-index map), the object array of a frame's text column, or a
        helper that returns one. A parameter of `function` counts when every
        call site gives one."""
        if depth > _DEPTH:
            return False
        if isinstance(value, cst.DictComp) and _index_table(value):
            return False  # {name: i for i, name in enumerate(classes)}: a vocabulary-sized lookup table
        if isinstance(value, (cst.ListComp, cst.DictComp, cst.SetComp)):
            return True
        if isinstance(value, cst.Name):
            if value.value not in locals_ and function is not None:
                return self._given_container(value, function, depth)
            return any(self.python_container(v, locals_, depth + 1) for v in locals_.get(value.value, ()))
        if self._frame_array(value, locals_, depth):
            return True
        if not isinstance(value, cst.Call):
            return False
        names = self.ctx.qualified_names(value.func)
        if names & CONTAINER_PASS_THROUGH:
            return bool(value.args) and (
                self.python_container(value.args[0].value, locals_, depth + 1)
                or self._rows(value.args[0].value, locals_)
                or self._tuples(value.args[0].value)
            )
        helpers = self._helpers(value, function)
        if helpers:
            return all(self._returns_container(helper, depth) for helper in helpers)
        if names & PYTHON_CONTAINER_CALLS:
            return True
        return isinstance(value.func, cst.Attribute) and last_name(value.func) in PYTHON_CONTAINER_METHODS

    def frame(self, value: cst.BaseExpression, locals_: Locals, depth: int = 0) -> bool:
        """Whether `value` is a pandas DataFrame (`pd.read_csv(...)`, a column
        selection of one, `df.reset_index()`)."""
        if depth > _DEPTH:
            return False
        if isinstance(value, cst.Name):
            return any(self.frame(v, locals_, depth + 1) for v in locals_.get(value.value, ()))
        if isinstance(value, cst.Subscript):
            return self.frame(value.value, locals_, depth + 1)
        if isinstance(value, cst.Call):
            if isinstance(value.func, cst.Attribute) and value.func.attr.value in FRAME_PRESERVING_METHODS:
                return self.frame(value.func.value, locals_, depth + 1)
            return bool(self.ctx.qualified_names(value.func) & PANDAS_FRAMES)
        return False

    def grown(
        self, function: cst.FunctionDef, receiver: Callable[[cst.BaseExpression], str | None], locals_: Locals
    ) -> set[str]:
        """The lists (named by `receiver`) that `function` grows with the items
        of a Python container: ``.extend(glob.glob(...))``, ``.extend([...])``,
        ``.extend(json.load(f))``."""
        found = set()
        for node in descendants(function.body, into_functions=False):
            if (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in LIST_GROWERS and len(node.args) == 1
            ):  # fmt: skip
                argument = node.args[0].value
                name = receiver(node.func.value)
                if name is not None and (
                    self.python_container(argument, locals_) or (isinstance(argument, cst.List) and argument.elements)
                ):
                    found.add(name)
        return found

    def _frame_array(self, value: cst.BaseExpression, locals_: Locals, depth: int) -> bool:
        """`df.values`, `df["image_path"].to_numpy()`: the NumPy array of a whole
        frame or of a text column is an object array (one Python object per cell)."""
        array = value.func if isinstance(value, cst.Call) else value
        if not (isinstance(array, cst.Attribute) and array.attr.value in FRAME_ARRAYS):
            return False
        if isinstance(value, cst.Attribute) and array.attr.value == "to_numpy":
            return False
        source = array.value
        if isinstance(source, cst.Subscript):
            key = source.slice[0].slice if len(source.slice) == 1 else None
            if not (isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString)):
                return False
            column = str(key.value.evaluated_value).lower()
            if not any(word in column for word in TEXT_COLUMN_WORDS):
                return False  # `df["label"].values`: numbers, a plain array
        elif isinstance(source, cst.Attribute):
            return False  # `df.label.values`: which column holds text is not known
        return self.frame(source, locals_, depth + 1)

    def _tuples(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Call) and bool(self.ctx.qualified_names(value.func) & TUPLE_ITERATORS)

    def _helpers(self, call: cst.Call, function: cst.FunctionDef | None) -> list[cst.FunctionDef]:
        """The module functions or methods the call runs (`make_dataset(root)`,
        `self._read()`); none for constructors."""
        targets = self.ctx.flow.call_targets(call, function)
        if any(skip and t.name.value == "__init__" for t, skip in targets):
            return []
        return [t for t, _ in targets]

    def _given_container(self, name: cst.Name, function: cst.FunctionDef, depth: int) -> bool:
        """A parameter of `function` that every call site gives a Python container
        (`Records(json.load(f))`); disagreeing or unknown call sites: no."""
        flow = self.ctx.flow
        param = flow.parameter(function, name.value)
        if param is None:
            return False
        values = flow.parameter_values(param)
        return bool(values) and all(
            isinstance(v, cst.BaseExpression) and self.python_container(v, {}, depth + 1) for v in values
        )

    def _returns_container(self, function: cst.FunctionDef, depth: int) -> bool:
        """Whether the helper returns a list it builds from data (torchvision's
        `make_dataset`: a list appended in a loop, a comprehension, `json.load`)."""
        locals_ = local_values(function)
        filled = appended_in_loops(function, lambda node: node.value if isinstance(node, cst.Name) else None)
        for node in descendants(function.body, into_functions=False):
            if isinstance(node, cst.Return) and node.value is not None:
                value = node.value
                if isinstance(value, cst.Name) and value.value in filled:
                    return True
                if self.python_container(value, locals_, depth + 1):
                    return True
        return False

    def _rows(self, value: cst.BaseExpression, locals_: Locals) -> bool:
        """`open(...)`, `csv.reader(f)`, or a local bound to one: iterating gives Python rows."""
        if isinstance(value, cst.Name):
            return any(self._rows(v, {}) for v in locals_.get(value.value, ()))
        return isinstance(value, cst.Call) and bool(self.ctx.qualified_names(value.func) & ROW_READERS)


def _self_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _frame_rows(method: cst.FunctionDef) -> set[str]:
    """`self.x` read per sample as a DataFrame: `self.x.iloc[idx]`,
    `self.x.loc[idx, "path"]`, `self.x["path"][idx]` (a computed index)."""
    found = set()
    for node in descendants(method.body):
        if not isinstance(node, cst.Subscript) or all(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.SimpleString, cst.Integer)) for e in node.slice
        ):
            continue
        base = node.value
        if isinstance(base, cst.Attribute) and base.attr.value in FRAME_INDEXERS:
            name = _self_name(base.value)
        elif isinstance(base, cst.Subscript):
            name = _self_name(base.value)
        else:
            name = None
        if name is not None:
            found.add(name)
    return found


def _empty_list(value: cst.BaseExpression) -> bool:
    """`[]` or `list()`: filled later."""
    if isinstance(value, cst.List):
        return not value.elements
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "list" and not value.args


def _index_table(comp: cst.DictComp) -> bool:
    """`{key: i for i, key in enumerate(keys)}` (and the inverse): name-to-index maps."""
    target = comp.for_in.target
    if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
        return False
    if not isinstance(comp.for_in.iter, cst.Call) or last_name(comp.for_in.iter.func) != "enumerate":
        return False
    index = target.elements[0].value
    return isinstance(index, cst.Name) and any(
        isinstance(side, cst.Name) and side.value == index.value for side in (comp.key, comp.value)
    )
