"""DDP016 load-without-map-location."""

from __future__ import annotations

from ddplint.analysis.conditions import mentions, none_branches
from ddplint.analysis.rank import Site
from ddplint.analysis.tree import descendants
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule

LOADS = frozenset({"torch.load", "torch.serialization.load"})
#: `map_location` values that send every rank's copy to the first GPU
#: (`"cuda"` alone is the current device: the rank's own after `set_device`).
_FIRST_GPU = frozenset({"cuda:0"})


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
    tokens = ("load",)
    preview = True
    tags = ("memory", "correctness")

    def trigger_Call(self, node: cst.Call) -> bool:
        return bool(node.args) and bool(self.ctx.qualified_names(node.func) & LOADS) and self._why(node) is not None

    def check_Call(self, node: cst.Call, site: Site) -> None:
        rank = self.ctx.rank
        if rank.expression_is_rank_dependent(node.args[0].value):
            return  # `queue{rank}.pth`: each rank loads the file it wrote from its own GPU
        runs = rank.runs(site)
        if not runs.many or self._no_device_branch():
            return
        why = self._why(node)
        self.report(
            node,
            f"`torch.load(...)` {why} runs on {runs.value}: each of them puts the checkpoint's tensors on the "
            'device they were saved from (usually GPU 0); pass `map_location="cpu"` or the rank\'s own device',
            fix=_add_map_location(node) if why == _WITHOUT else None,
        )

    def _no_device_branch(self) -> bool:
        """Whether the load is in the ``if args.gpu is None:`` branch of a
        test whose other branch loads to that device (``map_location=
        f"cuda:{args.gpu}"``): the device index is what each process of a
        one-process-per-GPU run owns, so the None branch is the run without
        one (a single process, DataParallel, or one process per node)."""
        for subject, other in none_branches(self.ctx.stack):
            assigned = {
                t.target.value: n.value for n in descendants(other, into_functions=False)
                if isinstance(n, cst.Assign) for t in n.targets if isinstance(t.target, cst.Name)
            }  # fmt: skip
            for call in descendants(other, into_functions=False):
                if not (isinstance(call, cst.Call) and self.ctx.qualified_names(call.func) & LOADS):
                    continue
                location = _location(call)
                if isinstance(location, cst.Name) and location.value in assigned:
                    location = assigned[location.value]  # `loc = "cuda:{}".format(args.gpu)`
                if location is not None and mentions(location, subject):
                    return True
        return False

    def _why(self, node: cst.Call) -> str | None:
        """How the call places the tensors, when that is on the saving device; else None."""
        location = _location(node)
        if isinstance(location, cst.Name) and location.value == "None":
            location = None  # `map_location=None`: the same as none
        if location is None:
            return _WITHOUT
        if isinstance(location, cst.SimpleString) and location.evaluated_value in _FIRST_GPU:
            return f"with `map_location={location.value}`"
        return None


_WITHOUT = "without `map_location`"


def _location(node: cst.Call) -> cst.BaseExpression | None:
    """The `map_location` argument of a load (keyword or second positional)."""
    location = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "map_location"), None)
    positional = [a for a in node.args if a.keyword is None]
    if location is None and len(positional) >= 2:
        location = positional[1].value
    return location


def _add_map_location(node: cst.Call) -> ProposedFix:
    last = node.args[-1]
    added = cst.Arg(
        keyword=cst.Name("map_location"), value=cst.SimpleString('"cpu"'),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )  # fmt: skip
    args = (*node.args[:-1], last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), added)
    return ProposedFix('Load to the CPU: `map_location="cpu"`', ((node, node.with_changes(args=args)),), Applicability.UNSAFE)
