"""DDP021 rank-zero-write-without-barrier."""

from __future__ import annotations

from ddplint.analysis.execution import Runs
from ddplint.analysis.file_io import READ_TOKENS, path_read, path_written
from ddplint.analysis.rank import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


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
    requires = frozenset({"rank", "barriers"})
    distributed_only = True
    tokens = READ_TOKENS
    tags = ("correctness", "race")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        #: The writes checked so far (those by one rank or one per node pair with reads): (call, path as written, its binding, site).
        self.writes: list[tuple[cst.Call, str, set[int], Site]] = []

    def trigger_Call(self, node: cst.Call) -> bool:
        ctx = self.ctx
        return not ctx.barriers.waits_at(node) and (path_written(node, ctx) is not None or path_read(node, ctx) is not None)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx, rank = self.ctx, self.ctx.rank
        written = path_written(node, ctx)
        path = written if written is not None else path_read(node, ctx)
        # A plain name keeps what it is bound to here: `path = args.resume` between them makes another path.
        binding = {id(v) for v in ctx.values_of(path)} if isinstance(path, cst.Name) else set()
        shown = ctx.module.code_for_node(path)
        if written is not None:
            self.writes.append((node, shown, binding, site))
            return
        # Who runs a write or a read is asked only for a write and a read that pair up here (an
        # answer from other modules' facts then matters to no other call: no re-lint for it).
        for write, text, bound, where in reversed(self.writes):
            if (
                where.function is site.function and text == shown and (not (bound and binding) or bound & binding)
                and rank.runs(where) in (Runs.ONE, Runs.PER_NODE)
            ):
                if not rank.runs(site).many or rank.staggered(site.guards):
                    return
                if not ctx.barriers.waits(site.function, node, after=write):  # one on some ranks only is DDP001's hang
                    self.report(
                        node,
                        f"`{shown}` is written by one rank ({ctx.module.code_for_node(write.func)}, above) and read here "
                        "by every rank with no barrier between: the others can read it before it exists or while it is "
                        "half-written; add `dist.barrier()` (or `accelerator.wait_for_everyone()`) after the write",
                        related=((write, "the write that one rank makes"),),
                    )
                return
