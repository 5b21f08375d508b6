"""DDP020 cpu-tensor-collective."""

from __future__ import annotations

import re

from ddplint.analysis.names import last_name
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Collectives of `torch.distributed` -> the position of the tensor it sends.
TENSOR_COLLECTIVES = {
    "all_reduce": 0, "reduce": 0, "broadcast": 0, "all_gather": 1, "all_gather_into_tensor": 1,
    "reduce_scatter_tensor": 1, "all_to_all_single": 1, "gather": 0, "scatter": 0,
}  # fmt: skip
_MODULES = ("torch.distributed.", "torch.distributed.distributed_c10d.")
#: Factories that build a tensor on the CPU unless given a device.
FACTORIES = frozenset(
    {
        "torch.tensor", "torch.as_tensor", "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange",
        "torch.zeros_like", "torch.ones_like", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor",
        "torch.LongTensor", "torch.IntTensor", "torch.DoubleTensor",
    }
)  # fmt: skip
_LIKE = frozenset({"torch.zeros_like", "torch.ones_like"})
_NCCL = re.compile(r"""["'](?:cuda:)?nccl["']|Backend\.NCCL""")
#: Code that makes tensor factories build on the GPU by default.
_DEFAULT_CUDA = re.compile(r"\bset_default_device\(|\bset_default_tensor_type\(\s*torch\.cuda")
_MAX_DEPTH = 4


class CpuTensorCollective(Rule):
    """
    ## What it does

    Flags a `torch.distributed` collective (`all_reduce`, `broadcast`,
    `all_gather`, `reduce`, ...) on a tensor built on the CPU —
    `torch.tensor(x)`, `torch.zeros(n)` and other factories without
    `device=`, `torch.from_numpy(...)`, `x.cpu()` — in a module whose process
    group uses NCCL (a literal `"nccl"` backend, or no backend while the
    module uses CUDA).

    Not flagged: tensors created with `device=...` or moved with
    `.cuda()`/`.to(device)`, `*_object` collectives (they pickle), modules
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
    tags = ("correctness",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sites: list[tuple[cst.Call, cst.CSTNode, str]] = []
        #: A process group whose backend handles CPU tensors (gloo, or a mixed backend).
        self.cpu_group = False

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if last_name(node.func) in ("init_process_group", "new_group"):
            backend = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "backend"), None)
            if backend is None and node.args and node.args[0].keyword is None and last_name(node.func) == "init_process_group":
                backend = node.args[0].value
            if backend is not None and _handles_cpu(backend):
                self.cpu_group = True
            return
        if self._on_default_cuda_device():
            return
        position = _tensor_position(node, ctx)
        if position is None:
            return
        positional = [a.value for a in node.args if a.keyword is None]
        tensor = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "tensor"), None)
        if tensor is None and position < len(positional):
            tensor = positional[position]
        if tensor is not None and self._on_cpu(tensor, 0):
            self.sites.append((node, ctx.statement(), ctx.module.code_for_node(tensor)))

    def _on_default_cuda_device(self) -> bool:
        """Inside `with torch.device("cuda"):`, factories build on the GPU."""
        for node in self.ctx.stack:
            if isinstance(node, cst.With):
                for item in node.items:
                    call = item.item
                    if isinstance(call, cst.Call) and self.ctx.qualified_names(call.func) & {"torch.device"}:
                        return True
        return False

    def _on_cpu(self, node: cst.BaseExpression, depth: int) -> bool:
        """Whether the tensor certainly lives on the CPU."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, cst.Name):
            values = [v for v in self.ctx.values_of(node) if isinstance(v, cst.BaseExpression)]
            return bool(values) and all(self._on_cpu(v, depth + 1) for v in values)
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cpu" and not node.args:
            return True
        names = self.ctx.qualified_names(func)
        if not names & FACTORIES:
            return False
        if any(a.keyword is not None and a.keyword.value == "device" for a in node.args):
            return False
        if names & _LIKE:  # where its model tensor is
            return bool(node.args) and self._on_cpu(node.args[0].value, depth + 1)
        return True

    def finish(self) -> None:
        source = self.ctx.source
        if self.cpu_group or _DEFAULT_CUDA.search(source):
            return  # a gloo group carries CPU tensors; factories default to CUDA here
        if not (_NCCL.search(source) or ("init_process_group" in source and "cuda" in source)):
            return
        for node, statement, tensor in self.sites:
            self.report(
                node,
                f"`{tensor}` is a CPU tensor, but this module's process group uses NCCL, which only moves CUDA "
                "tensors: the collective fails on the real run; create it on the rank's GPU "
                "(`device=...`) or move it with `.cuda()`",
                statement=statement,
            )


def _handles_cpu(backend: cst.BaseExpression) -> bool:
    """A literal gloo (or mixed `"cuda:nccl,cpu:gloo"`) backend; not a
    conditional one (`"nccl" if cuda else "gloo"` is NCCL on a GPU node)."""
    if isinstance(backend, cst.SimpleString):
        return "gloo" in backend.evaluated_value
    return last_name(backend) == "GLOO"


def _tensor_position(call: cst.Call, ctx) -> int | None:
    name = last_name(call.func)
    if name not in TENSOR_COLLECTIVES:
        return None
    qualified = ctx.qualified_names(call.func)
    if not any(n and n.startswith(_MODULES) and n.rsplit(".", 1)[-1] == name for n in qualified):
        return None
    return TENSOR_COLLECTIVES[name]
