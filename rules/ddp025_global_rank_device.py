"""DDP025 global-rank-device."""

from __future__ import annotations

from ddplint.knowledge import GLOBAL_RANK_TEXT
from ddplint.analysis.guards import Site
from ddplint.analysis.rank_kinds import GLOBAL, device_index_arguments, rank_kind
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.paths import is_test_file
from ddplint.rule import Rule


class GlobalRankDevice(Rule):
    """
    ## What it does

    Flags a GPU picked with the *global* rank: `torch.cuda.set_device(rank)`
    (`torch.accelerator.set_device_index(rank)`),
    `with torch.cuda.device(rank):`, `model.to(rank)`/`.cuda(rank)`,
    `DDP(..., device_ids=[rank])`, `torch.device("cuda", rank)`,
    `f"cuda:{rank}"` (and torchtitan's `f"{device_type}:{rank}"`), and
    `from_pretrained(..., device_map={"": rank})` (also through a variable
    holding one of those), where `rank` comes from `RANK`,
    `dist.get_rank()`, `SLURM_PROCID`, `accelerator.process_index` or
    `node_rank * ngpus_per_node + gpu`.

    What a variable or attribute visibly holds wins over its name:
    `local_rank = dist.get_rank()` and `args.local_rank =
    int(os.environ["RANK"])` are global ranks. Attributes are followed
    through their assignments in the module (DETR-style `args.rank =
    int(os.environ["RANK"])` then `args.gpu = args.rank`); an attribute
    assigned different kinds of rank in different places is left alone.

    Not flagged: the local rank (`LOCAL_RANK`, `SLURM_LOCALID`,
    `accelerator.local_process_index`), the global rank modulo the GPUs of
    a node (`rank % torch.cuda.device_count()`), the rank within a group
    (`dist.get_rank(node_group)`), a rank whose origin is not visible (the
    index `mp.spawn` passes a worker is a local rank; a `local_rank`
    parameter is taken at its word), and test files (`tests/`,
    `test_*.py`: they run their ranks on one node).

    ## Why is this bad?

    On one node the global and the local rank coincide, so the script works
    in every single-node test. On the second node, rank 8 asks for `cuda:8`
    on a machine with GPUs 0-7: `invalid device ordinal`, or, where
    `device_ids` wraps around, two processes on one GPU. DiT and SiT shipped
    `device_ids=[rank]` and fixed it for multi-node training.

    ## Example

    ```python
    rank = dist.get_rank()
    device = rank % torch.cuda.device_count()
    torch.cuda.set_device(device)
    model = DDP(model.to(device), device_ids=[rank])
    ```

    ## Use instead

    ```python
    rank = dist.get_rank()
    device = rank % torch.cuda.device_count()
    torch.cuda.set_device(device)
    model = DDP(model.to(device), device_ids=[device])
    ```

    Or read `LOCAL_RANK`, which torchrun sets for every process.

    ## References

    - [torchrun: environment variables](https://pytorch.org/docs/stable/elastic/run.html#environment-variables)
    """

    code = "DDP025"
    name = "global-rank-device"
    severity = Severity.WARNING
    summary = "A GPU picked with the global rank: the second node asks for devices it does not have."
    tokens = ("set_device", "set_device_index", "device_ids", "device_id", "device_map", "cuda", "device", "output_device")
    #: A global rank must be in sight (or the node rank it is computed from).
    context_tokens = (*GLOBAL_RANK_TEXT, "node_rank", "per_node", "nr *")
    requires = frozenset({"rank_kinds"})
    distributed_only = True
    tags = ("correctness", "multi-node")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.seen: set[int] = set()

    def trigger_Call(self, node: cst.Call) -> bool:
        # Not in test files: single-node tests, where the global rank is the local one.
        return bool(device_index_arguments(node, self.ctx)) and not is_test_file(self.ctx.path)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        # After the walk every assignment of an attribute is known (`args.gpu = args.rank`, then `% ngpus`).
        for index in device_index_arguments(node, self.ctx):
            if id(index) not in self.seen and rank_kind(index, self.ctx) == GLOBAL:
                self.seen.add(id(index))
                shown = self.ctx.module.code_for_node(index)
                self.report(
                    node,
                    f"`{shown}` is the global rank, but a GPU index must be local to the node: on the second "
                    "node this asks for a device that does not exist; use `LOCAL_RANK` "
                    f"(or `{shown} % torch.cuda.device_count()`)",
                )
