"""The data pipeline: Dataset classes, DataLoader calls and their arguments.

Shared by the DataLoader rules (DDP002, DDP003, DDP009, DDP014) and the
Dataset rules (DDP004, DDP005, DDP015): Dataset kinds, a loader's arguments
and the ones `DataLoader.__init__` rejects, loaders over a DistributedSampler
with their iterations and `set_epoch` calls, training loaders no sampler
splits. Everything here answers questions about nodes the caller already
holds; nothing walks the module again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator

from ddplint.analysis.calls import BoundArguments, bind_arguments, bind_to_function
from ddplint.knowledge import (
    DATASET_WRAPPERS, DEFAULT_COLLATES, DISTRIBUTED_SAMPLER_TEXTS, EVALUATION_NAME_PARTS, HF_DATASET_METHODS,
    HF_LOAD_DATASET, ITERATING_CALLS, ITERATING_WRAPPERS, LIGHTNING_LOADER_HOOKS, RANK_READ_WORDS, STREAM_FACTORIES,
    TRAINING_NAME_PARTS,
)
from ddplint.knowledge import DDP_CLASSES, SHARDING_WRAPPERS
from ddplint.analysis.classes import class_of_instance, imported_bases, inherits_from
from ddplint.analysis.names import dotted_name, last_name, name_words
from ddplint.analysis.tree import children, descendants, names_in
from ddplint.analysis.values import int_value, is_none_literal, may_be_not_none, truthiness
from ddplint.lazy import cst
from ddplint.solver import closure

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

#: `DataLoader.__init__`'s positional parameters, in order (torch 2.x).
LOADER_POSITIONAL = (
    "dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers",
    "collate_fn", "pin_memory", "drop_last", "timeout", "worker_init_fn",
    "multiprocessing_context", "generator",
)  # fmt: skip

#: Map-style Dataset bases: torch's, and torchvision's folder and vision
#: datasets, which training code subclasses as often (SwAV's `ImageFolder`).
_TORCHVISION_DATASETS = ("ImageFolder", "DatasetFolder", "VisionDataset", "CIFAR10", "CIFAR100", "MNIST", "ImageNet")
MAP_DATASETS = frozenset(
    {"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"}
    | {f"torchvision.datasets.{name}" for name in _TORCHVISION_DATASETS}
    | {"torchvision.datasets.folder.ImageFolder", "torchvision.datasets.folder.DatasetFolder",
       "torchvision.datasets.vision.VisionDataset"}
)  # fmt: skip
ITERABLE_DATASETS = frozenset(
    {
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.IterableDataset",
        "torch.utils.data.ChainDataset",
        "torch.utils.data.dataset.ChainDataset",
    }
)
#: IterableDataset subclasses that accept `shuffle=` (DataLoader applies it).
DATAPIPES = frozenset(
    {
        "torch.utils.data.IterDataPipe",
        "torch.utils.data.datapipes.datapipe.IterDataPipe",
        "torch.utils.data.graph.IterDataPipe",
    }
)
DISTRIBUTED_SAMPLERS = frozenset(
    {"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"}
)
BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})
#: Wrappers that replicate (or shard) a model over the ranks of a process group.
REPLICATING = DDP_CLASSES | SHARDING_WRAPPERS


@dataclass(frozen=True)
class LoaderArguments:
    """A DataLoader call's arguments: explicit ones, and those of a literal
    ``**kwargs`` dict built in the module. `unknown` is true when some
    ``*args``/``**kwargs`` could not be resolved, so a missing argument may
    still be passed."""

    explicit: dict[str, cst.Arg] = field(default_factory=dict)
    from_dict: dict[str, cst.BaseExpression] = field(default_factory=dict)
    unknown: bool = False

    def value(self, name: str) -> cst.BaseExpression | None:
        """The expression passed for `name`, wherever it was written."""
        arg = self.explicit.get(name)
        return arg.value if arg is not None else self.from_dict.get(name)

    def passes(self, name: str) -> bool:
        """Whether `name` is, or may be, passed."""
        return name in self.explicit or name in self.from_dict or self.unknown


def is_dataloader(call: cst.Call, ctx: ModelView) -> bool:
    """A call of `torch.utils.data.DataLoader` through any alias."""
    names = ctx.qualified_names(call.func)
    return bool(names) and names <= DATALOADERS


def loader_arguments(call: cst.Call, ctx: ModelView) -> LoaderArguments:
    """Bind a DataLoader call's arguments, resolving literal ``**kwargs`` dicts."""
    bound = bind_arguments(call, LOADER_POSITIONAL)
    from_dict: dict[str, cst.BaseExpression] = {}
    unknown = False
    for arg in call.args:
        if arg.star == "**":
            resolved = literal_dict(arg.value, ctx)
            if resolved is None:
                unknown = True
            else:
                from_dict.update(resolved)
        elif arg.star == "*":
            unknown = True
    return LoaderArguments(bound.explicit, from_dict, unknown)


def literal_dict(node: cst.BaseExpression, ctx: ModelView) -> dict[str, cst.BaseExpression] | None:
    """The keys and values of a dict display or ``dict(k=v)`` call (also via one Name)."""
    if isinstance(node, cst.Name):
        values = ctx.values_of(node)
        return literal_dict(values[0], ctx) if len(values) == 1 and isinstance(values[0], cst.BaseExpression) else None
    if isinstance(node, cst.Dict):
        result = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            result[element.key.evaluated_value] = element.value
        return result
    if isinstance(node, cst.Call) and ctx.qualified_names(node.func) == {"builtins.dict"}:
        if any(a.keyword is None for a in node.args):
            return None
        return {a.keyword.value: a.value for a in node.args}
    return None


