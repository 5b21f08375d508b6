"""The rank-0 tests a module already writes, reused by the fixes that put a
statement under one (DDP006, DDP007).

A fix must not invent a rank test the module cannot evaluate: it reuses one
the module already has where the statement is — an earlier
``if rank == 0:``/``if dist.get_rank() == 0:``/``if is_main_process():`` in
the same function, or a module-level helper predicate (`is_main_process()`)
from anywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.analysis.names import last_name
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Applicability

if TYPE_CHECKING:
    from ddplint.analysis.rank import Site
    from ddplint.engine.context import FileContext

#: Predicates that are true on the global rank 0 only (a local main process repeats per node).
MAIN_PREDICATES = frozenset(
    {"is_main_process", "is_master", "is_main", "master_process", "is_global_zero", "is_world_process_zero",
     "is_rank_zero", "is_rank_0"}
)  # fmt: skip


class RankZeroTests:
    """`if` tests that select rank 0, in source order, with their function."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.tests: list[tuple[cst.FunctionDef | None, cst.BaseExpression, bool]] = []

    def note(self, node: cst.If) -> None:
        """Record `node`'s test if it selects rank 0 (call from `visit_If`)."""
        test = node.test
        if _is_rank_zero_test(test, self.ctx):
            anywhere = isinstance(test, cst.Call) and not test.args and isinstance(test.func, cst.Name)
            self.tests.append((self.ctx.enclosing_function(), test, anywhere))

    def mark(self) -> int:
        """How many tests are known now: a site may reuse only those before it."""
        return len(self.tests)

    def wrap_fix(self, site: Site, before: int, title: str) -> ProposedFix:
        """Put the site's statement under the module's own rank-0 test (unsafe:
        the other ranks stop doing it), or advice when there is none or the
        statement binds names (they would be missing on the other ranks)."""
        statement = site.statement
        test = self._test_for(site.function, before)
        if test is None or not _wrappable(statement):
            return ProposedFix.display_only(title)
        code = cst.Module([]).code_for_node(test)
        wrapped = cst.If(
            test=cst.parse_expression(code),
            body=cst.IndentedBlock([statement.with_changes(leading_lines=())]),
            leading_lines=statement.leading_lines,
        )
        return ProposedFix(f"Run it on rank 0 only: `if {code}:`", ((statement, wrapped),), Applicability.UNSAFE)

    def _test_for(self, function: cst.FunctionDef | None, before: int) -> cst.BaseExpression | None:
        earlier = self.tests[:before]
        for owner, test, _ in earlier:
            if owner is function:
                return test
        for _, test, anywhere in self.tests:  # `is_main_process()` of a module-level helper
            if anywhere and self.ctx.scopes.lookup(test.func.value) is not None:  # type: ignore[union-attr]
                return test
        return None


def _is_rank_zero_test(test: cst.BaseExpression, ctx: FileContext) -> bool:
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        (comparison,) = test.comparisons
        left, right = test.left, comparison.comparator
        if isinstance(comparison.operator, cst.Equal):
            subject = right if _is_zero(left) else left if _is_zero(right) else None
            return subject is not None and _global_rank(subject, ctx)
        if isinstance(comparison.operator, cst.In) and isinstance(right, (cst.List, cst.Tuple)):
            values = {cst.Module([]).code_for_node(e.value) for e in right.elements}
            return values == {"-1", "0"} and _global_rank(left, ctx)
        return False
    target = test.func if isinstance(test, cst.Call) else test
    return isinstance(target, (cst.Name, cst.Attribute)) and last_name(target) in MAIN_PREDICATES


def _global_rank(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """A rank-dependent value that is not a local rank (local rank 0 runs once per node)."""
    return "local" not in cst.Module([]).code_for_node(node).lower() and ctx.rank.expression_is_rank_dependent(node)


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


def _wrappable(statement: cst.CSTNode) -> bool:
    """A statement line holding one expression (`torch.save(...)`, `print(...)`)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
    )
