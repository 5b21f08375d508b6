"""What a rule can ask about the file it is linting, and where it reports.

`FileContext` is the per-file `SemanticModel` (ddplint/analysis/semantic.py)
plus the sink for the findings the rules report during the walk.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import libcst as cst

from ddplint.analysis.semantic import SemanticModel
from ddplint.model import Fix, Related, Severity
from ddplint.rule import Message, PendingFinding

if TYPE_CHECKING:
    from ddplint.analysis.rewrite import ProposedFix
    from ddplint.rule import Rule


class FileContext(SemanticModel):
    """The shared per-file facts and the sink for findings; as a context
    manager, `release`d at its end."""

    def __enter__(self) -> FileContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @functools.cached_property
    def pending(self) -> list[PendingFinding]:
        """The findings reported so far, in order."""
        return []

    # ------------------------------------------------------------ reporting

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: Message,
        *,
        related: tuple[tuple[cst.CSTNode, str] | Related, ...] = (),
        fix: Fix | ProposedFix | None = None,
        statement: cst.CSTNode | None = None,
        severity: Severity | None = None,
    ) -> None:
        """Record a finding; the statement around `node` scopes `# noqa`.

        Rules that report from `finish()` pass the `statement` they saved,
        since the walker's stack is gone by then.
        """
        self.pending.append(
            PendingFinding(type(rule), node, statement or self.statement(), message, related, fix, severity)
        )
