"""What a call writes, reads or downloads, and whose file it is.

Asked by the rules on files every rank writes (DDP006), one rank's writes
that the others read (DDP021) and downloads (DDP022), and by the
whole-project facts that decide them: the file a call writes (`file_write`,
`destination`) and whether it is this process's own (`own_file`), the path
it writes or reads as written (`path_written`, `path_read`), the download it
starts (`download`). The vocabulary is ddplint/knowledge's "writes and downloads".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.analysis.calls import bind_to_function
from ddplint.knowledge import (
    CHECKPOINTER_SAVES, CHECKPOINTERS, DATASET_PACKAGES, DESTINATION_METHODS, DESTINATIONS, DOWNLOAD_NAMES,
    DOWNLOAD_TOOLS, DOWNLOADS, FILE_LOCKS, FILE_WRITE_FUNCTIONS, FILE_WRITE_METHODS, IN_MEMORY_STREAMS, NULL_DEVICES,
    OPEN_FUNCTIONS, PATH_BUILDER_METHODS, PATH_BUILDERS, PERIODIC_CHECKPOINTERS, PERIODIC_SAVES, READ_METHODS, READS,
    SHELL_CALLS, TEMPORARY_PATHS, WRITE_METHODS, WRITE_MODES, WRITES,
)  # fmt: skip
from ddplint.analysis.classes import base_names
from ddplint.analysis.names import last_name
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_MAX_DEPTH = 10
#: Words one of which a module must contain to write a file (`file_write`), for the prefilter.
FILE_WRITE_TOKENS = tuple(sorted({
    n.rsplit(".", 1)[-1]
    for n in (*FILE_WRITE_FUNCTIONS, *FILE_WRITE_METHODS, *OPEN_FUNCTIONS, *PERIODIC_CHECKPOINTERS, *CHECKPOINTER_SAVES)
}))  # fmt: skip


def file_write(node: cst.Call, ctx: ModelView) -> str | None:
    """The file write `node` makes, as a finding shows it (`` `torch.save()` ``,
    `` `open(..., "w")` ``), else None: a writing function or method of the
    catalogue, `open` with a literal writing mode, or a checkpointer's save
    that writes on every process (`checkpointer_writes`)."""
    names = ctx.qualified_names(node.func)
    code = ctx.module.code_for_node
    if names & FILE_WRITE_FUNCTIONS:
        return f"`{code(node.func)}()`"
    mode = bind_argument(node, 1, "mode") if names & OPEN_FUNCTIONS else None
    if isinstance(mode, cst.SimpleString) and WRITE_MODES & set(mode.evaluated_value):
        return f"`{code(node.func)}(..., {code(mode)})`"
    method = last_name(node.func) if isinstance(node.func, cst.Attribute) else None
    if method in FILE_WRITE_METHODS or checkpointer_writes(node, ctx):
        return f"`{code(node.func)}()`"
    return None


def own_file(node: cst.Call, ctx: ModelView) -> bool:
    """Whether the file a write call writes is this process's own (after the
    walk, with the rank analysis): its arguments or receiver depend on the
    rank (``f"ckpt_rank{rank}.pt"``, ``Path(out, f"{rank}.json").write_text(...)``),
    or its destination is an in-memory stream or a per-process temporary path."""
    values = [a.value for a in node.args]
    if isinstance(node.func, cst.Attribute):
        values.append(node.func.value)
    if ctx.rank.is_rank_dependent(ctx.rank.deps_of_all(values)):
        return True
    target = destination(node, ctx.qualified_names(node.func))
    return target is not None and (in_memory(target, ctx) or per_process_path(target, ctx))


def opens(node: cst.Call, names: frozenset, writing: bool) -> bool:
    """Whether `node` is the builtin `open` for writing (or, `writing` False, for reading)."""
    if "builtins.open" not in names or not node.args:
        return False
    mode = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "mode"), None)
    positional = [a.value for a in node.args if a.keyword is None]
    if mode is None and len(positional) > 1:
        mode = positional[1]
    text = mode.evaluated_value if isinstance(mode, cst.SimpleString) else ("r" if mode is None else None)
    if text is None:
        return False
    writes = any(c in text for c in "wax")
    return writes if writing else not writes


def writes_a_path(node: cst.Call, ctx: ModelView) -> bool:
    """Whether the call writes or prepares a path (any entry of the catalogue)."""
    names = ctx.qualified_names(node.func)
    if names & set(WRITES) or opens(node, names, writing=True):
        return True
    return isinstance(node.func, cst.Attribute) and last_name(node.func) in WRITE_METHODS


def destination(node: cst.Call, names: frozenset) -> cst.BaseExpression | None:
    """The file, path or stream a write call (`DESTINATIONS`) writes into."""
    where = next((DESTINATIONS[n] for n in names if n in DESTINATIONS), None)
    if where is None and isinstance(node.func, cst.Attribute):
        where = DESTINATION_METHODS.get(node.func.attr.value)
    if where is None:
        return None
    position, keyword = where
    if position == -2:
        return node.func.value if isinstance(node.func, cst.Attribute) else None
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in node.args if a.keyword is None and not a.star]
    return positional[position].value if position < len(positional) else None


def in_memory(node: cst.BaseExpression, ctx: ModelView) -> bool:
    """Whether every value `node` may hold is an in-memory stream
    (``buffer = io.BytesIO()``, ``self.buf = io.StringIO()``): a write into
    it writes no file."""
    origins = ctx.origins(node)
    return bool(origins) and all(
        (isinstance(o, cst.Call) and bool(ctx.qualified_names(o.func) & IN_MEMORY_STREAMS))
        or (isinstance(o, (cst.Name, cst.Attribute)) and bool(ctx.qualified_names(o) & NULL_DEVICES))
        for o in origins
    )


def under_file_lock(ctx: ModelView) -> bool:
    """Whether the node being visited is inside ``with FileLock(path):``
    (the `filelock` package): processes take turns, on purpose."""
    for ancestor in ctx.stack:
        if isinstance(ancestor, cst.With):
            for item in ancestor.items:
                value = item.item
                if isinstance(value, cst.Call) and ctx.qualified_names(value.func) & FILE_LOCKS:
                    return True
    return False


def per_process_path(node: cst.BaseExpression, ctx: ModelView) -> bool:
    """Whether the path `node` is under a temporary file or directory the
    process created for itself (``tempfile.mkdtemp()``, ``with
    TemporaryDirectory() as tmp``, ``NamedTemporaryFile().name``), directly,
    through the names it is built from or through a parameter every caller
    in the module passes such a path: each process writes its own file."""
    return _per_process(node, ctx, ctx.enclosing_function(), True, 0)


def _per_process(node: cst.CSTNode, ctx: ModelView, function: cst.FunctionDef | None, here: bool, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    depth += 1

    def part(child: cst.CSTNode) -> bool:
        return _per_process(child, ctx, function, here, depth)

    if isinstance(node, cst.Name):
        if here:
            values = [(v, function) for v in ctx.values_of(node)]
        else:
            values = ctx.flow.name_values(node.value, function)
        return bool(values) and all(_per_process(v, ctx, f, here and f is function, depth) for v, f in values)
    if isinstance(node, cst.Param):
        return _per_process_parameter(node, ctx, depth)
    if isinstance(node, cst.Call):
        names = ctx.qualified_names(node.func)
        if names & TEMPORARY_PATHS:
            return True
        if names & PATH_BUILDERS:
            return any(part(a.value) for a in node.args)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in PATH_BUILDER_METHODS:
            return part(node.func.value) or any(part(a.value) for a in node.args)
        return False
    if isinstance(node, cst.Attribute):  # `tmp.name` of a `NamedTemporaryFile`/`TemporaryDirectory`
        return node.attr.value == "name" and part(node.value)
    if isinstance(node, cst.Subscript):  # `tempfile.mkstemp()[1]`
        return part(node.value)
    if isinstance(node, cst.BinaryOperation):  # `Path(tmp) / name`, `tmp + "/x"`, `"%s/x" % tmp`
        return part(node.left) or part(node.right)
    if isinstance(node, cst.FormattedString):
        return any(part(p.expression) for p in node.parts if isinstance(p, cst.FormattedStringExpression))
    return False


def _per_process_parameter(param: cst.Param, ctx: ModelView, depth: int) -> bool:
    """Every call of the parameter's function in the module passes a per-process path."""
    flow = ctx.flow
    function = flow.param_owner.get(param)
    sites = flow.callers(function) if function is not None else None
    if not sites:
        return False
    for call, caller, skip in sites:
        value = bind_to_function(call, function, skip).value(param.name.value)
        if value is None or not _per_process(value, ctx, caller, False, depth):
            return False
    return True


