"""DDP021 rank-zero-write-without-barrier."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.analysis.calls import literal_arguments, switched_off
from ddplint.analysis.collectives import (
    COLLECTIVE_FUNCTIONS,
    UNAMBIGUOUS_METHODS,
    collective_name,
    in_lazy_initialization,
    on_subgroup,
    performing_functions,
    wrapper_of,
)
from ddplint.analysis.execution import Runs
from ddplint.analysis.file_io import READ_METHODS, READS, WRITE_METHODS, WRITES, opens
from ddplint.analysis.names import last_name
from ddplint.analysis.rank import GuardKind, Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

BARRIERS = frozenset({"barrier", "monitored_barrier", *UNAMBIGUOUS_METHODS})
#: Helpers that wait for every rank, by name (detectron2's `comm.synchronize`).
BARRIER_HELPERS = frozenset({"synchronize", "sync", "barrier_all", "wait_all"})
#: Set-up calls that synchronise every rank (they broadcast or all-gather inside).
SYNCING_SETUP = frozenset({"prepare", "initialize", "init_process_group"})
_ONE_PROCESS = (Runs.ONE, Runs.PER_NODE)


@dataclass(frozen=True)
class _Event:
    kind: str  # "write", "read", "barrier", "call" (of a module function: a barrier if it performs a collective)
    path: str | None
    site: Site
    shown: str = ""
    #: What a path that is a plain name was bound to there (ids): a name bound again is another path.
    binding: tuple[int, ...] = ()
    #: For a call: the module functions it may run, and the method name of a `self.<name>()` call.
    targets: tuple[cst.FunctionDef, ...] = ()
    method: str | None = None
    #: A collective inside `if _GROUP is None:` runs once, not on every call of its function.
    lazy: bool = False


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

    Lightning's `setup()` and `*_dataloader()` hooks of a
    `LightningModule`/`LightningDataModule` count as run by every process.

    Not flagged: a `dist.barrier()`, `accelerator.wait_for_everyone()` or
    any other collective every rank reaches between the write and the read
    (`accelerator.prepare(...)` and wrapping a model in DDP broadcast, so
    they synchronise too; so does a `broadcast_object_list` or an
    `all_reduce` after the write), a call of a helper that performs one on
    every call (detectron2's `comm.synchronize()`, a module's own
    `wait_all_ranks()`, or, in a project, a helper of another module), the
    zero-first pair written out (`if rank != 0: dist.barrier()` before,
    `if rank == 0: ...write...; dist.barrier()`), a read inside
    `with accelerator.main_process_first():`, and reads of other paths (the
    path expressions are compared as written; a plain name bound again
    between the write and the read is another path).

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
            self.events.append(_Event("barrier", None, ctx.rank.site(node), lazy=in_lazy_initialization(ctx.stack)))
            return
        write = self._path(node, names, method, WRITES, WRITE_METHODS)
        if write is None and opens(node, names, writing=True):
            write = self._argument(node, 0)
        if write is not None:
            self.events.append(self._path_event("write", write, node))
            return
        read = self._path(node, names, method, READS, READ_METHODS)
        if read is None and opens(node, names, writing=False):
            read = self._argument(node, 0)
        if read is not None:
            self.events.append(self._path_event("read", read, node))
            return
        func = node.func
        if isinstance(func, cst.Name):
            targets = tuple(v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef))
            if targets:
                self.events.append(_Event("call", None, ctx.rank.site(node), targets=targets))
        elif isinstance(func, cst.Attribute) and last_name(func.value) in ("self", "cls"):
            self.events.append(_Event("call", None, ctx.rank.site(node), method=func.attr.value))

    def _path_event(self, kind: str, path: cst.BaseExpression, node: cst.Call) -> _Event:
        """A write or read of `path`; a plain name keeps what it is bound to
        there, so `path = args.resume` between them makes another path."""
        ctx = self.ctx
        binding = tuple(id(v) for v in ctx.values_of(path)) if isinstance(path, cst.Name) else ()
        shown = ctx.module.code_for_node(path)
        return _Event(kind, shown, ctx.rank.site(node), ctx.module.code_for_node(node.func), binding)

    def _synchronises(self, node: cst.Call) -> bool:
        """A barrier, any other collective, or a set-up call that is one
        (`accelerator.prepare`, `DDP(model)`, `deepspeed.initialize`), or a
        helper named for one (detectron2's `comm.synchronize()`; not
        `torch.cuda.synchronize()`, which waits for the GPU only)."""
        name = last_name(node.func)
        if name in BARRIERS | SYNCING_SETUP:
            return True
        ctx = self.ctx
        if ctx.facts:  # a helper of another module of the project that performs a collective
            fact = ctx.facts.first(ctx.imported_callees(node.func))
            if fact is not None and fact.collective:
                return not switched_off(fact.switch, literal_arguments(node))
        if name in BARRIER_HELPERS:
            return not self.ctx.qualified_names(node.func) & {"torch.cuda.synchronize"}
        if name in COLLECTIVE_FUNCTIONS and on_subgroup(node) and _distributed(self.ctx.qualified_names(node.func)):
            return True  # a group's collective orders its members (Megatron's data-parallel all_reduce "barrier")
        return collective_name(node, self.ctx) is not None or wrapper_of(node, self.ctx) is not None

    def _path(
        self, node: cst.Call, names: frozenset, method: str | None, calls: dict, methods: dict
    ) -> cst.BaseExpression | None:
        for name in names:
            if name in calls:
                return self._argument(node, calls[name])
        if method is not None and method in methods and not names & set(calls):
            return self._argument(node, methods[method])
        return None

    def _argument(self, node: cst.Call, index: int) -> cst.BaseExpression | None:
        """The path expression: a positional argument, `-1` the object read
        (`json.load(open(p))`), `-2` the receiver (`Path(p).write_text(...)`)."""
        if index == -2:
            return node.func.value if isinstance(node.func, cst.Attribute) else None  # type: ignore[union-attr]
        positional = [a.value for a in node.args if a.keyword is None]
        if index == -1:
            inner = positional[0] if positional else None
            if isinstance(inner, cst.Call) and positional:
                inner_positional = [a.value for a in inner.args if a.keyword is None]
                return inner_positional[0] if inner_positional else None
            return None
        if index < len(positional):
            return positional[index]
        return None

    def finish(self) -> None:
        rank = self.ctx.rank
        performing = self._performing_functions()
        for index, read in enumerate(self.events):
            if read.kind != "read" or not rank.runs(read.site).many or _staggered(read.site, rank):
                continue
            for earlier in reversed(self.events[:index]):
                if earlier.site.function is not read.site.function:
                    continue
                if earlier.kind == "barrier" or (earlier.kind == "call" and self._performs(earlier, performing)):
                    break  # a barrier between: every rank waits (one on some ranks only is DDP001's hang)
                if earlier.kind == "write" and _same_path(earlier, read) and rank.runs(earlier.site) in _ONE_PROCESS:
                    self.report(
                        read.site.node,
                        f"`{read.path}` is written by one rank ({earlier.shown}, above) and read here by every "
                        "rank with no barrier between: the others can read it before it exists or while it is "
                        "half-written; add `dist.barrier()` (or `accelerator.wait_for_everyone()`) after the write",
                        related=((earlier.site.node, "the write that one rank makes"),),
                        statement=read.site.statement,
                    )
                    break

    def _performing_functions(self) -> set[cst.FunctionDef]:
        """The module's functions that perform a collective on every call
        (`wait_all_ranks()` calling `dist.barrier()`), through the call graph."""
        rank = self.ctx.rank
        direct = {
            e.site.function for e in self.events
            if e.kind == "barrier" and e.site.function is not None and not e.lazy and not rank.selects_ranks(e.site.guards)
        }  # fmt: skip
        calls = [(r.function, rank.targets_of(r)) for r in rank.references if not r.launch and not rank.selects_ranks(r.guards)]
        return performing_functions(direct, calls)

    def _performs(self, call: _Event, performing: set[cst.FunctionDef]) -> bool:
        targets = call.targets or tuple(self.ctx.rank.functions.get(call.method or "", ()))
        return any(t in performing for t in targets)


def _same_path(write: _Event, read: _Event) -> bool:
    """The same text, and for a plain name the same binding where both can tell."""
    if write.path != read.path:
        return False
    return not (write.binding and read.binding) or bool(set(write.binding) & set(read.binding))


def _staggered(site: Site, rank) -> bool:
    return any(g.kind is GuardKind.STAGGERED and rank.is_rank_dependent(g.deps) for g in site.guards)


def _distributed(names: frozenset) -> bool:
    """A function of `torch.distributed` (or DeepSpeed's `deepspeed.comm`)."""
    return any(n and n.startswith(("torch.distributed.", "deepspeed.comm.")) for n in names)
