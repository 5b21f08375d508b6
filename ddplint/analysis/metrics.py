"""Evaluation loops and the metrics they feed.

An evaluation loop iterates a loader and feeds each batch's predictions to a
metric: ``metric.add_batch(predictions=p, references=r)``, a list that is
concatenated afterwards (``preds.append(p)``), a scikit-learn metric. These
answers are syntactic over the loop body: which sink a value written in the
loop reaches (through the names assigned from it), and whether the function
cuts the accumulated predictions back to the dataset's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.analysis.calls import keyword_value, truth
from ddplint.knowledge import METRIC_FUNCTION_PREFIXES, METRIC_SINK_METHODS
from ddplint.analysis.data import distributed_sampler_of
from ddplint.analysis.names import last_name
from ddplint.analysis.receivers import prepared_arguments
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

#: Calls that wrap a loader in a loop header without changing what it yields.
_LOOP_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "track", "progress_bar", "progress"})
#: Words of a slice bound that cut accumulated predictions to the dataset
#: (``[: len(eval_dataset)]``, HF's ``samples_seen`` bookkeeping).
_TRUNCATION_WORDS = ("len(", "seen", "num_samples", "remainder", "dataset_size", "n_samples")
_HOPS = 4


def loop_iterable(loop: cst.For) -> cst.BaseExpression:
    """What a ``for`` loop iterates, through ``enumerate(...)``/``tqdm(...)`` wrappers."""
    node = loop.iter
    while isinstance(node, cst.Call) and last_name(node.func) in _LOOP_WRAPPERS and node.args:
        node = node.args[0].value
    return node


def metric_sink(value: cst.CSTNode, loop: cst.For, ctx: ModelView) -> cst.Call | None:
    """The call in `loop`'s body that feeds `value` (an expression of the
    body) to a metric: directly as an argument, or through names assigned
    from it (``preds, refs = accelerator.gather((p, r))`` then
    ``metric.add_batch(predictions=preds, ...)``). None when it reaches none."""
    nodes = list(descendants(loop.body))
    carriers: set[int] = {id(value)}
    names: set[str] = set()
    for _ in range(_HOPS):
        before = len(names)
        for node in nodes:
            if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and node.value is not None:
                if _mentions(node.value, carriers, names):
                    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                    names.update(n.value for t in targets for n in (t, *descendants(t)) if isinstance(n, cst.Name))
        if len(names) == before:
            break
    for node in nodes:
        if isinstance(node, cst.Call) and _is_sink(node, ctx):
            if any(_mentions(a.value, carriers, names) for a in node.args):
                return node
    return None


def _mentions(expression: cst.CSTNode, carriers: set[int], names: set[str]) -> bool:
    return any(
        id(n) in carriers or (isinstance(n, cst.Name) and n.value in names) for n in (expression, *descendants(expression))
    )


def _is_sink(call: cst.Call, ctx: ModelView) -> bool:
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in METRIC_SINK_METHODS:
        return True
    return any(q and q.startswith(METRIC_FUNCTION_PREFIXES) for q in ctx.qualified_names(call.func))


def truncates_to_dataset(function: cst.CSTNode, ctx: ModelView) -> bool:
    """Whether `function` slices something to a length it computes from the
    dataset (``[: len(eval_loader.dataset)]``, ``[: len(ds) - samples_seen]``):
    the padded duplicates are cut off before the metric."""
    for node in descendants(function):
        if isinstance(node, cst.Slice) and node.upper is not None:
            text = ctx.module.code_for_node(node.upper)
            if any(word in text for word in _TRUNCATION_WORDS):
                return True
    return False


def accumulated_in(loop: cst.For) -> frozenset[str]:
    """The names a loop body accumulates into: augmented (``correct +=
    (pred == y).sum()``), reassigned from themselves, or appended to (``preds.append(p)``)."""
    found: set[str] = set()
    for node in descendants(loop.body):
        if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            found.add(node.target.value)
        elif isinstance(node, cst.Assign):  # `preds = torch.cat([preds, p])`
            used = {n.value for n in descendants(node.value) if isinstance(n, cst.Name)}
            found.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name) and t.target.value in used)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in METRIC_SINK_METHODS:
            if isinstance(node.func.value, cst.Name):
                found.add(node.func.value.value)
    return frozenset(found)


@dataclass(frozen=True)
class ShardedEval:
    """An evaluation loop over a loader that every rank iterates a shard of,
    padded to equal lengths: `sampler` is its `DistributedSampler(...)`, None
    for a loader `accelerator.prepare` sharded (its last batch is padded)."""

    loop: cst.For
    sampler: cst.Call | None

    @property
    def evened(self) -> str:
        """How the shards were made the same length, in words: the prepared
        loader's padded last batch, the sampler's padding, or its `drop_last`."""
        if self.sampler is None:
            return "the loader `accelerator.prepare` sharded pads its last batch with samples repeated from the start"
        if truth(keyword_value(self.sampler, "drop_last")):
            return "its `DistributedSampler` has `drop_last=True` and leaves out the samples that do not split evenly"
        return "its `DistributedSampler` pads the dataset to a multiple of the world size with repeated samples"


def sharded_eval(loop: cst.For, ctx: ModelView) -> ShardedEval | None:
    """`loop` as a sharded evaluation loop: no optimisation step in it (the
    rule asks the ``loops`` analysis), over a prepared or `DistributedSampler` loader."""
    if ctx.loops.is_training_loop(loop):
        return None
    iterable = loop_iterable(loop)
    if prepared_arguments(iterable, ctx):
        return ShardedEval(loop, None)
    sampler = distributed_sampler_of(iterable, ctx)
    return ShardedEval(loop, sampler) if sampler is not None else None


def gathered_eval(call: cst.Call, function: cst.FunctionDef, ctx: ModelView) -> ShardedEval | None:
    """The sharded evaluation loop whose results `call` (a gather or an
    all-reduce, visited now) brings together: a loop around it whose metric
    the gathered value feeds, or an earlier loop of `function` that
    accumulated one of its arguments (``correct += ...`` then ``all_reduce(correct)``).
    None for a gathered loss (logging) and in a function that cuts the
    predictions back to the dataset's length."""
    if "loss" in " ".join(ctx.module.code_for_node(a.value) for a in call.args) or truncates_to_dataset(function, ctx):
        return None
    for loop in reversed([n for n in ctx.stack if isinstance(n, cst.For)]):
        found = sharded_eval(loop, ctx)
        if found is not None and metric_sink(call, loop, ctx) is not None:
            return found
    used = _names_behind([a.value for a in call.args], function, ctx)
    for loop in descendants(function):
        if isinstance(loop, cst.For) and used & accumulated_in(loop) and call not in descendants(loop):
            found = sharded_eval(loop, ctx)
            if found is not None:
                return found
    return None


def _names_behind(expressions: list[cst.BaseExpression], function: cst.FunctionDef, ctx: ModelView) -> set[str]:
    """The names `expressions` use, and those the function assigns them from
    (``hits = torch.cat(predictions)``: `hits` and `predictions`), a few steps deep."""
    found: set[str] = set()
    todo = [(e, 0) for e in expressions]
    while todo:
        expression, depth = todo.pop()
        for node in (expression, *descendants(expression)):
            if isinstance(node, cst.Name) and node.value not in found:
                found.add(node.value)
                if depth < _HOPS:
                    values = ctx.flow.name_values(node.value, function)
                    todo += [(v, depth + 1) for v, _ in values if isinstance(v, cst.BaseExpression)]
    return found
