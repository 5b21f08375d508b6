"""What every renderer takes: the output format, the render options, and
JSON text made valid Unicode."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddplint.paths import printable


class OutputFormat(str, enum.Enum):
    """The ``--format`` choices."""

    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"
    GITHUB = "github"
    GITLAB = "gitlab"


@dataclass(frozen=True)
class RenderOptions:
    """How to render: where paths are relative to, colour, extra sections."""

    cwd: Path
    color: bool = False
    statistics: bool = False
    quiet: bool = False
    #: SARIF `automationDetails.id`, to upload several runs of one repository.
    sarif_category: str | None = None
    #: Show absolute paths (by default no path of the machine appears).
    absolute_paths: bool = False
    #: SARIF: the file at which results about no file are shown (`ddplint doctor`).
    sarif_location: str | None = None


def valid_text(value: Any) -> Any:
    """`value` (JSON-ready data) with every string valid Unicode (`printable`):
    the name of a file that is not UTF-8 shows its bytes as ``\\xNN``, and
    strict JSON readers, which reject lone surrogates, read the output."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(k): valid_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_text(v) for v in value]
    return value
