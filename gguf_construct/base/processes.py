"""Process pools that an interrupt stops cleanly: workers leave Ctrl-C to the parent (no traceback per worker),
and the parent, when interrupted or failing, cancels what is queued and stops the workers instead of waiting."""

from __future__ import annotations

import contextlib
import signal
import threading
from concurrent.futures import InvalidStateError, ProcessPoolExecutor
from typing import Iterator

__all__ = ["worker_pool"]


def _leave_interrupts_to_parent() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A ProcessPoolExecutor of ``workers`` processes, shut down when the block ends (at once on an exception)."""
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_leave_interrupts_to_parent)
    try:
        yield pool
    except BaseException:
        _quiet_manager_thread(pool)
        processes = dict(getattr(pool, "_processes", None) or {})
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes.values():  # a running task would otherwise hold the exit until it ends
            with contextlib.suppress(Exception):
                process.terminate()
        raise
    pool.shutdown(wait=True)


def _quiet_manager_thread(pool: ProcessPoolExecutor) -> None:
    """Python before 3.12 marks every pending task of a pool whose workers were stopped as failed, also the ones
    already cancelled, and its manager thread then dies with ``InvalidStateError: CANCELLED``, printing a thread
    traceback after the command's own last line: that one error of that one thread is silenced."""
    manager = getattr(pool, "_executor_manager_thread", None)
    previous = threading.excepthook

    def hook(args) -> None:
        if args.thread is manager and issubclass(args.exc_type, InvalidStateError):
            return
        previous(args)

    if manager is not None:
        threading.excepthook = hook
