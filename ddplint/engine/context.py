"""What a rule can ask about the file it is linting.

One `FileContext` per file, shared by all rules. Its answers come from the
analyses the walker updates as it goes, so they describe the node being
visited: ask during ``visit_``/``leave_`` (not later), and keep the answer if
`finish()` needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ddplint.analysis.distributed import DistributedContext
from ddplint.analysis.scope import QualNames, ScopeTracker
from ddplint.config.settings import Settings
from ddplint.model import Fix

if TYPE_CHECKING:
    from ddplint.rule import Rule


@dataclass(frozen=True)
class PendingFinding:
    """A finding before positions are known (nodes, not lines)."""

    rule: type[Rule]
    node: cst.CSTNode
    statement: cst.CSTNode
    message: str
    related: tuple[tuple[cst.CSTNode, str], ...]
    fix: Fix | None


class FileContext:
    """The shared per-file facts and the sink for findings."""

    def __init__(
        self,
        path: str,
        source: str,
        module: cst.Module,
        settings: Settings,
        stack: list[cst.CSTNode],
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.settings = settings
        #: Ancestors of the node being visited, outermost first, itself last.
        self.stack = stack
        self.scopes = ScopeTracker(module)
        self._distributed = DistributedContext(self.scopes)
        self.pending: list[PendingFinding] = []

    @property
    def analyses(self) -> tuple[object, ...]:
        """The walker analyses, in the order they must run."""
        return (self.scopes, self._distributed)

    # ------------------------------------------------------------ names

    def qualified_names(self, node: cst.BaseExpression) -> QualNames:
        """Every qualified name `node` may denote here; `None` marks unknowns."""
        return self.scopes.qualified_names(node)

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """The one qualified name `node` certainly denotes, else None."""
        names = self.scopes.qualified_names(node)
        if len(names) == 1:
            (name,) = names
            return name
        return None

    def values_of(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, ...]:
        """The expressions a Name may hold here (empty when unknown)."""
        return self.scopes.values_of(node)

    @property
    def in_distributed_context(self) -> bool:
        """Whether the module is distributed code; final after the walk."""
        return self._distributed.found

    # ------------------------------------------------------------ reporting

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        *,
        related: tuple[tuple[cst.CSTNode, str], ...] = (),
        fix: Fix | None = None,
    ) -> None:
        """Record a finding; the statement around `node` scopes `# noqa`."""
        self.pending.append(
            PendingFinding(type(rule), node, self._statement_of(node), message, related, fix)
        )

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode:
        for ancestor in reversed(self.stack):
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return ancestor
        return node
