"""`--fix`, `--diff`: fixing the linted files, writing them back, showing diffs.

The runner lints as usual; for the files whose findings carry an applicable
fix, the engine's fix loop (`ddplint.engine.fixer`) computes the fixed text
and the findings that remain. This module turns that into files on disk
(re-encoded as they were read, written atomically, permissions kept) or a
unified diff, and never writes a file it could not encode back.
"""

from __future__ import annotations

import difflib
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ddplint.result import FileResult
from ddplint.model import Notice
from ddplint.paths import project_root


@dataclass(frozen=True)
class FixMode:
    """Which fixes to apply: safe ones, and with `unsafe` the unsafe ones too."""

    unsafe: bool = False


@dataclass(frozen=True)
class FixedFile:
    """One file whose fixes changed its text."""

    display: str
    path: Path | None
    before: str
    after: str
    #: Findings fixed.
    applied: int
    #: The encoding the file was read in (PEP 263), used to write it back.
    encoding: str = "utf-8"
    #: The codes of the findings fixed, one per fix.
    rules: tuple[str, ...] = ()

    def diff(self) -> str:
        """The change as a unified diff (`git apply`-able: a/ and b/ prefixes)."""
        sep = "" if self.display.startswith("/") else "/"
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"a{sep}{self.display}",
            tofile=f"b{sep}{self.display}",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def fix_file(
    display: str, path: Path | None, data: bytes, result: FileResult, fixer
) -> tuple[FileResult, FixedFile | None]:
    """Fix one file: `fixer(text, result)` returns the engine's `FixOutcome`.

    The result is the lint of the fixed text (or `result` when nothing changed).
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return result, None  # DDP000 already says why; nothing to fix
    outcome = fixer(text, result)
    if outcome.text == text:
        return outcome.result, None
    try:
        outcome.text.encode(encoding)
    except UnicodeEncodeError:
        return result.with_notice(Notice(display, f"the fixed code cannot be written as {encoding}; file left unchanged")), None
    return outcome.result, FixedFile(display, path, text, outcome.text, outcome.applied, encoding, outcome.rules)


def write_fixed(fixed: FixedFile) -> Notice | None:
    """Write a fixed file in place (atomically, mode kept); a notice if it failed.

    A file reached through a symbolic link (the file or a directory above it)
    is written where the link points only when that is inside the project
    root of the path as given (its git top-level, else its directory): the
    link stays a link and the file it names gets the fix. A link out of the
    project (a repository can ship one to any file the user may write) is
    never written through: the file is skipped with a notice."""
    assert fixed.path is not None
    given = Path(os.path.abspath(fixed.path))
    target = fixed.path.resolve()
    root = project_root(given.parent).resolve()
    if not target.is_relative_to(root):
        return Notice(fixed.display, f"is reached through a symbolic link to {target}, outside the project root {root}; fixes not written")
    try:
        mode = target.stat().st_mode & 0o7777
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".ddplint")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(fixed.after.encode(fixed.encoding))
            os.chmod(temporary, mode)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        return Notice(fixed.display, f"cannot write the fixed file: {exc.strerror or exc}")
    return None
