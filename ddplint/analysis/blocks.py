"""What ends a block: the last statement of a suite, and whether it leaves."""

from __future__ import annotations

from typing import Iterator, Sequence

from ddplint.analysis.names import dotted_name
from ddplint.lazy import cst


def last_statement(body: cst.BaseSuite) -> cst.CSTNode | None:
    statements = body.body
    if not statements:
        return None
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return last.body[-1] if last.body else None
    return last


def exits(body: cst.BaseSuite, raises: bool = False) -> bool:
    """Whether a block leaves the rest of its function or loop body behind
    (with `raises`, also by raising)."""
    last = last_statement(body)
    # Not `raise` by default: an exception ends the process, and torchrun (or
    # mp.spawn) then stops every other rank, so nobody waits at a later collective.
    if isinstance(last, (cst.Return, cst.Continue, cst.Break)) or (raises and isinstance(last, cst.Raise)):
        return True
    if isinstance(last, cst.Expr) and isinstance(last.value, cst.Call):
        return dotted_name(last.value.func) in ("sys.exit", "exit", "quit", "os._exit")
    return False


def early_exits(
    block: cst.CSTNode, child: cst.CSTNode, raises: bool = False, cache: dict | None = None
) -> Iterator[cst.If]:
    """The ``if <test>: ... return`` statements (no ``else``) before `child`
    in `block`: the rest of the block runs only when their test fails.
    With a per-file `cache`, each block is scanned once."""
    if cache is None:
        for statement in block.body:
            if statement is child:
                return
            if isinstance(statement, cst.If) and statement.orelse is None and exits(statement.body, raises):
                yield statement
        return
    key = (id(block), raises)
    found = cache.get(key)
    if found is None:
        positions = {id(s): i for i, s in enumerate(block.body)}
        exiting = [
            (i, s) for i, s in enumerate(block.body)
            if isinstance(s, cst.If) and s.orelse is None and exits(s.body, raises)
        ]  # fmt: skip
        found = cache[key] = (block, positions, exiting)
    _, positions, exiting = found
    limit = positions.get(id(child), len(positions))
    for index, statement in exiting:
        if index >= limit:
            return
        yield statement


LEAVING_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit"})


def leaves_after(stack: list[cst.CSTNode]) -> bool:
    """Whether the statement around the innermost node is followed, in its
    block, by a `raise`, `break` or `sys.exit()`, or by a `return` out of a
    nested block (`if exists: print(...); return -1`): a message on the way
    out, printed once. A function's own closing `return result` is not."""
    for index in range(len(stack) - 1, 0, -1):
        statement, block = stack[index], stack[index - 1]
        if isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
            block, (cst.IndentedBlock, cst.Module)
        ):
            after = list(block.body)[list(block.body).index(statement) + 1 :]
            function_body = index >= 2 and isinstance(stack[index - 2], cst.FunctionDef)
            return any(_leaves(s, returns=not function_body) for s in after)
    return False


def _leaves(statement: cst.CSTNode, returns: bool) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, (cst.Raise, cst.Break)) or (returns and isinstance(small, cst.Return)):
            return True
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            if dotted_name(small.value.func) in LEAVING_CALLS:
                return True
    return False


def nested_exits(
    block: cst.CSTNode, child: cst.CSTNode, cache: dict | None = None
) -> Iterator[tuple[cst.If, cst.CSTNode]]:
    """``if <test>:`` statements before `child` in `block` whose body leaves
    the function from deeper inside (``if is_master: if exists(log): return -1``),
    with that `return`/`sys.exit()`: the rest of the block is reached only by
    the processes that did not leave. Early exits proper are `early_exits`.
    With a per-file `cache`, each block is scanned once (every node under a
    long function body asks about the statements before it)."""
    key = (id(block), "nested")
    found = cache.get(key) if cache is not None else None
    if found is None:
        positions = {id(s): i for i, s in enumerate(block.body)}
        leaving = []
        for index, statement in enumerate(block.body):
            if isinstance(statement, cst.If) and not exits(statement.body):
                leave = _leave_inside(statement.body)
                if leave is not None:
                    leaving.append((index, statement, leave))
        found = (block, positions, leaving)
        if cache is not None:
            cache[key] = found
    _, positions, leaving = found
    limit = positions.get(id(child), len(positions))
    for index, statement, leave in leaving:
        if index >= limit:
            return
        yield statement, leave


def _leave_inside(body: cst.BaseSuite) -> cst.CSTNode | None:
    """A `return` or exit call nested in `if`/`with`/`try` blocks of `body`
    (not in loops, whose `break`/`continue` stay inside, nor in nested defs)."""
    todo: list = list(body.body)
    while todo:
        statement = todo.pop(0)
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Return):
                    return small
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                    if dotted_name(small.value.func) in LEAVING_CALLS:
                        return small
        elif isinstance(statement, (cst.If, cst.With, cst.Try)):
            inner = statement.body
            if isinstance(inner, cst.IndentedBlock):
                todo.extend(inner.body)
            orelse = getattr(statement, "orelse", None)
            while isinstance(orelse, cst.If):
                if isinstance(orelse.body, cst.IndentedBlock):
                    todo.extend(orelse.body.body)
                orelse = orelse.orelse
            if isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock):
                todo.extend(orelse.body.body)
    return None


def ends_loops(stack: Sequence[cst.CSTNode], loops: Sequence[cst.CSTNode]) -> bool:
    """Whether the statement around the innermost node of `stack` is the last
    thing `loops` (innermost first) run: its block goes on to a `return`, a
    `raise` or `sys.exit()`, or to a `break` out of the innermost loop that
    each enclosing one follows with an exit of its own (``if not
    continue_training: break``). No later pass reaches what it changed."""
    kind = _leaving_after(stack)
    if kind != "break":
        return kind == "return"
    for inner, outer in zip(loops, loops[1:]):
        if outer not in stack:
            return False
        position = list(stack).index(outer)
        if position + 2 >= len(stack) or not isinstance(stack[position + 1], cst.IndentedBlock):
            return False
        body = list(stack[position + 1].body)
        after = body[body.index(stack[position + 2]) + 1 :] if stack[position + 2] in body else []
        if not any(_leaves(s, returns=True) or (isinstance(s, cst.If) and _breaks(s.body)) for s in after):
            return False
    return True


def _breaks(body: cst.BaseSuite) -> bool:
    """Whether a block ends by leaving its loop (not by a `continue`)."""
    last = last_statement(body)
    return not isinstance(last, cst.Continue) and exits(body, raises=True)


def _leaving_after(stack: Sequence[cst.CSTNode]) -> str | None:
    """"return" when the innermost statement's block goes on to a `return`,
    `raise` or exit call; "break" for a `break`; else None."""
    for index in range(len(stack) - 1, 0, -1):
        statement, block = stack[index], stack[index - 1]
        if isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
            block, (cst.IndentedBlock, cst.Module)
        ):
            body = list(block.body)
            for later in body[body.index(statement) + 1 :]:
                if not isinstance(later, cst.SimpleStatementLine):
                    continue
                for small in later.body:
                    if isinstance(small, (cst.Return, cst.Raise)):
                        return "return"
                    if isinstance(small, cst.Break):
                        return "break"
                    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                        if dotted_name(small.value.func) in LEAVING_CALLS:
                            return "return"
            return None
    return None
