"""The worker processes of one run: started when a round of files first
pays for them, kept for the rounds after it, ended with the run.

A whole-project run lints in rounds (every file, then the files whose
imported facts changed, until they settle). A pool per round forked fresh
workers each time, and each one built again what a worker builds on its
first files: LibCST's node constructors, the rules' dispatch tables, the
prefilter's probes, the interpreter's caches (measured: its first large
file costs a worker 0.05-0.17 s more than it does later). One pool per run
builds them once per worker; the parent builds the parser's part before it
forks, so every worker inherits it.

Workers die with the parent, however it ends, and ignore Ctrl-C (the parent
ends them: no traceback from each). A worker that dies fails the files it
had (each gets an internal-error notice); the next round starts new ones.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Callable, Generic, Iterator, Sequence, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.process import BaseProcess

T = TypeVar("T")
R = TypeVar("R")

_PR_SET_PDEATHSIG = 1


class Workers(Generic[T, R]):
    """Runs `work` over lists of items, in worker processes where a list has
    at least `min_items` and `jobs` > 1, in this process otherwise.
    `failed(item, exc)` is an item's result where its worker died. Use it
    as a context manager: leaving it ends the workers (at once, on an
    exception or Ctrl-C)."""

    def __init__(
        self,
        jobs: int,
        work: Callable[[T], R],
        failed: Callable[[T, BaseException], R],
        min_items: int,
        size: Callable[[T], int] = lambda item: 0,
        prepare: Callable[[], None] = lambda: None,
    ) -> None:
        self.jobs = jobs
        self._work = work
        self._failed = failed
        self._min_items = min_items
        self._size = size
        self._prepare = prepare
        self._pool: ProcessPoolExecutor | None = None
        self._before: set[BaseProcess] = set()

    def __enter__(self) -> Workers[T, R]:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.close(at_once=kind is not None)

    def map(self, items: Sequence[T]) -> list[R]:
        """The results of `items`, in order; the largest are started first."""
        if self.jobs <= 1 or len(items) < self._min_items:
            return [self._work(item) for item in items]
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        results: list[R | None] = [None] * len(items)
        order = sorted(range(len(items)), key=lambda i: -self._size(items[i]))
        try:
            pool = self._started(len(items))
            with _sigint_blocked():  # workers forked meanwhile start without it: Ctrl-C is the parent's
                try:
                    futures = {pool.submit(self._work, items[i]): i for i in order}
                except BrokenProcessPool:  # a worker died in an earlier round: start new ones
                    self.close(at_once=True)
                    pool = self._started(len(items))
                    futures = {pool.submit(self._work, items[i]): i for i in order}
            for future in as_completed(futures):
                index = futures[future]
                try:
                    results[index] = future.result()
                except Exception as exc:  # noqa: BLE001 - a dead worker must not end the run
                    results[index] = self._failed(items[index], exc)
        except BaseException:  # Ctrl-C (or a bug): stop now, not after the queued files
            self.close(at_once=True)
            raise
        return [r for r in results if r is not None]

    def _started(self, count: int) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing  # here: a run without a pool (a warm one, a few files) does not import it
            from concurrent.futures import ProcessPoolExecutor

            self._prepare()  # built once here, inherited by every forked worker
            context = multiprocessing.get_context("fork") if sys.platform == "linux" else None
            self._before = set(multiprocessing.active_children())
            # With the parent's collector thresholds (spawned workers do not inherit them).
            self._pool = ProcessPoolExecutor(
                min(self.jobs, count), mp_context=context, initializer=_worker_init,
                initargs=(os.getpid(), gc.get_threshold()),
            )  # fmt: skip
        return self._pool

    def close(self, at_once: bool = False) -> None:
        """End the workers: after their files, or `at_once` (their results are not wanted)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not at_once:
            pool.shutdown()
            return
        import multiprocessing

        pool.shutdown(wait=False, cancel_futures=True)
        _kill(set(multiprocessing.active_children()) - self._before)


def _kill(processes: set[BaseProcess]) -> None:
    """End the pool's workers at once."""
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.kill()
    for process in processes:
        process.join(timeout=5)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back in this thread (a Ctrl-C meanwhile is delivered at
    the end); processes forked meanwhile start with it blocked."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _worker_init(parent: int, threshold: tuple[int, ...]) -> None:
    """Set up a pool worker: the parent's collector thresholds; Ctrl-C
    ignored (the parent ends the workers: no traceback from each); and death
    with the parent, however it ends (`timeout`, a CI runner or an editor
    may kill it alone: an orphan would keep linting and hold its caller's
    stdout open)."""
    gc.set_threshold(*threshold)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if not _death_signal():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the worker could ask to die with it
        os._exit(1)


def _death_signal() -> bool:
    """Ask the kernel to kill this process when its parent dies (Linux);
    whether it could."""
    if sys.platform != "linux":
        return False
    try:
        import ctypes  # here: only a pool worker asks

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        return prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return False


def _watch_parent(parent: int) -> None:  # pragma: no cover - where prctl is missing
    """Elsewhere: end this worker once its parent is gone (it is adopted)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)
