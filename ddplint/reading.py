"""Reading a file to lint: regular files only, and never more than the limit.

A named pipe would block the run until something writes to it, and a link
to `/dev/zero` (or any device) would be read until memory runs out, so the
file is opened without blocking and checked on the open descriptor (no
window between the check and the read), and at most one byte more than
`max-file-size` is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

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
