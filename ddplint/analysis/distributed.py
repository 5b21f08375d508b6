"""Is this module distributed training code? (SPEC §2 "distributed context").

A module is in distributed context when it imports `torch.distributed`,
`DistributedDataParallel`, FSDP, accelerate, deepspeed or Lightning, refers
to one of those through an imported parent package (``torch.distributed.``
after ``import torch``), or calls an ``init_process_group``. The answer is
final only once the whole module was walked; rules flagged
`distributed_only` have their findings filtered by the engine at the end.
"""

from __future__ import annotations

import libcst as cst

from ddplint.analysis.names import dotted_name
from ddplint.analysis.scope import ScopeTracker, import_bindings, import_from_module

DISTRIBUTED_PREFIXES = (
    "torch.distributed",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed",
    "accelerate",
    "deepspeed",
    "lightning",
    "pytorch_lightning",
)

_INIT_CALLS = ("init_process_group", "init_distributed")


def is_distributed_name(qualname: str | None) -> bool:
    """True for a qualified name inside one of the distributed libraries."""
    if not qualname:
        return False
    return any(qualname == p or qualname.startswith(p + ".") for p in DISTRIBUTED_PREFIXES)


class DistributedContext:
    """Walker analysis that records whether the module is distributed code."""

    def __init__(self, scopes: ScopeTracker) -> None:
        self._scopes = scopes
        self.found = False

    def leave_Import(self, node: cst.Import) -> None:
        if not self.found:
            self.found = any(is_distributed_name(dotted_name(a.name)) for a in node.names)

    def leave_ImportFrom(self, node: cst.ImportFrom) -> None:
        if self.found:
            return
        if is_distributed_name(import_from_module(node)):
            self.found = True
        else:
            self.found = any(is_distributed_name(q) for _, q in import_bindings(node))

    def visit_Call(self, node: cst.Call) -> None:
        if self.found:
            return
        func = node.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
        elif isinstance(func, cst.Name):
            name = func.value
        else:
            return
        if name in _INIT_CALLS:
            self.found = True
            return
        if isinstance(func, cst.Attribute):
            self.found = any(is_distributed_name(q) for q in self._scopes.qualified_names(func))
