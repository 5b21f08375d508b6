"""DDP032 fsdp-full-state-dict-every-rank."""

from __future__ import annotations

from ddplint.knowledge import STATE_DICT_REQUESTS
from ddplint.analysis.collectives import default_full_state_dict, full_state_dict_gather
from ddplint.analysis.guards import Site
from ddplint.analysis.names import last_name
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class FsdpFullStateDictEveryRank(Rule):
    """
    ## What it does

    Flags a full state dict of an FSDP model that every rank gathers on its
    GPU: `FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT)` (or
    `set_state_dict_type`) without `FullStateDictConfig(offload_to_cpu=True,
    rank0_only=True)`, `StateDictOptions(full_state_dict=True)` without
    `cpu_offload=True`, and an FSDP1 `model.state_dict()` saved with
    `torch.save` outside any `state_dict_type` setting (FSDP1's default is a
    full state dict on every GPU).

    Not flagged: requests under a rank guard (DDP001 reports those: the
    other ranks never join the gather); sharded and local state dicts, distributed checkpointing
    (`torch.distributed.checkpoint`), FSDP2 (`fully_shard`) models, whose
    `state_dict()` holds DTensor shards, options that load
    (`broadcast_from_rank0=True`), flags the linter cannot read.

    ## Why is this bad?

    A full state dict all-gathers every parameter. Without `offload_to_cpu`
    each rank puts the whole model on its GPU next to the training state;
    without `rank0_only` every rank keeps a copy it then throws away. For a
    model that needed FSDP to fit, the first checkpoint runs out of memory,
    often hours into the run.

    ## Example

    ```python
    from torch.distributed.fsdp import StateDictType

    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        state = model.state_dict()
    if rank == 0:
        torch.save(state, "model.pt")
    ```

    ## Use instead

    ```python
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType

    config = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):
        state = model.state_dict()  # on rank 0's CPU; empty elsewhere
    if rank == 0:
        torch.save(state, "model.pt")
    ```

    ## Fix safety

    Where a `FullStateDictConfig(...)` or `StateDictOptions(...)` is written
    out, the fix adds the missing `offload_to_cpu=True, rank0_only=True`
    (`cpu_offload=True`). Adding `cpu_offload`/`offload_to_cpu` only moves
    the same tensors to the CPU; `rank0_only=True` leaves the other ranks an
    empty dict, which changes a save or a use of it on every rank: that fix
    is unsafe (`--unsafe-fixes`).

    ## References

    - [FSDP state_dict_type](https://pytorch.org/docs/stable/fsdp.html#torch.distributed.fsdp.FullyShardedDataParallel.state_dict_type)
    - [torch.distributed.checkpoint.state_dict](https://pytorch.org/docs/stable/distributed.checkpoint.html)
    """

    code = "DDP032"
    name = "fsdp-full-state-dict-every-rank"
    severity = Severity.WARNING
    summary = "A full FSDP state dict gathered on every rank's GPU: the first checkpoint of a large model runs out of memory."
    preview = True
    tokens = ("FULL_STATE_DICT", "full_state_dict", "FullyShardedDataParallel")
    requires = frozenset({"rank"})
    tags = ("performance", "memory", "checkpoint")

    def trigger_Call(self, node: cst.Call) -> bool:
        return last_name(node.func) in STATE_DICT_REQUESTS

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx = self.ctx
        if ctx.rank.selects_ranks(site.guards):
            return  # some ranks gather, the others do not: DDP001's
        gather = full_state_dict_gather(node, ctx)
        oom = "every rank gathers the whole model on its GPU: the first checkpoint of a large model runs out of memory"
        if gather is not None:
            where = f"`{ctx.module.code_for_node(gather.config)}`" if gather.config else "the full state dict"
            self.report(node, f"{where} lacks `{gather.shown}`: {oom}; pass `{gather.shown}`", fix=gather.fix)
        elif default_full_state_dict(node, ctx):
            self.report(
                node,
                f"`{ctx.module.code_for_node(node)}` of an FSDP model is saved with FSDP's default full state dict: "
                f"{oom}; use `FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, "
                "FullStateDictConfig(offload_to_cpu=True, rank0_only=True))`",
            )
