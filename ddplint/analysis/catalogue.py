"""What ddplint knows about ranks, written once, as data.

Every way training code learns or tests which process it is — environment
variables the launchers set, library functions, conventional helper and
attribute names, predicates, decorators and staggering context managers —
is one `RankSource` here. The analyses read their sets from this table
(`rank`, `rank_kinds`, `rank_sets`) and the text prefilter derives its
needles from it (`RANK_TEXT`, `GLOBAL_RANK_TEXT`), so a source added here is
recognised everywhere at once: a guard on ``os.environ["SLURM_NODEID"]``
both passes the prefilter and makes a rank test, and a helper in another
module that tests it becomes a cross-file fact. `tests/test_catalogue.py`
checks each entry end to end.

No LibCST here: the prefilter imports this module for every file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# What a source's value is.
GLOBAL = "global"  #: the rank in the whole job
LOCAL = "local"  #: the rank within one node (what picks a GPU)
NODE = "node"  #: the node's index: every rank of one node shares it
VALUE = "value"  #: a rank of some group, which one not known
MAIN = "main"  #: a predicate true on the job's first (main) process only
NODE_MAIN = "node-main"  #: a predicate true on one process per node
ONE = "one"  #: a predicate true on one rank other than the main one
SOME = "some"  #: runs its body on some ranks only (decorators)
STAGGERED = "staggered"  #: runs its body on every rank, at different times

# How the code names it.
ENV = "env"  #: an environment variable (``os.environ["RANK"]``, ``os.getenv``)
FUNCTION = "function"  #: a qualified library function (``torch.distributed.get_rank``)
CALL = "call"  #: a function of this name, whichever module defines it
NAME = "name"  #: a variable or attribute of this name
DECORATOR = "decorator"  #: a decorator of this name
CONTEXT = "context"  #: a context manager (method or function) of this name


@dataclass(frozen=True)
class RankSource:
    """One way code learns or tests its rank: `text` in the `form` given,
    whose value (or truth) is `kind`."""

    text: str
    form: str
    kind: str
    #: A library's own API (not a project's convention): only code that runs
    #: once per rank uses it.
    library: bool = False

    @property
    def token(self) -> str:
        """The text a file must contain to use it (a function's own name)."""
        return self.text.rsplit(".", 1)[-1]


def _sources(form: str, kind: str, texts: Iterable[str], library: bool = False) -> tuple[RankSource, ...]:
    return tuple(RankSource(text, form, kind, library or form in (ENV, FUNCTION)) for text in texts)


RANK_SOURCES: tuple[RankSource, ...] = (
    # torchrun / torch.distributed.launch, SLURM, Open MPI, MPICH/Intel MPI, PMIx.
    *_sources(ENV, GLOBAL, ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")),
    *_sources(ENV, LOCAL, ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")),
    *_sources(ENV, NODE, ("GROUP_RANK", "NODE_RANK", "SLURM_NODEID")),
    *_sources(FUNCTION, GLOBAL, (
        "torch.distributed.get_rank", "torch.distributed.distributed_c10d.get_rank", "deepspeed.comm.get_rank",
        "ignite.distributed.get_rank", "torch_xla.core.xla_model.get_ordinal", "torch_xla.runtime.global_ordinal",
    )),
    *_sources(FUNCTION, LOCAL, (
        "torch.distributed.get_node_local_rank", "deepspeed.comm.get_local_rank", "ignite.distributed.get_local_rank",
        "torch_xla.core.xla_model.get_local_ordinal", "torch_xla.runtime.local_ordinal",
    )),
    *_sources(FUNCTION, NODE, ("ignite.distributed.get_node_rank",)),
    *_sources(FUNCTION, VALUE, ("torch.distributed.get_group_rank", "torch.distributed.get_global_rank")),
    # `from utils.dist import get_rank`, detectron2's `comm.get_local_rank()`, mpi4py's `comm.Get_rank()`.
    *_sources(CALL, VALUE, (
        "get_rank", "get_local_rank", "get_global_rank", "get_node_local_rank", "get_node_rank", "Get_rank",
        "get_process_index", "get_ordinal", "get_local_ordinal", "global_ordinal", "local_ordinal",
    )),
    *_sources(NAME, GLOBAL, ("process_index", "global_rank", "world_rank"), library=True),
    *_sources(NAME, LOCAL, ("local_process_index", "local_rank"), library=True),
    *_sources(NAME, NODE, ("node_rank",)),
    *_sources(NAME, VALUE, ("rank",)),
    # Libraries' own predicates (accelerate, Lightning, Hugging Face Trainer), then conventional names.
    *_sources(NAME, MAIN, ("is_main_process", "is_global_zero", "is_world_process_zero"), library=True),
    *_sources(NAME, NODE_MAIN, ("is_local_main_process", "is_local_process_zero"), library=True),
    *_sources(NAME, MAIN, (
        "is_master", "is_main", "master_process", "is_rank_zero", "is_rank_0", "is_leader", "is_primary",
        "is_first_process", "should_save", "is_master_ordinal",
    )),
    *_sources(NAME, NODE_MAIN, ("is_local_master", "is_local_primary")),
    *_sources(NAME, ONE, (
        "is_last_process", "is_last_stage", "is_pipeline_last_stage", "is_first_stage", "is_pipeline_first_stage",
    )),
    # Lightning's and accelerate's decorators.
    *_sources(DECORATOR, SOME, (
        "rank_zero_only", "on_main_process", "on_local_main_process", "on_process", "on_local_process",
        "on_last_process",
    ), library=True),
    # accelerate's, and YOLOv5's `torch_distributed_zero_first` by name, imported or not.
    *_sources(CONTEXT, STAGGERED, (
        "main_process_first", "local_main_process_first", "torch_distributed_zero_first", "distributed_zero_first",
        "rank_zero_first", "zero_rank_first", "priority_execution",
    )),
)  # fmt: skip


def texts(form: str, *kinds: str) -> frozenset[str]:
    """The sources' texts of one form (and, if given, of these kinds)."""
    return frozenset(s.text for s in RANK_SOURCES if s.form == form and (not kinds or s.kind in kinds))


def covering_needles(words: Iterable[str], seeds: Iterable[str] = ()) -> tuple[str, ...]:
    """Few substrings such that every word contains one: the `seeds`, then
    each word (shortest first) that contains none of those already chosen."""
    needles = list(dict.fromkeys(seeds))
    for word in sorted(set(words), key=lambda w: (len(w), w)):
        if not any(needle in word for needle in needles):
            needles.append(word)
    return tuple(sorted(needles))


#: Words only code that runs once per rank uses: the libraries' rank API.
PER_RANK_WORDS = frozenset(s.token for s in RANK_SOURCES if s.library) | texts(CALL)

#: `<anything>_rank` names hold a process's rank in some group (`ddp_rank`,
#: `dist_rank`, `pipeline_rank`), except these, which are arguments or sizes;
#: hence the "rank" seeds of the needles.
RANK_SUFFIX = "_rank"
NOT_RANKS = frozenset(
    {
        "lora_rank", "matrix_rank", "low_rank", "max_rank", "min_rank", "src_rank", "dst_rank",
        "root_rank", "peer_rank", "target_rank", "dest_rank", "source_rank", "num_rank", "svd_rank",
    }
)  # fmt: skip
_RANK_SEEDS = ("rank", "RANK")

#: Text without which a file can hold no rank source (nor a rank test).
RANK_TEXT = covering_needles((s.token for s in RANK_SOURCES), _RANK_SEEDS)
#: Text without which a file can name no global rank.
#: (`get_rank()` is the global rank unless given a group.)
GLOBAL_RANK_TEXT = covering_needles(
    (s.token for s in RANK_SOURCES if s.kind == GLOBAL or s.text == "get_rank"), ("RANK",)
)


# --------------------------------------------------------------- frameworks


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

#: Framework launchers that start one process per device: built with
#: `devices=1` (and one node), the script is a single process.
DEVICE_LAUNCHERS = frozenset(
    name for framework in FRAMEWORK_TYPES if framework.key in (LIGHTNING_TRAINER, FABRIC) for name in framework.classes
)

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

#: Calls that pin the process to a device by index: `torch.cuda.set_device(i)`,
#: DeepSpeed's `get_accelerator().set_device(i)`, `torch.accelerator.set_device_index(i)`.
DEVICE_SETTERS = frozenset({"set_device", "set_device_index"})
#: Environment variables that make a process see only the GPUs they list: set
#: per process (from the local rank), its one GPU is `cuda:0` to it.
VISIBLE_DEVICES_VARIABLES = frozenset({"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"})
#: Methods and functions that set an environment variable: `os.environ.setdefault(k, v)`,
#: `os.environ.update({k: v})`, `os.putenv(k, v)`.
ENV_SETTERS = frozenset({"setdefault", "update", "putenv"})
# ------------------------------------------------------------ where writes go (DDP006)

#: Constructors of in-memory streams: `torch.save(obj, io.BytesIO())` serialises
#: into memory (to send the bytes to other ranks), no file is written.
IN_MEMORY_STREAMS = frozenset({"io.BytesIO", "io.StringIO", "_io.BytesIO", "_io.StringIO"})
#: The null device: a write there writes no file (`open(os.devnull, "w")` to silence output).
NULL_DEVICES = frozenset({"os.devnull"})
#: Cross-process file locks: writes inside `with FileLock(path):` are serialised on purpose.
FILE_LOCKS = frozenset({"filelock.FileLock", "filelock.SoftFileLock", "filelock.UnixFileLock", "filelock.WindowsFileLock"})
#: Calls that create a fresh temporary file or directory for the calling
#: process (a random name per call): a path under one is the process's own.
TEMPORARY_PATHS = frozenset({
    "tempfile.mkdtemp", "tempfile.mkstemp", "tempfile.TemporaryDirectory", "tempfile.NamedTemporaryFile",
    "tempfile.TemporaryFile", "tempfile.SpooledTemporaryFile",
})  # fmt: skip
#: Calls and methods whose result is a path that keeps every part of its
#: arguments (a unique part keeps it unique); `os.path.dirname` does not.
PATH_BUILDERS = frozenset({
    "os.path.join", "os.path.abspath", "os.path.expanduser", "os.path.normpath", "os.path.realpath",
    "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "builtins.str", "os.fspath",
})  # fmt: skip
PATH_BUILDER_METHODS = frozenset({"joinpath", "format", "with_suffix", "resolve", "absolute", "expanduser"})



#: pandas calls that build a DataFrame: its text columns are object arrays,
#: one Python object per cell, each with a reference count a read writes.
PANDAS_FRAMES = frozenset(
    {
        "pandas.read_csv", "pandas.read_table", "pandas.read_json", "pandas.read_parquet", "pandas.read_pickle",
        "pandas.read_excel", "pandas.read_feather", "pandas.read_sql", "pandas.DataFrame", "pandas.concat",
        "pandas.merge",
    }
)  # fmt: skip
#: Row and cell indexers of a DataFrame (`df.iloc[idx]`).
FRAME_INDEXERS = frozenset({"iloc", "loc", "at", "iat"})
#: A column's (or frame's) NumPy array: an object array for text columns.
FRAME_ARRAYS = frozenset({"values", "to_numpy", "array"})
#: Words of column names that hold text (paths, captions): object arrays.
TEXT_COLUMN_WORDS = ("path", "file", "name", "text", "caption", "url", "image", "img", "sentence", "prompt", "question", "answer", "video", "audio", "wav")
#: List methods that grow a list with the items of another (`samples.extend(glob(...))`).
LIST_GROWERS = frozenset({"extend"})


# ------------------------------------------------------------ randomness (DDP008)

#: Text without which a module's functions and classes bring no per-rank
#: randomness that other modules need to know of (a project fact): a model
#: put in train mode and stepped, or noise drawn (`seeding.draws_noise`).
#: Text of noise drawn in a module function (a fact only outside classes:
#: `nn.Parameter(torch.randn(...))` in a model's `__init__` is no draw per rank).
NOISE_TEXT = ("randn", "randint", "rand_like")
#: Text of a trainer: a model put in train mode and optimisation steps taken.
TRAIN_MODE_TEXT = (".train(",)
STEP_TEXT = (".backward(", ".step(")

#: torch.nn layers that draw random numbers in train mode.
RANDOM_NN_LAYERS = frozenset({
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "RReLU",
})  # fmt: skip
#: torch.nn layers whose `dropout` argument defaults to a non-zero rate (0.1).
DROPOUT_BY_DEFAULT = frozenset({"Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer"})
#: torch.nn.functional calls (and torch's own) that draw in training.
RANDOM_FUNCTIONS = frozenset({
    "torch.nn.functional.dropout", "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
    "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout", "torch.nn.functional.feature_alpha_dropout",
    "torch.nn.functional.rrelu", "torch.nn.functional.gumbel_softmax", "torch.dropout", "torch.alpha_dropout",
    "torch.feature_dropout", "torch.feature_alpha_dropout", "torch.rrelu",
})  # fmt: skip
#: Names of layers and helpers that draw in training whoever defines them
#: (`DropPath`, timm's `drop_path`, torchvision's `StochasticDepth`), and
#: keyword arguments that set a dropout rate (`dropout=`, `drop_rate=`,
#: `attn_pdrop=`, `hidden_dropout_prob=`, `dropout_p=`): a rate other than a
#: literal zero may draw.
RANDOM_LAYER_NAME = r"(?i:drop_?(?:out|path|rate|_prob|_p\b))|(?i:pdrop)|StochasticDepth|\bstochastic_depth\b"
#: Methods of a module that return it (or it in place): `model.cuda()`, `model.to(device)`.
MODULE_RETURNING_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "to_empty", "train", "requires_grad_"})
#: Rank helpers a module imports by these names (``from .utils import
#: is_main_process``, ``from utils.dist import get_rank``): whichever module
#: defines them, importing one shows that the importer runs once per rank.
RANK_HELPER_NAMES = texts(CALL) | texts(NAME, MAIN, NODE_MAIN)

#: Words in a function's name that say it runs on one rank only
#: (``save_on_master``, ``log_rank0``): a rank test in its body does not make
#: it an entry point that every rank runs.
ONE_RANK_FUNCTION_WORDS = ("master", "main_process", "rank0", "rank_0", "rank_zero", "zero_rank", "primary", "leader")

#: What replaces `print` for the whole process when assigned (MoCo's
#: `builtins.print = print_pass`, Python 2's `__builtin__`); `__builtins__`
#: is the module's own reference to it (`__builtins__.print = ...`, or its
#: dict: `__builtins__["print"] = ...`).
PRINT_TARGETS = frozenset({"builtins.print", "__builtin__.print"})
BUILTINS_MODULES = frozenset({"builtins", "__builtin__"})

#: Calls that configure what a `logging` logger emits: under a rank test (or
#: given a rank-dependent level), the logger speaks on some ranks only.
LOGGING_CONFIGURATION = frozenset({"addHandler", "setLevel", "addFilter", "basicConfig"})

#: Sample values the default DataLoader collate cannot batch (analysis/samples.py).
#: Calls that return a PIL image.
PIL_IMAGES = frozenset({"PIL.Image.open", "PIL.Image.fromarray", "PIL.Image.new", "PIL.Image.merge"})
#: PIL image methods that return a PIL image.
PIL_METHODS = frozenset({"convert", "resize", "crop", "rotate", "transpose", "copy", "filter", "thumbnail_copy"})
_TV = ("torchvision.transforms.", "torchvision.transforms.transforms.", "torchvision.transforms.v2.")
#: torchvision transforms that take a PIL image and give one back (without `ToTensor` the sample stays PIL).
PIL_TRANSFORMS = frozenset(
    prefix + name
    for prefix in _TV
    for name in (
        "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "RandomCrop", "CenterCrop", "Resize",
        "ColorJitter", "RandomRotation", "RandomAffine", "RandomGrayscale", "Grayscale", "Pad", "RandomPerspective",
        "GaussianBlur", "RandomAutocontrast", "RandomEqualize", "RandomPosterize", "RandomSolarize",
        "RandomAdjustSharpness", "RandomInvert", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix",
    )
)  # fmt: skip
#: torchvision transforms that chain the transforms listed in their first argument.
COMPOSES = frozenset(prefix + name for prefix in _TV for name in ("Compose", "RandomApply", "RandomChoice", "RandomOrder"))
#: torchvision transforms and functions that turn a PIL image into a tensor.
TO_TENSOR = frozenset(
    {prefix + name for prefix in _TV for name in ("ToTensor", "PILToTensor")}
    | {"torchvision.transforms.functional.to_tensor", "torchvision.transforms.functional.pil_to_tensor",
       "torchvision.transforms.v2.ToImage", "torchvision.transforms.v2.ToImageTensor"}
)  # fmt: skip
#: torchvision.transforms.functional calls that return a PIL image when given one.
PIL_FUNCTIONS = frozenset(
    f"torchvision.transforms.functional.{name}"
    for name in ("hflip", "vflip", "resize", "crop", "center_crop", "resized_crop", "rotate", "pad", "affine",
                 "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "to_grayscale")
)  # fmt: skip
#: Calls that keep a per-sample length: a tensor or array built from a ragged list is ragged.
SEQUENCE_CONSTRUCTORS = frozenset({
    "torch.tensor", "torch.as_tensor", "torch.LongTensor", "torch.Tensor", "torch.FloatTensor", "torch.IntTensor",
    "numpy.array", "numpy.asarray", "builtins.list",
})  # fmt: skip
#: Methods of a ragged tensor or tokenizer output that keep it ragged.
RAGGED_METHODS = frozenset({"squeeze", "flatten", "long", "int", "float", "to", "clone", "ids", "input_ids"})
#: Tokenizer methods that encode one text to its own length (unless padded to a fixed one).
TOKENIZER_METHODS = frozenset({"encode", "encode_plus", "__call__"})
#: Calls that give a number.
NUMBER_CALLS = frozenset({"builtins.int", "builtins.float", "builtins.len", "builtins.round"})
#: `dtype=` values that make an object array.
OBJECT_DTYPES = frozenset({"builtins.object", "numpy.object_", "numpy.object"})
#: The default collate itself, passed explicitly.
DEFAULT_COLLATES = frozenset({"torch.utils.data.default_collate", "torch.utils.data._utils.collate.default_collate",
                              "torch.utils.data.dataloader.default_collate"})  # fmt: skip
#: Dataset wrappers whose samples are their first argument's (`Subset(dataset, indices)`).
DATASET_WRAPPERS = frozenset({"torch.utils.data.Subset", "torch.utils.data.dataset.Subset"})
#: Train/validation splits drawn from a global generator unless given a seed
#: (the keywords that seed them): torch's `random_split` draws from torch's
#: generator, scikit-learn's `train_test_split` from NumPy's.
RANDOM_SPLITS = {
    "torch.utils.data.random_split": ("torch", ("generator",)),
    "torch.utils.data.dataset.random_split": ("torch", ("generator",)),
    "sklearn.model_selection.train_test_split": ("numpy", ("random_state",)),
    "sklearn.model_selection._split.train_test_split": ("numpy", ("random_state",)),
    "sklearn.cross_validation.train_test_split": ("numpy", ("random_state",)),
}  # fmt: skip
#: Draws of an index permutation from a global generator (`random.shuffle`,
#: `np.random.shuffle`: in place) -> the generator.
PERMUTATION_DRAWS = {
    "numpy.random.permutation": "numpy", "numpy.random.shuffle": "numpy", "torch.randperm": "torch",
    "random.shuffle": "random",
}  # fmt: skip
#: Calls that cut an array into parts (`np.split(perm, [n])`).
ARRAY_SPLITS = frozenset({"numpy.split", "numpy.array_split", "torch.split", "torch.tensor_split"})
#: Collectives that hand one rank's objects to all (the split made on rank 0, then shared).
BROADCASTS = frozenset({"broadcast_object_list", "broadcast", "broadcast_object"})
# ------------------------------------------------------------ gradient accumulation (DDP026, DDP031)

#: What a test that gates the optimizer step to every k-th micro-batch reads:
#: a modulo (`(step + 1) % accum == 0`) or a word of an accumulation counter
#: or boundary (`is_accumulating`, `micro_step == n - 1`, `update_freq`).
ACCUMULATION_TEST = r"%|(?i:accum|boundary|update_freq|sync_grad|micro_?(?:step|batch)|iters_to_acc)"
#: Texts that show a module controls DDP's gradient sync itself: the
#: `no_sync` context (DDP, FSDP, Fabric's `no_backward_sync`), the flag it
#: flips (nanoGPT's `require_backward_grad_sync = ...`), accelerate's `accumulate`.
SYNC_CONTROLS = ("no_sync", "require_backward_grad_sync", "no_backward_sync", ".accumulate(", "skip_sync", "sync_gradients")
#: Texts that show gradients reduced by hand after DDP's syncs were skipped.
MANUAL_REDUCE = ("all_reduce", "allreduce", "reduce_gradients", "reduce_grads", "sync_grads")
#: Methods a `no_sync` block may call around a backward without running a forward
#: (`scaler.scale(loss).backward()`, `(loss / k).mean().backward()`, `loss.item()`).
BACKWARD_CHAIN_METHODS = frozenset({"backward", "scale", "mean", "sum", "float", "detach", "item", "div", "mul", "div_", "mul_"})
#: `deepspeed.initialize(...)`: returns (engine, optimizer, dataloader, lr_scheduler).
DEEPSPEED_INITIALIZE = frozenset({"deepspeed.initialize", "deepspeed.__init__.initialize"})
#: Where each part of `deepspeed.initialize`'s result is.
DEEPSPEED_ENGINE, DEEPSPEED_OPTIMIZER = 0, 1

# --------------------------------------------------------------- launchers

#: The argv spellings of the local rank: torch.distributed.launch passed
#: `--local_rank=N` before PyTorch 2.0 and passes `--local-rank=N` since; the
#: DeepSpeed launcher passes `--local_rank=N`; torchrun passes neither (it sets `LOCAL_RANK`).
LOCAL_RANK_FLAGS = ("--local_rank", "--local-rank")
#: Calls that show a script is started by the DeepSpeed launcher (which passes `--local_rank`).
DEEPSPEED_ENTRY_POINTS = frozenset({"deepspeed.add_config_arguments", "deepspeed.initialize"})

# --------------------------------------------------------------- accelerate

#: `Accelerator` methods that return their arguments wrapped (in order, one
#: per argument): a prepared loader is sharded and its last batch padded.
PREPARE_METHODS = frozenset({"prepare", "prepare_data_loader", "prepare_scheduler"})

# --------------------------------------------------------------- metrics

#: Methods that accumulate a batch's predictions into a metric or a list that
#: one becomes: evaluate's and torchmetrics' `add_batch`/`update`, list `append`/`extend`.
METRIC_SINK_METHODS = frozenset({"add_batch", "add", "update", "append", "extend"})
#: Functions that compute a metric from predictions (scikit-learn's, by package).
METRIC_FUNCTION_PREFIXES = ("sklearn.metrics.",)

# --------------------------------------------------------------- schedules

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
# ---------------------------------------------------------------- per-rank values (DDP027)

#: Name parts of values each rank computes from its own batch: a loss, a metric.
LOCAL_VALUE_WORDS = frozenset({
    "loss", "losses", "acc", "accuracy", "metric", "metrics", "score", "ppl", "perplexity", "f1", "bleu",
    "rouge", "auc", "psnr", "ssim", "iou", "miou", "top1", "top5", "wer", "cer", "error", "err",
})  # fmt: skip
#: Name parts that make such a name something else (`loss_scale`, `loss_fn`, `metric_name`).
NOT_LOCAL_VALUE_WORDS = frozenset({
    "scale", "scaler", "fn", "func", "type", "name", "names", "weight", "weights", "coef", "lambda", "cfg",
    "config", "patience", "threshold", "delta", "tol", "key", "keys", "mode", "log", "logger", "dict", "history",
    "list", "file", "path", "count", "counter", "fns", "module", "criterion", "meter", "tracker",
})  # fmt: skip
#: Parts of function and method names that make a value the same on every rank
#: (`reduce_tensor`, `all_reduce_mean`, `synchronize_between_processes`, torchmetrics' `compute`).
REDUCING_WORDS = ("reduce", "gather", "broadcast", "sync", "allreduce", "all_mean", "across", "world_mean")
REDUCING_METHODS = frozenset({"compute"})

# ---------------------------------------------------------------- rank-sharded streams (DDP030)

#: Words of names (and of environment keys) that show code reading its rank or
#: the number of ranks: `get_rank`, `world_size`, `num_replicas`, `shard_id`,
#: `split_dataset_by_node`, webdataset's `split_by_node`, `os.environ["RANK"]`.
RANK_READ_WORDS = frozenset({
    "rank", "ranks", "world", "replica", "replicas", "shard", "shards", "sharded", "sharding", "node", "nodes",
    "processes", "hvd", "horovod",
})  # fmt: skip
#: Hugging Face `datasets` loaders that stream with `streaming=True`.
HF_LOAD_DATASET = frozenset({"datasets.load_dataset", "datasets.load.load_dataset"})
#: Methods of a Hugging Face dataset that return another dataset over the same stream.
HF_DATASET_METHODS = frozenset({
    "map", "filter", "shuffle", "take", "skip", "with_format", "rename_column", "rename_columns",
    "remove_columns", "select_columns", "cast", "cast_column", "batch", "add_column",
})  # fmt: skip
#: Calls that return a stream (an IterableDataset a sampler cannot split), by their own name.
STREAM_FACTORIES = frozenset({"split_dataset_by_node", "WebDataset", "WebLoader", "DataPipeline", "StreamingDataset", "to_iterable_dataset"})

# ---------------------------------------------------------------- full state dicts (DDP032)

_FSDP_API = ("torch.distributed.fsdp", "torch.distributed.fsdp.api", "torch.distributed.fsdp.fully_sharded_data_parallel")
#: `StateDictType.FULL_STATE_DICT`, as FSDP1 exports it.
FULL_STATE_DICT = frozenset(f"{m}.StateDictType.FULL_STATE_DICT" for m in _FSDP_API)
FULL_STATE_DICT_CONFIG = frozenset(f"{m}.FullStateDictConfig" for m in _FSDP_API)
#: `FSDP.state_dict_type(module, type, config)` and `FSDP.set_state_dict_type(...)`.
STATE_DICT_TYPE_SETTERS = frozenset(
    f"{m}.{cls}.{method}" for m in ("torch.distributed.fsdp", "torch.distributed.fsdp.fully_sharded_data_parallel")
    for cls in ("FullyShardedDataParallel",) for method in ("state_dict_type", "set_state_dict_type")
)  # fmt: skip
STATE_DICT_OPTIONS = frozenset({"torch.distributed.checkpoint.state_dict.StateDictOptions"})
#: The calls (by their own name) that may request a full state dict.
STATE_DICT_REQUESTS = frozenset({"state_dict", "state_dict_type", "set_state_dict_type", "StateDictOptions"})
#: What a full state dict needs so that one rank, not every GPU, holds the whole model.
FULL_STATE_DICT_SAFE = {"FullStateDictConfig": ("offload_to_cpu", "rank0_only"), "StateDictOptions": ("cpu_offload",)}

#: Checkpointer classes whose `save(name)` writes `<save_dir>/<name>.pth` on
#: every process that calls it, unless built with `save_to_disk` false (or no
#: `save_dir`): class -> whether `save_to_disk` defaults to true. fvcore's
#: `Checkpointer` (re-exported by detectron2.checkpoint) checks no rank, its
#: default is true; detectron2's `DetectionCheckpointer` defaults it to
#: `comm.is_main_process()`, so only an explicit `save_to_disk=True` writes on every rank.
CHECKPOINTERS = {
    "fvcore.common.checkpoint.Checkpointer": True,
    "detectron2.checkpoint.Checkpointer": True,
    "detectron2.checkpoint.DetectionCheckpointer": False,
    "detectron2.checkpoint.detection_checkpoint.DetectionCheckpointer": False,
}
#: Wrappers that save through the checkpointer they are built with (first
#: argument, `checkpointer=`): `step(iteration)` every `period`, `save(name)`.
PERIODIC_CHECKPOINTERS = frozenset({"fvcore.common.checkpoint.PeriodicCheckpointer", "detectron2.checkpoint.PeriodicCheckpointer"})
#: The checkpointers' writing methods: (periodic wrapper?) -> names.
CHECKPOINTER_SAVES = frozenset({"save"})
PERIODIC_SAVES = frozenset({"save", "step"})

# ---------------------------------------------------------------- Python containers of objects (DDP005)

#: Calls that build a (large) Python list or dict of objects.
PYTHON_CONTAINER_CALLS = frozenset(
    {
        "json.load", "json.loads", "pickle.load", "pickle.loads", "yaml.safe_load", "yaml.load",
        "yaml.full_load", "yaml.unsafe_load", "glob.glob", "os.listdir",
    }
)  # fmt: skip
#: Calls whose result iterates as Python rows (lines, CSV rows): `list(open(path))`.
ROW_READERS = frozenset({"builtins.open", "csv.reader", "csv.DictReader"})
#: Methods whose result is a Python list or dict.
PYTHON_CONTAINER_METHODS = frozenset({"readlines", "tolist", "to_dict", "to_list", "splitlines"})
#: Wrappers that keep a Python container a Python container.
CONTAINER_PASS_THROUGH = frozenset({"builtins.sorted", "builtins.list", "builtins.tuple", "builtins.dict", "builtins.set"})
#: Iterators whose items are Python tuples (`list(zip(paths, labels))`).
TUPLE_ITERATORS = frozenset({"builtins.zip", "builtins.enumerate", "builtins.map"})
#: DataFrame methods that return a DataFrame again (`df.reset_index()`).
FRAME_PRESERVING_METHODS = frozenset({"reset_index", "dropna", "sample", "copy", "query"})

# ---------------------------------------------------------------- CPU cores (DDP009)

#: Calls that return every core of the node.
CPU_COUNTS = frozenset(
    {
        "os.cpu_count", "multiprocessing.cpu_count", "torch.multiprocessing.cpu_count", "psutil.cpu_count",
        "multiprocessing.context.BaseContext.cpu_count",
    }
)  # fmt: skip
#: Calls whose `len(...)` is the cores this process may run on (`len(os.sched_getaffinity(0))`).
CPU_SETS = frozenset({"os.sched_getaffinity"})

# ---------------------------------------------------------------- gathered evaluations (DDP028)

#: The collectives that bring the shards' predictions or counts together, by their own name.
EVAL_GATHERS = frozenset({"gather", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "reduce"})

# ---------------------------------------------------------------- who shards a loader (DDP030)

#: Words of a loader's or dataset's names that mark it for evaluation (a regular expression).
EVALUATION_NAMES = r"(?i)val|eval|test"
#: Code that hands a module's loaders to a framework that splits them across
#: processes (a regular expression): accelerate's `prepare`, the Hugging Face Trainers.
LOADER_SHARDING_FRAMEWORKS = r"accelerat\w*\.prepare\(|\bprepare_data_loader\(|\b(?:Seq2Seq|SFT)?Trainer\("
# ------------------------------------------------------------ printers, loggers, trackers and silencers
#: Writers and runs that each rank that calls them creates once more: a
#: duplicated run or event file even when called once.
OUTPUT_WRITERS = frozenset(
    {
        "wandb.init", "mlflow.start_run", "torch.utils.tensorboard.SummaryWriter",
        "torch.utils.tensorboard.writer.SummaryWriter", "tensorboardX.SummaryWriter", "logging.FileHandler",
    }
)  # fmt: skip
#: Output that repeats when it runs in the training loop (or what it calls);
#: and the prefixes of the experiment trackers' logging functions.
REPEATED_OUTPUT = frozenset({"builtins.print", "wandb.log"})
TRACKER_LOG_PREFIXES = ("mlflow.log_",)
#: Per-process values: output that prints them is per rank on purpose.
PER_PROCESS_VALUES = frozenset({"os.getpid", "torch.cuda.current_device", "socket.gethostname", "platform.node"})
#: Words a module must contain to mention one of `PER_PROCESS_VALUES` (a cheap filter).
PER_PROCESS_WORDS = ("getpid", "current_device", "gethostname", "node(")
PROGRESS_BARS = frozenset(
    {
        "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.rich.tqdm",
        "tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange",
    }
)  # fmt: skip
#: The keyword of a progress bar that switches it off.
PROGRESS_DISABLE = "disable"
#: Methods of a `logging`/loguru logger that emit a record; those that report a problem.
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
ERROR_LOG_METHODS = frozenset({"error", "exception", "critical"})
WARNING_LOG_METHODS = frozenset({"warning", "warn"})
#: Logger factories: `logging`'s (by last name), and those whose loggers log on the main process only.
LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})
RANK_AWARE_LOGGER_FACTORIES = frozenset({"accelerate.logging.get_logger"})
#: Helpers that replace `builtins.print` with a rank-0-only version (DETR,
#: DeiT, MAE, torchvision's references: `utils.init_distributed_mode(args)`).
PRINT_SILENCERS = frozenset({"init_distributed_mode", "setup_for_distributed"})
#: Names of functions that set up logging (a regular expression); given the rank, they set it up per rank.
LOGGER_SETUP = r"^(?:setup|set_up|create|init|build|get|make)_?(?:logging|logger)s?$"
#: A keyword that names the ranks a logger call emits on (ColossalAI's `logger.info(msg, ranks=[0])`).
RANKS_KEYWORDS = frozenset({"ranks", "rank", "main_process_only"})
#: Words of the output calls, for the prefilter (logger receivers are named freely: `logger`, `LOGGER`).
OUTPUT_WORDS = ("print", "wandb", "SummaryWriter", "mlflow", "tqdm", "trange", "logger", "logging", "log",
                "loguru", "LOGGER", "FileHandler")  # fmt: skip
