"""DDP010 missing-set-device."""

from __future__ import annotations

from ddplint.knowledge import INIT_PROCESS_GROUP
from ddplint.analysis.devices import has_main_block, picks_nccl
from ddplint.analysis.guards import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


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
    tokens = tuple(sorted({name.rsplit(".", 1)[1] for name in INIT_PROCESS_GROUP}))
    requires = frozenset({"devices"})
    tags = ("correctness", "performance")

    def trigger_Call(self, node: cst.Call) -> bool:
        return bool(self.ctx.qualified_names(node.func) & INIT_PROCESS_GROUP) and picks_nccl(node)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        if self.ctx.devices.pins_gpu:
            return
        # A generic helper (`utils.setup()`) of another script: whether its caller pins is not visible here;
        # `init_distributed_mode()`, `init_dist()` are where the pinning belongs.
        name = site.function.name.value.lower() if site.function is not None else "init"
        if has_main_block(self.ctx.module) or name.startswith("init") or "dist" in name:
            self.report(
                node,
                f"`{self.ctx.module.code_for_node(node.func)}(...)` uses NCCL but this module never pins the "
                "process to its GPU, so every rank uses cuda:0; call `torch.cuda.set_device(local_rank)` "
                "first (or pass `device_id=torch.device('cuda', local_rank)`)",
            )
