"""DDP005 dataset-holds-python-objects."""

from __future__ import annotations

from ddplint.analysis.catalogue import FRAME_ARRAYS, FRAME_INDEXERS, LIST_GROWERS, PANDAS_FRAMES, TEXT_COLUMN_WORDS
from ddplint.analysis.hierarchy import class_methods
from ddplint.analysis.data import (
    appended_attributes,
    appended_in_loops,
    attribute_uses,
    local_values,
    reachable_methods,
    self_assignments,
)
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Calls that build a (large) Python list or dict of objects.
PYTHON_CONTAINER_CALLS = frozenset(
    {
        "json.load", "json.loads", "pickle.load", "pickle.loads", "yaml.safe_load", "yaml.load",
        "yaml.full_load", "yaml.unsafe_load", "glob.glob", "os.listdir", "builtins.open", "csv.reader",
        "csv.DictReader",
    }
)  # fmt: skip
#: Methods whose result is a Python list or dict.
PYTHON_CONTAINER_METHODS = frozenset({"readlines", "tolist", "to_dict", "to_list", "splitlines"})
#: Wrappers that keep a Python container a Python container.
PASS_THROUGH = frozenset({"builtins.sorted", "builtins.list", "builtins.tuple", "builtins.dict", "builtins.set"})
#: Iterators whose items are Python tuples (`list(zip(paths, labels))`).
TUPLE_ITERATORS = frozenset({"builtins.zip", "builtins.enumerate", "builtins.map"})