def dataset_kind(classdef: cst.ClassDef, ctx: ModelView) -> str | None:
    """"iterable" or "map" for Dataset classes (through aliases and module
    classes), None for other classes."""
    if inherits_from(classdef, ITERABLE_DATASETS | DATAPIPES, ctx):
        return "iterable"
    if inherits_from(classdef, MAP_DATASETS, ctx):
        return "map"
    if ctx.facts:  # a Dataset base class defined in another linted module
        fact = ctx.facts.first(imported_bases(classdef, ctx))
        return fact.dataset if fact is not None else None
    return None


def enclosing_class(ctx: ModelView) -> cst.ClassDef | None:
    """The class whose method is being visited (None outside methods)."""
    stack = ctx.stack
    for index in range(len(stack) - 1, 1, -1):
        if isinstance(stack[index], cst.FunctionDef):
            parent = stack[index - 2] if isinstance(stack[index - 1], cst.IndentedBlock) else None
            return parent if isinstance(parent, cst.ClassDef) else None
    return None


def methods(classdef: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """The methods defined directly in a class body."""
    return {
        statement.name.value: statement
        for statement in classdef.body.body
        if isinstance(statement, cst.FunctionDef)
    }


def called_methods(function: cst.FunctionDef) -> set[str]:
    """Names of ``self.<method>(...)`` calls in a function."""
    return {
        node.func.attr.value
        for node in descendants(function.body)
        if isinstance(node, cst.Call) and _self_attribute(node.func) is not None
    }


def reachable_methods(
    classdef: cst.ClassDef, *entries: str, table: dict[str, cst.FunctionDef] | None = None
) -> list[cst.FunctionDef]:
    """The entry methods and every method they call through ``self.``, transitively.
    `table` is the instance's methods through its class hierarchy (`classes.class_methods`):
    a base's `__getitem__` calling ``self.get_info`` reaches the subclass's override."""
    if table is None:
        table = methods(classdef)
    found: list[cst.FunctionDef] = []
    todo = [name for name in entries if name in table]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in table:
            continue
        seen.add(name)
        found.append(table[name])
        todo.extend(called_methods(table[name]))
    return found


def self_assignments(function: cst.FunctionDef) -> Iterator[tuple[str, cst.BaseExpression, cst.CSTNode]]:
    """(attribute, value, statement) for each ``self.attr = value`` in a function."""
    for node in descendants(function.body, into_functions=False):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                name = _self_attribute(target.target)
                if name is not None:
                    yield name, node.value, node
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            name = _self_attribute(node.target)
            if name is not None:
                yield name, node.value, node


def local_values(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    """Values assigned to plain local names in a function (syntactically)."""
    values: dict[str, list[cst.BaseExpression]] = {}
    for node in descendants(function.body, into_functions=False):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    values.setdefault(target.target.value, []).append(node.value)
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)) and isinstance(node.target, cst.Name):
            if node.value is not None:
                values.setdefault(node.target.value, []).append(node.value)
    return values


def attribute_uses(function: cst.FunctionDef) -> tuple[set[str], set[str]]:
    """(indexed, read): ``self.x[...]`` subscripts by a computed index (not
    ``self.cfg["root"]``, a constant key), and every ``self.x`` read."""
    indexed: set[str] = set()
    read: set[str] = set()
    for node in descendants(function.body):
        if isinstance(node, cst.Subscript):
            name = _self_attribute(node.value)
            if name is not None and not _constant_subscript(node):
                indexed.add(name)
        name = _self_attribute(node)
        if name is not None:
            read.add(name)
    return indexed, read


def _constant_subscript(node: cst.Subscript) -> bool:
    return all(
        isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.SimpleString, cst.Integer, cst.ConcatenatedString))
        for e in node.slice
    )


def appended_in_loops(function: cst.FunctionDef, receiver: Callable[[cst.BaseExpression], str | None]) -> set[str]:
    """The containers (named by `receiver`) that the function fills in a loop
    with plain Python objects: ``.append({"image": path, "caption": text})``,
    ``.append((path, label))``, ``.append(f"...")``. Tensors, arrays and
    values of unknown calls (``.append((TF.to_tensor(img), i))``) do not count."""
    found: set[str] = set()
    locals_: dict | None = None
    for loop in _outer_loops(function.body):
        for inner in descendants(loop.body, into_functions=False):
            if (
                isinstance(inner, cst.Call)
                and isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value == "append"
                and len(inner.args) == 1
                and type(inner.args[0].value).__name__ in _PYTHON_OBJECTS
            ):
                if locals_ is None:
                    locals_ = local_values(function)
                name = receiver(inner.func.value)
                if name is not None and _plain_python(inner.args[0].value, locals_, 0):
                    found.add(name)
    return found


