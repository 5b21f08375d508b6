"""Devices: which GPUs a process sees and uses, and where tensors live.

* which GPUs a process sees (`sets_visible_devices`) and whether the module
  pins each process to its GPU (`Devices.pins_gpu`);
* which backend a process group uses (`group_backend`, `picks_nccl`,
  `carries_cpu`) and which tensor a collective sends (`sent_tensor`);
* where a tensor lives (`Devices.on_cpu`: built on the CPU, moved, derived),
  what a module function sends of its arguments (`Devices.sent_by_helper`);
* where `torch.load` puts a checkpoint's tensors (`load_placement`,
  `in_deviceless_branch`).

A process launched with `CUDA_VISIBLE_DEVICES=<its local rank>` sees one GPU,
which is `cuda:0` to it: `torch.cuda.set_device(0)` and `"cuda:0"` are then
right on every rank, and `set_device(local_rank)` would ask rank 1 for a
device it does not see. The variable is set in the process itself before
CUDA starts (`os.environ["CUDA_VISIBLE_DEVICES"] = str(local_rank)`,
`os.environ.setdefault(...)`, `os.environ.update({...})`, `os.putenv(...)`)
or by a launcher in the module for the processes it starts
(`subprocess.Popen(cmd, env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(i)))`,
`env["CUDA_VISIBLE_DEVICES"] = str(i)`).
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING

from ddplint.analysis.callgraph import is_main_test
from ddplint.analysis.calls import bind_to_function, keyword_value
from ddplint.knowledge import (
    DEVICE_SETTERS,
    ENV_SETTERS,
    FIRST_GPU_LOCATIONS,
    GROUP_CREATORS,
    INIT_PROCESS_GROUP,
    LIKE_FACTORIES,
    NUMBER_BUILTIN_QUALNAMES,
    NUMBER_METHODS,
    SAME_DEVICE_METHODS,
    SELF_PINNING,
    TENSOR_COLLECTIVE_MODULES,
    TENSOR_COLLECTIVES,
    TENSOR_FACTORIES,
    TENSOR_JOINS,
    TENSOR_KEYWORDS,
    TORCH_DTYPES,
    TORCH_LOADS,
    VISIBLE_DEVICES_VARIABLES,
)
from ddplint.analysis.collectives import collective_name, on_subgroup, wrapper_of
from ddplint.analysis.conditions import mentions, none_branches
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView


def _names_variable(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value in VISIBLE_DEVICES_VARIABLES


def sets_visible_devices(node: cst.CSTNode) -> bool:
    """Whether `node` writes a visible-devices variable: an assignment target
    `<env>["CUDA_VISIBLE_DEVICES"]` (os.environ, or the environment of a child
    process), a call `setdefault`/`update`/`putenv` naming it, a keyword
    `CUDA_VISIBLE_DEVICES=` (`dict(os.environ, CUDA_VISIBLE_DEVICES=...)`), or a
    dict key (`env={"CUDA_VISIBLE_DEVICES": ...}`)."""
    if isinstance(node, cst.Subscript):
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return False
        return _names_variable(node.slice[0].slice.value)
    if isinstance(node, cst.Call):
        if any(a.keyword is not None and a.keyword.value in VISIBLE_DEVICES_VARIABLES for a in node.args):
            return True
        if last_name(node.func) in ENV_SETTERS and node.args:
            first = node.args[0].value
            return _names_variable(first) or (isinstance(first, cst.Dict) and sets_visible_devices(first))
        return False
    if isinstance(node, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _names_variable(e.key) for e in node.elements)
    return False


# ------------------------------------------------------------ process groups


def group_backend(call: cst.Call) -> cst.BaseExpression | None:
    """The backend a call of `init_process_group` or `new_group` names
    (`backend=`, or `init_process_group`'s first positional argument)."""
    backend = keyword_value(call, "backend")
    if backend is None and last_name(call.func) == "init_process_group" and call.args and call.args[0].keyword is None:
        backend = call.args[0].value
    return backend


def picks_nccl(call: cst.Call) -> bool:
    """Whether a call of `init_process_group` certainly picks NCCL: no backend
    (NCCL for CUDA tensors), a literal one naming NCCL, or `Backend.NCCL`."""
    backend = group_backend(call)
    if backend is None:
        return True
    if isinstance(backend, cst.SimpleString):
        return "nccl" in backend.evaluated_value.lower()
    return last_name(backend) == "NCCL"


def carries_cpu(backend: cst.BaseExpression) -> bool:
    """Whether a backend certainly moves CPU tensors: a literal gloo (or mixed
    `"cuda:nccl,cpu:gloo"`) one; not a conditional one (`"nccl" if cuda else
    "gloo"` is NCCL on a GPU node)."""
    if isinstance(backend, cst.SimpleString):
        return "gloo" in backend.evaluated_value
    return last_name(backend) == "GLOO"


def sent_tensor(call: cst.Call, ctx: ModelView) -> cst.BaseExpression | None:
    """The tensor a `torch.distributed` collective sends (`dist.all_reduce(t)`,
    `all_gather(out, t)`, `send(tensor=t)`), by its qualified name; None for
    other calls and for collectives on a named group (whose backend is not
    visible)."""
    position = None
    for name in ctx.qualified_names(call.func):
        module, _, function = (name or "").rpartition(".")
        if function in TENSOR_COLLECTIVES and module in TENSOR_COLLECTIVE_MODULES:
            position = TENSOR_COLLECTIVES[function]
            break
    if position is None or on_subgroup(call):
        return None
    tensor = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in TENSOR_KEYWORDS), None)
    positional = [a.value for a in call.args if a.keyword is None]
    if tensor is None and position < len(positional):
        tensor = positional[position]
    return tensor