def checkpointer_writes(call: cst.Call, ctx: ModelView) -> bool:
    """Whether `call` saves a checkpoint through a checkpointer that writes on
    every process calling it (`knowledge.CHECKPOINTERS`): ``ckpt.save("model_final")``
    or ``periodic.step(it)``, the receiver built in sight (``ckpt = Checkpointer(model,
    out_dir)``, ``self.periodic = PeriodicCheckpointer(ckpt, period)``) with a
    `save_dir` and a `save_to_disk` that is true (its default, or the literal
    `True`). A flag of any other value (``save_to_disk=comm.is_main_process()``)
    may be the rank test: not such a write."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in PERIODIC_SAVES:
        return False
    return _writing_receiver(func.value, ctx, plain=func.attr.value in CHECKPOINTER_SAVES, periodic=True, depth=0)


def _writing_receiver(receiver: cst.BaseExpression, ctx: ModelView, plain: bool, periodic: bool, depth: int) -> bool:
    """Every value of `receiver` is a checkpointer that writes on every rank
    (`plain`) or a periodic wrapper of one (`periodic`)."""
    origins = ctx.origins(receiver)
    if not origins or depth > 2:
        return False
    for value in origins:
        if not isinstance(value, cst.Call):
            return False
        names = ctx.qualified_names(value.func)
        if periodic and names & PERIODIC_CHECKPOINTERS:
            inner = bind_argument(value, 0, "checkpointer")
            if inner is None or not _writing_receiver(inner, ctx, plain=True, periodic=False, depth=depth + 1):
                return False
            continue
        defaults = [CHECKPOINTERS[q] for q in names if q in CHECKPOINTERS] if plain else []
        if not defaults or not _saves_to_disk(value, defaults[0]):
            return False
    return True


def _saves_to_disk(build: cst.Call, default: bool) -> bool:
    """A checkpointer built with a directory and `save_to_disk` true."""
    directory = bind_argument(build, 1, "save_dir")
    if directory is None or (isinstance(directory, cst.SimpleString) and not directory.evaluated_value):
        return False  # no `save_dir`: `save` writes nothing
    flag = next((a.value for a in build.args if a.keyword is not None and a.keyword.value == "save_to_disk"), None)
    if flag is None:
        return default and not any(a.star == "**" for a in build.args)
    return isinstance(flag, cst.Name) and flag.value == "True"


def bind_argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument at `position` (no star before it) or named `keyword`."""
    for index, arg in enumerate(call.args):
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg.value
        elif arg.star:
            return None
        elif index == position:
            return arg.value
    return None


