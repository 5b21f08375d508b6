"""The language server's stdio framing, robust against a faulty client.

pygls' own reader trusts every header: a message without a valid
`Content-Length` makes it read the next messages as headers (it goes deaf),
a truncated body swallows the start of the next message, and a huge
`Content-Length` (99999999999) makes it allocate that much and die. This
reader frames messages itself:

- A header block (up to the blank line) that holds no valid
  `Content-Length` (missing, not a number, not ASCII) is answered with a
  JSON-RPC error (`id: null`) and skipped; bytes before the next header are
  skipped as well (the body of the broken message).
- A `Content-Length` over `MAX_MESSAGE_BYTES` is refused the same way
  without reading the body into memory: the reader skips to the next header.
- A body that is cut short (the next message's header arrives inside it) is
  answered with an error, and reading resumes at that header. A JSON body
  holds no raw line breaks inside strings and no bare words outside them,
  so `Content-Length: N` followed by CR LF never occurs in a whole message.
- A body that is not UTF-8 or not JSON is answered with a parse error.

Stdin's file descriptor is read by a daemon thread, so a server told to `exit` stops at once
even while the editor keeps its end of the pipe open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import threading
from typing import Any, BinaryIO, Callable

logger = logging.getLogger(__name__)

#: The largest message accepted (a whole document is sent on open and on
#: every change: this is far above any source file ddplint lints).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: How much junk is kept while looking for the next header (a header block
#: is a few dozen bytes; the rest of a skipped body is dropped as it comes).
_KEEP_WHILE_SCANNING = 4096
_CHUNK = 64 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_HEADER_START = re.compile(rb"content-(?:length|type)[ \t]*:", re.IGNORECASE)
#: A header of the next message inside a body: the body was cut short.
_NEXT_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r\n", re.IGNORECASE)
_FIELD = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*([\x20-\x7e]*?)[ \t]*")
_END = b"\r\n\r\n"


class HeaderError(ValueError):
    """A header block without a usable `Content-Length`."""


def content_length(block: bytes) -> int:
    """The `Content-Length` of a header block (without its blank line)."""
    length = None
    for line in block.split(b"\r\n"):
        match = _FIELD.fullmatch(line)
        if match is None:
            raise HeaderError(f"malformed header line {line[:80]!r}")
        if match.group(1).lower() == b"content-length":
            value = match.group(2)
            if not value.isdigit():
                raise HeaderError(f"Content-Length is not a number: {value[:40]!r}")
            length = int(value) if len(value) <= 20 else MAX_MESSAGE_BYTES + 1
    if length is None:
        raise HeaderError("no Content-Length header")
    return length


class Framer:
    """Splits a byte stream into message bodies; `error(code, text)` hears
    about each broken or refused message."""

    def __init__(self, error: Callable[[int, str], None]) -> None:
        self._buffer = bytearray()
        self._error = error
        #: The length of the body being read, once its header was parsed.
        self._length: int | None = None
        #: Where the scan for the next header inside the body resumes.
        self._scanned = 0
        #: Skipping the rest of a broken or refused message: junk before
        #: the next header is dropped without another error.
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes]:
        """The bodies completed by `data`."""
        self._buffer += data
        bodies = []
        while True:
            body = self._next()
            if body is None:
                return bodies
            bodies.append(body)

    def _next(self) -> bytes | None:
        if self._length is None and not self._header():
            return None
        assert self._length is not None
        # The body so far: is the next message's header inside it?
        start = max(self._scanned - 64, 0)
        cut = _NEXT_HEADER.search(self._buffer, start, min(len(self._buffer), self._length + 64))
        if cut is not None and cut.start() < self._length:
            self._error(INVALID_REQUEST, f"truncated message: {cut.start()} of {self._length} bytes, then a new header")
            del self._buffer[: cut.start()]
            self._length = None
            return self._next()
        if len(self._buffer) < self._length:
            self._scanned = len(self._buffer)
            return None
        body = bytes(self._buffer[: self._length])
        del self._buffer[: self._length]
        self._length = None
        return body

    def _header(self) -> bool:
        """Parse the next header block; whether a body length is known now."""
        while True:
            end = self._buffer.find(_END)
            if end < 0:
                if len(self._buffer) > _KEEP_WHILE_SCANNING:
                    del self._buffer[: len(self._buffer) - _KEEP_WHILE_SCANNING]
                    self._skipping = True
                return False
            block = bytes(self._buffer[:end])
            del self._buffer[: end + len(_END)]
            length, problem = self._parse(block)
            if length is None:
                if not self._skipping:
                    self._error(INVALID_REQUEST, f"malformed message header ({problem}); message skipped")
                self._skipping = True
                continue
            if length > MAX_MESSAGE_BYTES:
                self._error(
                    INVALID_REQUEST,
                    f"message of {length} bytes refused (the limit is {MAX_MESSAGE_BYTES} bytes); message skipped",
                )
                self._skipping = True
                continue
            self._skipping = False
            self._length = length
            self._scanned = 0
            return True

    @staticmethod
    def _parse(block: bytes) -> tuple[int | None, str]:
        """The body length of the header block that starts at the first
        header in `block` that parses (junk before it is a broken message's
        rest), or None and why not."""
        try:
            return content_length(block), ""
        except HeaderError as exc:
            problem = str(exc)
        for match in _HEADER_START.finditer(block, 1):
            try:
                return content_length(block[match.start() :]), ""
            except HeaderError:
                continue
        return None, problem


def frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def serve(stdin: BinaryIO, write: Callable[[bytes], None], handle: Callable[[Any], None], parse: Callable[[str], Any]) -> None:
    """Read framed messages from `stdin` until it closes: each body is
    decoded and parsed by `parse` and handed to `handle`; errors are answered
    through `write`."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    # The file descriptor, not the buffered stream: a thread blocked in the
    # stream's read holds its lock, which the interpreter's exit then waits for.
    fd = stdin.fileno()

    def read() -> None:
        try:
            while True:
                data = os.read(fd, _CHUNK)
                loop.call_soon_threadsafe(chunks.put_nowait, data)
                if not data:
                    return
        except (OSError, ValueError, RuntimeError):  # closed stdin, or the loop is gone
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(chunks.put_nowait, b"")

    def error(code: int, message: str) -> None:
        logger.warning("%s", message)
        write(frame({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": f"ddplint: {message}"}}))

    framer = Framer(error)
    threading.Thread(target=read, name="ddplint-lsp-stdin", daemon=True).start()
    while True:
        data = await chunks.get()
        if not data:
            return
        for body in framer.feed(data):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as exc:
                error(PARSE_ERROR, f"message body is not UTF-8 ({exc.reason} at byte {exc.start}); message skipped")
                continue
            try:
                message = parse(text)
            except Exception as exc:  # noqa: BLE001 - not JSON, or not a JSON-RPC message pygls can structure
                error(PARSE_ERROR, f"message body is not JSON-RPC ({exc}); message skipped")
                continue
            handle(message)

