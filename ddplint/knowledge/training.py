"""The training step: gradient accumulation, AMP, losses, metrics, schedules.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations



#: What a test that gates the optimizer step to every k-th micro-batch reads:
#: a modulo (`(step + 1) % accum == 0`) or a word of an accumulation counter
#: or boundary (`is_accumulating`, `micro_step == n - 1`, `update_freq`).
ACCUMULATION_TEST = r"%|(?i:accum|boundary|update_freq|sync_grad|micro_?(?:step|batch)|iters_to_acc)"

#: An optimisation step called (`loops.is_step`: ``loss.backward(``,
#: ``optimizer.step(``), with the spaces and line continuations Python allows
#: around the attribute's dot and before the parenthesis. Not a comment there
#: (``optimizer.  # why\n step()``, which no real code writes): each dot of a
#: line would read the rest of the line for one, quadratic on a long line.
_GAP = r"(?:\s|\\\r?\n)*"
STEP_CALL = rf"\.{_GAP}(?:backward|step){_GAP}\("

#: Texts that show a module controls DDP's gradient sync itself: the
#: `no_sync` context (DDP, FSDP, Fabric's `no_backward_sync`), the flag it
#: flips (nanoGPT's `require_backward_grad_sync = ...`), accelerate's `accumulate`.
SYNC_CONTROLS = ("no_sync", "require_backward_grad_sync", "no_backward_sync", ".accumulate(", "skip_sync", "sync_gradients")

#: Texts that show gradients reduced by hand after DDP's syncs were skipped.
MANUAL_REDUCE = ("all_reduce", "allreduce", "reduce_gradients", "reduce_grads", "sync_grads")

#: Methods a `no_sync` block may call around a backward without running a forward
#: (`scaler.scale(loss).backward()`, `(loss / k).mean().backward()`, `loss.item()`).
BACKWARD_CHAIN_METHODS = frozenset({"backward", "scale", "mean", "sum", "float", "detach", "item", "div", "mul", "div_", "mul_"})

#: Methods that accumulate a batch's predictions into a metric or a list that
#: one becomes: evaluate's and torchmetrics' `add_batch`/`update`, list `append`/`extend`.
METRIC_SINK_METHODS = frozenset({"add_batch", "add", "update", "append", "extend"})

#: Functions that compute a metric from predictions (scikit-learn's, by package).
METRIC_FUNCTION_PREFIXES = ("sklearn.metrics.",)

#: Keywords of learning-rate scheduler constructors that count optimizer
#: steps (transformers/diffusers `get_scheduler` and `get_*_schedule_with_warmup`,
#: torch's `OneCycleLR`, `CosineAnnealingLR`, `LinearLR`, timm's schedulers).
SCHEDULE_LENGTH_KEYWORDS = frozenset({
    "num_training_steps", "num_warmup_steps", "total_steps", "T_max", "total_iters", "warmup_steps",
    "max_steps", "t_initial", "warmup_t",
})  # fmt: skip

#: Words of a step count already scaled to what a prepared scheduler sees.
PROCESS_COUNT_WORDS = ("num_processes", "world_size", "num_replicas", "get_world_size", "n_gpu", "num_gpus")

#: `Accelerator(...)` keywords that make a prepared scheduler step once per call.
SCHEDULER_STEP_KEYWORDS = frozenset({"split_batches", "step_scheduler_with_optimizer", "dataloader_config"})

#: The collectives that bring the shards' predictions or counts together, by their own name.
EVAL_GATHERS = frozenset({"gather", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "reduce"})

#: The functions that clip gradients in place.
GRADIENT_CLIPS = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_value_", "torch.nn.utils.clip_grad_norm",
    }
)  # fmt: skip

#: A model's own clip method (FSDP's `model.clip_grad_norm_(1.0)`), and a trainer's.
CLIP_METHODS = frozenset({"clip_grad_norm_", "clip_grad_value_"})

#: Receivers whose `clip_grad_norm_` unscales first (accelerate, Fabric, DeepSpeed engines).
UNSCALING_CLIP_OWNERS = ("accelerator", "fabric", "engine", "booster", "trainer", "strategy")

#: Contexts in which autograd records no graph.
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})

#: `set_grad_enabled(False)` turns it off too.
GRAD_MODE_SETTERS = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})

#: Methods and functions that release the autograd graph of a tensor.
DETACHING = frozenset({"item", "detach", "tolist", "numpy", "detach_"})

NUMBER_CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})

#: Words of callee names that produce a loss or the outputs it is computed from.
LOSS_PRODUCER_WORDS = ("loss", "criterion", "model", "forward", "net", "module")

#: Words of receivers whose `.backward(loss)` back-propagates its argument
#: (`accelerator.backward(loss)`, `engine.backward(loss)`, `optimizer.backward(loss)`).
BACKWARD_OWNERS = ("accelerator", "engine", "optim", "fabric", "booster", "scaler", "trainer", "strategy")

#: Methods of a list accumulator that do not use its elements as tensors.
LIST_METHODS = frozenset({"append", "extend", "clear", "pop", "insert"})

#: Builtins that treat an accumulated float and a scalar tensor alike.
NUMBER_BUILTINS = frozenset({"print", "len", "float", "int", "str", "repr", "round", "format", "min", "max", "sum", "abs"})

#: The device-specific AMP modules deprecated in PyTorch 2.4.
DEPRECATED_AMP_MODULES = ("torch.cuda.amp", "torch.cpu.amp")

#: Their APIs, by qualified name (the submodule spellings are where the classes
#: live; users do import them directly) -> (the `torch.amp` replacement, its
#: device, how the arguments change: "autocast", "scaler" or "decorator", and
#: the replacement as a message shows it).
DEPRECATED_AMP = {
    f"torch.{device}.amp.{old}": (f"torch.amp.{new}", device, kind, shown.format(device))
    for device in ("cuda", "cpu")
    for old, new, kind, shown in (
        ("autocast", "autocast", "autocast", 'torch.amp.autocast("{}", ...)'),
        ("autocast_mode.autocast", "autocast", "autocast", 'torch.amp.autocast("{}", ...)'),
        ("GradScaler", "GradScaler", "scaler", 'torch.amp.GradScaler("{}", ...)'),
        ("grad_scaler.GradScaler", "GradScaler", "scaler", 'torch.amp.GradScaler("{}", ...)'),
        ("custom_fwd", "custom_fwd", "decorator", 'torch.amp.custom_fwd(device_type="{}", ...)'),
        ("autocast_mode.custom_fwd", "custom_fwd", "decorator", 'torch.amp.custom_fwd(device_type="{}", ...)'),
        ("custom_bwd", "custom_bwd", "decorator", 'torch.amp.custom_bwd(device_type="{}")'),
        ("autocast_mode.custom_bwd", "custom_bwd", "decorator", 'torch.amp.custom_bwd(device_type="{}")'),
    )
    if device == "cuda" or kind != "decorator"  # torch.cpu.amp has no custom_fwd/custom_bwd
}  # fmt: skip

#: `torch.cuda.amp.autocast`'s positional parameters (`torch.amp.autocast` puts `device_type` first).
DEPRECATED_AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")