def has_main_block(module: cst.Module) -> bool:
    """Whether the module runs as a program: a module-level ``if __name__ == "__main__":``."""
    return any(isinstance(s, cst.If) and is_main_test(s.test) for s in module.body)


# ------------------------------------------------------------ loading checkpoints

#: What `load_placement` answers for a load without `map_location`.
WITHOUT_MAP_LOCATION = "without `map_location`"


def map_location(call: cst.Call) -> cst.BaseExpression | None:
    """The `map_location` argument of `torch.load` (keyword or second positional)."""
    location = keyword_value(call, "map_location")
    positional = [a for a in call.args if a.keyword is None]
    if location is None and len(positional) >= 2:
        location = positional[1].value
    return location


def load_placement(call: cst.Call) -> str | None:
    """How `torch.load` places the tensors when that is the device they were
    saved from: `WITHOUT_MAP_LOCATION` (none, or `None`), or "with
    `map_location="cuda:0"`"; None when it names another place."""
    location = map_location(call)
    if location is None or (isinstance(location, cst.Name) and location.value == "None"):
        return WITHOUT_MAP_LOCATION
    if isinstance(location, cst.SimpleString) and location.evaluated_value in FIRST_GPU_LOCATIONS:
        return f"with `map_location={location.value}`"
    return None


def in_deviceless_branch(ctx: ModelView) -> bool:
    """Whether the node being visited is in the ``if args.gpu is None:``
    branch of a test whose other branch loads to that device
    (``map_location=f"cuda:{args.gpu}"``, also through a name assigned in
    that branch): the device index is what each process of a
    one-process-per-GPU run owns, so the None branch is the run without one
    (a single process, DataParallel, or one process per node)."""
    for subject, other in none_branches(ctx.stack):
        inside = list(descendants(other, into_functions=False))
        assigned = {
            t.target.value: n.value for n in inside if isinstance(n, cst.Assign)
            for t in n.targets if isinstance(t.target, cst.Name)
        }  # fmt: skip
        for call in inside:
            if isinstance(call, cst.Call) and ctx.qualified_names(call.func) & TORCH_LOADS:
                location = map_location(call)
                if isinstance(location, cst.Name) and location.value in assigned:
                    location = assigned[location.value]  # `loc = "cuda:{}".format(args.gpu)`
                if location is not None and mentions(location, subject):
                    return True
    return False


