"""Where the project is: the git top-level, and URIs relative to it."""

from __future__ import annotations

import functools
import os
import re
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


def relative_uri(path: str, cwd: Path, root: Path, absolute_paths: bool = False) -> tuple[str, bool]:
    """(URI, is_relative): `path` as a URI relative to `root` (``../`` for files
    outside it), or as an absolute file URI when `absolute_paths` is asked for."""
    absolute = Path(os.path.abspath(cwd / path))
    if absolute_paths:
        return absolute.as_uri(), False
    # Percent-encoded from the name's bytes: a name that is not UTF-8 keeps them.
    return quote(os.fsencode(Path(os.path.relpath(absolute, root)).as_posix())), True


def shown_path(path: str, cwd: Path, absolute_paths: bool = False) -> str:
    """A report path: relative to `cwd` unless absolute paths were asked for."""
    if absolute_paths:
        return os.path.abspath(cwd / path)
    if os.path.isabs(path):
        return os.path.relpath(path, cwd)
    return path


#: The characters a `str` holds for bytes that are not UTF-8 (surrogate
#: escapes, as `os.fsdecode` makes them), and lone surrogates in general.
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` as valid Unicode, for output: each byte of a file name that is
    not UTF-8 (which Python holds as a surrogate escape, U+DC80-U+DCFF)
    becomes ``\\xNN``, as `bytes.decode(errors="backslashreplace")` writes it
    (``a\\xff.py``); any other lone surrogate becomes ``\\uNNNN``."""
    return _SURROGATE.sub(_escape_surrogate, text) if not text.isascii() else text


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def is_test_file(path: str) -> bool:
    """`tests/...`, `test_*.py`, `*_test.py`, `*test_utils.py`: tests run
    ranks on one node and compare them on purpose."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return any(p in ("test", "tests", "gpu_tests") for p in parts[:-1]) or name.startswith("test_") or name.endswith(
        ("_test.py", "test_utils.py")
    )


def message_path(path: str) -> str:
    """A path as a message shows it: repository-relative (never the
    absolute path of the user's machine, which a message would otherwise
    carry into CI logs and code-scanning alerts); relative paths as they are."""
    if not os.path.isabs(path):
        return path
    root = _root_of(os.path.dirname(path))
    return Path(os.path.relpath(path, root)).as_posix() if root is not None else os.path.basename(path)


@functools.lru_cache(maxsize=256)
def _root_of(directory: str) -> Path | None:
    return git_root(Path(directory))
