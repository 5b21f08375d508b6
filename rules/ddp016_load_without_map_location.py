"""DDP016 load-without-map-location."""

from __future__ import annotations

from ddplint.knowledge import TORCH_LOADS
from ddplint.analysis.devices import WITHOUT_MAP_LOCATION, in_deviceless_branch, load_placement
from ddplint.analysis.rank import Site
from ddplint.analysis.rewrite import ProposedFix, with_keywords
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule


class LoadWithoutMapLocation(Rule):
    """
    ## What it does

    Flags `torch.load(path)` (a path or an open file) without
    `map_location` (or with `map_location=None`), or with
    `map_location="cuda:0"`, where more than one rank runs it: every rank,
    or every rank but one.

    Not flagged: a `map_location` naming the CPU, the rank's own device, a
    function, or `"cuda"` (the current device, the rank's own once
    `torch.cuda.set_device` ran; DDP010 reports modules that never set it);
    a path that differs per rank (each rank reads back what it wrote); loads under a rank-0 guard or in a one-process branch; the
    `if args.gpu is None:` branch of the ImageNet template, whose other
    branch loads with `map_location` built from `args.gpu` (no GPU per
    process there); code outside distributed training.

    **Preview** (`--preview`): on the training repositories many loads
    read files saved from CPU tensors, so most findings were not worth a
    warning there.

    ## Why is this bad?

    `torch.save` records each tensor's device. A checkpoint written by rank 0
    from its GPU holds `cuda:0` tensors, and `torch.load` without
    `map_location` puts them back there: every rank allocates the whole
    checkpoint on GPU 0 (and creates a CUDA context on it), so GPU 0 runs
    out of memory on resume while the rank's own GPU holds nothing yet.

    ## Example

    ```python
    checkpoint = torch.load(args.resume)
    model.load_state_dict(checkpoint["model"])
    ```

    ## Use instead

    ```python
    checkpoint = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    ```

    Or `map_location=f"cuda:{local_rank}"` to load straight to the rank's GPU.

    ## Fix safety

    With `--unsafe-fixes`, `map_location="cpu"` is added. Unsafe: tensors
    that code after the load used directly on the GPU now arrive on the
    CPU; `load_state_dict` copies them to the parameters' devices either
    way, but a tensor used as is must be moved.

    ## References

    - [torch.load: map_location](https://pytorch.org/docs/stable/generated/torch.load.html)
    """

    code = "DDP016"
    name = "load-without-map-location"
    severity = Severity.WARNING
    summary = "torch.load on every rank without map_location: all ranks load onto GPU 0."
    requires = frozenset({"rank"})
    distributed_only = True
    tokens = tuple(sorted({name.rsplit(".", 1)[1] for name in TORCH_LOADS}))
    preview = True
    tags = ("memory", "correctness")

    def trigger_Call(self, node: cst.Call) -> bool:
        loads = bool(self.ctx.qualified_names(node.func) & TORCH_LOADS)
        return bool(node.args) and loads and load_placement(node) is not None

    def check_Call(self, node: cst.Call, site: Site) -> None:
        rank, runs = self.ctx.rank, self.ctx.rank.runs(site)
        # `queue{rank}.pth`: each rank loads the file it wrote from its own GPU
        if rank.expression_is_rank_dependent(node.args[0].value) or not runs.many or in_deviceless_branch(self.ctx):
            return
        why = load_placement(node)
        to_cpu = with_keywords(node, ("map_location",), '"cpu"')
        fix = ProposedFix('Load to the CPU: `map_location="cpu"`', ((node, to_cpu),), Applicability.UNSAFE)
        self.report(
            node,
            f"`torch.load(...)` {why} runs on {runs.value}: each of them puts the checkpoint's tensors on the "
            'device they were saved from (usually GPU 0); pass `map_location="cpu"` or the rank\'s own device',
            fix=fix if why == WITHOUT_MAP_LOCATION else None,
        )
