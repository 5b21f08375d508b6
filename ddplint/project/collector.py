"""The walker analysis that gathers a module's summary, in the lint walk.

Runs only when the whole-project analysis asks for summaries. It reuses the
rank analysis (return values of functions, module-level variables) and the
collective catalogue; what it adds is bookkeeping per top-level function:
the collectives its body performs, the module functions and imported names
it calls, and whether it replaces ``builtins.print`` (DETR's
``setup_for_distributed``).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import TYPE_CHECKING, Mapping

from ddplint.analysis.classes import imported_bases
from ddplint.analysis.collectives import collective_name
from ddplint.analysis.data import dataset_kind
from ddplint.lazy import cst
from ddplint.project.summary import Symbol

if TYPE_CHECKING:
    from ddplint.engine.context import FileContext

#: Imported names that are never a linted module's: the standard library, torch, numpy.
_EXTERNAL_ROOTS = frozenset(getattr(sys, "stdlib_module_names", ())) | {"torch", "numpy", "builtins"}
_PRINT = "builtins.print"


def _external(qualname: str) -> bool:
    return qualname.split(".", 1)[0] in _EXTERNAL_ROOTS


class SummaryCollector:
    """Walker analysis: what the module summary needs, per top-level name."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.top_functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, Symbol] = {}
        self.direct: dict[cst.FunctionDef, str] = {}
        self.calls: dict[cst.FunctionDef, set[cst.FunctionDef]] = defaultdict(set)
        self.imported_calls: dict[cst.FunctionDef, dict[str, cst.BaseExpression]] = defaultdict(dict)
        self.silencers: set[cst.FunctionDef] = set()

    def _top_level(self) -> bool:
        """Whether the node being visited is outside every function and class."""
        return not any(isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for n in self.ctx.stack[:-1])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._top_level():
            self.top_functions.setdefault(node.name.value, node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._top_level():
            via = tuple(sorted(q for q in imported_bases(node, self.ctx) if not _external(q)))
            self.classes.setdefault(node.name.value, Symbol(dataset=dataset_kind(node, self.ctx), dataset_via=via))

    def visit_Call(self, node: cst.Call) -> None:
        function = self.ctx.enclosing_function()
        if function is None:
            return
        ctx = self.ctx
        func = node.func
        shown = collective_name(node, ctx)
        if shown is not None:
            self.direct.setdefault(function, shown)
            return
        if isinstance(func, cst.Name):
            self.calls[function].update(v for v in ctx.values_of(func) if isinstance(v, cst.FunctionDef))
        for qualname in ctx.scopes.imported_qualnames(func):
            if not _external(qualname):
                self.imported_calls[function].setdefault(qualname, func)

    def leave_Assign(self, node: cst.Assign) -> None:
        function = self.ctx.enclosing_function()
        if function is not None and any(
            isinstance(t.target, cst.Attribute) and _PRINT in self.ctx.qualified_names(t.target) for t in node.targets
        ):
            self.silencers.add(function)

    # ------------------------------------------------------------ after the walk

    def symbols(self, lines: Mapping[str, int]) -> dict[str, Symbol]:
        """The module's top-level symbols with their facts."""
        chains = self._chains()
        rank = self.ctx.rank
        code = self.ctx.module.code_for_node
        symbols: dict[str, Symbol] = {}
        for name, (deps, seen) in rank.module_values.items():
            via = tuple(sorted(q for q in seen if not _external(q)))
            symbols[name] = Symbol(rank=rank.is_rank_dependent(deps), rank_via=via)
        for name, function in self.top_functions.items():
            reach = self._reach(function)
            calls = {q: f for g in reach for q, f in self.imported_calls.get(g, {}).items()}
            local_rank, rank_via = rank.function_imports(function)
            symbols[name] = Symbol(
                line=lines.get(name, 0),
                rank=local_rank,
                rank_via=tuple(sorted(q for q in rank_via if not _external(q))),
                collective=chains.get(function, ()),
                collective_via=tuple(sorted((q, f"`{code(f)}()`") for q, f in calls.items())),
                silences_print=any(g in self.silencers for g in reach),
                silences_via=tuple(sorted(calls)),
            )
        for name, symbol in self.classes.items():
            symbols[name] = Symbol(line=lines.get(name, 0), dataset=symbol.dataset, dataset_via=symbol.dataset_via)
        return symbols

    def _reach(self, function: cst.FunctionDef) -> set[cst.FunctionDef]:
        """`function` and the module functions it calls, transitively."""
        seen: set[cst.FunctionDef] = set()
        todo = [function]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(self.calls.get(current, ()))
        return seen

    def _chains(self) -> dict[cst.FunctionDef, tuple[str, ...]]:
        """Module functions that perform a collective -> the chain of calls to it."""
        chains = {function: (shown,) for function, shown in self.direct.items()}
        changed = True
        while changed:
            changed = False
            for caller, callees in self.calls.items():
                if caller in chains:
                    continue
                for callee in callees:
                    if callee in chains:
                        chains[caller] = (f"`{callee.name.value}()`", *chains[callee])
                        changed = True
                        break
        return chains
