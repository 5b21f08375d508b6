"""Models and their wrappers: DDP/FSDP/DeepSpeed wrappers, modules, layers with buffers.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations

from ddplint.knowledge.frameworks import DEEPSPEED_INITIALIZE


#: Layers that hold buffers DDP broadcasts before a forward (running statistics).
BUFFERED_LAYERS = frozenset({
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d",
})  # fmt: skip

#: torch.nn layers without buffers (InstanceNorm tracks none by default).
BUFFERLESS_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "GELU", "SiLU", "Mish", "ELU", "SELU", "CELU", "Tanh", "Sigmoid",
    "Softmax", "LogSoftmax", "Softplus", "Hardtanh", "Hardswish", "Hardsigmoid", "Identity", "Flatten",
    "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "Upsample",
    "MultiheadAttention", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "Transformer",
    "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
})  # fmt: skip

#: Containers whose buffers are their children's.
MODULE_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})

#: Methods of a module that return it (or it in place): `model.cuda()`, `model.to(device)`.
MODULE_RETURNING_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "to_empty", "train", "requires_grad_"})

# (analysis/wrappers.py: which names hold a wrapped model, the bare module, forwards around the wrapper, wrap order)

#: DistributedDataParallel: its forward arms the hooks that all-reduce the gradients.
DDP_CLASSES = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"})

#: FSDP1's wrapper class.
FSDP_CLASSES = frozenset({
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
})  # fmt: skip

#: FSDP2: shards the module in place and returns it.
FULLY_SHARD = frozenset({
    "torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed.fsdp.fully_shard.fully_shard",
})  # fmt: skip

#: Single-process, multi-GPU DataParallel.
DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"})

#: Wrappers that replace the module's parameters (FSDP flattens them, `fully_shard`
#: turns them into DTensors): an optimizer built before holds tensors the module no longer uses.
SHARDING_WRAPPERS = FSDP_CLASSES | FULLY_SHARD

#: FSDP1's keyword that keeps the original parameter objects (as views of the flat ones).
KEEPS_PARAMETERS = "use_orig_params"

#: The names a wrapper is called by when its import is not followed (`DDP(model)`,
#: `FSDP(model)`, accelerate's `accelerator.prepare(model)`).
WRAPPER_CALL_NAMES = frozenset({"DDP", "FSDP", "prepare"})

#: The attribute that holds a wrapper's bare module (`model.module`).
BARE_MODULE = "module"

#: Calls that return the bare module of a wrapper (`accelerator.unwrap_model(model)`).
UNWRAP_CALLS = frozenset({"unwrap_model", "unwrap"})

#: Converts a module's BatchNorm layers in place (before wrapping, not after).
SYNC_BATCHNORM_CONVERSION = "convert_sync_batchnorm"

#: Methods of the bare module that build no training graph: state, devices,
#: modes, generation and saving (`model.module.state_dict()`).
NOT_FORWARDS = frozenset({
    "state_dict", "load_state_dict", "parameters", "named_parameters", "buffers", "named_buffers", "modules",
    "named_modules", "children", "named_children", "save_pretrained", "push_to_hub", "generate", "sample",
    "train", "eval", "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "zero_grad", "apply",
    "requires_grad_", "register_buffer", "register_parameter", "register_module", "num_parameters",
    "tie_weights", "resize_token_embeddings", "print_trainable_parameters", "extra_repr", "no_sync",
})  # fmt: skip

#: Name prefixes and suffixes of non-forward methods (setters, switches, hooks, schedules).
NOT_FORWARD_PREFIXES = (
    "set_", "update_", "get_", "reset_", "init_", "load_", "save_", "register_", "log_", "print_", "freeze",
    "unfreeze", "enable_", "disable_", "clip_", "_",
)  # fmt: skip

NOT_FORWARD_SUFFIXES = ("_enable", "_disable", "_")

#: Words in the name of a model copy (timm's `ModelEma`, a mean teacher), not the trained wrapper.
MODEL_COPY_WORDS = ("ema", "teacher", "target", "momentum", "average", "swa")

#: Methods of a model whose result lists its parameters (what an optimizer is built from).
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})

#: Optimizer classes known by their name alone (besides `torch.optim.*` and names with "optim").
OPTIMIZER_NAMES = frozenset({"AdamW", "Adam", "SGD", "Adagrad", "RMSprop", "Lion", "Adafactor", "LAMB", "Muon"})

#: Methods that move a module and return it (`model.cuda()`, `model.to(device)`).
MOVING_METHODS = frozenset({"cuda", "to"})

#: Functions that save a state dict to a file.
STATE_DICT_SAVES = frozenset({"torch.save", "safetensors.torch.save_file"})

#: The key prefix a DDP/DataParallel wrapper's state dict gives every parameter.
WRAPPED_KEY_PREFIX = "module."

#: Keywords through which a loader is handed the model its checkpoint loads back into.
LOADED_INTO_KEYWORDS = frozenset({"state_dict", "model"})

#: Wrappers and conversions that return the model they are given (its first argument, or `module=`).
MODEL_WRAPPERS = DDP_CLASSES | DATA_PARALLEL | frozenset({"torch.compile", "torch.nn.SyncBatchNorm.convert_sync_batchnorm"})

#: Text (a regular expression) that shows a module wraps a model whose backward
#: all-reduces: DDP, FSDP, a DeepSpeed engine.
WRAPS_MODELS_TEXT = "|".join((
    *sorted({n.rsplit(".", 1)[1] for n in DDP_CLASSES | FSDP_CLASSES}),
    *sorted({rf"\b{n.rsplit('.', 1)[1]}\b" for n in FULLY_SHARD}),
    *(rf"\b{n}\(" for n in sorted(WRAPPER_CALL_NAMES - {"prepare"})),
    *sorted(n.replace(".", r"\.") for n in DEEPSPEED_INITIALIZE if n.count(".") == 1),
))  # fmt: skip