class DatasetHoldsPythonObjects(Rule):
    """
    ## What it does

    Flags the `self.attr = ...` assignment in a Dataset's `__init__` that
    stores a Python list or dict of many objects — from `json.load`,
    `pickle.load`, `yaml.safe_load`, `f.readlines()`, `.read().splitlines()`,
    `list(open(...))`, `list(csv.reader(...))`, a comprehension, `.tolist()`,
    pandas' `.to_dict()`/`.to_list()`, or `glob.glob`/`os.listdir` (lists of
    paths) — when `__getitem__`, or a method it calls, indexes it
    (`self.attr[idx]`). Local variables assigned in `__init__` are followed.
    Each attribute is reported once, at its first such assignment (the
    other branches that fill it hold the same problem).

    Not flagged: NumPy arrays (`np.array(...)`, `np.load`, `np.memmap`),
    tensors, Hugging Face `datasets` objects, small literal tables,
    name-to-index maps (`{c: i for i, c in enumerate(classes)}`), and
    attributes that `__getitem__` never indexes (read only in `__len__`).

    ## Why is this bad?

    DataLoader workers are forked from the main process and share its
    memory copy-on-write. Every Python object carries a reference count, and
    merely reading `self.samples[idx]` in a worker writes that count, so the
    page holding the object is copied into the worker. Over an epoch each
    worker copies the whole list: resident memory grows by the dataset's
    size times `num_workers` (times the ranks on the node) until the host
    runs out of memory (pytorch/pytorch#13246). The objects themselves are
    not leaking; the pages are being copied.

    ## Example

    ```python
    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as f:
                self.samples = json.load(f)  # a list of dicts

        def __getitem__(self, idx):
            return self.samples[idx]["caption"]
    ```

    ## Use instead

    ```python
    class Captions(Dataset):
        def __init__(self, path):
            with open(path) as f:
                samples = json.load(f)
            # Fixed-width NumPy arrays (or tensors, Arrow, a memory map):
            # one object, no per-item reference counts.
            self.captions = np.array([s["caption"] for s in samples], dtype=np.bytes_)

        def __getitem__(self, idx):
            return self.captions[idx].decode()
    ```

    ## Fix safety

    No automatic fix: the remedy (NumPy arrays, Arrow, memory-mapped files) is
    a change of data structure, not an edit of a line.

    ## References

    - [pytorch/pytorch#13246: DataLoader memory keeps growing with Python objects](https://github.com/pytorch/pytorch/issues/13246)
    - [torch.utils.data: multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
    """

    code = "DDP005"
    name = "dataset-holds-python-objects"
    severity = Severity.WARNING
    summary = "A Dataset indexes a Python list/dict of objects: worker memory grows (copy-on-read)."
    tokens = ("__getitem__",)
    requires = frozenset({"data"})
    tags = ("memory", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.found: list[tuple[cst.ClassDef, str, cst.CSTNode]] = []

    def finish(self) -> None:
        reported: set[object] = set()
        for classdef, attr, statement in self.found:
            # one finding per attribute, at its first assignment to a container (then not again per line)
            if self.ctx.data.kind(classdef) == "map" and not {id(statement), (id(classdef), attr)} & reported:
                reported |= {id(statement), (id(classdef), attr)}
                self.report(
                    statement,
                    f"`self.{attr}` holds a Python container of objects that `__getitem__` indexes: each "
                    "forked DataLoader worker touches their reference counts and copies the pages, so "
                    "memory grows with num_workers × dataset size; store NumPy arrays of a fixed-width "
                    "dtype, tensors, or a memory-mapped/Arrow table instead",
                    statement=statement,
                )

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        table = class_methods(node, self.ctx.values_of)  # through the module base classes
        init = table.get("__init__")
        if init is None or "__getitem__" not in table:
            return
        indexed: set[str] = set()
        rows: set[str] = set()  # `self.df.iloc[idx]`, `self.df["path"][idx]`
        for method in reachable_methods(node, "__getitem__", table=table):
            indexed |= attribute_uses(method)[0]
            rows |= _frame_rows(method)
        locals_ = local_values(init)
        builders = reachable_methods(node, "__init__", table=table)
        filled = set().union(*(appended_attributes(m) for m in builders))
        filled |= {name for m in builders for name in self._grown(m, _self_name, local_values(m))}
        grown = self._grown(init, lambda n: n.value if isinstance(n, cst.Name) else None, locals_)
        for attr, value, statement in self_assignments(init):
            if attr in rows and self._frame(value, locals_, 0):
                self.found.append((node, attr, statement))
            elif attr not in indexed:
                continue
            elif self._python_container(value, locals_, 0, init) or (attr in filled and _empty_list(value)):
                self.found.append((node, attr, statement))
            elif isinstance(value, cst.Name) and value.value in grown:
                self.found.append((node, attr, statement))

    def _grown(self, function: cst.FunctionDef, receiver, locals_: dict) -> set[str]:
        """Lists grown with the items of a Python container (`.extend(glob.glob(...))`,
        `.extend([...])`, `.extend(json.load(f))`), named by `receiver`."""
        found = set()
        for node in descendants(function.body, into_functions=False):
            if (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in LIST_GROWERS and len(node.args) == 1
            ):  # fmt: skip
                argument = node.args[0].value
                name = receiver(node.func.value)
                if name is not None and (
                    self._python_container(argument, locals_, 0) or (isinstance(argument, cst.List) and argument.elements)
                ):
                    found.add(name)
        return found

    def _frame(self, value: cst.BaseExpression, locals_: dict, depth: int) -> bool:
        """A pandas DataFrame (`pd.read_csv(...)`, a column selection of one)."""
        if depth > 6:
            return False
        if isinstance(value, cst.Name):
            return any(self._frame(v, locals_, depth + 1) for v in locals_.get(value.value, ()))
        if isinstance(value, cst.Subscript):
            return self._frame(value.value, locals_, depth + 1)
        if isinstance(value, cst.Call):
            if isinstance(value.func, cst.Attribute) and value.func.attr.value in ("reset_index", "dropna", "sample", "copy", "query"):
                return self._frame(value.func.value, locals_, depth + 1)
            return bool(self.ctx.qualified_names(value.func) & PANDAS_FRAMES)
        return False

    def _frame_array(self, value: cst.BaseExpression, locals_: dict, depth: int) -> bool:
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
        return self._frame(source, locals_, depth + 1)

    def _python_container(
        self, value: cst.BaseExpression, locals_: dict, depth: int, function: cst.FunctionDef | None = None
    ) -> bool:
        if depth > 6:
            return False
        if isinstance(value, cst.DictComp) and _index_table(value):
            return False  # {name: i for i, name in enumerate(classes)}: a vocabulary-sized lookup table
        if isinstance(value, (cst.ListComp, cst.DictComp, cst.SetComp)):
            return True
        if isinstance(value, cst.Name):
            if value.value not in locals_ and function is not None:
                return self._given_container(value, function, depth)
            return any(self._python_container(v, locals_, depth + 1) for v in locals_.get(value.value, ()))
        if self._frame_array(value, locals_, depth):
            return True
        if not isinstance(value, cst.Call):
            return False
        names = self.ctx.qualified_names(value.func)
        if names & PASS_THROUGH:
            return bool(value.args) and (
                self._python_container(value.args[0].value, locals_, depth + 1)
                or self._file_like(value.args[0].value, locals_)
                or self._tuples(value.args[0].value)
            )
        helpers = self._helpers(value, function)
        if helpers:
            return all(self._returns_container(helper, depth) for helper in helpers)
        if names & (PYTHON_CONTAINER_CALLS - {"builtins.open", "csv.reader", "csv.DictReader"}):
            return True
        return isinstance(value.func, cst.Attribute) and last_name(value.func) in PYTHON_CONTAINER_METHODS

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
        """A parameter of `__init__` that every call site gives a Python container
        (`Records(json.load(f))`); disagreeing or unknown call sites: no."""
        param = self.ctx.flow.parameter(function, name.value)
        if param is None:
            return False
        values = self.ctx.flow.parameter_values(param)
        return bool(values) and all(
            isinstance(v, cst.BaseExpression) and self._python_container(v, {}, depth + 1) for v in values
        )

    def _returns_container(self, function: cst.FunctionDef, depth: int) -> bool:
        """Whether the helper returns a list it builds from data (torchvision's
        `make_dataset`: a list appended in a loop, a comprehension, `json.load`)."""
        locals_ = local_values(function)
        filled = _appended_locals(function)
        for node in descendants(function.body, into_functions=False):
            if isinstance(node, cst.Return) and node.value is not None:
                value = node.value
                if isinstance(value, cst.Name) and value.value in filled:
                    return True
                if self._python_container(value, locals_, depth + 1):
                    return True
        return False

    def _file_like(self, value: cst.BaseExpression, locals_: dict) -> bool:
        """`open(...)`, `csv.reader(f)`, or a local bound to one: iterating gives Python rows."""
        if isinstance(value, cst.Name):
            return any(self._file_like(v, {}) for v in locals_.get(value.value, ()))
        return isinstance(value, cst.Call) and bool(
            self.ctx.qualified_names(value.func) & {"builtins.open", "csv.reader", "csv.DictReader"}
        )


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


def _appended_locals(function: cst.FunctionDef) -> set[str]:
    """Local lists a function fills with Python objects in a loop (`instances.append((path, label))`)."""
    return appended_in_loops(function, lambda node: node.value if isinstance(node, cst.Name) else None)


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
