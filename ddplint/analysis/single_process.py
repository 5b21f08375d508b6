"""Code that only a job of one process runs.

``if not dist.is_initialized():``, ``if args.local_rank == -1:``,
``if world_size == 1:``, the ``else`` of ``if args.distributed:``, the rest of
a block after ``if dist.is_initialized(): return``, and the branches of a flag
that the setup of a distributed run asserts off (YOLOv5's
``assert not opt.evolve`` under ``if LOCAL_RANK != -1:``) never run in a
distributed job: whatever they write, print or load is done by a single
process, not by every rank. The conditions are the same on every rank, so
these are not rank guards (SPEC §2); they only tell the rules that judge
"every rank does this" (DDP003, DDP006-DDP008) to look elsewhere.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Callable, Sequence

from ddplint.analysis.blocks import early_exits
from ddplint.analysis.names import last_name
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: Calls that answer "is a process group up?" (DETR's helper by name).
INITIALIZED_CALLS = frozenset({"is_initialized", "is_dist_avail_and_initialized", "is_distributed"})
INITIALIZED_QUALNAMES = frozenset({"torch.distributed.is_initialized", "torch.distributed.is_available"})
#: Flags that say a run is distributed, by convention (`args.distributed`).
DISTRIBUTED_FLAGS = frozenset({"distributed", "is_distributed", "use_distributed", "ddp", "use_ddp"})
#: Names of the number of processes in the job.
WORLD_SIZE_NAMES = frozenset({"world_size", "get_world_size", "num_processes", "WORLD_SIZE"})


class SingleProcessCode:
    """Tells whether the node being visited runs in single-process jobs only.

    `is_rank` says whether an expression holds this process's rank (the rank
    analysis answers); a rank of -1 is what scripts use for "not distributed".
    """

    def __init__(
        self, ctx: ModelView, is_rank: Callable[[cst.BaseExpression], bool], exit_cache: dict | None = None
    ) -> None:
        self.ctx = ctx
        self.is_rank = is_rank
        self.exit_cache = exit_cache
        #: Per function: flags (as written) asserted off wherever a job is distributed.
        self.asserted_off: dict[cst.FunctionDef | None, set[str]] = defaultdict(set)

    def note_assert(self, node: cst.Assert) -> None:
        """Record ``assert not <flag>`` when every distributed run reaches it."""
        test = node.test
        if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
            return
        if not isinstance(test.expression, (cst.Name, cst.Attribute)):
            return
        stack = self.ctx.stack
        function = self.ctx.enclosing_function()
        start = stack.index(function) + 1 if function is not None else 0
        for index in range(start, len(stack) - 1):
            parent, child = stack[index], stack[index + 1]
            if isinstance(parent, cst.If):
                if child is parent.body and self.implies(parent.test, truthy=False):
                    continue  # the test holds in every distributed run
                if child is parent.orelse and self.implies(parent.test, truthy=True):
                    continue  # the test fails in every distributed run
                return
            if not isinstance(parent, (cst.IndentedBlock, cst.SimpleStatementLine, cst.Else, cst.With, cst.Try)):
                return  # a loop, a handler, a nested definition: not run every time
        self.asserted_off[function].add(self.ctx.module.code_for_node(test.expression))

    def here(self, stack: Sequence[cst.CSTNode]) -> bool:
        """Whether the innermost node of `stack` runs only in single-process jobs."""
        for index in range(len(stack) - 1):
            parent, child = stack[index], stack[index + 1]
            if isinstance(parent, (cst.If, cst.IfExp)):
                if child is parent.body and self.implies(parent.test, truthy=True):
                    return True
                if child is parent.orelse and self.implies(parent.test, truthy=False):
                    return True
            elif isinstance(parent, cst.BooleanOperation) and child is parent.right:
                if self.implies(parent.left, truthy=isinstance(parent.operator, cst.And)):
                    return True
            elif isinstance(parent, (cst.IndentedBlock, cst.Module)) and self._after_exit(parent, child):
                return True
        return False

    def _after_exit(self, block: cst.CSTNode, child: cst.CSTNode) -> bool:
        """`child` follows ``if <distributed>: return`` (or ``raise``) in `block`."""
        return any(self.implies(statement.test, truthy=False) for statement in early_exits(block, child, raises=True, cache=self.exit_cache))

    def implies(self, test: cst.BaseExpression, truthy: bool) -> bool:
        """Whether `test` being `truthy` means the job has one process."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.implies(test.expression, not truthy)
        if isinstance(test, cst.BooleanOperation):
            if isinstance(test.operator, cst.And) == truthy:  # both hold / both fail: either one decides
                return self.implies(test.left, truthy) or self.implies(test.right, truthy)
            return False
        if isinstance(test, cst.Call):
            if self.ctx.qualified_names(test.func) & INITIALIZED_QUALNAMES or last_name(test.func) in INITIALIZED_CALLS:
                return not truthy
            return False
        if isinstance(test, (cst.Name, cst.Attribute)):
            if last_name(test) in DISTRIBUTED_FLAGS:
                return not truthy
            asserted = self.asserted_off.get(self.ctx.enclosing_function())
            return truthy and bool(asserted) and self.ctx.module.code_for_node(test) in asserted
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._comparison(test, truthy)
        return False

    def _comparison(self, test: cst.Comparison, truthy: bool) -> bool:
        operator, value = test.comparisons[0].operator, _integer(test.comparisons[0].comparator)
        if value is None:
            return False
        if is_unset_test(test) and self.is_rank(test.left):
            return truthy == isinstance(operator, cst.Equal)  # `local_rank == -1`: no rank given
        if not _is_world_size(test.left):
            return False
        one_process = {cst.Equal: value == 1, cst.LessThanEqual: value == 1, cst.LessThan: value == 2}
        many = {cst.NotEqual: value == 1, cst.GreaterThan: value == 1, cst.GreaterThanEqual: value == 2}
        kind = type(operator)
        return bool(one_process.get(kind)) if truthy else bool(many.get(kind))


def is_unset_test(node: cst.Comparison) -> bool:
    """`x == -1` / `x != -1`: -1 is what scripts use for "no rank set"."""
    if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
        return False
    return _integer(node.comparisons[0].comparator) == -1


def _integer(node: cst.BaseExpression) -> int | None:
    """The value of an integer literal, negated or not (``0x10``, ``1_000`` too)."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value, 0)
    return None


def _is_world_size(node: cst.BaseExpression) -> bool:
    """`world_size`, `args.world_size`, `dist.get_world_size()`, `int(os.environ["WORLD_SIZE"])`."""
    if isinstance(node, cst.Call):
        if last_name(node.func) == "int" and len(node.args) == 1:
            return _is_world_size(node.args[0].value)
        return last_name(node.func) in WORLD_SIZE_NAMES
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        key = node.slice[0].slice.value
        return isinstance(key, cst.SimpleString) and key.evaluated_value == "WORLD_SIZE"
    return last_name(node) in WORLD_SIZE_NAMES
