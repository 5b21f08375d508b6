"""The module names of a run's files: the roots Python would search.

Module names come from the roots Python would search: the directory of
each linted script (Python puts it on ``sys.path``), the directories given
on the command line and their ``src/``, configured ``src`` roots, and the
directory above each file's top-level package. A file is known under every
name these give it, so ``import utils.dist`` from the script's directory
and ``from pkg.utils import dist`` from the repository root both find it.

Paths alone (no analysis): a warm run, whose results the cache remembers,
needs the roots for its key and nothing of `ddplint.project.index`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable


def module_names(path: Path, roots: Iterable[Path]) -> tuple[tuple[str, ...], bool]:
    """The dotted names `path` is importable as from `roots`, longest first,
    and whether it is a package's ``__init__``."""
    return ModuleNamer(roots)(path)


class ModuleNamer:
    """`module_names` for the many files of one run: the roots are kept as
    strings and each file's directories walked as text (``Path.parents``
    builds and hashes a path object per level)."""

    def __init__(self, roots: Iterable[Path]) -> None:
        self._roots = {str(root) for root in roots}

    def __call__(self, path: Path) -> tuple[tuple[str, ...], bool]:
        is_package = path.name in ("__init__.py", "__init__.pyi")
        parts = [] if is_package else [path.stem]
        names: list[str] = []
        directory = os.path.dirname(str(path))
        while True:
            if directory in self._roots and parts and all(part.isidentifier() for part in parts):
                names.append(".".join(reversed(parts)))
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            parts.append(os.path.basename(directory))
            directory = parent
        return tuple(reversed(names)), is_package


def resolve_files(paths: Iterable[Path]) -> list[Path]:
    """Each path as `Path.resolve` gives it, resolving each directory once
    (a linted tree has thousands of files in a few hundred directories)."""
    directories: dict[Path, Path] = {}
    resolved = []
    for path in paths:
        if path.is_symlink():
            resolved.append(path.resolve())
            continue
        directory = directories.get(path.parent)
        if directory is None:
            directory = directories[path.parent] = path.parent.resolve()
        resolved.append(directory / path.name)
    return resolved


def project_roots(arguments: Iterable[Path], files: Iterable[Path], configured: Iterable[Path] = ()) -> set[Path]:
    """The import roots of a run (absolute paths): the directories given and
    their ``src/``, configured roots, each script's own directory (not a
    package's: Python puts the script's directory on ``sys.path``), and the
    directory above each file's top-level package. `files` are resolved
    (`resolve_files`)."""
    roots: set[Path] = set()
    for directory in (p.resolve() for p in arguments if p.is_dir()):
        roots |= {directory, directory / "src"}
    roots |= {p.resolve() for p in configured}
    seen: set[Path] = set()
    for file in files:
        parent = file.parent
        if parent in seen:
            continue
        seen.add(parent)
        if not (parent / "__init__.py").exists():
            roots.add(parent)
            continue
        while (parent / "__init__.py").exists() and parent.parent != parent:
            parent = parent.parent
        roots.add(parent)
    return roots
