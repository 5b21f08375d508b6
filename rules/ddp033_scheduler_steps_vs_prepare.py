"""DDP033 scheduler-steps-vs-prepare."""

from __future__ import annotations

from ddplint.knowledge import SCHEDULE_LENGTH_KEYWORDS
from ddplint.analysis.guards import Site
from ddplint.analysis.schedules import mis_sized
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class SchedulerStepsVsPrepare(Rule):
    """
    ## What it does

    Flags a learning-rate scheduler whose step counts (`num_training_steps`,
    `num_warmup_steps`, `total_steps`, `T_max`, ...) come from
    `len(train_dataloader)` in one of the two combinations that do not match
    how accelerate steps it:

    - the length is read **after** `accelerator.prepare` sharded the loader
      and the scheduler is prepared too, with no `num_processes` scaling: the
      schedule ends `num_processes` times early;
    - the length is read **before** `prepare` and the scheduler is **not**
      prepared: the schedule ends `num_processes` times late.

    The counts are followed through the assignments of the function
    (`args.max_train_steps = epochs * math.ceil(len(train_dataloader) / accum)`).
    Not flagged: the Hugging Face examples' order (length before `prepare`,
    scheduler prepared), counts scaled by `accelerator.num_processes` (or the
    world size), and modules whose `Accelerator(...)` passes `split_batches`,
    `step_scheduler_with_optimizer` or `**kwargs` (each changes how the
    prepared scheduler steps).

    ## Why is this bad?

    A prepared loader yields `1/num_processes` of the batches, and a prepared
    scheduler's `step()` advances the wrapped scheduler once per process. A
    count read from the sharded loader for a prepared scheduler is used up
    after `1/num_processes` of the training: the learning rate reaches its
    floor early. A count read from the whole loader for a scheduler stepped
    once per optimizer step never reaches its end, and the warm-up lasts
    `num_processes` times longer than configured.

    ## Example

    ```python
    from accelerate import Accelerator
    from transformers import get_linear_schedule_with_warmup

    def train(model, optimizer, train_dataloader, epochs):
        accelerator = Accelerator()
        model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
        total = len(train_dataloader) * epochs
        scheduler = get_linear_schedule_with_warmup(optimizer, 100, num_training_steps=total)
        scheduler = accelerator.prepare(scheduler)
    ```

    ## Use instead

    ```python
        total = len(train_dataloader) * epochs  # before prepare: the whole loader
        scheduler = get_linear_schedule_with_warmup(optimizer, 100, num_training_steps=total)
        model, optimizer, train_dataloader, scheduler = accelerator.prepare(
            model, optimizer, train_dataloader, scheduler
        )
    ```

    Only code inside functions is read (the order of `prepare` and the
    length is taken within one function).
    """

    code = "DDP033"
    name = "scheduler-steps-vs-prepare"
    severity = Severity.WARNING
    summary = "A schedule sized from `len(train_dataloader)` on the wrong side of `prepare`: it ends too early or too late."
    tokens = tuple(sorted(SCHEDULE_LENGTH_KEYWORDS))
    context_tokens = ("prepare",)
    distributed_only = True
    preview = True

    def trigger_Call(self, node: cst.Call) -> bool:
        return any(a.keyword is not None and a.keyword.value in SCHEDULE_LENGTH_KEYWORDS for a in node.args)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        function = self.ctx.enclosing_function()
        found = mis_sized(node, self.ctx.statement(), function, self.ctx) if function is not None else None
        if found is None:
            return
        read = self.ctx.module.code_for_node(found.read)
        if found.early:
            message = f"the schedule's length comes from `{read}` read after `accelerator.prepare` sharded it, and \
the scheduler is prepared too: each `step()` of a prepared scheduler advances it once per process, so the schedule \
ends `num_processes` times early; read the length before `prepare`, or multiply it by `accelerator.num_processes`"
        else:
            message = f"the schedule's length comes from `{read}` read before `accelerator.prepare` shards it, but \
the scheduler is not prepared: each process steps it once per batch of its shard, so the schedule \
ends `num_processes` times late; pass the scheduler to `accelerator.prepare` too"
        self.report(node, message, related=((found.read, "the length read here"),))
