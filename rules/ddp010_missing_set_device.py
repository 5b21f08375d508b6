"""DDP010 missing-set-device."""

from __future__ import annotations

from ddplint.analysis.callgraph import is_main_test
from ddplint.analysis.catalogue import DEVICE_SETTERS
from ddplint.analysis.collectives import collective_name, wrapper_of
from ddplint.analysis.devices import sets_visible_devices
from ddplint.analysis.names import dotted_name, last_name
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

INIT_PROCESS_GROUP = frozenset(
    {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}
)
#: Libraries that pin each process to its GPU themselves.
SELF_PINNING = ("accelerate", "lightning", "pytorch_lightning")


class MissingSetDevice(Rule):
    """
    ## What it does

    Flags `init_process_group(...)` with the NCCL backend (`"nccl"`,
    `"cuda:nccl"`, `Backend.NCCL`, or no backend, which picks NCCL for CUDA
    tensors) in a module that never sets the process's current device. Only
    these set it: `torch.cuda.set_device(...)` (DeepSpeed's
    `get_accelerator().set_device(...)` too), `with torch.cuda.device(...):`,
    a `device_id=` argument to `init_process_group`, `CUDA_VISIBLE_DEVICES`
    set in the process before CUDA starts (`os.environ[...] = str(local_rank)`,
    `os.environ.setdefault(...)`, `os.environ.update(...)`) or by a launcher
    in the module for the processes it starts (`env=dict(os.environ,
    CUDA_VISIBLE_DEVICES=str(i))`): each process then sees one GPU, `cuda:0`,
    and `set_device(0)` or `"cuda:0"` is right on every rank; or a framework that sets it
    (accelerate, Lightning); and a module whose only collective is
    `barrier(device_ids=[rank])` (a connectivity check) names the GPU of all
    the communication it does. Moving the model does not:
    `.to(local_rank)`, `.cuda(local_rank)`, `torch.device("cuda", local_rank)`
    and `DDP(..., device_ids=[local_rank])` place the model's tensors but
    leave the current device at `cuda:0`. Gloo and MPI backends, and a
    backend given as a variable, are not flagged; nor is a generic helper
    (`utils.setup()`) of a module without an `if __name__ == "__main__":`
    block, whose caller may set the device right after calling it. Set-up
    helpers by name (`init_distributed_mode`, `init_dist`) are judged: they
    are where the pinning belongs.

    ## Why is this bad?

    The current device decides where NCCL puts a communicator, where
    `barrier()` allocates its buffer and where the CUDA caching allocator
    starts a context: without `set_device`, every rank also creates a
    context on GPU 0, which costs hundreds of MiB there per rank, can run
    GPU 0 out of memory, and makes `barrier()` hang when NCCL maps two ranks
    to one device. PyTorch warns ("devices used by this process are
    currently unknown"); pytorch/examples added `set_device` to its DDP
    tutorials "to avoid hangs and high memory utilization on GPU:0".

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
    tokens = ("init_process_group",)
    tags = ("correctness", "performance")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        #: (call, statement, inside a helper whose job is distributed set-up).
        self.inits: list[tuple[cst.Call, cst.CSTNode, bool]] = []
        self.pinned = False
        #: The module runs as a program (`if __name__ == "__main__":`), not a helper of one.
        self.script = False
        #: `dist.barrier(device_ids=[...])` names the GPU of the one collective it makes...
        self.barrier_devices = False
        #: ... unless other collectives (or a DDP wrap) use the group: they need the current device.
        self.other_collectives = False

    def visit_Import(self, node: cst.Import) -> None:
        self.pinned |= any(_self_pinning(dotted_name(a.name)) for a in node.names)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is not None:
            self.pinned |= _self_pinning(dotted_name(node.module))

    def visit_Assign(self, node: cst.Assign) -> None:
        # `os.environ["CUDA_VISIBLE_DEVICES"] = str(local_rank)`, or a child's `env[...] = str(i)`
        self.pinned |= any(sets_visible_devices(t.target) for t in node.targets)

    def visit_Dict(self, node: cst.Dict) -> None:
        self.pinned |= sets_visible_devices(node)  # `env={"CUDA_VISIBLE_DEVICES": str(i)}`

    def visit_Call(self, node: cst.Call) -> None:
        if self.pinned:
            return  # the module pins its device: no init_process_group can be flagged
        if sets_visible_devices(node):  # `os.environ.setdefault(...)`, `dict(os.environ, CUDA_VISIBLE_DEVICES=...)`
            self.pinned = True
            return
        names = self.ctx.qualified_names(node.func)
        if names & INIT_PROCESS_GROUP:
            if any(a.keyword is not None and a.keyword.value == "device_id" for a in node.args):
                self.pinned = True
            elif _uses_nccl(node):
                self.inits.append((node, self.ctx.statement(), self._init_helper()))
            return
        self.pinned = self._pins(node, names)
        if collective_name(node, self.ctx) is not None:
            if last_name(node.func) == "barrier" and any(a.keyword is not None and a.keyword.value == "device_ids" for a in node.args):
                self.barrier_devices = True
            else:
                self.other_collectives = True
        elif wrapper_of(node, self.ctx) is not None:
            self.other_collectives = True

    def _pins(self, node: cst.Call, names: frozenset) -> bool:
        """`set_device(...)` on any receiver (`torch.accelerator.set_device_index(...)`
        too), or `torch.cuda.device(...)`."""
        return last_name(node.func) in DEVICE_SETTERS or bool(names & {"torch.cuda.device"})

    def visit_If(self, node: cst.If) -> None:
        if not self.script and len(self.ctx.stack) == 2 and is_main_test(node.test):
            self.script = True

    def _init_helper(self) -> bool:
        """`init_distributed_mode()`, `init_dist()`: the function whose job is
        the set-up, where pinning belongs (not a generic `setup()`)."""
        function = self.ctx.enclosing_function()
        if function is None:
            return True  # module-level code: the module is the program
        name = function.name.value.lower()
        return name.startswith("init") or "dist" in name

    def finish(self) -> None:
        if self.pinned or (self.barrier_devices and not self.other_collectives):
            return
        for node, statement, helper in self.inits:
            if not (self.script or helper):
                continue  # a generic helper of another script: whether its caller pins is not visible here
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
