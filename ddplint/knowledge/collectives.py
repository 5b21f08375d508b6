"""Collectives: what every rank must enter, barriers, and the calls a rank may miss.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations



#: Methods and functions, by last name, that wait for every rank.
BARRIER_NAMES = frozenset({"barrier", "monitored_barrier", "wait_for_everyone"})

#: The plain barriers among them: a call named so waits for every rank (`dist.barrier()`, `accelerator.wait_for_everyone()`).
PLAIN_BARRIERS = frozenset({"barrier", "wait_for_everyone"})

#: Helpers that wait for every rank, by name (detectron2's `comm.synchronize`; not `torch.cuda.synchronize`).
BARRIER_HELPERS = frozenset({"synchronize", "sync", "barrier_all", "wait_all"})

NOT_BARRIERS = frozenset({"torch.cuda.synchronize"})

#: Set-up calls that synchronise every rank (they broadcast or all-gather inside).
SYNCING_SETUP = frozenset({"prepare", "initialize", "init_process_group"})

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
