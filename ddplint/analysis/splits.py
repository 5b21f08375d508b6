"""Train/validation splits drawn on every rank, and what seeds them (DDP024).

A split drawn from a global random generator agrees across the ranks only
when every rank seeded that generator alike before drawing it:

* `split_draw(call, ctx)`: the call draws a split (or the permutation a
  split is cut from) from a global generator: `random_split` without
  `generator=`, scikit-learn's `train_test_split` and the `datasets`
  library's `Dataset.train_test_split` without a seed, `np.random.permutation`
  / `torch.randperm` / `random.shuffle` / `np.random.shuffle` of indices that
  the function then cuts into parts (two slices of them, `np.split`).
* What seeds the generator before a split is the model's ``seeds``
  analysis (`seeding.Seeds.before`): a common seed (the same on every rank:
  the split agrees), a seed offset by the rank (the splits differ), nothing
  (each process starts from fresh entropy: they differ), or not known.
* `shared_in(function, ctx)`: the function broadcasts objects from one rank
  (`dist.broadcast_object_list(...)`): a split made there is handed to all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.knowledge import ARRAY_SPLITS, BROADCASTS, PERMUTATION_DRAWS, RANDOM_SPLITS
from ddplint.analysis.names import last_name
from ddplint.analysis.seeding import NUMPY, PYTHON, TORCH
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: The generators' names as a message says them.
GENERATOR_NAMES = {TORCH: "torch's generator", NUMPY: "NumPy's generator", PYTHON: "Python's `random`"}


@dataclass(frozen=True)
class SplitDraw:
    """A split drawn from a global generator: which, what the call is, how to seed it."""

    generator: str
    shown: str
    fix: str


def split_draw(call: cst.Call, ctx: ModelView) -> SplitDraw | None:
    """The split `call` draws from a global generator, if it is one."""
    names = ctx.qualified_names(call.func)
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if _literal_false(keywords.get("shuffle")):
        return None  # `train_test_split(..., shuffle=False)`: the first rows, no draw
    for name in sorted(n for n in names if n in RANDOM_SPLITS):
        generator, seeding = RANDOM_SPLITS[name]
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if any(k in keywords for k in seeding) or (generator == TORCH and len(positional) >= 3):
            return None  # `random_split(ds, lengths, generator)`, `random_state=`
        if generator == TORCH:
            return SplitDraw(TORCH, "`random_split` without `generator=`", "pass `generator=torch.Generator().manual_seed(seed)`")
        return SplitDraw(NUMPY, "`train_test_split` without `random_state=`", "pass `random_state=seed`")
    func = call.func
    if not any(names) and isinstance(func, cst.Attribute) and func.attr.value == "train_test_split":
        if "seed" in keywords or "generator" in keywords:
            return None
        return SplitDraw(NUMPY, "`.train_test_split` without `seed=`", "pass `seed=seed`")  # a `datasets.Dataset`
    for name in sorted(n for n in names if n in PERMUTATION_DRAWS):
        if "generator" in keywords or not _cut_into_parts(call, ctx):
            return None
        return SplitDraw(
            PERMUTATION_DRAWS[name],
            f"the index permutation `{last_name(func)}(...)` that the split is cut from",
            "draw it from a seeded generator (`torch.Generator().manual_seed(seed)`, `np.random.default_rng(seed)`)",
        )
    return None


def _literal_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _permuted_name(call: cst.Call, ctx: ModelView) -> str | None:
    """The name holding the permuted indices: shuffled in place (`random.shuffle(idx)`),
    or assigned the permutation (`perm = torch.randperm(n).tolist()`)."""
    func = last_name(call.func)
    if func == "shuffle":
        first = call.args[0].value if call.args else None
        return first.value if isinstance(first, cst.Name) else None
    statement = ctx.statement()
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        statement = statement.body[0]
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
    elif isinstance(statement, cst.AnnAssign) and statement.value is not None:
        target = statement.target
    else:
        return None
    if not isinstance(target, cst.Name) or not any(n is call for n in (statement.value, *descendants(statement.value))):
        return None
    return target.value


def _cut_into_parts(call: cst.Call, ctx: ModelView) -> bool:
    """Whether the code after the draw cuts the permuted indices into parts:
    two slices of them (`perm[:n]`, `perm[n:]`) or an array split
    (`np.split(perm, [n])`). Read are the rest of each block around the draw,
    out to its function: not a branch beside it, not code before it."""
    name = _permuted_name(call, ctx)
    if name is None:
        return False
    slices = 0
    for node in (n for statement in _following(ctx.stack) for n in (statement, *descendants(statement))):
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and node.value.value == name:
            slices += any(isinstance(e.slice, cst.Slice) for e in node.slice)
        elif isinstance(node, cst.Call) and ctx.qualified_names(node.func) & ARRAY_SPLITS and node.args:
            first = node.args[0].value  # `np.split(perm, ...)`, `np.split(np.array(perm), ...)`
            if any(isinstance(n, cst.Name) and n.value == name for n in (first, *descendants(first))):
                return True
    return slices >= 2


def _following(stack: list[cst.CSTNode]) -> list[cst.CSTNode]:
    """The statement holding the top of `stack` and those after it in each
    enclosing block, innermost first, up to the enclosing function's body."""
    found: list[cst.CSTNode] = []
    for index in range(len(stack) - 2, -1, -1):
        block, child = stack[index], stack[index + 1]
        if isinstance(block, (cst.IndentedBlock, cst.Module)):
            at = next((i for i, statement in enumerate(block.body) if statement is child), None)
            if at is not None:
                found.extend(block.body[at + (1 if found else 0) :])
        if isinstance(block, (cst.FunctionDef, cst.ClassDef)):
            break
    return found


def shared_in(function: cst.FunctionDef | None, ctx: ModelView) -> bool:
    """Whether `function` (None: the module) broadcasts objects from one rank to all."""
    scope = function.body if function is not None else ctx.module
    return any(isinstance(n, cst.Call) and last_name(n.func) in BROADCASTS for n in descendants(scope))
