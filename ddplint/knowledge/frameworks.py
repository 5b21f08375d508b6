"""Training frameworks and launchers: Lightning, Accelerate, Fabric, HF Trainer, DeepSpeed, torchrun.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrameworkType:
    """A framework class whose methods ddplint knows, and how code names an
    object of it: built from one of `classes` (or a subclass of one), annotated
    with one, or, with nothing else known, called one of `names` in a module
    that imports one of `packages`."""

    key: str
    classes: frozenset[str]
    names: frozenset[str]
    packages: tuple[str, ...]

LIGHTNING_TRAINER = "lightning.Trainer"

#: The `pytorch_lightning` package's Trainer: code that imports it is often
#: pinned to Lightning 1.x, whose `save_checkpoint` has no barrier.
PL_TRAINER = "pytorch_lightning.Trainer"

HF_TRAINER = "transformers.Trainer"

#: Packages whose trainer classes reseed every rank with `args.seed`
#: themselves (`transformers.Trainer`, `trl.SFTTrainer`, ...; Lightning's does not).
HF_TRAINER_PACKAGES = ("transformers.", "trl.")

FABRIC = "lightning.Fabric"

ACCELERATOR = "accelerate.Accelerator"

FRAMEWORK_TYPES: tuple[FrameworkType, ...] = (
    FrameworkType(LIGHTNING_TRAINER, frozenset({
        "lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
    }), frozenset({"trainer"}), ("lightning",)),
    FrameworkType(PL_TRAINER, frozenset({
        "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer",
    }), frozenset({"trainer"}), ("pytorch_lightning",)),
    FrameworkType(HF_TRAINER, frozenset({
        "transformers.Trainer", "transformers.trainer.Trainer", "transformers.Seq2SeqTrainer",
        "transformers.trainer_seq2seq.Seq2SeqTrainer", "trl.SFTTrainer", "trl.DPOTrainer", "trl.ORPOTrainer",
        "trl.KTOTrainer", "trl.CPOTrainer", "trl.RewardTrainer", "trl.GRPOTrainer", "trl.PPOTrainer",
        "trl.RLOOTrainer", "trl.GKDTrainer", "trl.IterativeSFTTrainer", "trl.OnlineDPOTrainer",
        "trl.trainer.SFTTrainer", "trl.trainer.DPOTrainer", "trl.trainer.sft_trainer.SFTTrainer",
        "trl.trainer.dpo_trainer.DPOTrainer",
    }), frozenset({"trainer"}), ("transformers", "trl")),
    FrameworkType(FABRIC, frozenset({"lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
                                     "lightning.fabric.fabric.Fabric", "lightning_fabric.fabric.Fabric"}),
                  frozenset({"fabric"}), ("lightning", "lightning_fabric")),
    FrameworkType(ACCELERATOR, frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"}),
                  frozenset({"accelerator"}), ("accelerate",)),
)  # fmt: skip

#: Collective methods of framework objects: (type, method) -> why.
#: Lightning's `Trainer.save_checkpoint` writes on rank 0 and ends in
#: `strategy.barrier()` (Lightning 2.x, the `lightning` package; the 1.x
#: `pytorch_lightning` releases many projects pin have no barrier there:
#: `PL_TRAINER` has no collective); Fabric's `save`/`load` must be called on
#: every process.
FRAMEWORK_COLLECTIVES: dict[tuple[str, str], str] = {
    (LIGHTNING_TRAINER, "save_checkpoint"): "it ends in a barrier of every rank",
    (HF_TRAINER, "save_model"): "",
    (FABRIC, "save"): "it gathers the state and ends in a barrier of every rank",
    (FABRIC, "load"): "every rank reads its part of the state",
    (FABRIC, "barrier"): "",
    (FABRIC, "broadcast"): "",
    (FABRIC, "all_gather"): "",
    (FABRIC, "all_reduce"): "",
}  # fmt: skip

#: Framework calls that are collectives under some backends only -> (the
#: backends, what gathers there, how to call it instead), as the message says them.
BACKEND_DEPENDENT: dict[tuple[str, str], tuple[str, str, str]] = {
    ("accelerate", "save_state"): (
        "DeepSpeed, FSDP and Megatron-LM", "accelerate gathers the state",
        "call it on every rank, or add the backend to the condition "
        "(`or accelerator.distributed_type == DistributedType.DEEPSPEED`)",
    ),
    ("accelerate", "load_state"): (
        "DeepSpeed, FSDP and Megatron-LM", "accelerate gathers the state",
        "call it on every rank, or add the backend to the condition "
        "(`or accelerator.distributed_type == DistributedType.DEEPSPEED`)",
    ),
    (HF_TRAINER, "save_model"): (
        "FSDP and DeepSpeed", "the Trainer gathers the model's weights",
        "call it on every rank: the Trainer writes on the main process only (`args.should_save`)",
    ),
}  # fmt: skip

#: Keywords of a per-rank launcher object (`Fabric(devices=1)`) whose value 1
#: makes it a one-process run: the devices per node, and the nodes (default 1).
ONE_PROCESS_KEYWORDS = ("devices", "num_nodes")

#: Fabric methods that wrap a model for the strategy (the first value returned).
FABRIC_WRAPPERS = frozenset({"setup_module", "setup"})

#: A Fabric strategy (its name or class) -> how the wrapped model's forward synchronises.
FABRIC_STRATEGY_WORDS = (("fsdp", "FSDP"), ("deepspeed", None), ("xla", None), ("ddp", "DDP"))

#: `deepspeed.initialize(...)`: returns (engine, optimizer, dataloader, lr_scheduler).
DEEPSPEED_INITIALIZE = frozenset({"deepspeed.initialize", "deepspeed.__init__.initialize"})

#: Where each part of `deepspeed.initialize`'s result is.
DEEPSPEED_ENGINE, DEEPSPEED_OPTIMIZER = 0, 1

#: The argv spellings of the local rank: torch.distributed.launch passed
#: `--local_rank=N` before PyTorch 2.0 and passes `--local-rank=N` since; the
#: DeepSpeed launcher passes `--local_rank=N`; torchrun passes neither (it sets `LOCAL_RANK`).
LOCAL_RANK_FLAGS = ("--local_rank", "--local-rank")

#: Calls that show a script is started by the DeepSpeed launcher (which passes `--local_rank`).
DEEPSPEED_ENTRY_POINTS = frozenset({"deepspeed.add_config_arguments", "deepspeed.initialize"})

#: `Accelerator` methods that return their arguments wrapped (in order, one
#: per argument): a prepared loader is sharded and its last batch padded.
PREPARE_METHODS = frozenset({"prepare", "prepare_data_loader", "prepare_scheduler"})
