"""Running a compiled kernel over many blocks, on one thread or on chunks side by side.

Each chunk is a contiguous range of whole blocks written to its own rows of the output, so the bytes are the
same for any thread count.  Chunks are small and handed out one at a time to whichever thread is free, the
calling thread included: a thread that the system runs slower (a busy machine, another process on its core)
takes fewer chunks instead of holding the others up, so more threads never take much longer than one.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PARALLEL_MIN_VALUES = 1 << 22  # decoding fewer values uses one thread unless threads= says otherwise
ENCODE_PARALLEL_MIN_VALUES = 1 << 16  # encoders search: fewer values already pay for a second thread


def cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def idle_cores(cores: int) -> int:
    """Cores no other thread is running on now: ``cores`` minus the runnable threads besides this one (Linux's
    ``/proc/loadavg``); all of them where the system does not say."""
    try:
        with open("/proc/loadavg", "rb") as fh:
            runnable = int(fh.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return cores
    return max(0, cores - max(0, runnable - 1))


def resolve_threads(threads: int | None, n_values: int, parallel_min: int = PARALLEL_MIN_VALUES) -> int:
    """``threads=None``: from ``parallel_min`` values on, this thread and one more per idle core
    (:func:`idle_cores`: a thread that must wait for a core only delays the result), else 1; else the given
    count (at least 1)."""
    if threads is None:
        if n_values < parallel_min:
            return 1
        cores = cpu_count()
        return max(1, min(cores, 1 + idle_cores(cores - 1)))
    if int(threads) < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    return int(threads)


_MAX_THREADS_PER_CORE = 4  # more threads than this only cost: larger counts are capped (same result)


@functools.lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gguf-construct-codec")


CHUNK_BYTES = 1 << 20  # about this many bytes of the larger of input and output per chunk (a millisecond of
#                        decoding: the dispatch of a chunk costs microseconds)
CHUNKS_PER_THREAD = 4  # at least this many chunks per thread, so that a slowed thread can be made up for


def run_blocks(kernel, x: np.ndarray, y: np.ndarray, tables: tuple, threads: int, unit: int = 1) -> int:
    """``kernel(x, y, *tables)`` over the rows (blocks) of ``x`` and ``y`` on ``threads`` threads (the caller and
    ``threads - 1`` of a pool) taking chunks of whole multiples of ``unit`` blocks in turn; returns the largest
    status a chunk returned (kernels without one: 0)."""
    units = x.shape[0] // unit
    if threads <= 1 or units <= 1:
        return kernel(x, y, *tables) or 0
    threads = min(threads, units, _MAX_THREADS_PER_CORE * cpu_count())
    unit_bytes = unit * max(x[0].nbytes, y[0].nbytes)
    per_chunk = max(1, min(CHUNK_BYTES // unit_bytes, units // (threads * CHUNKS_PER_THREAD)))
    return _Shared(kernel, x, y, tables, unit, units, per_chunk).run(threads)


class _Shared:
    """One call's chunks, taken in turn by the threads that are running; the call is over when every chunk is
    done, whether or not every helper thread got to start (on a busy machine one may be woken too late to find
    any work: nobody waits for it)."""

    def __init__(self, kernel, x, y, tables, unit, units, per_chunk):
        self.kernel, self.x, self.y, self.tables = kernel, x, y, tables
        self.unit, self.units, self.per_chunk = unit, units, per_chunk
        self.n_chunks = -(-units // per_chunk)
        self.turns = itertools.count()  # next() on it is atomic under the GIL
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.done = 0
        self.status = 0
        self.error: BaseException | None = None

    def run(self, threads: int) -> int:
        pool = _pool(threads - 1)
        for _ in range(threads - 1):
            pool.submit(self.work)
        self.work()
        self.finished.wait()
        if self.error is not None:
            raise self.error
        return self.status

    def work(self) -> None:
        while True:
            k = next(self.turns)
            if k >= self.n_chunks:
                return
            s, e = k * self.per_chunk * self.unit, min(self.units, (k + 1) * self.per_chunk) * self.unit
            status, error = 0, None
            try:
                status = self.kernel(self.x[s:e], self.y[s:e], *self.tables) or 0
            except BaseException as exc:  # handed to the caller: it re-raises once every chunk has ended
                error = exc
            with self.lock:
                self.status = max(self.status, status)
                if error is not None and self.error is None:
                    self.error = error
                self.done += 1
                if self.done == self.n_chunks:
                    self.finished.set()
