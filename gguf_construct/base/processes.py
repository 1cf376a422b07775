"""Process pools that an interrupt stops cleanly: workers leave Ctrl-C to the parent (no traceback per worker),
and the parent, when interrupted or failing, cancels what is queued and stops the workers instead of waiting."""

from __future__ import annotations

import contextlib
import signal
from concurrent.futures import ProcessPoolExecutor
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
        processes = dict(getattr(pool, "_processes", None) or {})
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes.values():  # a running task would otherwise hold the exit until it ends
            with contextlib.suppress(Exception):
                process.terminate()
        raise
    pool.shutdown(wait=True)
