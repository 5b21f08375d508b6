"""DDP011 wrapped-state-dict."""

from __future__ import annotations

from ddplint.analysis.guards import Site
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class WrappedStateDict(Rule):
    """
    ## What it does

    Flags `torch.save(model.state_dict(), ...)` (also inside a dict such as
    `{"model": model.state_dict(), "epoch": epoch}`, through one variable
    `sd = model.state_dict()`, and safetensors' `save_file`) where `model` is
    a `DistributedDataParallel`/`DataParallel` wrapper: every assignment of
    that name (or of `self.model` in the class) is `DDP(...)`,
    `DistributedDataParallel(...)` or `DataParallel(...)`, or some are and
    the rest the bare model (`if world_size > 1: model = DDP(model)`: every
    distributed run saves the prefixed keys). `model.module.state_dict()`,
    `unwrap_model(model).state_dict()` and names also assigned an unwrapped
    module (`model = model.module`) are not flagged.

    Nor is a module that handles the prefix itself: it strips it
    (`k.replace("module.", "")`, any string naming `module.`) or loads its
    checkpoints back into the same wrapper (`model.load_state_dict(...)`,
    `restart_from_checkpoint(path, state_dict=model)`, as DINO and SwAV do):
    there the prefixed keys are the repository's checkpoint format, and
    changing them would break its own loading.

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
    safe, since the fix is offered only when every value the receiver can
    hold is a `DistributedDataParallel` or `DataParallel` call, and both keep
    the wrapped model in `.module`. A maybe-wrapped model gets advice only
    (`getattr(model, "module", model).state_dict()`). The saved keys lose their `module.` prefix,
    which is the point: checkpoints written before the fix need
    `consume_prefix_in_state_dict_if_present` to load.

    ## References

    - [DistributedDataParallel: saving and loading](https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints)
    """

    code = "DDP011"
    name = "wrapped-state-dict"
    severity = Severity.WARNING
    summary = "A DDP/DataParallel wrapper's state dict is saved: its keys carry a `module.` prefix."
    requires = frozenset({"models"})
    tokens = ("state_dict",)
    context_tokens = ("DataParallel",)  # every wrapper's import names it
    tags = ("correctness",)

    def trigger_Call(self, node: cst.Call) -> bool:
        return bool(self.ctx.models.saved_state_dicts(node))

    def check_Call(self, node: cst.Call, site: Site) -> None:
        models, code = self.ctx.models, self.ctx.module.code_for_node
        for state_dict in models.saved_state_dicts(node):
            receiver = state_dict.func.value  # type: ignore[attr-defined]
            certain = models.wrapped(receiver)
            if certain is None or models.handles_key_prefix(receiver):
                continue
            shown = code(receiver)
            if certain:
                where, advice = "is a DDP/DataParallel wrapper, so this", f"`{shown}.module.state_dict()`"
                fix = ProposedFix(f"Save {advice}", ((receiver, models.bare_module(receiver)),))
            else:
                where = "is wrapped in DDP/DataParallel on distributed runs, so there this"
                advice = f'`getattr({shown}, "module", {shown}).state_dict()`'
                fix = ProposedFix.display_only("Save the unwrapped module's state dict")
            keys = "state dict's keys start with `module.` and will not load into the bare model"
            self.report(state_dict, f"`{shown}` {where} {keys}; save {advice}", fix=fix)