# ------------------------------------------------------------ where tensors live

_CPU = "cpu"
_NUMBER = "number"
#: How many steps (a name, an operation, a method) one answer follows.
_MAX_DEPTH = 4
_NCCL = re.compile(r"""["'](?:cuda:)?nccl["']|Backend\.NCCL""")
#: Code that makes tensor factories build on the GPU by default.
_DEFAULT_CUDA = re.compile(r"\bset_default_device\(|\bset_default_tensor_type\(\s*torch\.cuda")


class Devices:
    """Walker analysis (``requires = {"devices"}``): where the module's
    tensors live, which backends its process groups use, and whether it pins
    each process to its GPU. Module facts are final after the walk; `on_cpu`
    and `number` answer where they are asked (names resolve there)."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        #: A process group whose backend carries CPU tensors (gloo, or a mixed backend).
        self.cpu_group = False
        #: What an augmented assignment leaves in its name: "cpu" or "number" (`total += n`).
        self._augmented: dict[int, str] = {}
        #: Whether each assignment of `self.<name>` in the module puts a CPU tensor there.
        self._attributes: dict[str, list[bool]] = {}
        #: Module functions whose parameter a collective sends as it is -> {parameter name: collective shown}.
        self._sending: dict[cst.FunctionDef, dict[str, str]] = {}
        self._pinned = False
        #: `dist.barrier(device_ids=[...])` names the GPU of the one collective it makes...
        self._barrier_devices = False
        #: ... unless other collectives (or a DDP wrap) use the group: they need the current device.
        self._other_collectives = False

    # ---------------------------------------------------------- module facts

    @cached_property
    def nccl_in_sight(self) -> bool:
        """Whether the module's process group uses NCCL, by its text: a literal
        NCCL backend, or `init_process_group` in a module that uses CUDA."""
        source = self.ctx.source
        return bool(_NCCL.search(source)) or ("init_process_group" in source and "cuda" in source)

    @cached_property
    def factories_on_gpu(self) -> bool:
        """Whether the module makes tensor factories build on the GPU by default
        (`torch.set_default_device(...)`, `set_default_tensor_type(torch.cuda...)`)."""
        return bool(_DEFAULT_CUDA.search(self.ctx.source))

    @property
    def cpu_tensors_fail(self) -> bool:
        """Whether a collective on a CPU tensor fails here: NCCL in sight and no
        process group that carries CPU tensors (final after the walk)."""
        return self.nccl_in_sight and not self.cpu_group

    @property
    def pins_gpu(self) -> bool:
        """Whether the module pins each process to its GPU (final after the
        walk): `set_device(...)` on any receiver (DeepSpeed's accelerator,
        `torch.accelerator.set_device_index`), `with torch.cuda.device(...)`,
        `init_process_group(..., device_id=...)`, a visible-devices variable it
        writes (`sets_visible_devices`), a library that pins (accelerate,
        Lightning), or a `barrier(device_ids=[...])` that is the only
        collective of a module that wraps no model."""
        return self._pinned or (self._barrier_devices and not self._other_collectives)

    def cpu_attribute(self, node: cst.BaseExpression) -> bool:
        """Whether `node` is `self.<name>` and every assignment of that
        attribute in the module is a CPU tensor (meters keep counters on `self`)."""
        assigned = self._attributes.get(_self_attribute(node) or "")
        return bool(assigned) and all(assigned)

    def builds_on_gpu_here(self) -> bool:
        """Whether tensor factories build on the GPU here: inside ``with
        torch.device(...):``, or in a module that sets the default device."""
        if self.factories_on_gpu:
            return True
        for node in self.ctx.stack:
            if isinstance(node, cst.With):
                for item in node.items:
                    call = item.item
                    if isinstance(call, cst.Call) and self.ctx.qualified_names(call.func) & {"torch.device"}:
                        return True
        return False

    def sent_by_helper(self, call: cst.Call) -> tuple[str, str, str] | None:
        """For a call of a module function that sends a CPU-tensor argument as
        it is with a collective (`reduce_value(t)` over `def reduce_value(x):
        dist.all_reduce(x)`): (the argument, the function, the collective)."""
        func = call.func
        if not isinstance(func, cst.Name) or any(arg.star for arg in call.args):
            return None  # `f(*args)`: positions unknown
        for target in self.ctx.values_of(func):
            sending = self._sending.get(target) if isinstance(target, cst.FunctionDef) else None
            if not sending:
                continue
            for name, arg in bind_to_function(call, target, False).explicit.items():
                if name in sending and self.on_cpu(arg.value):
                    return self.ctx.module.code_for_node(arg.value), target.name.value, sending[name]
        return None

    # ---------------------------------------------------------- walk

    def visit_Import(self, node: cst.Import) -> None:
        self._pinned |= any(_self_pinning(dotted_name(a.name)) for a in node.names)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is not None:
            self._pinned |= _self_pinning(dotted_name(node.module))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            # `os.environ["CUDA_VISIBLE_DEVICES"] = str(local_rank)`, or a child's `env[...] = str(i)`
            self._pinned |= sets_visible_devices(target.target)
            self._note_attribute(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._note_attribute(node.target, node.value)

    def visit_Dict(self, node: cst.Dict) -> None:
        self._pinned |= sets_visible_devices(node)  # `env={"CUDA_VISIBLE_DEVICES": str(i)}`

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """`total += n` keeps the device of `total` (read before the name is bound again)."""
        target = node.target
        if isinstance(target, cst.Name):
            if self.on_cpu(target):
                self._augmented[id(node)] = _CPU
            elif self.number(target) and self.number(node.value):
                self._augmented[id(node)] = _NUMBER

    def visit_Call(self, node: cst.Call) -> None:
        if last_name(node.func) in GROUP_CREATORS:
            backend = group_backend(node)
            self.cpu_group |= backend is not None and carries_cpu(backend)
        self._note_sending(node)
        if not self._pinned:
            self._note_pinning(node)

    def _note_attribute(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        name = _self_attribute(target)
        if name is not None:
            self._attributes.setdefault(name, []).append(self.on_cpu(value))

    def _note_sending(self, call: cst.Call) -> None:
        """`def reduce_value(t): dist.all_reduce(t)`: the function sends what its callers pass."""
        if self.builds_on_gpu_here():
            return
        tensor = sent_tensor(call, self.ctx)
        function = self.ctx.enclosing_function()
        if not isinstance(tensor, cst.Name) or function is None:
            return
        values = self.ctx.values_of(tensor)
        if len(values) == 1 and values[0] in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
            shown = f"`{self.ctx.module.code_for_node(call.func)}()`"
            self._sending.setdefault(function, {}).setdefault(values[0].name.value, shown)

    def _note_pinning(self, node: cst.Call) -> None:
        names = self.ctx.qualified_names(node.func)
        if names & INIT_PROCESS_GROUP:
            self._pinned |= keyword_value(node, "device_id") is not None
        elif sets_visible_devices(node) or last_name(node.func) in DEVICE_SETTERS or names & {"torch.cuda.device"}:
            self._pinned = True
        elif collective_name(node, self.ctx) is not None:
            if last_name(node.func) == "barrier" and keyword_value(node, "device_ids") is not None:
                self._barrier_devices = True
            else:
                self._other_collectives = True
        elif wrapper_of(node, self.ctx) is not None:
            self._other_collectives = True

    # ---------------------------------------------------------- tensors

    def on_cpu(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Whether the tensor `node` certainly lives on the CPU: built by a
        factory without a device (or with `device="cpu"`), moved with `.cpu()`
        or `.to("cpu")`, or derived from such a tensor by an operation that
        keeps the device (`.float()`, `.clone()`, arithmetic with numbers,
        `+=`, `torch.stack` of CPU tensors). A factory is read as the CPU's:
        where code makes factories build on the GPU, `builds_on_gpu_here` says so."""
        if depth > _MAX_DEPTH:
            return False
        depth += 1
        if isinstance(node, cst.Name):
            values = self.ctx.values_of(node)
            return bool(values) and all(self._value_on_cpu(v, depth) for v in values)
        if isinstance(node, cst.BinaryOperation):
            left, right = self.on_cpu(node.left, depth), self.on_cpu(node.right, depth)
            return (left and (right or self.number(node.right, depth))) or (right and self.number(node.left, depth))
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
                return self.on_cpu(func.value, depth)
        names = self.ctx.qualified_names(func)
        if names & TENSOR_JOINS:
            parts = node.args[0].value if node.args else None
            return (
                isinstance(parts, (cst.List, cst.Tuple)) and bool(parts.elements)
                and all(self.on_cpu(e.value, depth) for e in parts.elements)
            )  # fmt: skip
        if not names & TENSOR_FACTORIES:
            return False
        device = keyword_value(node, "device")
        if device is not None:
            return self._is_cpu_device(device)
        if names & LIKE_FACTORIES:  # where its model tensor is
            return bool(node.args) and self.on_cpu(node.args[0].value, depth)
        return True

    def number(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Whether `node` is a Python number (a literal, `len(x)`, `t.item()`, a
        name holding one): arithmetic with it keeps a tensor where it is."""
        if depth > _MAX_DEPTH:
            return False
        depth += 1
        if isinstance(node, (cst.Integer, cst.Float)):
            return True
        if isinstance(node, cst.UnaryOperation):
            return self.number(node.expression, depth)
        if isinstance(node, cst.BinaryOperation):
            return self.number(node.left, depth) and self.number(node.right, depth)
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in NUMBER_METHODS:
                return True
            return bool(self.ctx.qualified_names(node.func) & NUMBER_BUILTIN_QUALNAMES)
        if isinstance(node, cst.Name):
            values = self.ctx.values_of(node)
            return bool(values) and all(
                self._augmented.get(id(v)) == _NUMBER if isinstance(v, cst.AugAssign) else self.number(v, depth)
                for v in values
            )
        return False

    def _value_on_cpu(self, value: cst.CSTNode, depth: int) -> bool:
        if isinstance(value, cst.AugAssign):
            return self._augmented.get(id(value)) == _CPU
        return isinstance(value, cst.BaseExpression) and self.on_cpu(value, depth)

    def _moved_to_cpu(self, call: cst.Call, tensor: cst.BaseExpression, depth: int) -> bool:
        """`t.to("cpu")` is on the CPU; `t.to(torch.float64)` stays where `t` is."""
        device = keyword_value(call, "device")
        positional = [a.value for a in call.args if a.keyword is None]
        if device is None and positional and not self._is_dtype(positional[0]):
            device = positional[0]
        if device is not None:
            return self._is_cpu_device(device)
        return self.on_cpu(tensor, depth)

    def _is_dtype(self, node: cst.BaseExpression) -> bool:
        return any(n and n.startswith("torch.") and n[6:] in TORCH_DTYPES for n in self.ctx.qualified_names(node))

    def _is_cpu_device(self, node: cst.BaseExpression) -> bool:
        """`"cpu"` or `torch.device("cpu")`."""
        if isinstance(node, cst.SimpleString):
            return node.evaluated_value.split(":")[0] == _CPU
        if isinstance(node, cst.Call) and self.ctx.qualified_names(node.func) & {"torch.device"} and node.args:
            return self._is_cpu_device(node.args[0].value)
        return False


def _self_attribute(node: cst.BaseExpression) -> str | None:
    """`name` for `self.name`."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _self_pinning(module: str | None) -> bool:
    return module is not None and any(module == m or module.startswith(m + ".") for m in SELF_PINNING)