# ------------------------------------------------------------ writes and downloads
#: Calls that write or read a path (`analysis.file_io`), each mapped to the
#: argument holding the path: a position, `-1` the object read
#: (`json.load(open(p))`), `-2` the receiver (`Path(p).write_text(...)`).
#: Writes (or preparations: `os.makedirs`) by call -> index of the path argument.
WRITES = {
    "torch.save": 1, "numpy.save": 0, "numpy.savez": 0, "os.makedirs": 0, "os.mkdir": 0,
    "shutil.copy": 1, "shutil.copyfile": 1, "shutil.copytree": 1, "shutil.move": 1,
    "urllib.request.urlretrieve": 1,
}  # fmt: skip
WRITE_METHODS = {"save_pretrained": 0, "save_to_disk": 0, "to_csv": 0, "to_json": 0, "to_parquet": 0,
                 "extractall": 0, "write_text": -2, "write_bytes": -2}  # fmt: skip
READS = {"torch.load": 0, "numpy.load": 0, "os.listdir": 0, "glob.glob": 0, "datasets.load_from_disk": 0,
         "datasets.load_dataset": 0, "pandas.read_csv": 0, "json.load": -1}  # fmt: skip
READ_METHODS = {"from_pretrained": 0, "load_from_disk": 0, "read_text": -2, "read_bytes": -2}
#: Where a write puts its bytes: call -> (position, keyword) of the file or
#: stream argument; methods -> the same, `-2` the receiver.
DESTINATIONS = {
    "torch.save": (1, "f"), "torch.jit.save": (1, "f"), "numpy.save": (0, "file"), "numpy.savez": (0, "file"),
    "numpy.savez_compressed": (0, "file"), "builtins.open": (0, "file"), "io.open": (0, "file"),
    "codecs.open": (0, "filename"), "safetensors.torch.save_file": (1, "filename"),
    "safetensors.numpy.save_file": (1, "filename"), "shutil.copy": (1, "dst"), "shutil.copy2": (1, "dst"),
    "shutil.copyfile": (1, "dst"), "shutil.copytree": (1, "dst"), "shutil.move": (1, "dst"),
}  # fmt: skip
DESTINATION_METHODS = {"save_pretrained": (0, "save_directory"), "write_text": (-2, ""), "write_bytes": (-2, "")}
#: Functions that open a file; the mode letters that make it a write.
OPEN_FUNCTIONS = frozenset({"builtins.open", "io.open", "codecs.open"})
#: Functions that write a file, by qualified name; methods that write one on any receiver.
FILE_WRITE_FUNCTIONS = frozenset(DESTINATIONS) - OPEN_FUNCTIONS
FILE_WRITE_METHODS = frozenset(DESTINATION_METHODS)
WRITE_MODES = frozenset("wax+")
#: Dataset packages whose constructors download with `download=True`.
DATASET_PACKAGES = ("torchvision.datasets.", "torchaudio.datasets.", "torchtext.datasets.")
#: Calls that fetch a file into a local path.
DOWNLOADS = frozenset(
    {
        "urllib.request.urlretrieve", "wget.download", "gdown.download", "gdown.download_folder",
        "torch.hub.download_url_to_file", "torchvision.datasets.utils.download_url",
        "torchvision.datasets.utils.download_and_extract_archive", "torchvision.datasets.utils.download_file_from_google_drive",
    }
)  # fmt: skip
#: Helpers that download by name, whichever module defines them (BLIP's `download_url`).
DOWNLOAD_NAMES = frozenset({"download_url", "download_and_extract_archive", "urlretrieve", "download_file"})
#: Calls that run a command line, and the tools that download to a file.
SHELL_CALLS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen",
     "os.system"}
)  # fmt: skip
DOWNLOAD_TOOLS = ("wget", "gdown")
# ------------------------------------------------------------ barriers
#: Methods and functions, by last name, that wait for every rank.
BARRIER_NAMES = frozenset({"barrier", "monitored_barrier", "wait_for_everyone"})
#: The plain barriers among them: a call named so waits for every rank (`dist.barrier()`, `accelerator.wait_for_everyone()`).
PLAIN_BARRIERS = frozenset({"barrier", "wait_for_everyone"})
#: Helpers that wait for every rank, by name (detectron2's `comm.synchronize`; not `torch.cuda.synchronize`).
BARRIER_HELPERS = frozenset({"synchronize", "sync", "barrier_all", "wait_all"})
NOT_BARRIERS = frozenset({"torch.cuda.synchronize"})
#: Set-up calls that synchronise every rank (they broadcast or all-gather inside).
SYNCING_SETUP = frozenset({"prepare", "initialize", "init_process_group"})
# ------------------------------------------------ mixed precision and the training step (DDP012, DDP013, DDP019)

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
# ------------------------------------------------ collectives a rank may miss
#: Reads whose answer can differ between processes: a node-local or racing
#: path, the wall clock (qualified name -> what it reads).
PER_PROCESS_READS = {
    "os.path.exists": "the filesystem", "os.path.isfile": "the filesystem", "os.path.isdir": "the filesystem",
    "os.listdir": "the filesystem", "glob.glob": "the filesystem", "os.scandir": "the filesystem",
    "time.time": "the clock", "time.perf_counter": "the clock", "time.monotonic": "the clock",
}  # fmt: skip
#: Words naming the backends under which accelerate's `save_state`/... gather on
#: every rank (an `or` operand of a rank test that names one admits them).
GATHERING_BACKEND_WORDS = ("deepspeed", "fsdp", "megatron", "distributed_type", "sharded")
#: Accelerate's data-loader preparers: iterating what they return broadcasts the RNG state each pass.
LOADER_PREPARERS = frozenset({"prepare", "prepare_data_loader"})
#: Names (last components) that show a file may call a collective: the implicit ones
#: (wrapped models, Fabric, checkpoints) beside `COLLECTIVE_FUNCTIONS` and the frameworks'.
IMPLICIT_COLLECTIVE_TOKENS = (
    "fully_shard", "wait_for_everyone", "gather_for_metrics", "save_state", "load_state", "save_checkpoint",
    "load_checkpoint", "sync_dist", "DistributedDataParallel", "FullyShardedDataParallel",
    "summon_full_params", "get_model_state_dict", "get_state_dict", "checkpoint", "rendezvous",
    "mesh_reduce", "setup_module", "fabric", "Fabric",
)  # fmt: skip
#: What a rank guard is, by its kind (`GuardKind` name), in a related location.
GUARD_KINDS_SHOWN = {
    "BRANCH": "the rank-dependent condition",
    "SHORT_CIRCUIT": "the rank-dependent operand",
    "LOOP": "the rank-dependent loop condition",
    "DECORATOR": "the rank-selecting decorator",
    "STAGGERED": "the rank-staggered block",
}

