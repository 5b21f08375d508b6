"""Devices: set_device, visible-device variables, where tensors live, process-group backends.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations

from ddplint.knowledge.frameworks import FABRIC, FRAMEWORK_TYPES, LIGHTNING_TRAINER


#: Framework launchers that start one process per device: built with
#: `devices=1` (and one node), the script is a single process.
DEVICE_LAUNCHERS = frozenset(
    name for framework in FRAMEWORK_TYPES if framework.key in (LIGHTNING_TRAINER, FABRIC) for name in framework.classes
)

#: Calls that pin the process to a device by index: `torch.cuda.set_device(i)`,
#: DeepSpeed's `get_accelerator().set_device(i)`, `torch.accelerator.set_device_index(i)`.
DEVICE_SETTERS = frozenset({"set_device", "set_device_index"})

#: Environment variables that make a process see only the GPUs they list: set
#: per process (from the local rank), its one GPU is `cuda:0` to it.
VISIBLE_DEVICES_VARIABLES = frozenset({"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"})

#: Methods and functions that set an environment variable: `os.environ.setdefault(k, v)`,
#: `os.environ.update({k: v})`, `os.putenv(k, v)`.
ENV_SETTERS = frozenset({"setdefault", "update", "putenv"})

#: `torch.distributed` collectives that send a tensor -> the position of that tensor.
TENSOR_COLLECTIVES = {
    "all_reduce": 0, "reduce": 0, "broadcast": 0, "all_gather": 1, "all_gather_into_tensor": 1,
    "reduce_scatter_tensor": 1, "all_to_all_single": 1, "gather": 0, "scatter": 0,
    "send": 0, "recv": 0, "isend": 0, "irecv": 0,
}  # fmt: skip

#: The keywords that name the tensor a collective sends.
TENSOR_KEYWORDS = frozenset({"tensor", "input_tensor", "input"})

#: The modules whose collectives `TENSOR_COLLECTIVES` names.
TENSOR_COLLECTIVE_MODULES = frozenset({"torch.distributed", "torch.distributed.distributed_c10d"})

#: Factories that build a tensor on the CPU unless given a device.
TENSOR_FACTORIES = frozenset(
    {
        "torch.tensor", "torch.as_tensor", "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange",
        "torch.zeros_like", "torch.ones_like", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor",
        "torch.LongTensor", "torch.IntTensor", "torch.DoubleTensor", "torch.rand", "torch.randn", "torch.randint",
        "torch.randperm", "torch.linspace", "torch.logspace", "torch.eye", "torch.empty_strided",
        "torch.empty_like", "torch.full_like", "torch.rand_like", "torch.randn_like", "torch.randint_like",
    }
)  # fmt: skip

#: Factories that build where their first argument lives unless given a device.
LIKE_FACTORIES = frozenset(
    {"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like", "torch.rand_like",
     "torch.randn_like", "torch.randint_like"}
)  # fmt: skip

#: Functions that join tensors where they live (`torch.stack([a, b])`).
TENSOR_JOINS = frozenset({"torch.stack", "torch.cat", "torch.concat"})

#: Tensor methods whose result lives where the tensor does.
SAME_DEVICE_METHODS = frozenset(
    {
        "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char", "clone", "detach",
        "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "t", "sum", "mean", "abs", "pin_memory",
        "type_as", "add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_", "fill_", "zero_",
    }
)  # fmt: skip

#: `torch.<dtype>` names: `t.to(torch.float64)` changes the type, not the device.
TORCH_DTYPES = frozenset(
    {"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long", "int32", "int",
     "int16", "int8", "uint8", "bool"}
)  # fmt: skip

#: Builtins that give Python numbers (`len(x)`).
NUMBER_BUILTIN_QUALNAMES = frozenset({"builtins.len", "builtins.int", "builtins.float", "builtins.round", "builtins.abs"})

#: Tensor methods that give Python numbers (`t.item()`).
NUMBER_METHODS = frozenset({"item", "numel", "size", "dim"})

#: Functions that create a process group, whose backend says which tensors it moves.
GROUP_CREATORS = frozenset({"init_process_group", "new_group"})

#: `init_process_group` by its qualified names.
INIT_PROCESS_GROUP = frozenset(
    {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}
)

#: Libraries that pin each process to its GPU themselves.
SELF_PINNING = ("accelerate", "lightning", "pytorch_lightning")

#: `torch.load` by its qualified names.
TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})

#: `map_location` values that send every rank's copy to the first GPU
#: (`"cuda"` alone is the current device: the rank's own after `set_device`).
FIRST_GPU_LOCATIONS = frozenset({"cuda:0"})
