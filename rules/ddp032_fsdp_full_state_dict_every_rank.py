"""DDP032 fsdp-full-state-dict-every-rank."""

from __future__ import annotations

from ddplint.analysis.collectives import STATE_DICT_TYPE_SETTERS, FullGather, fsdp1_model, full_state_dict_gather
from ddplint.analysis.names import last_name
from ddplint.analysis.rewrite import ProposedFix
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule


#: Calls that gather a state dict under a `state_dict_type` setting.
_GATHERING = frozenset({"state_dict", "optim_state_dict", "full_optim_state_dict"})


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

    Not flagged: sharded and local state dicts, distributed checkpointing
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
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
        state = model.state_dict()
    if rank == 0:
        torch.save(state, "model.pt")
    ```

    ## Use instead

    ```python
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
    tags = ("performance", "memory", "checkpoint")

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        gather = full_state_dict_gather(node, ctx)
        if gather is not None and not self._loads(node):
            self._report_request(gather)
        elif self._unset_full_state_dict(node):
            self.report(
                node,
                f"`{ctx.module.code_for_node(node)}` of an FSDP model is saved outside any `state_dict_type`: FSDP's "
                "default is a full state dict gathered on every rank's GPU, which runs out of memory for a large "
                "model; wrap it in `FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, "
                "FullStateDictConfig(offload_to_cpu=True, rank0_only=True))`",
            )

    def _report_request(self, gather: FullGather) -> None:
        code = self.ctx.module.code_for_node
        missing = ", ".join(f"{k}=True" for k in gather.missing)
        where = f"`{code(gather.config)}`" if gather.config is not None else "the full state dict"
        self.report(
            gather.request,
            f"{where} lacks `{missing}`: every rank gathers the whole model on its GPU, and the first "
            f"checkpoint of a model that needed FSDP runs out of memory; pass `{missing}`",
            fix=_fix(gather) if gather.config is not None else None,
        )

    def _loads(self, node: cst.Call) -> bool:
        """`with FSDP.state_dict_type(...):` around loading only (no `state_dict()` to gather)."""
        statement = self.ctx.statement()
        if not isinstance(statement, cst.With) or not self.ctx.qualified_names(node.func) & STATE_DICT_TYPE_SETTERS:
            return False
        return not any(
            isinstance(n, cst.Call) and last_name(n.func) in _GATHERING for n in descendants(statement.body)
        )  # fmt: skip

    def _unset_full_state_dict(self, node: cst.Call) -> bool:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "state_dict" and not node.args):
            return False
        ctx = self.ctx
        if "set_state_dict_type" in ctx.source or not fsdp1_model(func.value, ctx):
            return False
        if any(
            isinstance(n, cst.With) and any(last_name(i.item.func) == "state_dict_type" for i in n.items if isinstance(i.item, cst.Call))
            for n in ctx.stack
        ):
            return False  # inside `with FSDP.state_dict_type(...)`: the request is judged there
        return _saved(node, ctx)


def _saved(node: cst.Call, ctx) -> bool:
    """The state dict reaches `torch.save`: as (part of) its argument, or through a name saved in the function."""
    names = set()
    for parent in reversed(ctx.stack[:-1]):
        if isinstance(parent, cst.Call) and ctx.qualified_name(parent.func) == "torch.save":
            return True
        if isinstance(parent, cst.Assign):
            names |= {t.target.value for t in parent.targets if isinstance(t.target, cst.Name)}
        if isinstance(parent, cst.FunctionDef):
            saves = [n for n in descendants(parent.body) if isinstance(n, cst.Call) and ctx.qualified_name(n.func) == "torch.save"]
            return any(isinstance(n, cst.Name) and n.value in names for s in saves for n in descendants(s))
    return False


def _fix(gather: FullGather) -> ProposedFix:
    config = gather.config
    added = [cst.Arg(keyword=cst.Name(k), value=cst.Name("True"), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))) for k in gather.missing]
    args = list(config.args)
    if args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    for arg in added[:-1]:
        args.append(arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
    args.append(added[-1])
    unsafe = "rank0_only" in gather.missing
    return ProposedFix(
        f"Add `{', '.join(f'{k}=True' for k in gather.missing)}`",
        ((config, config.with_changes(args=args)),),
        Applicability.UNSAFE if unsafe else Applicability.SAFE,
    )
