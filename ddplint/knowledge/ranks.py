"""Rank sources and rank tests: how training code learns or tests which process it is.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
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

#: Rank helpers a module imports by these names (``from .utils import
#: is_main_process``, ``from utils.dist import get_rank``): whichever module
#: defines them, importing one shows that the importer runs once per rank.
RANK_HELPER_NAMES = texts(CALL) | texts(NAME, MAIN, NODE_MAIN)

#: Words in a function's name that say it runs on one rank only
#: (``save_on_master``, ``log_rank0``): a rank test in its body does not make
#: it an entry point that every rank runs.
ONE_RANK_FUNCTION_WORDS = ("master", "main_process", "rank0", "rank_0", "rank_zero", "zero_rank", "primary", "leader")

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
