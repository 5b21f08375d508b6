"""DDP011 wrapped-state-dict."""

from __future__ import annotations

from collections import defaultdict

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
    requires = frozenset()
    tokens = ("state_dict",)
    context_tokens = ("DataParallel",)  # every wrapper's import names it
    tags = ("correctness",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.reported: set[int] = set()
        #: (state_dict call, statement, certainly wrapped) to judge after the walk.
        self.saves: list[tuple[cst.Call, cst.CSTNode, bool]] = []
        #: Receivers (as written) whose checkpoints the module loads back into them.
        self.loaded_into: set[str] = set()
        self.strips_prefix = False
        #: `self.<name>` assignments per class.
        self.self_values: dict[tuple[cst.ClassDef | None, str], list[cst.BaseExpression]] = defaultdict(list)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        """`k.replace("module.", "")`, `k[len("module."):]`: a short string
        that is the prefix (not a docstring that mentions it)."""
        if not self.strips_prefix and len(node.value) < 24 and node.value.strip("rbuRBU").strip("\"'").startswith("module."):
            self.strips_prefix = True

    def visit_Assign(self, node: cst.Assign) -> None:
        owner = _enclosing_class(self.ctx.stack)
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                self.self_values[(owner, t.attr.value)].append(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        code = self.ctx.module.code_for_node
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict":
            self.loaded_into.add(code(func.value))
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in ("state_dict", "model"):
                self.loaded_into.add(code(arg.value))
        if not node.args or not self.ctx.qualified_names(node.func) & SAVE_FUNCTIONS:
            return
        for state_dict in self._state_dict_calls(node.args[0].value, follow=True):
            receiver = state_dict.func.value
            wrapped = self._wrapped(receiver)
            if id(state_dict) not in self.reported and wrapped is not None:
                self.reported.add(id(state_dict))
                self.saves.append((state_dict, self.ctx.statement(), wrapped))

    def finish(self) -> None:
        if self.strips_prefix:
            return  # the repository handles the prefix (its checkpoint format)
        code = self.ctx.module.code_for_node
        for state_dict, statement, certain in self.saves:
            receiver = state_dict.func.value
            shown = code(receiver)
            if shown in self.loaded_into:
                continue
            if certain:
                message = (
                    f"`{shown}` is a DDP/DataParallel wrapper, so this state dict's keys start with "
                    f"`module.` and will not load into the bare model; save `{shown}.module.state_dict()`"
                )
                fix = ProposedFix(
                    f"Save `{shown}.module.state_dict()`",
                    ((receiver, cst.Attribute(value=receiver, attr=cst.Name("module"))),),
                )
            else:
                message = (
                    f"`{shown}` is wrapped in DDP/DataParallel on distributed runs, so there this state dict's keys "
                    f"start with `module.` and will not load into the bare model; save "
                    f'`getattr({shown}, "module", {shown}).state_dict()`'
                )
                fix = ProposedFix.display_only("Save the unwrapped module's state dict")
            self.report(state_dict, message, fix=fix, statement=statement)

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

    def _wrapped(self, receiver: cst.BaseExpression) -> bool | None:
        """True: every value is a wrapper; False: some are, the rest bare
        models (maybe wrapped); None: not a wrapper, or also unwrapped."""
        if isinstance(receiver, cst.Name):
            values = self.ctx.values_of(receiver)
        elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            values = tuple(self.self_values.get((_enclosing_class(self.ctx.stack), receiver.attr.value), ()))
        else:
            return None
        wrappers = [v for v in values if isinstance(v, cst.Call) and (n := self.ctx.qualified_names(v.func)) and n <= WRAPPERS]
        if not wrappers:
            return None
        if len(wrappers) == len(values):
            return True
        if any(_unwraps(v) for v in values):
            return None  # `model = model.module` somewhere: which one is saved is unknown
        return False


def _enclosing_class(stack: list[cst.CSTNode]) -> cst.ClassDef | None:
    return next((n for n in reversed(stack) if isinstance(n, cst.ClassDef)), None)


def _unwraps(value: cst.CSTNode) -> bool:
    """`model.module`, `unwrap_model(model)`, `accelerator.unwrap_model(model)`."""
    if isinstance(value, cst.Attribute) and value.attr.value == "module":
        return True
    if isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return "unwrap" in name
    return False