#: Words one of which a module must contain to read a path (`path_read`), for the prefilter.
READ_TOKENS = tuple(sorted({n.rsplit(".", 1)[-1] for n in (*READS, *READ_METHODS, "builtins.open")}))
#: Words one of which a module must contain to download (`download`), for the prefilter.
DOWNLOAD_TOKENS = tuple(sorted({n.rsplit(".", 1)[-1] for n in (*DOWNLOADS, *DOWNLOAD_NAMES, *DOWNLOAD_TOOLS, "download")}))


def path_written(node: cst.Call, ctx: ModelView) -> cst.BaseExpression | None:
    """The path a call writes or prepares (`WRITES`, `WRITE_METHODS`, `open(p, "w")`),
    as written; None for a call that writes none (or none it names)."""
    names = ctx.qualified_names(node.func)
    path = _path(node, names, WRITES, WRITE_METHODS)
    return _path_argument(node, 0) if path is None and opens(node, names, writing=True) else path


def path_read(node: cst.Call, ctx: ModelView) -> cst.BaseExpression | None:
    """The path a call reads (`READS`, `READ_METHODS`, `open(p)`), as written; else None."""
    names = ctx.qualified_names(node.func)
    path = _path(node, names, READS, READ_METHODS)
    return _path_argument(node, 0) if path is None and opens(node, names, writing=False) else path


