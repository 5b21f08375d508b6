"""DDP019 clip-before-unscale."""

from __future__ import annotations

from ddplint.knowledge import GRADIENT_CLIPS
from ddplint.analysis.guards import Site
from ddplint.analysis.rewrite import ProposedFix, insert_before
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class ClipBeforeUnscale(Rule):
    """
    ## What it does

    Flags `torch.nn.utils.clip_grad_norm_`/`clip_grad_value_` (or a
    model's own `clip_grad_norm_`, as FSDP has) between
    `scaler.scale(loss).backward()` and `scaler.step(optimizer)` when no
    `scaler.unscale_(optimizer)` comes between the backward and the clip.

    A call of a function of the module that clips the gradients it finds
    (DINO's `clip_gradients(model, clip)`, a closure, a trainer's
    `self.clip_grads()`) counts as a clip where it is called. An
    `unscale_` counts only when it runs whenever the clip does: one under
    `if step % log_every == 0:` leaves every other step's clip scaled (the
    same test around the scaled backward, `if use_amp:`, is fine).

    Not flagged: a clip after `scaler.unscale_(optimizer)` (also through a
    local name, `scaler = self.scaler`), the
    `clip_grad_norm_` of accelerate, Fabric, DeepSpeed engines and other
    trainers (they unscale first), and clipping without a `GradScaler`.

    ## Why is this bad?

    After `scaler.scale(loss).backward()` the gradients are multiplied by
    the loss scale (65,536 at first, changing as training goes). Clipping
    them to `max_norm` clips a norm that is thousands of times too large:
    the clip almost always fires, cutting every step's gradient to a tiny
    fraction, and how much depends on the current scale. Training is
    slow or diverges with no error.

    ## Example

    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Use instead

    ```python
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    ## Fix safety

    `--fix` inserts `scaler.unscale_(optimizer)` before the clip, with the
    scaler and optimizer of the `scaler.step(...)` that follows: safe,
    since `scaler.step` skips its own unscale when `unscale_` already ran
    this step. With no such step in the function the fix is advice only.

    ## References

    - [Automatic mixed precision: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    """

    code = "DDP019"
    name = "clip-before-unscale"
    severity = Severity.WARNING
    summary = "Gradients clipped while still scaled by GradScaler: the clip uses a norm far too large."
    requires = frozenset({"amp"})
    tokens = tuple(sorted({clip.rsplit(".", 1)[1] for clip in GRADIENT_CLIPS}))
    context_tokens = ("scale",)
    tags = ("correctness", "mixed-precision")

    def trigger_Call(self, node: cst.Call) -> bool:
        return self.ctx.amp.may_clip(node)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        clip = self.ctx.amp.scaled_clip(node)
        if clip is None:
            return
        scaler, statement = clip.scaler, self.ctx.statement()
        where = "" if clip.through is None else f" (`{clip.through}()` clips them)"
        fix = ProposedFix.display_only("Unscale the gradients before clipping")
        if clip.optimizer is not None and isinstance(statement, cst.SimpleStatementLine):
            unscale = f"{scaler}.unscale_({clip.optimizer})"
            fix = ProposedFix(f"Insert `{unscale}` before the clip", (insert_before(statement, cst.parse_statement(f"{unscale}\n")),))
        self.report(
            node,
            f"the gradients are still multiplied by `{scaler}`'s loss scale here{where} (after "
            f"`{scaler}.scale(...).backward()`), so the clip compares a norm thousands of times too large "
            f"with its threshold; call `{scaler}.unscale_(optimizer)` before clipping",
            fix=fix,
        )
