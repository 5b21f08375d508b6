"""DDP020 cpu-tensor-collective."""

from __future__ import annotations

from ddplint.knowledge import TENSOR_COLLECTIVES
from ddplint.analysis.devices import sent_tensor
from ddplint.analysis.guards import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

_REMEDY = "the collective fails on the real run; create it on the rank's GPU (`device=...`) or move it with `.cuda()`"


class CpuTensorCollective(Rule):
    """
    ## What it does

    Flags a `torch.distributed` collective (`all_reduce`, `broadcast`,
    `all_gather`, `reduce`, ..., and point-to-point `send`/`recv`) on a
    tensor built on the CPU — `torch.tensor(x)`, `torch.zeros(n)`,
    `torch.randint(...)`, `torch.randperm(n)` and other factories without
    `device=` (or with `device="cpu"`), `torch.from_numpy(...)`, `x.cpu()`,
    `x.to("cpu")` — or derived from one by an operation that keeps the
    device (`.float()`, `.long()`, `.clone()`, `.to(torch.float64)`,
    arithmetic with Python numbers, `+=`, `torch.stack` of CPU tensors), in
    a module whose process group uses NCCL (a literal `"nccl"` backend, or
    no backend while the module uses CUDA). A CPU tensor passed to a
    function of the module that sends its parameter as it is
    (`reduce_value(t)` calling `dist.all_reduce(t)`) is flagged at the call,
    and so is a tensor kept on `self` (`self.total = torch.tensor(0.0)` in a
    meter) when every assignment of that attribute in the module is a CPU
    tensor.

    Not flagged: tensors created with `device=...` or moved with
    `.cuda()`/`.to(device)`, `*_object` collectives (they pickle),
    collectives on a group named with `group=` (its backend is not visible
    here: `get_cpu_group()` may be gloo), modules
    that create a gloo group (a CPU group, or a mixed backend such as
    `"cuda:nccl,cpu:gloo"`, is the right place for CPU tensors; a backend
    chosen at run time, `"nccl" if cuda else "gloo"`, is NCCL on a GPU
    node and does not count), factories inside `with torch.device("cuda"):`
    or after `torch.set_default_device("cuda")`, and modules with no NCCL in sight.

    ## Why is this bad?

    NCCL only moves CUDA tensors. A CPU tensor fails with `RuntimeError:
    No backend type associated with device type cpu` (or, with older
    PyTorch, a hang or a crash in the communicator) — on the first
    collective of the real multi-GPU run, usually in a metric reduction
    that a CPU test never reached.

    ## Example

    ```python
    dist.init_process_group("nccl")
    correct = torch.tensor(num_correct)
    dist.all_reduce(correct)
    ```

    ## Use instead

    ```python
    dist.init_process_group("nccl")
    correct = torch.tensor(num_correct, device=f"cuda:{local_rank}")
    dist.all_reduce(correct)
    ```

    ## References

    - [torch.distributed backends: which tensors each supports](https://pytorch.org/docs/stable/distributed.html#backends)
    """

    code = "DDP020"
    name = "cpu-tensor-collective"
    severity = Severity.ERROR
    summary = "A collective on a CPU tensor over NCCL: it fails on the real multi-GPU run."
    tokens = tuple(TENSOR_COLLECTIVES)
    context_tokens = ("nccl", "NCCL", "init_process_group")
    requires = frozenset({"devices"})
    tags = ("correctness",)

    def trigger_Call(self, node: cst.Call) -> bool:
        ctx = self.ctx
        if not ctx.devices.nccl_in_sight or ctx.devices.builds_on_gpu_here():
            return False
        helper = isinstance(node.func, cst.Name) and any(isinstance(v, cst.FunctionDef) for v in ctx.values_of(node.func))
        return helper or sent_tensor(node, ctx) is not None

    def check_Call(self, node: cst.Call, site: Site) -> None:
        devices = self.ctx.devices
        if not devices.cpu_tensors_fail:
            return
        tensor = sent_tensor(node, self.ctx)
        if tensor is not None and (devices.on_cpu(tensor) or devices.cpu_attribute(tensor)):
            self.report(
                node,
                f"`{self.ctx.module.code_for_node(tensor)}` is a CPU tensor, but this module's process group uses "
                f"NCCL, which only moves CUDA tensors: {_REMEDY}",
            )
        elif tensor is None and (sent := devices.sent_by_helper(node)) is not None:
            self.report(
                node,
                f"`{sent[0]}` is a CPU tensor, and `{sent[1]}()` sends it with {sent[2]} over this module's NCCL "
                f"process group, which only moves CUDA tensors: {_REMEDY}",
            )
