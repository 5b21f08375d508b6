"""DDP012 deprecated-cuda-amp."""

from __future__ import annotations

import functools

from ddplint.analysis.amp import modernized
from ddplint.knowledge import DEPRECATED_AMP, DEPRECATED_AMP_MODULES
from ddplint.analysis.compat import in_compat_branch
from ddplint.analysis.guards import Site
from ddplint.analysis.rewrite import ProposedFix, without_alias
from ddplint.analysis.scope import import_bindings
from ddplint.analysis.tree import name_reads
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


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

    `--fix` rewrites the call, and is safe: the `torch.amp` APIs are what the
    deprecated wrappers call. `torch.cuda.amp.autocast(True, torch.float16)`
    becomes `torch.amp.autocast("cuda", enabled=True, dtype=torch.float16)`
    (its positional parameters differ from the new signature's, so they are
    passed by keyword); `GradScaler(...)` becomes
    `torch.amp.GradScaler("cuda", ...)`; `@custom_fwd` becomes
    `@torch.amp.custom_fwd(device_type="cuda")`. Names imported from
    `torch.cuda.amp` are rewritten too, with `import torch` added when the
    module lacks it, and the deprecated import, once nothing uses it, is
    reported (it is a finding of this rule) and removed. No fix is proposed
    for an alias made by assignment (`ac = torch.cuda.amp.autocast`), for
    `*args`, or where `torch` names something else.

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
        if not names or not all(name in DEPRECATED_AMP for name in names):
            return
        if in_compat_branch(self.ctx.stack, self.ctx.module, "torch.amp"):
            return  # the fallback for PyTorch releases that predate torch.amp
        qualname = min(names)
        new, device, _, replacement = DEPRECATED_AMP[qualname]
        written = self.ctx.module.code_for_node(callee)
        shown = f"`{written}`" if written == qualname else f"`{written}` (`{qualname}`)"
        title = f"Use `{new}` with device `{device}`"
        changes = modernized(anchor, callee, qualname, self.ctx)
        self.report(
            anchor,
            f"{shown} is deprecated since PyTorch 2.4 and warns on every use; use `{replacement}`",
            fix=ProposedFix(title, changes) if changes else ProposedFix.display_only(title),
        )

    @functools.cached_property
    def uses(self) -> dict[str, int]:
        return name_reads(self.ctx.module)

    def trigger_Import(self, node: cst.Import | cst.ImportFrom) -> bool:
        return any(qualname.startswith(DEPRECATED_AMP_MODULES) for _, qualname in import_bindings(node))

    trigger_ImportFrom = trigger_Import

    def check_Import(self, node: cst.Import | cst.ImportFrom, site: Site) -> None:
        line, block, source = self.ctx.stack[-2], self.ctx.stack[-3], self.ctx.source
        alone = isinstance(block, cst.IndentedBlock) and len(block.body) == 1
        for alias, (bound, qualname) in zip(node.names, import_bindings(node)):  # type: ignore[arg-type]
            quoted = f"'{bound}'" in source or f'"{bound}"' in source  # maybe re-exported through `__all__`
            if not qualname.startswith(DEPRECATED_AMP_MODULES) or self.uses[bound] > 0 or quoted:
                continue
            self.report(
                alias,
                f"`{bound}` (`{qualname}`) is a deprecated AMP API imported but not used; remove the import",
                fix=ProposedFix(f"Remove the unused import of `{bound}`", (without_alias(line, node, alias, alone),)),
            )

    check_ImportFrom = check_Import