def _outer_loops(body: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The loops of a function body that no other loop encloses (each is scanned once, nested ones with it)."""
    todo = [body]
    while todo:
        node = todo.pop()
        for child in children(node):
            if isinstance(child, (cst.For, cst.While)):
                yield child
            elif not isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                todo.append(child)


#: Values that are plainly Python objects (not tensors or arrays), by LibCST node class.
_PYTHON_OBJECTS = frozenset({"Dict", "Tuple", "List", "SimpleString", "FormattedString", "DictComp"})
#: Calls that return plain Python values (strings, numbers, paths).
_PLAIN_CALLS = frozenset({"join", "str", "int", "float", "strip", "split", "format", "loads", "Path", "basename", "len"})


def _plain_python(value: cst.CSTNode, locals_: dict, depth: int) -> bool:
    """Whether a value is built only of strings, numbers, paths and the like."""
    if depth > 4:
        return False
    depth += 1
    if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString, cst.Integer, cst.Float)):
        return True
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(_plain_python(e.value, locals_, depth) for e in value.elements)
    if isinstance(value, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _plain_python(e.value, locals_, depth) for e in value.elements)
    if isinstance(value, cst.DictComp):
        return _plain_python(value.value, locals_, depth)
    if isinstance(value, cst.Name):
        return all(_plain_python(v, locals_, depth) for v in locals_.get(value.value, ()))
    if isinstance(value, (cst.Subscript, cst.Attribute)):
        return True  # record["image"], item.path
    if isinstance(value, cst.BinaryOperation):
        return _plain_python(value.left, locals_, depth) and _plain_python(value.right, locals_, depth)
    if isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        return name in _PLAIN_CALLS
    return False


def appended_attributes(function: cst.FunctionDef) -> set[str]:
    """``self.x`` that the function fills with Python objects in a loop."""
    return appended_in_loops(function, _self_attribute)


def _self_attribute(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def is_distributed_sampler(call: cst.CSTNode, ctx: ModelView) -> bool:
    """A `DistributedSampler(...)` (or any `*ElasticDistributedSampler`) call."""
    if not isinstance(call, cst.Call):
        return False
    if ctx.qualified_names(call.func) & DISTRIBUTED_SAMPLERS:
        return True
    return (last_name(call.func) or "").endswith("ElasticDistributedSampler")


class DataAnalysis:
    """Walker analysis (`ctx.data`): which classes the module's DataLoaders
    load, which loaders run over a DistributedSampler and where they are
    iterated (`loaders`, a `LoaderUses`), and whether the module's loaders
    need a sampler of their own (`loaders_need_sampler`).

    A class with `__getitem__` and `__len__` but no Dataset base is still a
    map-style dataset when a DataLoader is given one of its instances.
    """

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self._loaded: set[int] = set()
        self._kinds: dict[int, str | None] = {}
        self._collates: dict[int, set[bool]] = {}
        #: Loaders over a DistributedSampler, their iterations and set_epoch
        #: calls: followed only in modules that mention such a sampler.
        self.loaders: LoaderUses | None = None
        if any(text in ctx.source for text in DISTRIBUTED_SAMPLER_TEXTS):
            self.loaders = LoaderUses(ctx)
        #: Whether the module replicates a model over ranks, and hands something
        #: to accelerate's `prepare`: followed only in modules that mention DataLoader.
        self._replication = "DataLoader" in ctx.source
        self._replicated = self._accelerate_prepares = False

    def visit_For(self, node: cst.For) -> None:
        if self.loaders is not None:
            self.loaders.visit_For(node)

    def visit_Return(self, node: cst.Return) -> None:
        if self.loaders is not None:
            self.loaders.visit_Return(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.loaders is not None:
            self.loaders.visit_Call(node)
        if self._replication:
            self._note_replication(node)
        if is_dataloader(node, self.ctx):
            from ddplint.analysis.classes import class_of_instance

            arguments = loader_arguments(node, self.ctx)
            dataset = arguments.value("dataset")
            if dataset is None:
                return
            default = default_collate(arguments, self.ctx)
            # the dataset may come through a parameter, an attribute or a helper's return
            for value in {id(v): v for v in (dataset, *self.ctx.origins(dataset))}.values():
                if isinstance(value, cst.Call) and value.args and self.ctx.qualified_names(value.func) & DATASET_WRAPPERS:
                    value = value.args[0].value  # `Subset(dataset, indices)`
                classdef = class_of_instance(value, self.ctx)
                if classdef is not None:
                    self._loaded.add(id(classdef))
                    self._collates.setdefault(id(classdef), set()).add(default)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._kinds[id(node)] = dataset_kind(node, self.ctx)

    def _note_replication(self, node: cst.Call) -> None:
        if self.ctx.qualified_names(node.func) & REPLICATING or last_name(node.func) == "init_process_group":
            self._replicated = True
        if last_name(node.func) == "prepare" and isinstance(node.func, cst.Attribute):
            self._accelerate_prepares |= "accelerat" in (last_name(node.func.value) or "").lower()

    @property
    def loaders_need_sampler(self) -> bool:
        """Whether the module's DataLoaders must be split across ranks by a
        sampler of their own: it wraps a model in DDP/FSDP (`fully_shard` too)
        or calls `init_process_group`, and hands nothing to accelerate's
        `prepare` (which splits the loaders itself). Final after the walk;
        false in modules that never mention `DataLoader`."""
        return self._replicated and not self._accelerate_prepares

    def kind(self, classdef: cst.ClassDef) -> str | None:
        """"map"/"iterable" for Dataset classes, including classes with
        `__getitem__` and `__len__` that a DataLoader loads; final after the walk."""
        kind = self._kinds.get(id(classdef))
        if kind is None and id(classdef) in self._loaded:
            table = methods(classdef)
            if "__getitem__" in table and "__len__" in table:
                return "map"
            if "__iter__" in table:
                return "iterable"
        return kind

    def default_collated(self, classdef: cst.ClassDef) -> bool | None:
        """Whether some DataLoader of the module batches samples of `classdef`'s
        `__getitem__` with the default collate (its instances', or a module
        subclass's that inherits the method); None when no DataLoader of the
        module loads them; final after the walk."""
        getitem = methods(classdef).get("__getitem__")
        related = [classdef] + [
            sub for sub in self.ctx.flow.subclasses(classdef) if self.ctx.flow.methods_of(sub).get("__getitem__") is getitem
        ]
        seen = set().union(*(self._collates.get(id(c), set()) for c in related))
        return True in seen if seen else None


def default_collate(arguments: LoaderArguments, ctx: ModelView) -> bool:
    """A DataLoader batches with `default_collate`: no `collate_fn` (or `None`,
    or `default_collate` itself) and a `batch_size` that is not `None`."""
    if arguments.unknown:
        return False
    batch_size = arguments.value("batch_size")
    if isinstance(batch_size, cst.Name) and batch_size.value == "None":
        return False
    collate = arguments.value("collate_fn")
    return collate is None or (isinstance(collate, cst.Name) and collate.value == "None") or bool(
        ctx.qualified_names(collate) & DEFAULT_COLLATES
    )


def distributed_sampler_of(loader: cst.BaseExpression, ctx: ModelView) -> cst.Call | None:
    """The `DistributedSampler(...)` call behind a loader expression: a
    `DataLoader(..., sampler=DistributedSampler(...))` among the loader's
    origins (through names, parameters, attributes and helper returns), its
    sampler followed the same way. None when no origin shows one."""
    for origin in (loader, *ctx.origins(loader)):
        if not (isinstance(origin, cst.Call) and is_dataloader(origin, ctx)):
            continue
        sampler = loader_arguments(origin, ctx).value("sampler")
        if sampler is None:
            continue
        where = ctx.flow.function_of_call(origin) if origin is not loader else ctx.enclosing_function()
        for value in (sampler, *ctx.flow.origins(sampler, where)):
            if is_distributed_sampler(value, ctx):
                return value  # type: ignore[return-value]
    return None

# ---------------------------------------------------------------- streams and ranks


def reads_rank(node: cst.CSTNode) -> bool:
    """Whether code reads its rank or the number of ranks, by any name
    (`dist.get_rank()`, `self.world_size`, `num_replicas`, `shard_id`,
    `split_dataset_by_node`, `os.environ["RANK"]`)."""
    for child in (node, *descendants(node)):
        if isinstance(child, cst.Name):
            text = child.value
        elif isinstance(child, cst.SimpleString):
            text = child.evaluated_value if isinstance(child.evaluated_value, str) else ""
        else:
            continue
        if name_words(text) & RANK_READ_WORDS:
            return True
    return False


def shards_by_rank(classdef: cst.ClassDef, ctx: ModelView, depth: int = 2) -> bool:
    """Whether a Dataset class (its methods, those of its module bases, and the
    module functions they call) reads the rank or the world size anywhere: a
    stream that can split itself across ranks. `get_worker_info()` alone does not."""
    flow = ctx.flow
    for cls in (classdef, *flow.bases(classdef)):
        for method in flow.methods_of(cls).values():
            if reads_rank(method) or (depth and _helpers_read_rank(method, ctx, depth)):
                return True
    return False


def _helpers_read_rank(function: cst.FunctionDef, ctx: ModelView, depth: int) -> bool:
    for call in (n for n in descendants(function.body, into_functions=False) if isinstance(n, cst.Call)):
        for target, _ in ctx.flow.call_targets(call, function):
            if target is not function and (reads_rank(target) or (depth > 1 and _helpers_read_rank(target, ctx, depth - 1))):
                return True
    return False


def streaming_source(node: cst.CSTNode, ctx: ModelView) -> cst.Call | None:
    """The `load_dataset(..., streaming=True)` call a dataset expression (read
    where the walk is) streams from, through names, parameters, returns and
    `.map()`/`.shuffle()`...; None when a call on the way (`split_dataset_by_node`)
    is not one of those."""
    owners: dict[int, cst.FunctionDef] | None = None
    todo, seen = [(node, ctx.enclosing_function())], set()
    while todo:
        current, function = todo.pop()
        if id(current) in seen or len(seen) > 64:
            continue
        seen.add(id(current))
        for origin in ctx.flow.origins(current, function) if isinstance(current, (cst.Name, cst.Attribute)) else (current,):
            if not isinstance(origin, cst.Call):
                continue
            if ctx.qualified_names(origin.func) & HF_LOAD_DATASET:
                streaming = next((a.value for a in origin.args if a.keyword and a.keyword.value == "streaming"), None)
                if isinstance(streaming, cst.Name) and streaming.value == "True":
                    return origin
            elif isinstance(origin.func, cst.Attribute) and origin.func.attr.value in HF_DATASET_METHODS:
                if owners is None:
                    owners = _owners(ctx.module)
                todo.append((origin.func.value, owners.get(id(origin))))
    return None


def is_stream(dataset: cst.CSTNode, ctx: ModelView) -> bool:
    """Whether a dataset expression (read where the walk is) holds an
    IterableDataset: an instance of an iterable Dataset class of the module, a
    streaming Hugging Face dataset, or what `split_dataset_by_node`,
    `wds.WebDataset`, `StreamingDataset` return. A DataLoader takes no sampler
    for one (DDP030 asks whether it splits itself by rank)."""
    for origin in (dataset, *ctx.origins(dataset)):
        classdef = class_of_instance(origin, ctx)
        if classdef is not None and ctx.data.kind(classdef) == "iterable":
            return True
        if isinstance(origin, cst.Call) and last_name(origin.func) in STREAM_FACTORIES:
            return True
    return streaming_source(dataset, ctx) is not None


def _owners(module: cst.Module) -> dict[int, cst.FunctionDef]:
    """id(node) -> the innermost function it is written in."""
    owners: dict[int, cst.FunctionDef] = {}
    for function in (n for n in descendants(module) if isinstance(n, cst.FunctionDef)):
        for node in descendants(function.body, into_functions=False):
            owners[id(node)] = function
    return owners


def unsharded_stream(dataset: cst.CSTNode, ctx: ModelView) -> str | None:
    """What a DataLoader's dataset (read where the walk is, after it) streams
    without ever splitting by rank, as messages show it: an iterable Dataset
    class of the module that never reads the rank (`shards_by_rank`) and is
    not built from rank-dependent arguments (`Stream(files[rank::world])`),
    or a streaming Hugging Face dataset; None otherwise, and None in modules
    that split a stream some way the data flow does not follow
    (`split_dataset_by_node`, webdataset's `split_by_node`, `.shard(...)`)."""
    if any(text in ctx.source for text in _SPLIT_TEXT):
        return None
    for origin in (dataset, *ctx.origins(dataset)):
        classdef = class_of_instance(origin, ctx)
        if classdef is not None and ctx.data.kind(classdef) == "iterable":
            if shards_by_rank(classdef, ctx) or _rank_arguments(origin, ctx):
                return None
            return f"`{classdef.name.value}`, an IterableDataset that never reads the rank or the world size"
    source = streaming_source(dataset, ctx)
    if source is not None:
        return f"`{ctx.module.code_for_node(source.func)}(..., streaming=True)`, a stream never split by node"
    return None


#: Text that shows a stream split by node some way the data flow does not follow.
_SPLIT_TEXT = ("split_dataset_by_node", "split_by_node", ".shard(")


def _rank_arguments(origin: cst.CSTNode, ctx: ModelView) -> bool:
    """`Stream(files[rank::world_size])`: the constructor gets this rank's part."""
    calls = [v for v in (origin, *ctx.values_of(origin)) if isinstance(v, cst.Call)]
    return any(ctx.rank.expression_is_rank_dependent(a.value) for call in calls for a in call.args)


def loader_names(stack: list[cst.CSTNode], dataset: cst.CSTNode | None) -> str:
    """The names a DataLoader call is known by, to tell a training loader from
    an evaluation one: what it is assigned to (`val_loader = DataLoader(...)`)
    and its dataset's name."""
    names = [dotted_name(dataset)] if dataset is not None else []
    for node in reversed(stack):
        if isinstance(node, cst.Assign):
            names += [dotted_name(t.target) for t in node.targets]
            break
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            break
    return " ".join(filter(None, names))

# ---------------------------------------------------------------- loaders, their iterations and set_epoch

#: `DistributedSampler.__init__`'s positional parameters.
SAMPLER_POSITIONAL = ("dataset", "num_replicas", "rank", "shuffle", "seed", "drop_last")
#: ColossalAI's `Plugin.prepare_dataloader` positional parameters (shuffle defaults to False).
PLUGIN_LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle")


@dataclass(frozen=True, eq=False)
class LoaderIteration:
    """Somewhere a loader is iterated: the `for` loops around that place
    (innermost first, within its function), the function, and what is
    iterated there (`train_loader` of `enumerate(train_loader)`; None where
    the loop calls a helper that iterates the loader it is given)."""

    loops: tuple[cst.For, ...]
    function: cst.FunctionDef | None
    expr: cst.BaseExpression | None = None


@dataclass(frozen=True, eq=False)
class _Iteration:
    keys: frozenset
    params: frozenset[str]
    where: LoaderIteration


@dataclass(frozen=True, eq=False)
class _HelperCall:
    """A call of a module function or method, with what each parameter it
    binds refers to: (loader/sampler keys, names mentioned) per parameter name."""

    bound: tuple[tuple[cst.FunctionDef, bool, dict[str, tuple[frozenset, frozenset[str]]]], ...]
    loops: tuple[cst.For, ...]
    function: cst.FunctionDef | None


@dataclass(frozen=True, eq=False)
class _SetEpoch:
    keys: frozenset
    params: frozenset[str]
    mentions: frozenset[str]
    loops: tuple[cst.For, ...]
    function: cst.FunctionDef | None


class LoaderUses:
    """Walker part of `DataAnalysis` (`ctx.data.loaders`): which DataLoaders
    the module builds over a shuffling `DistributedSampler`, where each is
    iterated (directly, through `iter`/`enumerate`/`zip`/`tqdm`, a `with
    tqdm(loader) as bar:` name, or in a helper of the module given it), and
    where `set_epoch` is called on it or its sampler (also in helpers given
    the loader, the sampler or the epoch). Loaders are followed through
    names, parameters, `self.` attributes and the returns of builder
    functions (`return train_loader, val_loader`). Answers are final after the walk."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        self._samplers: dict[int, cst.Call] = {}
        self._loaders: dict[int, tuple[cst.Call, cst.Call]] = {}
        self._builders: dict[cst.FunctionDef, set] = {}
        self._iterations: list[_Iteration] = []
        self._calls: list[_HelperCall] = []
        self._set_epochs: list[_SetEpoch] = []
        self._prepared: set = set()

    # ------------------------------------------------------------ answers

    def shuffling_loaders(self) -> list[tuple[cst.Call, cst.Call]]:
        """(DataLoader call, its shuffling DistributedSampler call) for each
        loader not handed to `.prepare(...)` (accelerate sets the epoch
        itself); a plugin's `prepare_dataloader(..., shuffle=True)` is its
        own sampler."""
        return [
            (loader, sampler)
            for loader, sampler in self._loaders.values()
            if id(sampler) in self._samplers and ("loader", loader) not in self._prepared
        ]

    def iterations(self, loader: cst.Call) -> list[LoaderIteration]:
        """Each place `loader` (a DataLoader call) is iterated, in walk order;
        a helper's iteration of a parameter given the loader counts at the call."""
        keys = self._aliases(loader)
        found = [it.where for it in self._iterations if it.keys & keys]
        for call in self._calls:
            for target, _, arguments in call.bound:
                for name, (arg_keys, _) in arguments.items():
                    if arg_keys & keys and any(
                        name in it.params and it.where.function is target for it in self._iterations
                    ):
                        found.append(LoaderIteration(call.loops, call.function))
        return found

    def sets_epoch(self, iteration: LoaderIteration, loader: cst.Call, sampler: cst.Call) -> bool:
        """Whether some loop around `iteration` calls `set_epoch(<its variable>)`
        on the loader or its sampler, itself or in a helper it calls."""
        loops, function = iteration.loops, iteration.function
        targets = frozenset(n for loop in loops for n in names_in(loop.target))
        refers = self._aliases(loader) | {("sampler", sampler)}
        for record in self._set_epochs:
            if record.function is function and record.keys & refers and record.mentions & targets:
                if any(loop in record.loops for loop in loops):
                    return True
        for call in self._calls:
            if call.function is not function or not any(loop in call.loops for loop in loops):
                continue
            if self._helper_sets_epoch(call, refers, targets):
                return True
        return False

    def sampler_name(self, sampler: cst.Call, loader: cst.Call, iteration: LoaderIteration) -> str:
        """The sampler as the iteration's function can name it: the variable or
        `self.` attribute it was assigned to, else `<loader>.sampler`."""
        module, function, iterated = self.ctx.module, iteration.function, iteration.expr
        named = iterated is not None and dotted_name(iterated) is not None
        if sampler is loader:  # a plugin's `prepare_dataloader(...)`: its sampler is the loader's
            return f"{module.code_for_node(iterated)}.sampler" if named else "sampler"
        for node in descendants(function if function is not None else module, into_functions=False):
            if isinstance(node, cst.Assign) and node.value is sampler and len(node.targets) == 1:
                return module.code_for_node(node.targets[0].target)
        for node in descendants(module):
            if isinstance(node, cst.Assign) and node.value is sampler and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Attribute) and dotted_name(target.value) == "self" and function is not None:
                    params = parameter_names(function)
                    if params and params[0] == "self":
                        return module.code_for_node(target)  # `self.train_sampler`, set in `__init__`
        if named and passes_sampler(loader):
            return f"{module.code_for_node(iterated)}.sampler"
        return "sampler"

    # ------------------------------------------------------------ collection

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if is_distributed_sampler(node, ctx):
            shuffle = bind_arguments(node, SAMPLER_POSITIONAL).value("shuffle")
            if shuffle is None or truthiness(shuffle, ctx) is not False:
                self._samplers[id(node)] = node
        elif self._plugin_loader(node):
            self._samplers[id(node)] = node  # the plugin's loader holds a DistributedSampler of its own
            self._loaders[id(node)] = (node, node)
        elif is_dataloader(node, ctx):
            sampler = self._loader_sampler(node)
            if sampler is not None:
                self._loaders[id(node)] = (node, sampler)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_epoch":
            keys, params = self._receiver(node.func.value)
            mentions = frozenset(n for a in node.args for n in names_in(a.value))
            self._set_epochs.append(_SetEpoch(keys, params, mentions, self._loops(), ctx.enclosing_function()))
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "prepare":
            for arg in node.args:
                self._prepared |= self._keys(arg.value)
        if ctx.qualified_names(node.func) & {"builtins.iter"} and node.args:
            self._record_iteration(node.args[0].value)
        self._record_helper_call(node)

    def visit_For(self, node: cst.For) -> None:
        for expr in self._iterated(node.iter):
            self._record_iteration(expr)
            # `with tqdm(loader) as pbar: for batch in pbar:` iterates the loader.
            for value in self.ctx.values_of(expr) if isinstance(expr, cst.Name) else ():
                if isinstance(value, cst.Call):
                    for inner in self._iterated(value):
                        if inner is not value:
                            self._record_iteration(inner)

    def visit_Return(self, node: cst.Return) -> None:
        function = self.ctx.enclosing_function()
        if function is not None and node.value is not None:
            # `return train_loader, val_loader`: the builder stands for either (unpacked by the caller).
            parts = [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value]
            for part in parts:
                self._builders.setdefault(function, set()).update(self._keys(part))

    def _iterated(self, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The expressions a `for` iterates: `loader` in `enumerate(tqdm(loader))`, `zip(a, b)`."""
        if isinstance(expr, cst.Call):
            names = self.ctx.qualified_names(expr.func)
            if names & ITERATING_CALLS or (last_name(expr.func) or "") in ITERATING_WRAPPERS:
                return [e for a in expr.args if a.keyword is None for e in self._iterated(a.value)]
            return []
        return [expr]

    def _record_iteration(self, expr: cst.BaseExpression) -> None:
        keys, params = self._keys(expr), self._params_in(expr)
        if keys or params:
            where = LoaderIteration(self._loops(), self.ctx.enclosing_function(), expr)
            self._iterations.append(_Iteration(frozenset(keys), params, where))

    def _record_helper_call(self, node: cst.Call) -> None:
        function = self.ctx.enclosing_function()
        targets = self.ctx.flow.call_targets(node, function)
        if not targets:
            return
        described: dict[int, tuple[frozenset, frozenset[str]]] = {}
        bound = []
        for target, skip_self in targets:
            arguments = {}
            for name, arg in bind_to_function(node, target, skip_self).explicit.items():
                if id(arg) not in described:
                    described[id(arg)] = (
                        frozenset(self._keys(arg.value)) | self._sampler_keys(arg.value), names_in(arg.value)
                    )
                arguments[name] = described[id(arg)]
            bound.append((target, skip_self, arguments))
        self._calls.append(_HelperCall(tuple(bound), self._loops(), function))

    def _loader_sampler(self, node: cst.Call) -> cst.Call | None:
        args = loader_arguments(node, self.ctx)
        candidates = [args.value("sampler")]
        batch_sampler = args.value("batch_sampler")
        if batch_sampler is not None and not isinstance(batch_sampler, cst.Call):
            batch_sampler = next((v for v in self.ctx.origins(batch_sampler) if isinstance(v, cst.Call)), None)
        if isinstance(batch_sampler, cst.Call) and self.ctx.qualified_names(batch_sampler.func) & BATCH_SAMPLERS:
            inner = bind_arguments(batch_sampler, ("sampler", "batch_size", "drop_last")).value("sampler")
            candidates.append(inner)
        for candidate in candidates:
            for key in self._sampler_keys(candidate):
                return key[1]
        return None

    def _plugin_loader(self, node: cst.Call) -> bool:
        """ColossalAI's `plugin.prepare_dataloader(dataset, batch_size, shuffle=True)`:
        a DataLoader over a shuffling DistributedSampler, built for the caller."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "prepare_dataloader"):
            return False
        shuffle = bind_arguments(node, PLUGIN_LOADER_POSITIONAL).value("shuffle")
        return shuffle is not None and truthiness(shuffle, self.ctx) is True and "colossalai" in self.ctx.source

    def _sampler_keys(self, expr: cst.BaseExpression | None) -> frozenset:
        """("sampler", call) for the DistributedSampler calls `expr` may be."""
        if expr is None:
            return frozenset()
        values = self.ctx.origins(expr)
        return frozenset(("sampler", v) for v in values if isinstance(v, cst.Call) and is_distributed_sampler(v, self.ctx))

    def _keys(self, expr: cst.BaseExpression) -> set:
        """What loaders `expr` may be: ("loader", DataLoader call) or ("builder", function)."""
        keys: set = set()
        direct = (expr,) if isinstance(expr, cst.Call) else self.ctx.values_of(expr)
        # the values followed through parameters, attributes and returns too (`self.train_loader`)
        values = {id(v): v for v in (*direct, *self.ctx.origins(expr))}.values()
        for value in values:
            if not isinstance(value, cst.Call):
                continue
            if is_dataloader(value, self.ctx) or self._plugin_loader(value):
                keys.add(("loader", value))
            elif isinstance(value.func, cst.Name):
                keys.update(("builder", f) for f in self.ctx.values_of(value.func) if isinstance(f, cst.FunctionDef))
        return keys

    def _receiver(self, receiver: cst.BaseExpression) -> tuple[frozenset, frozenset[str]]:
        """What a `set_epoch` receiver is: the sampler itself, or a loader's sampler."""
        base = receiver
        keys = set(self._sampler_keys(base))  # `self.sampler` may be the sampler itself
        while isinstance(base, cst.Attribute) and base.attr.value in ("sampler", "batch_sampler"):
            base = base.value
        keys |= set(self._keys(base)) | set(self._sampler_keys(base))
        return frozenset(keys), self._params_in(base)

    def _params_in(self, expr: cst.BaseExpression) -> frozenset[str]:
        function = self.ctx.enclosing_function()
        if function is None or not isinstance(expr, cst.Name):
            return frozenset()
        return frozenset({expr.value} & set(parameter_names(function)))

    def _loops(self) -> tuple[cst.For, ...]:
        """The `for` loops whose body holds the node being visited, innermost first."""
        loops = []
        stack = self.ctx.stack
        for node, child in zip(reversed(stack[:-1]), reversed(stack[1:])):
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                break
            if isinstance(node, cst.For) and child is node.body:
                loops.append(node)
        return tuple(loops)

    def _aliases(self, loader: cst.Call) -> frozenset:
        """The keys that denote this loader: itself and the builders returning it."""
        edges = ((("builder", function), returned) for function, returned in self._builders.items())
        return frozenset(closure({("loader", loader)}, edges))

    def _helper_sets_epoch(self, call: _HelperCall, refers: frozenset, targets: frozenset[str]) -> bool:
        nothing = (frozenset(), frozenset())
        for target, skip_self, given in call.bound:
            params = frozenset(parameter_names(target)[1 if skip_self else 0 :])  # not `self`
            for record in self._set_epochs:
                if record.function is not target:
                    continue
                # the receiver is a parameter given the sampler, or resolves to it itself (`self.sampler`)
                receiver_ok = bool(record.keys & refers) or any(given.get(p, nothing)[0] & refers for p in record.params)
                # the epoch is a parameter given the loop variable, or state of the object (`self.epoch`)
                epoch_ok = any(given.get(p, nothing)[1] & targets for p in record.mentions) or bool(
                    record.mentions and not record.mentions & params
                )
                if receiver_ok and epoch_ok:
                    return True
        return False


def calls_set_epoch(node: cst.CSTNode) -> bool:
    """Whether code under `node` calls some `.set_epoch(...)`."""
    return any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "set_epoch"
        for n in descendants(node)
    )


def passes_sampler(loader: cst.Call) -> bool:
    """Whether a loader call passes `sampler=` by keyword."""
    return any(a.keyword is not None and a.keyword.value == "sampler" for a in loader.args)


def parameter_names(function: cst.FunctionDef) -> list[str]:
    """A function's parameter names, positional ones first (`*args`/`**kwargs` not included)."""
    params = function.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]



# ---------------------------------------------------------------- arguments DataLoader rejects


@dataclass(frozen=True)
class LoaderConflict:
    """Arguments of one DataLoader call that `DataLoader.__init__` rejects
    with `ValueError`. `option` says which check: "sampler" (a sampler
    together with a truthy `shuffle`), "batch_sampler" (with a `batch_size`
    other than 1, a truthy `shuffle` or `drop_last`, or a `sampler`), or
    "iterable" (an IterableDataset of the module, `dataset`, given a truthy
    `shuffle`, a `sampler` or a `batch_sampler`). `given` is the sampler or
    batch sampler argument (None for "iterable"), `conflicts` the (parameter,
    argument) pairs in conflict with it, and `when` the name of the variable
    the conflict needs to be not None (`sampler = DistributedSampler(ds) if
    distributed else None`), None when it always holds."""

    option: str
    given: cst.Arg | None
    conflicts: tuple[tuple[str, cst.Arg], ...]
    when: str | None = None
    dataset: cst.ClassDef | None = None


def loader_conflicts(call: cst.Call, ctx: ModelView) -> list[LoaderConflict]:
    """What `DataLoader.__init__` would reject in `call` (read where the walk
    is), matching arguments by keyword and position; only what is certain
    from the code: a truthy value must be always true, a sampler passed on
    some path."""
    if not is_dataloader(call, ctx):
        return []
    args = bind_arguments(call, LOADER_POSITIONAL)
    dataset = args.value("dataset")
    dataset_class = class_of_instance(dataset, ctx) if dataset is not None else None
    if dataset_class is not None and inherits_from(dataset_class, ITERABLE_DATASETS | DATAPIPES, ctx):
        shuffle = None if inherits_from(dataset_class, DATAPIPES, ctx) else _truthy(args, "shuffle", ctx)
        bad = [a for a in (shuffle, _given(args, "sampler", ctx), _given(args, "batch_sampler", ctx)) if a]
        return [LoaderConflict("iterable", None, _named(args, bad), dataset=dataset_class)] if bad else []
    found = []
    sampler, shuffle = _given(args, "sampler", ctx), _truthy(args, "shuffle", ctx)
    if sampler is not None and shuffle is not None and args.explicit.get("batch_sampler") is None:
        found.append(LoaderConflict("sampler", sampler, _named(args, [shuffle]), _none_on_some_path(sampler, ctx)))
    batch_sampler = _given(args, "batch_sampler", ctx)
    if batch_sampler is not None:
        conflicts = []
        batch_size = args.explicit.get("batch_size")
        if batch_size is not None and (
            is_none_literal(batch_size.value) or int_value(batch_size.value, ctx) not in (1, None)
        ):
            conflicts.append(batch_size)
        conflicts += filter(None, (_truthy(args, "shuffle", ctx), _given(args, "sampler", ctx)))
        conflicts += filter(None, (_truthy(args, "drop_last", ctx),))
        if conflicts:
            when = _none_on_some_path(batch_sampler, ctx)
            found.append(LoaderConflict("batch_sampler", batch_sampler, _named(args, conflicts), when))
    return found


def _given(args: BoundArguments, name: str, ctx: ModelView) -> cst.Arg | None:
    """The argument for `name` if some path certainly passes a non-None value."""
    arg = args.explicit.get(name)
    if arg is None or is_none_literal(arg.value) or not may_be_not_none(arg.value, ctx):
        return None
    return arg


def _truthy(args: BoundArguments, name: str, ctx: ModelView) -> cst.Arg | None:
    arg = args.explicit.get(name)
    return arg if arg is not None and truthiness(arg.value, ctx) is True else None


def _named(args: BoundArguments, found: list[cst.Arg]) -> tuple[tuple[str, cst.Arg], ...]:
    return tuple((next(name for name, a in args.explicit.items() if a is arg), arg) for arg in found)


def _none_on_some_path(arg: cst.Arg, ctx: ModelView) -> str | None:
    """The variable passed as `arg` when it is None on some path (`x if c else None`)."""
    if isinstance(arg.value, cst.Name) and may_be_not_none(arg.value, ctx) and any(
        is_none_literal(v) or isinstance(v, cst.IfExp) for v in ctx.values_of(arg.value)
    ):
        return arg.value.value
    return None


# ---------------------------------------------------------------- training loaders without a sampler


def unsampled_training_loader(call: cst.Call, ctx: ModelView) -> str | None:
    """For a DataLoader call (read where the walk is) built for training that
    no sampler splits, its dataset as code shows it ("the dataset" when none
    is passed); None otherwise. Such a loader gets no `sampler` or
    `batch_sampler` (by keyword, by position or in a literal `**kwargs`;
    unresolved ones may pass one), iterates no stream (a DataLoader takes no
    sampler for one), is not built in a Lightning `*_dataloader` hook (the
    Trainer adds the sampler), and shuffles or is named like a training loader
    (`train_loader`, `train_dataset`) and not like an evaluation one only."""
    function = ctx.enclosing_function()
    if function is not None and function.name.value in LIGHTNING_LOADER_HOOKS and enclosing_class(ctx) is not None:
        return None
    args = loader_arguments(call, ctx)
    if args.passes("sampler") or args.passes("batch_sampler"):
        return None
    dataset = args.value("dataset")
    if dataset is not None and is_stream(dataset, ctx):
        return None
    names = " ".join(filter(None, (_assigned_to(ctx.stack), _name_of(dataset)))).lower()
    train = any(part in names for part in TRAINING_NAME_PARTS)
    shuffle = args.value("shuffle")
    if not (train or (shuffle is not None and truthiness(shuffle, ctx) is True)):
        return None
    if not train and any(part in names for part in EVALUATION_NAME_PARTS):
        return None
    return ctx.module.code_for_node(dataset) if dataset is not None else "the dataset"


def _assigned_to(stack: list[cst.CSTNode]) -> str | None:
    """The names the innermost statement of `stack` assigns to, if it is an assignment."""
    for node in reversed(stack):
        if isinstance(node, cst.Assign):
            return " ".join(filter(None, (_name_of(t.target) for t in node.targets)))
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return None
    return None


def _name_of(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.Subscript):
        return cst.Module([]).code_for_node(node)
    return dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
