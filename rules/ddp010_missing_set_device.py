"""DDP010 missing-set-device."""

from __future__ import annotations

from ddplint.analysis.names import dotted_name, last_name
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

INIT_PROCESS_GROUP = frozenset(
    {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}
)
#: Libraries that pin each process to its GPU themselves.
SELF_PINNING = ("accelerate", "lightning", "pytorch_lightning")
_DEVICE_CALLS = frozenset({"to", "cuda"})


class MissingSetDevice(Rule):
    """
    ## What it does

    Flags `init_process_group(...)` with the NCCL backend (`"nccl"`,
    `"cuda:nccl"`, `Backend.NCCL`, or no backend, which picks NCCL for CUDA
    tensors) in a module that never pins the process to its own GPU. Any
    of these counts as pinning: `torch.cuda.set_device(...)`, a `device_id=`
    argument to `init_process_group`, `torch.device(f"cuda:{local_rank}")` or
    `torch.device("cuda", local_rank)`, `.to(local_rank)`/`.cuda(local_rank)`,
    `DistributedDataParallel(..., device_ids=[local_rank])`, DeepSpeed's
    `get_accelerator().set_device(...)`, `with torch.cuda.device(local_rank):`,
    setting `CUDA_VISIBLE_DEVICES` from the rank, or using accelerate or
    Lightning (they set the device). Gloo and MPI backends, and a backend
    given as a variable, are not flagged.

    ## Why is this bad?

    Without pinning, every rank's current device is `cuda:0`: NCCL
    communicators and the first CUDA allocations of all ranks land on GPU 0,
    which runs out of memory or serialises the job while the other GPUs sit
    idle, and collectives can hang when several ranks share one device.

    ## Example

    ```python
    dist.init_process_group(backend="nccl")
    model = model.cuda()
    ```

    ## Use instead

    ```python
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl", device_id=torch.device("cuda", local_rank))
    model = model.cuda()
    ```

    ## Fix safety

    No automatic fix: where `torch.cuda.set_device(local_rank)` goes, and where
    the local rank comes from, differ between launchers.

    ## References

    - [torch.distributed.init_process_group](https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group)
    """

    code = "DDP010"
    name = "missing-set-device"
    severity = Severity.ERROR
    summary = "NCCL process group in a module that never pins each rank to its GPU."
    requires = frozenset({"rank"})
    tokens = ("init_process_group",)
    tags = ("correctness", "performance")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.inits: list[tuple[cst.Call, cst.CSTNode]] = []
        self.pinned = False

    def visit_Import(self, node: cst.Import) -> None:
        self.pinned |= any(_self_pinning(dotted_name(a.name)) for a in node.names)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is not None:
            self.pinned |= _self_pinning(dotted_name(node.module))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and len(sub.slice) == 1 and "os.environ" in self.ctx.qualified_names(sub.value):
                key = sub.slice[0].slice
                if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString):
                    self.pinned |= key.value.evaluated_value == "CUDA_VISIBLE_DEVICES"

    def visit_Call(self, node: cst.Call) -> None:
        if self.pinned:
            return  # the module pins its device: no init_process_group can be flagged
        names = self.ctx.qualified_names(node.func)
        if names & INIT_PROCESS_GROUP:
            if any(a.keyword is not None and a.keyword.value == "device_id" for a in node.args):
                self.pinned = True
            elif _uses_nccl(node):
                self.inits.append((node, self.ctx.statement()))
            return
        self.pinned = self._pins(node, names)

    def _pins(self, node: cst.Call, names: frozenset) -> bool:
        method = last_name(node.func)
        if method == "set_device" or names & {"torch.cuda.device"}:
            return True
        rank = self.ctx.rank
        if names & {"torch.device"} or method in _DEVICE_CALLS:
            return bool(rank.deps_of_all(a.value for a in node.args))
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "device_ids" and rank.deps(arg.value):
                return True
        return False

    def finish(self) -> None:
        if self.pinned:
            return
        for node, statement in self.inits:
            self.report(
                node,
                f"`{self.ctx.module.code_for_node(node.func)}(...)` uses NCCL but this module never pins the "
                "process to its GPU, so every rank uses cuda:0; call `torch.cuda.set_device(local_rank)` "
                "first (or pass `device_id=torch.device('cuda', local_rank)`)",
                statement=statement,
            )


def _self_pinning(module: str | None) -> bool:
    return module is not None and any(module == m or module.startswith(m + ".") for m in SELF_PINNING)


def _uses_nccl(call: cst.Call) -> bool:
    """Whether the call certainly picks NCCL (no backend, or a literal NCCL one)."""
    backend = None
    for index, arg in enumerate(call.args):
        if (arg.keyword is None and index == 0) or (arg.keyword is not None and arg.keyword.value == "backend"):
            backend = arg.value
    if backend is None:
        return True
    if isinstance(backend, cst.SimpleString):
        return "nccl" in backend.evaluated_value.lower()
    return last_name(backend) == "NCCL"
