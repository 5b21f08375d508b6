"""From command-line paths to the Python files to lint.

Directories are walked in sorted order for `.py`/`.pyi` files, skipping what
the governing config excludes (default: virtualenvs, build output, caches,
VCS folders) and what `.gitignore` files ignore (the ones inside the walk,
plus those between the git top-level and the walk's start, and
`.git/info/exclude`). Explicit file arguments are linted even when excluded,
unless `force_exclude` (pre-commit passes every staged file explicitly).

Symbolic links are followed, but a directory link back to one of its own
ancestors is reported once and not entered, and a dangling `.py` link is
reported instead of silently dropped. A `.py` name on a pipe, socket or
device is kept, for the reader to refuse it with a notice (it never opens one
blocking).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
import pathspec

from ddplint.config.resolver import ConfigResolver
from ddplint.model import Notice, NoticeLevel
from ddplint.paths import git_root
from ddplint.reading import read_source

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks: their code cells (ddplint.engine.notebook)
#: Larger ignore files are skipped (real ones are a few kB).
_MAX_IGNORE_FILE = 10 * 2**20


@dataclass(frozen=True)
class SourceFile:
    """A file to lint: where it is, and how to show its path to the user."""

    path: Path
    display: str


@dataclass
class Discovery:
    """The files found, and the problems met on the way."""

    files: list[SourceFile] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)


@dataclass(frozen=True)
class _Ignore:
    base: Path
    spec: pathspec.GitIgnoreSpec

    def verdict(self, path: Path, is_dir: bool) -> bool | None:
        try:
            relative = path.relative_to(self.base).as_posix()
        except ValueError:
            return None
        return self.spec.check_file(relative + ("/" if is_dir else "")).include


def discover(paths: list[Path], resolver: ConfigResolver, force_exclude: bool = False) -> Discovery:
    """Expand `paths` (files or directories; they must exist) to source files."""
    found = Discovery()
    for path in paths:
        absolute = path if path.is_absolute() else resolver.cwd / path
        display = os.path.normpath(str(path))
        if _is_dir(absolute):
            walker = _DirectoryWalker(resolver, found, absolute)
            ignores = _ancestor_ignores(absolute)
            if _ignored(absolute, True, ignores):
                ignores = ()  # the user named an ignored directory: lint it
            walker.walk(absolute, display, ignores, frozenset())
        elif force_exclude and _excluded_file(absolute, resolver):
            continue
        elif os.path.islink(absolute) and not os.path.exists(absolute):
            found.notices.append(Notice(display, _broken_link_reason(absolute)))
        else:  # a file that cannot be read is reported when it is read
            found.files.append(SourceFile(absolute, display))
    return found


def _is_dir(path: Path) -> bool:
    """Whether `path` is a directory; False where it cannot be looked at."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _excluded_file(path: Path, resolver: ConfigResolver) -> bool:
    if resolver.excludes_file(path):
        return True
    directory = path.parent
    ignores = _ancestor_ignores(directory) + tuple(_load_ignore(directory, directory / ".gitignore"))
    return _ignored(path, False, ignores)


def _ignored(path: Path, is_dir: bool, ignores: tuple[_Ignore, ...]) -> bool:
    ignored = False
    for ignore in ignores:  # outermost first: a deeper file's verdict wins
        verdict = ignore.verdict(path, is_dir)
        if verdict is not None:
            ignored = verdict
    return ignored


def _ancestor_ignores(start: Path) -> tuple[_Ignore, ...]:
    """The ignore rules from above `start`: `.git/info/exclude` and the
    `.gitignore` files from the git top-level down to `start`'s parent."""
    root = git_root(start)
    if root is None:
        return ()
    ignores = _load_ignore(root, root / ".git" / "info" / "exclude")
    chain = [start, *start.parents]
    for directory in reversed(chain[1 : chain.index(root) + 1]):
        ignores.extend(_load_ignore(directory, directory / ".gitignore"))
    return tuple(ignores)


def _load_ignore(base: Path, file: Path) -> list[_Ignore]:
    try:  # a pipe or device named .gitignore is skipped, never read
        lines = read_source(file, _MAX_IGNORE_FILE).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [_Ignore(base, pathspec.GitIgnoreSpec.from_lines(lines))]


class _DirectoryWalker:
    def __init__(self, resolver: ConfigResolver, found: Discovery, root: Path) -> None:
        self.resolver = resolver
        self.found = found
        self.root = root

    def walk(
        self,
        directory: Path,
        display: str,
        ignores: tuple[_Ignore, ...],
        ancestors: frozenset[tuple[int, int]],
    ) -> None:
        try:
            info = directory.stat()
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self._notice(display, f"cannot read directory: {exc.strerror or exc}")
            return
        ancestors = ancestors | {(info.st_dev, info.st_ino)}
        ignores = ignores + tuple(_load_ignore(directory, directory / ".gitignore"))
        for entry in entries:
            self._entry(entry, directory, display, ignores, ancestors)

    def _entry(
        self,
        entry: os.DirEntry[str],
        directory: Path,
        display: str,
        ignores: tuple[_Ignore, ...],
        ancestors: frozenset[tuple[int, int]],
    ) -> None:
        path = directory / entry.name
        shown = os.path.join(display, entry.name) if display != "." else entry.name
        try:
            is_dir = entry.is_dir()
            is_file = not is_dir and entry.is_file()
        except OSError:
            is_dir = is_file = False
        if is_dir:
            if self.resolver.is_excluded(path, True, self.root) or _ignored(path, True, ignores):
                return
            if self._is_loop(entry, ancestors):
                target = os.readlink(path) if entry.is_symlink() else path
                self._notice(shown, f"symlink loop (points to {target}); not followed", NoticeLevel.WARNING)
                return
            self.walk(path, shown, ignores, ancestors)
        elif entry.name.endswith(PYTHON_SUFFIXES):
            if self.resolver.is_excluded(path, False, self.root) or _ignored(path, False, ignores):
                return
            if is_file:
                self.found.files.append(SourceFile(path, shown))
            elif entry.is_symlink():
                self._notice(shown, _broken_link_reason(path))
            else:  # a named pipe, socket or device: reading refuses it with a notice, never opens it blocking
                self.found.files.append(SourceFile(path, shown))

    @staticmethod
    def _is_loop(entry: os.DirEntry[str], ancestors: frozenset[tuple[int, int]]) -> bool:
        try:
            info = entry.stat()
        except OSError:
            return False
        return (info.st_dev, info.st_ino) in ancestors

    def _notice(self, path: str, message: str, level: NoticeLevel = NoticeLevel.ERROR) -> None:
        self.found.notices.append(Notice(path, message, level))


def _broken_link_reason(path: Path) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    try:
        path.stat()
    except OSError as exc:
        return f"broken symlink (points to {target}: {exc.strerror or exc}); not linted"
    return f"not a regular file (points to {target}); not linted"

