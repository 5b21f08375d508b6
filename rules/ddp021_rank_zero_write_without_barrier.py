"""DDP021 rank-zero-write-without-barrier."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.analysis.collectives import UNAMBIGUOUS_METHODS, collective_name, wrapper_of
from ddplint.analysis.execution import Runs
from ddplint.analysis.names import last_name
from ddplint.analysis.rank import GuardKind, Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Writes by call -> index of the path argument (-1: the `root=`/first one).
WRITES = {
    "torch.save": 1, "numpy.save": 0, "numpy.savez": 0, "os.makedirs": 0, "os.mkdir": 0,
    "shutil.copy": 1, "shutil.copyfile": 1, "shutil.copytree": 1, "shutil.move": 1,
    "urllib.request.urlretrieve": 1,
}  # fmt: skip
WRITE_METHODS = {"save_pretrained": 0, "save_to_disk": 0, "to_csv": 0, "to_json": 0, "to_parquet": 0,
                 "extractall": 0, "write_text": -2, "write_bytes": -2}  # fmt: skip
READS = {"torch.load": 0, "numpy.load": 0, "os.listdir": 0, "glob.glob": 0, "datasets.load_from_disk": 0,
         "datasets.load_dataset": 0, "pandas.read_csv": 0, "json.load": -1}  # fmt: skip
READ_METHODS = {"from_pretrained": 0, "load_from_disk": 0, "read_text": -2, "read_bytes": -2}
BARRIERS = frozenset({"barrier", "monitored_barrier", *UNAMBIGUOUS_METHODS})
#: Helpers that wait for every rank, by name (detectron2's `comm.synchronize`).
BARRIER_HELPERS = frozenset({"synchronize", "sync", "barrier_all", "wait_all"})
#: Set-up calls that synchronise every rank (they broadcast or all-gather inside).
SYNCING_SETUP = frozenset({"prepare", "initialize", "init_process_group"})
_ONE_PROCESS = (Runs.ONE, Runs.PER_NODE)


@dataclass(frozen=True)
class _Event:
    kind: str  # "write", "read", "barrier"
    path: str | None
    site: Site
    shown: str = ""


class RankZeroWriteWithoutBarrier(Rule):
    """
    ## What it does

    Flags a read, on every rank, of a path that one rank (or one per node)
    has just written or prepared, with no barrier between them in the same
    function: rank 0 runs `torch.save(state, path)`, `os.makedirs(path)`,
    `tokenizer.save_pretrained(path)`, `dataset.save_to_disk(path)`, a
    download or an extraction under `if rank == 0:`, and then every rank
    calls `torch.load(path)`, `from_pretrained(path)`, `load_from_disk(path)`,
    `os.listdir(path)` or `open(path)`.

    Not flagged: a `dist.barrier()`, `accelerator.wait_for_everyone()` or
    any other collective every rank reaches between the write and the read
    (`accelerator.prepare(...)` and wrapping a model in DDP broadcast, so
    they synchronise too), a read inside
    `with accelerator.main_process_first():`, and reads of other paths (the
    path expressions are compared as written).

    ## Why is this bad?

    The other ranks do not wait for rank 0: they reach the read while the
    file is missing or half-written, and fail with `FileNotFoundError`,
    `EOFError`, `UnpicklingError` or a truncated tokenizer, or read the
    previous run's file. It works whenever rank 0 happens to be fast, which
    is why it surfaces on the first big run.

    ## Example

    ```python
    if dist.get_rank() == 0:
        tokenizer.save_pretrained(args.output_dir)
    tokenizer = AutoTokenizer.from_pretrained(args.output_dir)
    ```

    ## Use instead

    ```python
    if dist.get_rank() == 0:
        tokenizer.save_pretrained(args.output_dir)
    dist.barrier()
    tokenizer = AutoTokenizer.from_pretrained(args.output_dir)
    ```

    With accelerate: `with accelerator.main_process_first():` around the
    preparation.

    ## References

    - [accelerate: main_process_first](https://huggingface.co/docs/accelerate/package_reference/accelerator#accelerate.Accelerator.main_process_first)
    - [torch.distributed.barrier](https://pytorch.org/docs/stable/distributed.html#torch.distributed.barrier)
    """

    code = "DDP021"
    name = "rank-zero-write-without-barrier"
    severity = Severity.WARNING
    summary = "One rank writes a path that every rank then reads, with no barrier between."
    requires = frozenset({"rank"})
    distributed_only = True
    tokens = ("load", "from_pretrained", "load_from_disk", "listdir", "glob", "open", "read_text", "read_bytes",
              "read_csv", "load_dataset")  # fmt: skip
    tags = ("correctness", "race")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.events: list[_Event] = []

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        names = ctx.qualified_names(node.func)
        method = last_name(node.func) if isinstance(node.func, cst.Attribute) else None
        if self._synchronises(node):
            self.events.append(_Event("barrier", None, ctx.rank.site(node)))
            return
        write = self._path(node, names, method, WRITES, WRITE_METHODS)
        if write is None and _opens(node, names, writing=True):
            write = self._argument(node, 0)
        if write is not None:
            self.events.append(_Event("write", write, ctx.rank.site(node), ctx.module.code_for_node(node.func)))
            return
        read = self._path(node, names, method, READS, READ_METHODS)
        if read is None and _opens(node, names, writing=False):
            read = self._argument(node, 0)
        if read is not None:
            self.events.append(_Event("read", read, ctx.rank.site(node), ctx.module.code_for_node(node.func)))

    def _synchronises(self, node: cst.Call) -> bool:
        """A barrier, any other collective, or a set-up call that is one
        (`accelerator.prepare`, `DDP(model)`, `deepspeed.initialize`), or a
        helper named for one (detectron2's `comm.synchronize()`; not
        `torch.cuda.synchronize()`, which waits for the GPU only)."""
        name = last_name(node.func)
        if name in BARRIERS | SYNCING_SETUP:
            return True
        if name in BARRIER_HELPERS:
            return not self.ctx.qualified_names(node.func) & {"torch.cuda.synchronize"}
        return collective_name(node, self.ctx) is not None or wrapper_of(node, self.ctx) is not None

    def _path(self, node: cst.Call, names: frozenset, method: str | None, calls: dict, methods: dict) -> str | None:
        for name in names:
            if name in calls:
                return self._argument(node, calls[name])
        if method is not None and method in methods and not names & set(calls):
            return self._argument(node, methods[method])
        return None

    def _argument(self, node: cst.Call, index: int) -> str | None:
        """The path as written: a positional argument, `-1` the object read
        (`json.load(open(p))`), `-2` the receiver (`Path(p).write_text(...)`)."""
        code = self.ctx.module.code_for_node
        if index == -2:
            return code(node.func.value) if isinstance(node.func, cst.Attribute) else None  # type: ignore[union-attr]
        positional = [a.value for a in node.args if a.keyword is None]
        if index == -1:
            inner = positional[0] if positional else None
            if isinstance(inner, cst.Call) and positional:
                inner_positional = [a.value for a in inner.args if a.keyword is None]
                return code(inner_positional[0]) if inner_positional else None
            return None
        if index < len(positional):
            return code(positional[index])
        return None

    def finish(self) -> None:
        rank = self.ctx.rank
        for index, read in enumerate(self.events):
            if read.kind != "read" or not rank.runs(read.site).many or _staggered(read.site, rank):
                continue
            for earlier in reversed(self.events[:index]):
                if earlier.site.function is not read.site.function:
                    continue
                if earlier.kind == "barrier":
                    break  # a barrier between: every rank waits (one on some ranks only is DDP001's hang)
                if earlier.kind == "write" and earlier.path == read.path and rank.runs(earlier.site) in _ONE_PROCESS:
                    self.report(
                        read.site.node,
                        f"`{read.path}` is written by one rank ({earlier.shown}, above) and read here by every "
                        "rank with no barrier between: the others can read it before it exists or while it is "
                        "half-written; add `dist.barrier()` (or `accelerator.wait_for_everyone()`) after the write",
                        related=((earlier.site.node, "the write that one rank makes"),),
                        statement=read.site.statement,
                    )
                    break


def _opens(node: cst.Call, names: frozenset, writing: bool) -> bool:
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


def _staggered(site: Site, rank) -> bool:
    return any(g.kind is GuardKind.STAGGERED and rank.is_rank_dependent(g.deps) for g in site.guards)
