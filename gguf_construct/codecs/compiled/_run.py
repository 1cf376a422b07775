"""Running a compiled kernel over many blocks, on one thread or on chunks side by side.

Each chunk is a contiguous range of whole blocks written to its own rows of the output, so the bytes are the
same for any thread count.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PARALLEL_MIN_VALUES = 1 << 20  # decoding fewer values uses one thread unless threads= says otherwise
ENCODE_PARALLEL_MIN_VALUES = 1 << 16  # encoders search: fewer values already pay for a second thread


def cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_threads(threads: int | None, n_values: int, parallel_min: int = PARALLEL_MIN_VALUES) -> int:
    """``threads=None``: all cores from ``parallel_min`` values on, else 1; else the given count (at least 1)."""
    if threads is None:
        return cpu_count() if n_values >= parallel_min else 1
    if int(threads) < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    return int(threads)


_MAX_THREADS_PER_CORE = 4  # more threads than this only cost: larger counts are capped (same result)


@functools.lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gguf-construct-codec")


def run_blocks(kernel, x: np.ndarray, y: np.ndarray, tables: tuple, threads: int, unit: int = 1) -> int:
    """``kernel(x, y, *tables)`` over the rows (blocks) of ``x`` and ``y``, split in ``threads`` chunks of whole
    multiples of ``unit`` blocks; returns the largest status a chunk returned (kernels without one: 0)."""
    units = x.shape[0] // unit
    threads = max(1, min(threads, units, _MAX_THREADS_PER_CORE * cpu_count()))
    if threads == 1:
        return kernel(x, y, *tables) or 0
    bounds = [units * k // threads * unit for k in range(threads + 1)]
    jobs = [_pool(threads).submit(kernel, x[s:e], y[s:e], *tables) for s, e in zip(bounds, bounds[1:]) if e > s]
    return max(job.result() or 0 for job in jobs)
