"""DDP020 cpu-tensor-collective."""

from __future__ import annotations

import re

from ddplint.analysis.collectives import on_subgroup
from ddplint.analysis.names import last_name
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Collectives of `torch.distributed` -> the position of the tensor it sends.
TENSOR_COLLECTIVES = {
    "all_reduce": 0, "reduce": 0, "broadcast": 0, "all_gather": 1, "all_gather_into_tensor": 1,
    "reduce_scatter_tensor": 1, "all_to_all_single": 1, "gather": 0, "scatter": 0,
    "send": 0, "recv": 0, "isend": 0, "irecv": 0,
}  # fmt: skip
#: The keywords that name the tensor a collective sends.
TENSOR_KEYWORDS = ("tensor", "input_tensor", "input")
_MODULES = ("torch.distributed.", "torch.distributed.distributed_c10d.")
#: Factories that build a tensor on the CPU unless given a device.
FACTORIES = frozenset(
    {
        "torch.tensor", "torch.as_tensor", "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange",
        "torch.zeros_like", "torch.ones_like", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor",
        "torch.LongTensor", "torch.IntTensor", "torch.DoubleTensor", "torch.rand", "torch.randn", "torch.randint",
        "torch.randperm", "torch.linspace", "torch.logspace", "torch.eye", "torch.empty_strided",
        "torch.empty_like", "torch.full_like", "torch.rand_like", "torch.randn_like", "torch.randint_like",
    }
)  # fmt: skip
_LIKE = frozenset(
    {"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like", "torch.rand_like",
     "torch.randn_like", "torch.randint_like"}
)  # fmt: skip
#: Tensor methods whose result lives where the tensor does.
SAME_DEVICE_METHODS = frozenset(
    {
        "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char", "clone", "detach",
        "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "t", "sum", "mean", "abs", "pin_memory",
        "type_as", "add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_", "fill_", "zero_",
    }
)  # fmt: skip
_CPU = "cpu"
#: Builtins and methods that give Python numbers (`len(x)`, `t.item()`).
_NUMBER_CALLS = frozenset({"builtins.len", "builtins.int", "builtins.float", "builtins.round", "builtins.abs"})
_DTYPES = frozenset(
    {"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long", "int32", "int",
     "int16", "int8", "uint8", "bool"}
)  # fmt: skip
_JOINS = frozenset({"torch.stack", "torch.cat", "torch.concat"})
_NUMBER_METHODS = frozenset({"item", "numel", "size", "dim"})
_NCCL = re.compile(r"""["'](?:cuda:)?nccl["']|Backend\.NCCL""")
#: Code that makes tensor factories build on the GPU by default.
_DEFAULT_CUDA = re.compile(r"\bset_default_device\(|\bset_default_tensor_type\(\s*torch\.cuda")
_MAX_DEPTH = 4


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
    tags = ("correctness",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sites: list[tuple[cst.Call, cst.CSTNode, str]] = []
        #: A process group whose backend handles CPU tensors (gloo, or a mixed backend).
        self.cpu_group = False
        #: What an augmented assignment leaves in its name: "cpu" or "number" (`total += n`).
        self.augmented: dict[int, str] = {}
        #: Module functions whose parameter a collective sends as it is -> {parameter: collective shown}.
        self.sending: dict[cst.FunctionDef, dict[cst.Param, str]] = {}
        #: Calls of module functions: (call, statement, targets, [(keyword, position, shown)] of CPU arguments).
        self.calls: list[tuple[cst.Call, cst.CSTNode, tuple, list[tuple[str | None, int, str]]]] = []
        #: Whether each assignment of `self.<name>` puts a CPU tensor there (meters keep counters on `self`).
        self.attributes: dict[str, list[bool]] = {}
        #: Collectives sending `self.<name>`, judged after the walk against every assignment of it.
        self.attribute_sites: list[tuple[cst.Call, cst.CSTNode, str, str]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = _self_attribute(target.target)
            if name is not None:
                self.attributes.setdefault(name, []).append(self._on_cpu(node.value, 0))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        name = _self_attribute(node.target)
        if name is not None and node.value is not None:
            self.attributes.setdefault(name, []).append(self._on_cpu(node.value, 0))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """`total += n` keeps the device of `total` (read before the name is bound again)."""
        target = node.target
        if isinstance(target, cst.Name):
            if self._on_cpu(target, 0):
                self.augmented[id(node)] = _CPU
            elif self._number(target, 0) and self._number(node.value, 0):
                self.augmented[id(node)] = "number"

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
            self._note_call(node)
            return
        if on_subgroup(node):
            return  # the backend of a group named here (`group=get_cpu_group()`) is not visible
        positional = [a.value for a in node.args if a.keyword is None]
        tensor = next((a.value for a in node.args if a.keyword is not None and a.keyword.value in TENSOR_KEYWORDS), None)
        if tensor is None and position < len(positional):
            tensor = positional[position]
        if tensor is None:
            return
        if self._on_cpu(tensor, 0):
            self.sites.append((node, ctx.statement(), ctx.module.code_for_node(tensor)))
        elif isinstance(tensor, cst.Name):
            self._note_parameter(tensor, node)
        elif (name := _self_attribute(tensor)) is not None:
            self.attribute_sites.append((node, ctx.statement(), ctx.module.code_for_node(tensor), name))

    def _note_parameter(self, tensor: cst.Name, call: cst.Call) -> None:
        """`def reduce_value(t): dist.all_reduce(t)`: the helper sends what its callers pass."""
        function = self.ctx.enclosing_function()
        values = self.ctx.values_of(tensor)
        if function is None or len(values) != 1 or not isinstance(values[0], cst.Param):
            return
        param = values[0]
        if param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
            shown = f"`{self.ctx.module.code_for_node(call.func)}()`"
            self.sending.setdefault(function, {}).setdefault(param, shown)

    def _note_call(self, node: cst.Call) -> None:
        """A call of a module function, with its CPU-tensor arguments (judged
        where they are; whether the function sends them is known after the walk)."""
        func = node.func
        if not isinstance(func, cst.Name):
            return
        targets = tuple(v for v in self.ctx.values_of(func) if isinstance(v, cst.FunctionDef))
        if not targets:
            return
        cpu = []
        position = 0
        for arg in node.args:
            if arg.star:
                return  # `f(*args)`: positions unknown
            keyword = arg.keyword.value if arg.keyword is not None else None
            if self._on_cpu(arg.value, 0):
                cpu.append((keyword, position, self.ctx.module.code_for_node(arg.value)))
            if keyword is None:
                position += 1
        if cpu:
            self.calls.append((node, self.ctx.statement(), targets, cpu))

    def _on_default_cuda_device(self) -> bool:
        """Inside `with torch.device("cuda"):`, factories build on the GPU."""
        for node in self.ctx.stack:
            if isinstance(node, cst.With):
                for item in node.items:
                    call = item.item
                    if isinstance(call, cst.Call) and self.ctx.qualified_names(call.func) & {"torch.device"}:
                        return True
        return False

    def _on_cpu(self, node: cst.CSTNode, depth: int) -> bool:
        """Whether the tensor certainly lives on the CPU: built by a factory
        without a device (or with `device="cpu"`), moved with `.cpu()` or
        `.to("cpu")`, or derived from such a tensor by an operation that keeps
        the device (`.float()`, `.clone()`, arithmetic with numbers, `+=`,
        `torch.stack` of CPU tensors)."""
        if depth > _MAX_DEPTH:
            return False
        depth += 1
        if isinstance(node, cst.Name):
            values = self.ctx.values_of(node)
            return bool(values) and all(self._value_on_cpu(v, depth) for v in values)
        if isinstance(node, cst.BinaryOperation):
            left, right = self._on_cpu(node.left, depth), self._on_cpu(node.right, depth)
            return (left and (right or self._number(node.right, depth))) or (right and self._number(node.left, depth))
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "cpu" and not node.args:
                return True
            if method == "to":
                return self._moved_to_cpu(node, func.value, depth)
            if method in SAME_DEVICE_METHODS:
                return self._on_cpu(func.value, depth)
        names = self.ctx.qualified_names(func)
        if names & _JOINS:
            parts = node.args[0].value if node.args else None
            return (
                isinstance(parts, (cst.List, cst.Tuple)) and bool(parts.elements)
                and all(self._on_cpu(e.value, depth) for e in parts.elements)
            )  # fmt: skip
        if not names & FACTORIES:
            return False
        device = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "device"), None)
        if device is not None:
            return self._is_cpu_device(device)
        if names & _LIKE:  # where its model tensor is
            return bool(node.args) and self._on_cpu(node.args[0].value, depth)
        return True

    def _value_on_cpu(self, value: cst.CSTNode, depth: int) -> bool:
        if isinstance(value, cst.AugAssign):
            return self.augmented.get(id(value)) == _CPU
        return isinstance(value, cst.BaseExpression) and self._on_cpu(value, depth)

    def _moved_to_cpu(self, call: cst.Call, tensor: cst.BaseExpression, depth: int) -> bool:
        """`t.to("cpu")` is on the CPU; `t.to(torch.float64)` stays where `t` is."""
        device = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"), None)
        positional = [a.value for a in call.args if a.keyword is None]
        if device is None and positional and not self._is_dtype(positional[0]):
            device = positional[0]
        if device is not None:
            return self._is_cpu_device(device)
        return self._on_cpu(tensor, depth)

    def _is_dtype(self, node: cst.BaseExpression) -> bool:
        return any(n and n.startswith("torch.") and n[6:] in _DTYPES for n in self.ctx.qualified_names(node))

    def _is_cpu_device(self, node: cst.BaseExpression) -> bool:
        """`"cpu"` or `torch.device("cpu")`."""
        if isinstance(node, cst.SimpleString):
            return node.evaluated_value.split(":")[0] == _CPU
        if isinstance(node, cst.Call) and self.ctx.qualified_names(node.func) & {"torch.device"} and node.args:
            return self._is_cpu_device(node.args[0].value)
        return False

    def _number(self, node: cst.CSTNode, depth: int) -> bool:
        """A Python number (a literal, `len(x)`, `t.item()`, a name holding one):
        arithmetic with it keeps a tensor where it is."""
        if depth > _MAX_DEPTH:
            return False
        depth += 1
        if isinstance(node, (cst.Integer, cst.Float)):
            return True
        if isinstance(node, cst.UnaryOperation):
            return self._number(node.expression, depth)
        if isinstance(node, cst.BinaryOperation):
            return self._number(node.left, depth) and self._number(node.right, depth)
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _NUMBER_METHODS:
                return True
            return bool(self.ctx.qualified_names(node.func) & _NUMBER_CALLS)
        if isinstance(node, cst.Name):
            values = self.ctx.values_of(node)
            return bool(values) and all(
                self.augmented.get(id(v)) == "number" if isinstance(v, cst.AugAssign) else self._number(v, depth)
                for v in values
            )
        return False

    def finish(self) -> None:
        source = self.ctx.source
        if self.cpu_group or _DEFAULT_CUDA.search(source):
            return  # a gloo group carries CPU tensors; factories default to CUDA here
        if not (_NCCL.search(source) or ("init_process_group" in source and "cuda" in source)):
            return
        sites = list(self.sites)
        for node, statement, tensor, name in self.attribute_sites:
            assigned = self.attributes.get(name)
            if assigned and all(assigned):  # every assignment of it in the module is a CPU tensor
                sites.append((node, statement, tensor))
        for node, statement, tensor in sites:
            self.report(
                node,
                f"`{tensor}` is a CPU tensor, but this module's process group uses NCCL, which only moves CUDA "
                "tensors: the collective fails on the real run; create it on the rank's GPU "
                "(`device=...`) or move it with `.cuda()`",
                statement=statement,
            )
        for node, statement, targets, arguments in self.calls:
            sent = self._sent(targets, arguments)
            if sent is not None:
                tensor, helper, collective = sent
                self.report(
                    node,
                    f"`{tensor}` is a CPU tensor, and `{helper}()` sends it with {collective} over this module's "
                    "NCCL process group, which only moves CUDA tensors: the collective fails on the real run; "
                    "create it on the rank's GPU (`device=...`) or move it with `.cuda()`",
                    statement=statement,
                )

    def _sent(self, targets: tuple, arguments: list) -> tuple[str, str, str] | None:
        """(the argument, the helper, its collective) when a helper sends a CPU argument as it is."""
        for target in targets:
            sending = self.sending.get(target)
            if not sending:
                continue
            positional = (*target.params.posonly_params, *target.params.params)
            for keyword, position, shown in arguments:
                if keyword is not None:
                    param = next((p for p in (*positional, *target.params.kwonly_params) if p.name.value == keyword), None)
                else:
                    param = positional[position] if position < len(positional) else None
                if param is not None and param in sending:
                    return shown, target.name.value, sending[param]
        return None


def _self_attribute(node: cst.BaseExpression) -> str | None:
    """`name` for `self.name`."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _handles_cpu(backend: cst.BaseExpression) -> bool:
    """A literal gloo (or mixed `"cuda:nccl,cpu:gloo"`) backend; not a
    conditional one (`"nccl" if cuda else "gloo"` is NCCL on a GPU node)."""
    if isinstance(backend, cst.SimpleString):
        return "gloo" in backend.evaluated_value
    return last_name(backend) == "GLOO"


def _tensor_position(call: cst.Call, ctx) -> int | None:
    """Where a `torch.distributed` collective takes the tensor it sends, by
    its qualified name (`from torch.distributed import all_reduce as ar`)."""
    for name in ctx.qualified_names(call.func):
        if name and name.startswith(_MODULES):
            function = name.rsplit(".", 1)[-1]
            if function in TENSOR_COLLECTIVES and name.rsplit(".", 1)[0] + "." in _MODULES:
                return TENSOR_COLLECTIVES[function]
    return None
