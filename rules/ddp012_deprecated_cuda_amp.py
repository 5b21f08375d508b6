"""DDP012 deprecated-cuda-amp."""

from __future__ import annotations

from ddplint.analysis.compat import in_compat_branch
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

_AUTOCAST_CUDA = 'torch.amp.autocast("cuda", ...)'
_AUTOCAST_CPU = 'torch.amp.autocast("cpu", ...)'
_SCALER_CUDA = 'torch.amp.GradScaler("cuda", ...)'
_SCALER_CPU = 'torch.amp.GradScaler("cpu", ...)'

#: Deprecated qualified name -> its replacement. The submodule spellings are
#: where the classes live; users do import them directly.
REPLACEMENTS = {
    "torch.cuda.amp.autocast": _AUTOCAST_CUDA,
    "torch.cuda.amp.autocast_mode.autocast": _AUTOCAST_CUDA,
    "torch.cuda.amp.GradScaler": _SCALER_CUDA,
    "torch.cuda.amp.grad_scaler.GradScaler": _SCALER_CUDA,
    "torch.cuda.amp.custom_fwd": 'torch.amp.custom_fwd(device_type="cuda", ...)',
    "torch.cuda.amp.autocast_mode.custom_fwd": 'torch.amp.custom_fwd(device_type="cuda", ...)',
    "torch.cuda.amp.custom_bwd": 'torch.amp.custom_bwd(device_type="cuda")',
    "torch.cuda.amp.autocast_mode.custom_bwd": 'torch.amp.custom_bwd(device_type="cuda")',
    "torch.cpu.amp.autocast": _AUTOCAST_CPU,
    "torch.cpu.amp.autocast_mode.autocast": _AUTOCAST_CPU,
    "torch.cpu.amp.GradScaler": _SCALER_CPU,
    "torch.cpu.amp.grad_scaler.GradScaler": _SCALER_CPU,
}


class DeprecatedCudaAmp(Rule):
    """
    ## What it does

    Flags calls of the device-specific mixed-precision APIs that PyTorch
    deprecated in 2.4: `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`,
    `torch.cuda.amp.custom_fwd`/`custom_bwd`, `torch.cpu.amp.autocast` and
    `torch.cpu.amp.GradScaler`, however they were imported
    (`import torch.cuda.amp as amp`, `from torch.cuda.amp import autocast as ac`)
    and also when used as decorators (`@torch.cuda.amp.autocast()`,
    `@custom_fwd`).

    A name is flagged only when it certainly denotes a deprecated API: a
    local function called `autocast`, or an `autocast` imported from
    `torch.cuda.amp` on old PyTorch and from `torch.amp` on new PyTorch in
    two branches of an `if`, is not. Nor is code that only runs on old
    PyTorch releases: a branch of a version test
    (`torch.amp.GradScaler("cuda") if _TORCH_GREATER_EQUAL_2_4 else
    torch.cuda.amp.GradScaler()`, `if digit_version(TORCH_VERSION) < ...`,
    `hasattr(torch, "amp")`), or the `except` clause of a `try` that
    attempts `torch.amp` first.

    ## Why is this bad?

    Each call emits a `FutureWarning` (on every rank, on every step when
    `autocast` wraps the forward pass), flooding the job's logs, and the
    APIs will be removed. The device-generic `torch.amp` versions take the
    device type as their first argument and behave the same.

    ## Example

    ```python
    import torch

    scaler = torch.cuda.amp.GradScaler()
    for batch in loader:
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            loss = model(batch)
        scaler.scale(loss).backward()
    ```

    ## Use instead

    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            loss = model(batch)
        scaler.scale(loss).backward()
    ```

    ## Fix safety

    Replacing the call is safe: the `torch.amp` APIs are what the deprecated
    wrappers call. The automatic fix is part of `--fix` (planned); until then
    the message names the replacement.

    ## References

    - [Automatic Mixed Precision package – torch.amp](https://pytorch.org/docs/stable/amp.html)
    """

    code = "DDP012"
    name = "deprecated-cuda-amp"
    severity = Severity.NOTE
    summary = "Deprecated torch.cuda.amp / torch.cpu.amp API; use torch.amp with a device type."
    tokens = ("amp",)
    tags = ("deprecation", "maintainability")

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node, node.func)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if not isinstance(node.decorator, cst.Call):  # calls are seen by visit_Call
            self._check(node.decorator, node.decorator)

    def _check(self, anchor: cst.CSTNode, callee: cst.BaseExpression) -> None:
        names = self.ctx.qualified_names(callee)
        if not names or not all(name in REPLACEMENTS for name in names):
            return
        if in_compat_branch(self.ctx.stack, self.ctx.module, "torch.amp"):
            return  # the fallback for PyTorch releases that predate torch.amp
        qualname = min(names)
        written = self.ctx.module.code_for_node(callee)
        shown = f"`{written}`" if written == qualname else f"`{written}` (`{qualname}`)"
        self.report(
            anchor,
            f"{shown} is deprecated since PyTorch 2.4 and warns on every use; "
            f"use `{REPLACEMENTS[qualname]}`",
        )
