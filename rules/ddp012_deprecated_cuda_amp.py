"""DDP012 deprecated-cuda-amp."""

from __future__ import annotations

from collections import Counter

from ddplint.analysis.compat import in_compat_branch
from ddplint.analysis.names import dotted_name
from ddplint.analysis.rewrite import DELETE_LINES, ProposedFix, Replacement, dotted, insert_before
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


_DEPRECATED_MODULES = ("torch.cuda.amp", "torch.cpu.amp")

#: Deprecated qualified name -> (replacement, device, how its arguments change).
_MODERN = {
    old: (new, device, kind)
    for device, module in (("cuda", "torch.cuda.amp"), ("cpu", "torch.cpu.amp"))
    for suffix, new, kind in (
        ("autocast", "torch.amp.autocast", "autocast"),
        ("autocast_mode.autocast", "torch.amp.autocast", "autocast"),
        ("GradScaler", "torch.amp.GradScaler", "scaler"),
        ("grad_scaler.GradScaler", "torch.amp.GradScaler", "scaler"),
        ("custom_fwd", "torch.amp.custom_fwd", "decorator"),
        ("autocast_mode.custom_fwd", "torch.amp.custom_fwd", "decorator"),
        ("custom_bwd", "torch.amp.custom_bwd", "decorator"),
        ("autocast_mode.custom_bwd", "torch.amp.custom_bwd", "decorator"),
    )
    if (old := f"{module}.{suffix}") in REPLACEMENTS
}

#: `torch.cuda.amp.autocast`'s positional parameters (`torch.amp.autocast` puts `device_type` first).
_AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")


