"""Renderers of a `Report`: text, JSON, GitHub workflow commands, SARIF 2.1.0.

Each is a pure function ``render(report, options) -> str``; the CLI decides
where the text goes.
"""

from __future__ import annotations

from typing import Callable

from ddplint.report import Report
from ddplint.reporters.options import OutputFormat, RenderOptions, valid_text

__all__ = ["OutputFormat", "RenderOptions", "renderer", "valid_text"]


def renderer(fmt: OutputFormat) -> Callable[[Report, RenderOptions], str]:
    """The render function for `fmt` (imported on demand)."""
    if fmt is OutputFormat.TEXT:
        from ddplint.reporters.text import render
    elif fmt is OutputFormat.JSON:
        from ddplint.reporters.json import render
    elif fmt is OutputFormat.GITHUB:
        from ddplint.reporters.github import render
    elif fmt is OutputFormat.GITLAB:
        from ddplint.reporters.gitlab import render
    else:
        from ddplint.reporters.sarif import render
    return render