def _path(node: cst.Call, names: frozenset, calls: dict, methods: dict) -> cst.BaseExpression | None:
    for name in names:
        if name in calls:
            return _path_argument(node, calls[name])
    method = last_name(node.func) if isinstance(node.func, cst.Attribute) else None
    if method is not None and method in methods and not names & set(calls):
        return _path_argument(node, methods[method])
    return None


def _path_argument(node: cst.Call, index: int) -> cst.BaseExpression | None:
    """The path expression: a positional argument, `-1` the object read
    (`json.load(open(p))`), `-2` the receiver (`Path(p).write_text(...)`)."""
    if index == -2:
        return node.func.value if isinstance(node.func, cst.Attribute) else None
    positional = [a.value for a in node.args if a.keyword is None]
    if index == -1:
        inner = positional[0] if positional else None
        if isinstance(inner, cst.Call):
            inner_positional = [a.value for a in inner.args if a.keyword is None]
            return inner_positional[0] if inner_positional else None
        return None
    return positional[index] if index < len(positional) else None


def download(node: cst.Call, ctx: ModelView) -> str | None:
    """The download `node` starts, as a finding shows it, else None: a
    dataset of `DATASET_PACKAGES` (or a module class derived from one) built
    with `download=True`, a catalogued download function, a helper named for
    one (`download_url as fetch`; not one the module defines itself: judged
    by what it calls), or `wget` run through `subprocess`/`os.system`."""
    names = ctx.qualified_names(node.func)
    shown = f"`{ctx.module.code_for_node(node.func)}(...)`"
    if _dataset(node, names, ctx) and _downloads(node):
        return f"{shown} with `download=True`"
    if names & DOWNLOADS or (_download_name(node, names) and not _defined_here(node, ctx)):
        return shown
    if names & SHELL_CALLS and _runs_download_tool(node):
        return f"{shown} running `wget`"
    return None


def _dataset(node: cst.Call, names: frozenset, ctx: ModelView) -> bool:
    """A dataset of the catalogued packages, or a module class derived from one
    (`class IndexedCIFAR10(datasets.CIFAR10)` runs the same `download()`)."""
    if any(n and n.startswith(DATASET_PACKAGES) for n in names):
        return True
    if not isinstance(node.func, cst.Name):
        return False
    classes = [v for v in ctx.values_of(node.func) if isinstance(v, cst.ClassDef)]
    return any(n.startswith(DATASET_PACKAGES) for c in classes for n in base_names(c, ctx))


def _download_name(call: cst.Call, names: frozenset) -> bool:
    """A helper named for a download, as written or as imported (`download_url as fetch`)."""
    return last_name(call.func) in DOWNLOAD_NAMES or any(n and n.rsplit(".", 1)[-1] in DOWNLOAD_NAMES for n in names)


def _runs_download_tool(call: cst.Call) -> bool:
    """`subprocess.run(["wget", url, ...])`, `os.system(f"wget {url} -P data")`."""
    if not call.args:
        return False
    command = call.args[0].value
    first: str | None = None
    if isinstance(command, (cst.List, cst.Tuple)) and command.elements:
        element = command.elements[0].value
        first = element.evaluated_value if isinstance(element, cst.SimpleString) else None
    elif isinstance(command, cst.SimpleString):
        first = command.evaluated_value.split(" ", 1)[0]
    elif isinstance(command, cst.FormattedString) and command.parts:
        part = command.parts[0]
        first = part.value.split(" ", 1)[0] if isinstance(part, cst.FormattedStringText) else None
    return isinstance(first, str) and first in DOWNLOAD_TOOLS


def _downloads(call: cst.Call) -> bool:
    return any(
        a.keyword is not None and a.keyword.value == "download" and isinstance(a.value, cst.Name) and a.value.value == "True"
        for a in call.args
    )


def _defined_here(call: cst.Call, ctx: ModelView) -> bool:
    """The module's own helper: judged by what it calls."""
    return isinstance(call.func, cst.Name) and any(isinstance(v, cst.FunctionDef) for v in ctx.values_of(call.func))