def _modern_call(call: cst.Call | None, func: cst.BaseExpression, device: str, kind: str) -> cst.BaseExpression | None:
    """The `torch.amp` call that does what the deprecated one did, or None
    when its arguments cannot be carried over (`*args`)."""
    device_arg = cst.Arg(cst.SimpleString(f'"{device}"'))
    args = list(call.args) if call is not None else []
    if any(a.star for a in args if a.keyword is None and a.star == "*"):
        return None
    if kind == "decorator":  # `@custom_fwd` / `@custom_fwd(cast_inputs=...)`: device_type is keyword-only
        if any(a.keyword is None for a in args):
            return None
        keyword = cst.Arg(cst.SimpleString(f'"{device}"'), keyword=cst.Name("device_type"),
                          equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        new_args = [keyword, *args]
    elif kind == "autocast":  # old positionals become keywords: the new signature differs
        positional = [a for a in args if a.keyword is None and not a.star]
        if len(positional) > len(_AUTOCAST_POSITIONAL):
            return None
        new_args = [device_arg]
        for index, arg in enumerate(args):
            if arg.keyword is None and not arg.star:
                arg = arg.with_changes(keyword=cst.Name(_AUTOCAST_POSITIONAL[index]),
                                       equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            new_args.append(arg)
    else:  # GradScaler(device, init_scale, ...): the old positionals keep their meaning after the device
        new_args = [device_arg, *args]
    if len(new_args) > 1 and new_args[0].comma is cst.MaybeSentinel.DEFAULT:
        new_args[0] = new_args[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    if call is None:
        return cst.Call(func=func, args=new_args)
    return call.with_changes(func=func, args=new_args)


def _first_import(module: cst.Module) -> cst.SimpleStatementLine | None:
    """The module-level statement before which `import torch` goes: the first
    import that is not `from __future__`."""
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], (cst.Import, cst.ImportFrom)):
            first = statement.body[0]
            if not (isinstance(first, cst.ImportFrom) and isinstance(first.module, cst.Name) and first.module.value == "__future__"):
                return statement
    return None


def _without_alias(
    line: cst.SimpleStatementLine, node: cst.Import | cst.ImportFrom, alias: cst.ImportAlias, alone: bool
) -> tuple[cst.CSTNode, Replacement]:
    """The change that removes `alias` from its import: the name, the
    statement, the line, or (`alone` in its block) the line becomes `pass`."""
    names = [a for a in node.names if a is not alias]
    if names:
        if node.names[-1] is alias:  # keep the statement's trailing-comma style
            names[-1] = names[-1].with_changes(comma=alias.comma)
        return node, node.with_changes(names=names)
    if len(line.body) > 1:
        return line, line.with_changes(body=[s for s in line.body if s is not node])
    if alone:
        return line, line.with_changes(body=[cst.Pass()])
    return line, DELETE_LINES


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

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        #: Names bound by `from torch.cuda.amp import x [as y]` / `import torch.cuda.amp as y`.
        self.deprecated_imports: list[tuple[cst.SimpleStatementLine, cst.Import | cst.ImportFrom, cst.ImportAlias, str, bool]] = []
        self.uses: Counter[str] = Counter()
        self.in_import = False

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node, node.func)

    def visit_Name(self, node: cst.Name) -> None:
        if not self.in_import:
            self.uses[node.value] += 1

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if not self.in_import:
            self.uses[node.attr.value] -= 1  # `x.GradScaler` does not use a name `GradScaler`

    def visit_Import(self, node: cst.Import) -> None:
        self.in_import = True
        self._record_imports(node, lambda alias: dotted_name(alias.name) or "")

    def leave_Import(self, node: cst.Import) -> None:
        self.in_import = False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.in_import = True
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        self._record_imports(node, lambda alias: f"{module}.{dotted_name(alias.name) or ''}")

    def leave_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.in_import = False

    def _record_imports(self, node: cst.Import | cst.ImportFrom, qualname) -> None:
        stack = self.ctx.stack
        line = stack[-2] if len(stack) > 2 else None
        if not isinstance(line, cst.SimpleStatementLine) or isinstance(node.names, cst.ImportStar):
            return
        block = stack[-3]
        alone = isinstance(block, cst.IndentedBlock) and len(block.body) == 1
        for alias in node.names:
            name = qualname(alias)
            bound_alone = isinstance(node, cst.ImportFrom) or alias.asname is not None
            if bound_alone and name.startswith(_DEPRECATED_MODULES):
                self.deprecated_imports.append((line, node, alias, name, alone))

    def finish(self) -> None:
        source = self.ctx.source
        for line, node, alias, qualname, alone in self.deprecated_imports:
            bound = alias.evaluated_alias or alias.evaluated_name
            if self.uses[bound] > 0 or f"'{bound}'" in source or f'"{bound}"' in source:
                continue  # used, or maybe re-exported through `__all__`
            self.report(
                alias,
                f"`{bound}` (`{qualname}`) is a deprecated AMP API imported but not used; remove the import",
                statement=line,
                fix=ProposedFix(f"Remove the unused import of `{bound}`", (_without_alias(line, node, alias, alone),)),
            )

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
            fix=self._fix(anchor, callee, qualname),
        )

    def _fix(self, anchor: cst.CSTNode, callee: cst.BaseExpression, qualname: str) -> ProposedFix:
        new, device, kind = _MODERN[qualname]
        title = f"Use `{new}` with device `{device}`"
        if self.ctx.scopes.imported_qualnames(callee) != frozenset({qualname}):
            return ProposedFix.display_only(title)  # an alias made by assignment: the user's to rename
        torch = self.ctx.scopes.lookup("torch")
        if torch is not None and torch.qualnames != frozenset({"torch"}):
            return ProposedFix.display_only(title)  # `torch` is something else here
        changes: list[tuple[cst.CSTNode, Replacement]] = []
        call = anchor if isinstance(anchor, cst.Call) else None
        replacement = _modern_call(call, dotted(new), device, kind)
        if replacement is None:
            return ProposedFix.display_only(title)
        changes.append((anchor, replacement))
        if torch is None:
            first = _first_import(self.ctx.module)
            if first is None:
                return ProposedFix.display_only(title)
            changes.append(insert_before(first, cst.parse_statement("import torch\n")))
        return ProposedFix(title, tuple(changes))
