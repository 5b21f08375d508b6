"""Run a blocking call with a time limit, so that a step that hangs becomes a
finding instead of a hung preflight.

The call runs in a daemon thread; on timeout it is abandoned (a collective
stuck in C++ cannot be interrupted), and the doctor ends its process with
`os._exit` once the report is written, see `ddplint.runtime.session`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Outcome:
    """What became of a call: its value, its exception, or a timeout."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out

    def describe(self) -> str:
        """The failure as one line (empty when it succeeded)."""
        if self.timed_out:
            return f"did not complete within {self.seconds:.0f} s"
        if self.error is not None:
            first = (str(self.error).strip().splitlines() or [""])[0]
            return f"{type(self.error).__name__}: {first}"[:300]
        return ""


#: Set when any call was abandoned; the process must then end with os._exit.
abandoned = threading.Event()


def call_with_timeout(function: Callable[[], Any], timeout: float) -> Outcome:
    """`function()` in a daemon thread, waited for at most `timeout` seconds."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as exc:  # noqa: BLE001 - reported, not raised
            box["error"] = exc

    start = time.monotonic()
    thread = threading.Thread(target=target, name="ddplint-doctor-step", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        abandoned.set()
        return Outcome(timed_out=True, seconds=timeout)
    return Outcome(box.get("value"), box.get("error"), seconds=time.monotonic() - start)
