"""Where the project is: the git top-level, and URIs relative to it."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote


def git_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding a `.git`."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def project_root(cwd: Path) -> Path:
    """The repository root (git top-level), else the working directory."""
    return git_root(cwd) or cwd


def relative_uri(path: str, cwd: Path, root: Path) -> tuple[str, bool]:
    """(URI, is_relative): `path` relative to `root` if inside it, else a file URI."""
    absolute = Path(os.path.abspath(cwd / path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return absolute.as_uri(), False
    return quote(relative.as_posix()), True
