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

from ddplint.knowledge import BUILTINS_MODULES, PRINT_TARGETS
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Applicability

if TYPE_CHECKING:
    from ddplint.analysis.rank import Site
    from ddplint.analysis.view import ModelView

#: Predicates that are true on the global rank 0 only (a local main process repeats per node).
MAIN_PREDICATES = frozenset(
    {"is_main_process", "is_master", "is_main", "master_process", "is_global_zero", "is_world_process_zero",
     "is_rank_zero", "is_rank_0"}
)  # fmt: skip


def replaces_print(target: cst.BaseExpression, ctx: ModelView) -> bool:
    """Whether assigning to `target` replaces `print` for the whole process:
    ``builtins.print``, ``__builtins__.print``, ``builtins.__dict__["print"]``,
    ``__builtins__["print"]`` (a helper that makes `print` rank-0-only)."""
    if isinstance(target, cst.Attribute):
        return bool(ctx.qualified_names(target) & PRINT_TARGETS) or dotted_name(target) == "__builtins__.print"
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)):
        return False
    if index.value.evaluated_value != "print":
        return False
    holder = target.value
    if isinstance(holder, cst.Attribute) and holder.attr.value == "__dict__":
        holder = holder.value
    return dotted_name(holder) == "__builtins__" or bool(ctx.qualified_names(holder) & BUILTINS_MODULES)


def sets_print(node: cst.Call, ctx: ModelView) -> bool:
    """``setattr(builtins, "print", rank0_print)``."""
    args = node.args
    if len(args) != 3 or ctx.qualified_names(node.func) != {"builtins.setattr"}:
        return False
    name = args[1].value
    holder = args[0].value
    return (
        isinstance(name, cst.SimpleString) and name.evaluated_value == "print"
        and (dotted_name(holder) == "__builtins__" or bool(ctx.qualified_names(holder) & BUILTINS_MODULES))
    )  # fmt: skip


class RankZeroTests:
    """`if` tests that select rank 0, in source order, with their function: a
    walker analysis (``requires = {"rank", "rank_zero"}``, `ctx.rank_zero`)."""

    def __init__(self, ctx: ModelView) -> None:
        self.ctx = ctx
        #: (function, test, usable anywhere, rank dependence its subject needs).
        self.tests: list[tuple[cst.FunctionDef | None, cst.BaseExpression, bool, object]] = []
        #: How many tests were known at each simple statement (a fix reuses only those).
        self.marks: dict[cst.SimpleStatementLine, int] = {}

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.marks[node] = len(self.tests)

    def visit_If(self, node: cst.If) -> None:
        self.note(node)

    def note(self, node: cst.If) -> None:
        """Record `node`'s test if it may select rank 0;
        whether its subject is a rank is known after the walk."""
        test = node.test
        subject = _rank_zero_subject(test)
        if subject is not None:
            anywhere = isinstance(test, cst.Call) and not test.args and isinstance(test.func, cst.Name)
            deps = self.ctx.rank.deps(subject) if subject is not test else None
            self.tests.append((self.ctx.enclosing_function(), test, anywhere, deps))

    def wrap_fix(self, site: Site, title: str) -> ProposedFix:
        """Put the site's statement under the module's own rank-0 test written
        before it (unsafe: the other ranks stop doing it), or advice when there
        is none or the statement binds names (they would be missing on the
        other ranks). After the walk."""
        statement = site.statement
        if not _wrappable(statement):
            return ProposedFix.display_only(title)
        test = self._test_for(site.function, self.marks[statement])  # type: ignore[index]
        if test is None:
            return ProposedFix.display_only(title)
        code = cst.Module([]).code_for_node(test)
        wrapped = cst.If(
            test=cst.parse_expression(code),
            body=cst.IndentedBlock([statement.with_changes(leading_lines=())]),
            leading_lines=statement.leading_lines,
        )
        return ProposedFix(f"Run it on rank 0 only: `if {code}:`", ((statement, wrapped),), Applicability.UNSAFE)

    def _test_for(self, function: cst.FunctionDef | None, before: int) -> cst.BaseExpression | None:
        usable = [(owner, test, anywhere) for owner, test, anywhere, deps in self.tests if self._selects_zero(deps)]
        earlier = [t for t in usable if any(t[1] is e[1] for e in self.tests[:before])]
        for owner, test, _ in earlier:
            if owner is function:
                return test
        for _, test, anywhere in usable:  # `is_main_process()` of a module-level helper
            if anywhere and self.ctx.scopes.lookup(test.func.value) is not None:  # type: ignore[union-attr]
                return test
        return None

    def _selects_zero(self, deps: object) -> bool:
        """Whether a recorded test's subject is a rank (predicates need nothing)."""
        return deps is None or self.ctx.rank.is_rank_dependent(deps)  # type: ignore[arg-type]


def _rank_zero_subject(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """For `x == 0` / `x in (-1, 0)` the global-rank candidate `x`; for a
    main-process predicate the test itself; else None."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        (comparison,) = test.comparisons
        left, right = test.left, comparison.comparator
        subject = None
        if isinstance(comparison.operator, cst.Equal):
            subject = right if _is_zero(left) else left if _is_zero(right) else None
        elif isinstance(comparison.operator, cst.In) and isinstance(right, (cst.List, cst.Tuple)):
            values = {cst.Module([]).code_for_node(e.value) for e in right.elements}
            subject = left if values == {"-1", "0"} else None
        if subject is None or "local" in cst.Module([]).code_for_node(subject).lower():
            return None  # local rank 0 runs once per node
        return subject
    target = test.func if isinstance(test, cst.Call) else test
    if isinstance(target, (cst.Name, cst.Attribute)) and last_name(target) in MAIN_PREDICATES:
        return test
    return None


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


def _wrappable(statement: cst.CSTNode) -> bool:
    """A statement line holding one expression (`torch.save(...)`, `print(...)`)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
    )
