"""DDP018 wrap-order."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.analysis.names import last_name
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Wrappers that replace the module's parameters (FSDP flattens them,
#: `fully_shard` turns them into DTensors): an optimizer built before holds
#: tensors the module no longer uses.
SHARDING = frozenset(
    {
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard",
        "torch.distributed.fsdp.fully_shard.fully_shard",
    }
)  # fmt: skip
DDP = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"})
CONVERT_SYNC_BN = "convert_sync_batchnorm"


@dataclass(frozen=True)
class _Event:
    kind: str  # "optimizer", "shard", "ddp", "convert"
    model: str  # the module, as written (`model`, `self.model`)
    node: cst.Call
    statement: cst.CSTNode
    function: cst.FunctionDef | None


class WrapOrder(Rule):
    """
    ## What it does

    Flags two orderings within a function:

    - an optimizer built from `model.parameters()` before `model` is
      wrapped in `FullyShardedDataParallel(model)` or sharded with
      `fully_shard(model)`;
    - `nn.SyncBatchNorm.convert_sync_batchnorm(model)` after
      `DistributedDataParallel(model)`.

    Not flagged: an optimizer built after wrapping (from the wrapper's
    parameters), FSDP with `use_orig_params=True` (it keeps the original
    parameters as views), DDP wrapping after the optimizer (DDP keeps the
    parameters), conversion before wrapping. The SyncBatchNorm half is a
    preview variant (a warning, with `--preview`): on current PyTorch the
    converted layers keep their parameters and buffers, so what is lost is
    DDP's construction-time check and logging, not training.

    ## Why is this bad?

    FSDP replaces the module's parameters with flat (or, for `fully_shard`,
    DTensor) parameters. An optimizer built before holds the old tensors,
    which no longer receive gradients: `optimizer.step()` updates nothing
    the model uses, and training silently does not learn (or crashes on a
    device mismatch). `convert_sync_batchnorm` after DDP swaps modules
    inside the wrapper after DDP inspected them at construction: the
    GPU-only check and the logging never see the SyncBatchNorm layers, and
    older PyTorch versions raised at the first forward.

    ## Example

    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model = FSDP(model, auto_wrap_policy=policy)
    ```

    ## Use instead

    ```python
    model = FSDP(model, auto_wrap_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ```

    ## References

    - [FSDP: construct the optimizer after wrapping](https://pytorch.org/docs/stable/fsdp.html)
    - [SyncBatchNorm.convert_sync_batchnorm](https://pytorch.org/docs/stable/generated/torch.nn.SyncBatchNorm.html)
    """

    code = "DDP018"
    name = "wrap-order"
    severity = Severity.ERROR
    summary = "Optimizer built before FSDP replaces the parameters, or SyncBatchNorm converted after DDP."
    distributed_only = True
    tokens = ("FullyShardedDataParallel", "FSDP", "fully_shard", "convert_sync_batchnorm")
    tags = ("correctness",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.events: list[_Event] = []

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        names = ctx.qualified_names(node.func)
        code = ctx.module.code_for_node
        first = node.args[0].value if node.args and node.args[0].keyword is None else None
        kind = None
        if names & SHARDING and first is not None and not _keeps_parameters(node):
            kind = "shard"
        elif names & DDP and first is not None:
            kind = "ddp"
        elif last_name(node.func) == CONVERT_SYNC_BN and first is not None:
            kind = "convert"
        else:
            model = _parameters_of(node)
            if model is not None and _is_optimizer(node, names):
                self.events.append(_Event("optimizer", code(model), node, ctx.statement(), ctx.enclosing_function()))
            return
        self.events.append(_Event(kind, code(_unwrap_call(first)), node, ctx.statement(), ctx.enclosing_function()))

    def finish(self) -> None:
        for index, event in enumerate(self.events):
            later = [e for e in self.events[index + 1 :] if e.function is event.function and e.model == event.model]
            if event.kind == "optimizer":
                shard = next((e for e in later if e.kind == "shard"), None)
                rebuilt = shard is not None and any(
                    e.kind == "optimizer" for e in later[later.index(shard) :]
                )  # a second optimizer after wrapping replaces this one
                if shard is not None and not rebuilt:
                    self.report(
                        event.node,
                        f"this optimizer holds `{event.model}`'s parameters from before FSDP wraps it (line "
                        "below): FSDP replaces them, so `step()` updates tensors the model no longer uses; "
                        "build the optimizer after wrapping",
                        statement=event.statement,
                    )
            elif event.kind == "ddp":
                convert = next((e for e in later if e.kind == "convert"), None)
                if convert is not None:
                    self.report(
                        convert.node,
                        f"`{event.model}` is already wrapped in DistributedDataParallel: DDP's construction-time "
                        "checks (GPU-only SyncBatchNorm, its logging) never saw these layers, and PyTorch documents "
                        "converting before wrapping; convert first",
                        statement=convert.statement,
                        preview=True,
                        severity=Severity.WARNING,
                    )


def _keeps_parameters(call: cst.Call) -> bool:
    """FSDP1 with `use_orig_params=True` keeps the original parameter
    objects as views: an optimizer built before still steps them."""
    return any(
        a.keyword is not None and a.keyword.value == "use_orig_params"
        and isinstance(a.value, cst.Name) and a.value.value == "True"
        for a in call.args
    )  # fmt: skip


def _parameters_of(call: cst.Call) -> cst.BaseExpression | None:
    """`model` of `model.parameters()` passed as the first argument or `params=`."""
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "params":
            value = arg.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
                "parameters", "named_parameters"
            ):
                return value.func.value
            return None
    return None


def _is_optimizer(call: cst.Call, names: frozenset) -> bool:
    if any(n and n.startswith("torch.optim.") for n in names):
        return True
    return "optim" in (last_name(call.func) or "").lower() or (last_name(call.func) or "") in _OPTIMIZER_NAMES


_OPTIMIZER_NAMES = frozenset({"AdamW", "Adam", "SGD", "Adagrad", "RMSprop", "Lion", "Adafactor", "LAMB", "Muon"})


def _unwrap_call(node: cst.BaseExpression) -> cst.BaseExpression:
    """`model.cuda()`/`model.to(device)` -> `model`."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("cuda", "to"):
        node = node.func.value
    return node
