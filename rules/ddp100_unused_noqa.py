"""DDP100 unused-noqa."""

from __future__ import annotations

from ddplint.model import Severity
from ddplint.rule import Rule


class UnusedNoqa(Rule):
    """
    ## What it does

    Reports a `# noqa: DDPxxx` directive that suppressed no finding in this
    run, as Ruff's RUF100 does for its own codes. Only the codes of rules
    enabled for the file are judged: `# noqa: E501` belongs to another tool,
    and a directive for a rule that did not run (`--select DDP014`, an
    `ignore`, a per-file ignore) cannot be told unused. A blanket `# noqa`
    (no codes) is left alone, since another linter may be what it silences.
    A code kept for a variant that reports only with `--preview` counts as
    unused in a run without preview: judge with the settings your CI uses.

    Off by default (select it with `--extend-select DDP100` or
    `extend-select = ["DDP100"]`): ddplint's rules keep getting more precise,
    and each time one stops reporting a false positive its `# noqa` would
    become a new finding that fails a CI run nobody touched. Turn it on where
    the directives are to be kept tidy, for example in a scheduled job or
    after `--add-noqa`.

    ## Why is this bad?

    A stale `# noqa` hides the next real finding on that line: after the
    sampler is fixed the directive stays, and the day someone adds
    `shuffle=True` back nothing reports it.

    ## Example

    ```python
    loader = DataLoader(dataset, batch_size=32)  # noqa: DDP003
    ```

    ## Use instead

    ```python
    loader = DataLoader(dataset, batch_size=32)
    ```

    ## Fix safety

    The fix removes the unused codes, or the whole directive when none is
    left (`# noqa: DDP003 - reason` keeps `# - reason`). It is safe: the
    directive silenced nothing in this run.
    """

    code = "DDP100"
    name = "unused-noqa"
    severity = Severity.WARNING
    summary = "A `# noqa` directive names a ddplint code that suppressed nothing in this run."
    tags = ("suppression",)
    default_enabled = False
