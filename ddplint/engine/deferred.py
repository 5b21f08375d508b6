"""Deferred checks: a rule's ``check_<Node>(node, site)``, called after the walk.

Who runs a line is known only once the whole module has been walked (a call
further down may make a function an entry point, a later assignment may make
a name a rank). A rule that asks such questions implements
``check_<Node>(self, node, site)`` instead of recording sites itself and
looping over them in `finish()`: the engine records each node of that class
during the walk (only those the rule's optional ``trigger_<Node>(self, node)``
accepts: keep it cheap, it runs in the walk) and calls the check after the
walk, in source order, with the walk's position restored:

* `site` is the node's `Site` (its statement and function; with the rank
  analysis, which a rule asking who runs the node declares in `requires`,
  also its guards and loops);
* ``self.ctx.stack`` is the node's ancestors again, so `report` anchors the
  finding (and its ``# noqa``) at the node's statement with no ``statement=``;
* names resolve as they did there (`qualified_name`, `values_of`): bindings
  made later in the same scopes are not seen.

Other analyses answer as after the walk: ask them what is final then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst

from ddplint.analysis.guards import Site
from ddplint.analysis.scope import ScopeMark
from ddplint.engine.context import FileContext
from ddplint.rule import Rule


@dataclass(frozen=True)
class Deferred:
    rule: Rule
    node: cst.CSTNode
    check: Callable[[cst.CSTNode, Site], None]
    site: Site
    stack: tuple[cst.CSTNode, ...]
    scopes: ScopeMark


class DeferredChecks:
    """Records the nodes the rules' checks want, then runs the checks."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.items: list[Deferred] = []

    def record(self, rule: Rule, node: cst.CSTNode, check: Callable[[cst.CSTNode, Site], None]) -> None:
        ctx = self.ctx
        site = ctx.rank.site(node) if ctx.runs("rank") else Site(node, ctx.statement(), (), ctx.enclosing_function())
        self.items.append(Deferred(rule, node, check, site, tuple(ctx.stack), ctx.scopes.mark()))

    def run(self, active: Callable[[Rule], bool], fail: Callable[[Any, BaseException], None]) -> None:
        """Call every check whose rule is still on; a check that raises
        switches its rule off (`fail`), as a visit would."""
        ctx = self.ctx
        stack = ctx.stack
        try:
            for item in self.items:
                if not active(item.rule):
                    continue
                stack[:] = item.stack
                try:
                    with ctx.scopes.restored(item.scopes):
                        item.check(item.node, item.site)
                except Exception as exc:  # noqa: BLE001 - one rule's bug must not hide the others
                    fail(item.rule, exc)
        finally:
            stack.clear()