# ------------------------------------------------ devices and where tensors live (DDP010, DDP016, DDP020)
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

# ------------------------------------------------ model wrappers
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
# ------------------------------------------------ loader iterations and set_epoch (DDP002)

#: Callables that iterate the loader they are given (`enumerate(loader)`), by qualified name.
ITERATING_CALLS = frozenset({"builtins.iter", "builtins.enumerate", "builtins.zip", "itertools.islice", "itertools.cycle"})
#: Progress bars and slicers that iterate the loader they wrap, by their own name (`tqdm(loader)`).
ITERATING_WRAPPERS = frozenset({"tqdm", "trange", "track", "islice"})
#: What a module must mention to build a loader over a `DistributedSampler`
#: (`ElasticDistributedSampler`, ColossalAI's `plugin.prepare_dataloader`).
DISTRIBUTED_SAMPLER_TEXTS = ("DistributedSampler", "ElasticDistributedSampler", "prepare_dataloader")

# ------------------------------------------------ training loaders (DDP003)

#: Parts of a loader's or dataset's name (any case) that say it trains, or that it evaluates (`val_loader`, `test_set`).
TRAINING_NAME_PARTS = ("train",)
EVALUATION_NAME_PARTS = ("val", "eval", "test")
#: Lightning's DataLoader hooks: the Trainer inserts the DistributedSampler into the loaders they return.
LIGHTNING_LOADER_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})
# ------------------------------------------------ randomness and seeds
#: Values that are the same on every rank of a job (names, and calls by qualified name).
UNIFORM_NAMES = frozenset({"world_size", "num_processes", "num_replicas", "n_gpu", "num_gpus", "ngpus", "nprocs"})
UNIFORM_CALLS = frozenset({"torch.distributed.get_world_size", "torch.cuda.device_count"})
#: Tensor parallelism needs identical inputs and dropout masks within a group.
TENSOR_PARALLEL = "torch.distributed.tensor.parallel"
#: Variables that hold the global rank (a local rank repeats on every node).
GLOBAL_RANK_NAMES = ("rank", "global_rank", "world_rank", "RANK")
#: accelerate's seeder, which takes `device_specific=True` to add the process index itself.
ACCELERATE_SET_SEED = frozenset({"accelerate.utils.set_seed", "accelerate.utils.random.set_seed"})
#: Random generator objects a program may create and own (not the global ones).
GENERATOR_CLASSES = frozenset(
    {
        "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
        "random.Random", "torch.Generator", "torch._C.Generator",
    }
)  # fmt: skip
