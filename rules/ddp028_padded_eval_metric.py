"""DDP028 padded-eval-metric."""

from __future__ import annotations

from ddplint.analysis.collectives import collective_name
from ddplint.analysis.guards import Site
from ddplint.analysis.metrics import ShardedEval, accumulated_in, metric_sink, sharded_eval, truncates_to_dataset
from ddplint.analysis.receivers import is_accelerator
from ddplint.analysis.rewrite import ProposedFix
from ddplint.analysis.tree import descendants
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: The collectives that bring the shards' predictions or counts together.
_GATHERS = frozenset({"gather", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "reduce"})


class PaddedEvalMetric(Rule):
    """
    ## What it does

    Flags the gather (or all-reduce) that brings an evaluation's predictions
    or counts together when the evaluation loader was padded to equal shards
    and nothing cuts the duplicates off:

    - `accelerator.gather(...)` (not `gather_for_metrics`) in a loop over a
      loader that `accelerator.prepare` sharded, feeding a metric
      (`metric.add_batch`, a list of predictions, a scikit-learn metric);
    - `dist.all_gather`/`dist.all_reduce` of what a loop over a
      `DistributedSampler` loader computed (the sampler pads to a multiple of
      the world size; with `drop_last=True` it drops the tail instead).

    The loader is followed through names, `a, b = accelerator.prepare(a, b)`,
    parameters, `self.x` and helper returns. Not flagged: `gather_for_metrics`,
    a function that cuts the predictions to the dataset's length
    (`[: len(eval_dataset)]`, the `samples_seen` bookkeeping), gathers in a
    loop that steps an optimizer, gathered losses (logging), loaders without
    a `DistributedSampler` (a sequential sampler pads nothing).

    ## Why is this bad?

    A `DistributedSampler` repeats samples from the start so every rank gets
    as many; accelerate's prepared loader pads the last batch the same way.
    Gathered as they are, those duplicates are counted twice: the accuracy of
    100 samples on 3 GPUs is taken over 102, and the number changes with the
    GPU count.

    ## Example

    ```python
    for batch in eval_dataloader:
        predictions = model(**batch).logits.argmax(-1)
        predictions, labels = accelerator.gather((predictions, batch["labels"]))
        metric.add_batch(predictions=predictions, references=labels)
    ```

    ## Use instead

    ```python
        predictions, labels = accelerator.gather_for_metrics((predictions, batch["labels"]))
    ```

    For a `DistributedSampler`, evaluate on one rank, or cut the gathered
    predictions to `len(dataset)` (in the sampler's order).

    ## Fix safety

    Replacing accelerate's `gather` with `gather_for_metrics` is safe: it
    gathers the same tensors and drops only the padding of the last batch.
    """

    code = "DDP028"
    name = "padded-eval-metric"
    severity = Severity.WARNING
    summary = "An evaluation metric gathered over padded shards: duplicates counted, the number changes with the GPU count."
    tokens = tuple(sorted(_GATHERS))
    context_tokens = ("prepare", "DistributedSampler")
    requires = frozenset({"loops"})
    distributed_only = True
    preview = True
    tags = ("correctness", "evaluation")

    def trigger_Call(self, node: cst.Call) -> bool:
        return isinstance(node.func, cst.Attribute) and node.func.attr.value in _GATHERS or (
            isinstance(node.func, cst.Name) and node.func.value in _GATHERS
        )

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx = self.ctx
        function = ctx.enclosing_function()
        gathered = " ".join(ctx.module.code_for_node(a.value) for a in node.args)
        if function is None or "loss" in gathered or collective_name(node, ctx) is None:
            return
        if truncates_to_dataset(function, ctx):
            return
        for loop in reversed([n for n in ctx.stack if isinstance(n, cst.For)]):
            found = sharded_eval(loop, ctx)
            if found is not None and metric_sink(node, loop, ctx) is not None:
                return self._report(node, found)
        used = {n.value for a in node.args for n in (a.value, *descendants(a.value)) if isinstance(n, cst.Name)}
        for loop in descendants(function):
            if isinstance(loop, cst.For) and node not in descendants(loop) and used & accumulated_in(loop):
                found = sharded_eval(loop, ctx)
                if found is not None:
                    return self._report(node, found)
        return None

    def _report(self, node: cst.Call, found: ShardedEval) -> None:
        shown = self.ctx.module.code_for_node(node.func)
        accelerate = isinstance(node.func, cst.Attribute) and node.func.attr.value == "gather" and is_accelerator(node.func.value, self.ctx)
        if found.sampler is None:
            why = "the loader `accelerator.prepare` sharded pads its last batch with samples repeated from the start"
        elif any(a.keyword is not None and a.keyword.value == "drop_last" for a in found.sampler.args):
            why = "its `DistributedSampler` pads (or with `drop_last=True` drops) samples to split the dataset evenly"
        else:
            why = "its `DistributedSampler` pads the dataset to a multiple of the world size with repeated samples"
        advice = "use `gather_for_metrics`" if accelerate else "cut the gathered predictions to `len(dataset)`, or evaluate on one rank"
        fix = None
        if accelerate and isinstance(node.func, cst.Attribute):
            fix = ProposedFix("Use `gather_for_metrics`", ((node.func.attr, cst.Name("gather_for_metrics")),))
        self.report(
            node,
            f"`{shown}()` gathers an evaluation over padded shards: {why}, so the metric counts duplicates and "
            f"changes with the number of GPUs; {advice}",
            related=((found.loop, "the evaluation loop"),),
            fix=fix,
        )
