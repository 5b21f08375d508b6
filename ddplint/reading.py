"""Reading a file to lint: regular files only, and never more than the limit.

A named pipe would block the run until something writes to it, and a link
to `/dev/zero` (or any device) would be read until memory runs out, so the
file is opened without blocking and checked on the open descriptor (no
window between the check and the read), and at most one byte more than
`max-file-size` is read.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import tokenize
from pathlib import Path

from ddplint.config.settings import Settings
from ddplint.model import Notice, NoticeLevel
from ddplint.sizes import describe_size

_CHUNK = 1 << 20

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class NotRegularFile(OSError):
    """The path names a pipe, device, socket or directory, not a file."""

    def __init__(self, kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({kind})")
        self.kind = kind


class FileTooLarge(OSError):
    """The file holds more than `limit` bytes."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, too_large_note(size, limit))
        self.size = size
        self.limit = limit


def too_large_note(size: int, limit: int) -> str:
    """The note for a file of `size` bytes above max-file-size `limit`."""
    return f"{describe_size(size)} is above max-file-size ({describe_size(limit)}); not linted"


def read_source(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path` (links followed).

    Raises `NotRegularFile` for anything else, `FileTooLarge` when it holds
    more than `limit` bytes (reading at most ``limit + 1``), and `OSError`
    when it cannot be read.
    """
    kind = _kind(os.stat(path).st_mode)  # a socket cannot even be opened: say what it is
    if kind is not None:
        raise NotRegularFile(kind)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)  # non-blocking: a path swapped for a pipe since the stat does not hang
    try:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)
        if kind is not None:
            raise NotRegularFile(kind)
        if info.st_size > limit:
            raise FileTooLarge(info.st_size, limit)
        chunks, read = [], 0
        while read <= limit:  # the file may have grown since the fstat
            chunk = os.read(fd, min(_CHUNK, limit + 1 - read))
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileTooLarge(max(len(data), info.st_size), limit)
    return data


def buffer_notice(path: str, text: str, settings: Settings) -> Notice | None:
    """`shape_notice`, and first max-file-size, for a text no file was read
    for (an editor's buffer): the same limits as on disk."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > settings.max_file_size:
        return Notice(path, too_large_note(size, settings.max_file_size), NoticeLevel.WARNING)
    return shape_notice(path, text, settings)


def shape_notice(path: str, text: str, settings: Settings) -> Notice | None:
    """A warning when `text` is above max-lines or max-tokens (it is then not
    linted: LibCST's time and memory grow with both), else None; checked
    before any parse, in time linear in the text and far below a parse's."""
    lines = _lines_over(text, settings.max_lines)
    if lines:
        return Notice(path, f"{lines:,} lines is above max-lines ({settings.max_lines:,}); not linted", NoticeLevel.WARNING)
    tokens = _tokens_over(text, settings.max_tokens)
    if tokens:
        note = f"above max-tokens ({settings.max_tokens:,} tokens); not linted"
        return Notice(path, note, NoticeLevel.WARNING)
    return None


def _lines_over(text: str, limit: int) -> int:
    """The number of lines of `text` if above `limit`, else 0 (cheap: two
    scans in C; a file of old Mac line ends counts its CRs)."""
    if len(text) <= limit:  # every line holds at least one character
        return 0
    lines = max(text.count("\n"), text.count("\r")) + (not text.endswith(("\n", "\r")))
    return lines if lines > limit else 0


#: A word or one other visible character: at least one of these per token
#: but for the layout tokens (a newline, an indent or dedent: at most three
#: a line), so this count plus three a line bounds the tokens from above.
_TOKENISH = re.compile(r"\w+|[^\w\s]")


def _tokens_over(text: str, limit: int) -> bool:
    """Whether `text` holds more than `limit` tokens (as Python's `tokenize`
    counts them: a string literal is one). Every token but the layout ones
    takes a character, so short texts are under it unseen; then a count in C
    that can only overestimate; only a text that passes it is tokenized, and
    only up to the limit."""
    if 2 * len(text) + 3 <= limit:
        return False
    if _TOKENISH.subn("", text)[1] + 3 * (text.count("\n") + 1) <= limit:
        return False
    count = 0
    try:
        for count, _ in enumerate(tokenize.generate_tokens(io.StringIO(text).readline), 1):
            if count > limit:
                return True
    except (tokenize.TokenError, SyntaxError):  # not Python: its parse says where (what it read is under the limit)
        pass
    return False


def unreadable_notice(display: str, exc: OSError) -> Notice:
    """What to tell the user about a file `read_source` refused: a note for
    one above max-file-size (skipped as configured), an error otherwise (its
    findings are lost: the run fails)."""
    if isinstance(exc, FileTooLarge):
        return Notice(display, str(exc.strerror), NoticeLevel.WARNING)
    if isinstance(exc, NotRegularFile):
        return Notice(display, f"{exc.strerror}; not linted")
    return Notice(display, f"cannot read file: {exc.strerror or exc}")


def _kind(mode: int) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "a special file")
