"""What an analysis may ask of the per-file semantic model.

`ModelView` is the part of `semantic.SemanticModel` that the analyses the
model builds (rank, loops, data, ...) use while the walk goes on: the file,
the walker's stack, names and values, and the facts imported from other
modules. It is a protocol so that those analyses never import the model that
constructs them (tests/test_layers.py forbids import circles).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import libcst as cst

    from ddplint.analysis.flow import ValueFlow
    from ddplint.analysis.scope import QualNames, ScopeTracker
    from ddplint.config.settings import Settings
    from ddplint.project.facts import FileFacts


class ModelView(Protocol):
    """The per-file model as its own analyses see it."""

    path: str
    source: str
    module: cst.Module
    settings: Settings
    #: Ancestors of the node being visited, outermost first, itself last.
    stack: list[cst.CSTNode]
    scopes: ScopeTracker
    #: Facts about the helpers this module imports from other linted modules.
    facts: FileFacts
    #: Whether to record what the module summary needs (whole-project analysis).
    summarize: bool

    def runs(self, analysis: str) -> bool: ...

    def enclosing_function(self) -> cst.FunctionDef | None: ...

    def qualified_names(self, node: cst.BaseExpression) -> QualNames: ...

    def qualified_name(self, node: cst.BaseExpression) -> str | None: ...

    def values_of(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, ...]: ...

    @property
    def flow(self) -> ValueFlow: ...

    def origins(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, ...]: ...

    def statement(self) -> cst.CSTNode: ...

    def imported_callees(self, func: cst.BaseExpression) -> frozenset[str]: ...
