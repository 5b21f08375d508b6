"""DDP011 wrapped-state-dict."""

from __future__ import annotations

from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

SAVE_FUNCTIONS = frozenset({"torch.save", "safetensors.torch.save_file"})
WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    }
)  # fmt: skip


class WrappedStateDict(Rule):
    """
    ## What it does

    Flags `torch.save(model.state_dict(), ...)` (also inside a dict such as
    `{"model": model.state_dict(), "epoch": epoch}`, through one variable
    `sd = model.state_dict()`, and safetensors' `save_file`) where `model` is
    a `DistributedDataParallel`/`DataParallel` wrapper: every assignment of
    that name (or of `self.model` in the class) is `DDP(...)`,
    `DistributedDataParallel(...)` or `DataParallel(...)`. `model.module.
    state_dict()`, `unwrap_model(model).state_dict()` and names that are
    also assigned something else are not flagged.

    ## Why is this bad?

    The wrapper's state dict names every parameter `module.<name>`; the
    checkpoint then fails to load into the bare model
    (`Missing key(s) in state_dict: "fc.weight" ... Unexpected key(s):
    "module.fc.weight"`), for inference, fine-tuning or a run on one GPU.

    ## Example

    ```python
    model = DDP(net, device_ids=[local_rank])
    ...
    torch.save(model.state_dict(), "model.pt")
    ```

    ## Use instead

    ```python
    model = DDP(net, device_ids=[local_rank])
    ...
    torch.save(model.module.state_dict(), "model.pt")
    ```

    ## Fix safety

    `--fix` replaces `model.state_dict()` with `model.module.state_dict()`:
    safe, since the rule fires only when every value the receiver can hold
    is a `DistributedDataParallel` or `DataParallel` call, and both keep the
    wrapped model in `.module`. The saved keys lose their `module.` prefix,
    which is the point: checkpoints written before the fix need
    `consume_prefix_in_state_dict_if_present` to load.

    ## References

    - [DistributedDataParallel: saving and loading](https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints)
    """

    code = "DDP011"
    name = "wrapped-state-dict"
    severity = Severity.WARNING
    summary = "A DDP/DataParallel wrapper's state dict is saved: its keys carry a `module.` prefix."
    requires = frozenset({"rank"})
    tokens = ("state_dict",)
    context_tokens = ("DataParallel",)  # every wrapper's import names it
    tags = ("correctness",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args or not self.ctx.qualified_names(node.func) & SAVE_FUNCTIONS:
            return
        for state_dict in self._state_dict_calls(node.args[0].value, follow=True):
            receiver = state_dict.func.value
            if id(state_dict) not in self.reported and self._is_wrapper(receiver):
                self.reported.add(id(state_dict))
                shown = self.ctx.module.code_for_node(receiver)
                self.report(
                    state_dict,
                    f"`{shown}` is a DDP/DataParallel wrapper, so this state dict's keys start with "
                    f"`module.` and will not load into the bare model; save `{shown}.module.state_dict()`",
                    fix=ProposedFix(
                        f"Save `{shown}.module.state_dict()`",
                        ((receiver, cst.Attribute(value=receiver, attr=cst.Name("module"))),),
                    ),
                )

    def _state_dict_calls(self, node: cst.BaseExpression, follow: bool) -> list[cst.Call]:
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "state_dict":
                return [node]
            return []
        if isinstance(node, cst.Dict):
            return [c for e in node.elements if isinstance(e, cst.DictElement) for c in self._state_dict_calls(e.value, follow)]
        if isinstance(node, (cst.List, cst.Tuple)):
            return [c for e in node.elements for c in self._state_dict_calls(e.value, follow)]
        if isinstance(node, cst.Name) and follow:
            values = self.ctx.values_of(node)
            return [c for v in values if isinstance(v, cst.BaseExpression) for c in self._state_dict_calls(v, False)]
        return []

    def _is_wrapper(self, receiver: cst.BaseExpression) -> bool:
        if isinstance(receiver, cst.Name):
            values = self.ctx.values_of(receiver)
        elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            values = tuple(self.ctx.rank.attribute_values.get(receiver.attr.value, ()))
        else:
            return False
        return bool(values) and all(
            isinstance(v, cst.Call) and bool(names := self.ctx.qualified_names(v.func)) and names <= WRAPPERS
            for v in values
        )
