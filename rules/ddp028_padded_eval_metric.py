"""DDP028 padded-eval-metric."""

from __future__ import annotations

from ddplint.knowledge import EVAL_GATHERS
from ddplint.analysis.collectives import collective_name
from ddplint.analysis.guards import Site
from ddplint.analysis.metrics import gathered_eval
from ddplint.analysis.names import last_name
from ddplint.analysis.receivers import is_accelerator
from ddplint.analysis.rewrite import ProposedFix
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


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
    from accelerate import Accelerator

    def evaluate(model, eval_dataloader, metric):
        accelerator = Accelerator()
        model, eval_dataloader = accelerator.prepare(model, eval_dataloader)
        for batch in eval_dataloader:
            predictions = model(**batch).logits.argmax(-1)
            predictions, labels = accelerator.gather((predictions, batch["labels"]))
            metric.add_batch(predictions=predictions, references=labels)
        return metric.compute()
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
    tokens = tuple(sorted(EVAL_GATHERS))
    context_tokens = ("prepare", "DistributedSampler")
    requires = frozenset({"loops"})
    distributed_only = True
    preview = True

    def trigger_Call(self, node: cst.Call) -> bool:
        return last_name(node.func) in EVAL_GATHERS

    def check_Call(self, node: cst.Call, site: Site) -> None:
        function = self.ctx.enclosing_function()
        found = gathered_eval(node, function, self.ctx) if function and collective_name(node, self.ctx) else None
        if found is None:
            return
        accelerate = last_name(node.func) == "gather" and is_accelerator(node.func.value, self.ctx)  # type: ignore[attr-defined]
        fix = ProposedFix("Use `gather_for_metrics`", ((node.func.attr, cst.Name("gather_for_metrics")),))  # type: ignore[attr-defined]
        message = f"`{self.ctx.module.code_for_node(node.func)}()` gathers an evaluation over unevenly split shards: \
{found.evened}, so the metric changes with the number of GPUs; {_USE if accelerate else _CUT}"
        self.report(node, message, related=((found.loop, "the evaluation loop"),), fix=fix if accelerate else None)


_USE = "use `gather_for_metrics`"
_CUT = "gather with `drop_last=False` and cut the result to `len(dataset)`, or evaluate on one rank"
