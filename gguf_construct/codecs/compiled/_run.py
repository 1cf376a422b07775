"""Running a compiled kernel over many blocks, on one thread or on chunks side by side.

Each chunk is a contiguous range of whole blocks written to its own rows of the output, so the bytes are the
same for any thread count.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PARALLEL_MIN_VALUES = 1 << 20  # below this many values one thread is used unless threads= says otherwise


def cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_threads(threads: int | None, n_values: int) -> int:
    """``threads=None``: all cores for large inputs, 1 for small; else the given count (at least 1)."""
    if threads is None:
        return cpu_count() if n_values >= PARALLEL_MIN_VALUES else 1
    if int(threads) < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    return int(threads)


@functools.lru_cache(maxsize=None)
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gguf-construct-codec")


def run_blocks(kernel, x: np.ndarray, y: np.ndarray, tables: tuple, threads: int) -> None:
    """``kernel(x, y, *tables)`` over the rows (blocks) of ``x`` and ``y``, split in ``threads`` chunks."""
    n = x.shape[0]
    threads = max(1, min(threads, n))
    if threads == 1:
        kernel(x, y, *tables)
        return
    bounds = [n * k // threads for k in range(threads + 1)]
    jobs = [_pool(threads).submit(kernel, x[s:e], y[s:e], *tables) for s, e in zip(bounds, bounds[1:]) if e > s]
    for job in jobs:
        job.result()
