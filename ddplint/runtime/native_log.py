"""What torch's C++ side writes while a rank runs, captured and summarised.

c10d, gloo and NCCL log through glog straight to file descriptor 2: a store
that cannot be reached prints 40 to 90 lines of C++ stack frames per retry,
which bury the one line the doctor has to say. While a rank runs, fd 2 is
pointed at a temporary file and Python's own `sys.stderr` at a copy of the
original descriptor, so ddplint's messages (and the user's Python warnings)
still reach the terminal. At the end the log is shown as one line, or whole
with ``--debug``.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from typing import IO

#: A glog line: ``[W1204 09:36:48.917313792 TCPStore.cpp:340] message``.
_GLOG_LINE = re.compile(r"^\[[FEWI]\d{4} [\d:.]+ [^\]]+\]\s*(?P<message>.*)$")
_MAX_MESSAGE = 300


class NativeLog:
    """File descriptor 2 of this process, captured between `start` and `stop`."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._saved_fd: int | None = None
        self._python_stderr: object = None

    def start(self) -> NativeLog:
        """Send fd 2 to a temporary file; `sys.stderr` keeps its destination."""
        sys.stderr.flush()
        self._file = tempfile.TemporaryFile()
        self._saved_fd = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        if _writes_to_fd_2(sys.stderr):
            self._python_stderr = sys.stderr
            encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
            sys.stderr = open(
                self._saved_fd, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False
            )
        return self

    def stop(self, restore: bool = True) -> str:
        """The captured text. With `restore`, fd 2 and `sys.stderr` are put
        back; without (a thread stuck in C++ may still log until the process
        ends with ``os._exit``) fd 2 stays captured and `sys.stderr` keeps
        writing to the original destination."""
        if self._file is None:
            return ""
        sys.stderr.flush()
        if restore and self._saved_fd is not None:
            os.dup2(self._saved_fd, 2)
            if self._python_stderr is not None:
                sys.stderr.close()
                sys.stderr = self._python_stderr  # type: ignore[assignment]
            os.close(self._saved_fd)
            self._saved_fd = None
        self._file.seek(0)
        text = self._file.read().decode("utf-8", errors="replace")
        if restore:
            self._file.close()
            self._file = None
        return text


def _writes_to_fd_2(stream: object) -> bool:
    try:
        return stream.fileno() == 2  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # pytest's capture, a StringIO: not fd 2
        return False


def summarise(text: str) -> str:
    """One line for a captured log: how much there was and its first message
    (empty when there was nothing)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    messages = [m.group("message") for m in map(_GLOG_LINE.match, lines) if m]
    first = (messages or lines)[0].strip()
    if len(first) > _MAX_MESSAGE:
        first = first[: _MAX_MESSAGE - 3] + "..."
    size = f"{len(messages)} message{'s' if len(messages) != 1 else ''}, " if messages else ""
    return f"torch's C++ log ({size}{len(lines)} line{'s' if len(lines) != 1 else ''}; --debug shows it): {first}"
