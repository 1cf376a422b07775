"""Following a chain of length-prefixed records where the candidate scan of :mod:`~gguf_construct.base.stringscan`
cannot verify it in bulk (runs of empty strings, zero bytes in payloads, strings of 256 bytes or more).

Two exact ways, both without Python work per record:

- :func:`walk_compiled`: the loop a C reader runs (read a length, step over the payload), compiled with numba
  when the ``fast`` extra is installed; ``None`` without it.  Imported and compiled on first use only (cached on
  disk), so files that never need it never import numba.
- :func:`chain_by_doubling`: numpy only.  Every byte position of a window gets its successor
  (``position + width + length read there``); the records are the positions reachable from 0, found by pointer
  doubling: after round ``k`` the chain's first ``2**(k + 1)`` records are known, and the jump table is squared.
  The cost is the window's size times the logarithm of the number of records in it.
"""

from __future__ import annotations


import numpy as np

from .extras import compiled_walk

__all__ = ["walk_compiled", "chain_by_doubling"]


def _kernel():
    """The compiled walk (base/compiledwalks.py), or None when numba is not installed."""
    return compiled_walk("walk_strings")


def walk_compiled(buf, pos: int, count: int, width: int, little: bool, starts: np.ndarray | None = None):
    """``(done, end, problem)`` for up to ``count`` records at ``pos`` of ``buf``, writing the payload starts of
    the ``done`` records that fit into ``starts`` (int64, at least ``count`` long; made when None): where the next
    record would start, and 0 (all read), -1 (the next length is cut off by the end) or 1 (the next payload runs
    past the end).  None when numba is not installed."""
    kernel = _kernel()
    if kernel is None:
        return None
    whole = np.frombuffer(buf, dtype=np.uint8)
    if starts is None:
        starts = np.empty(count, dtype=np.int64)
    done, end, problem = kernel(whole, pos, count, width, little, starts)
    return int(done), int(end), int(problem)


def chain_by_doubling(win: np.ndarray, width: int, little: bool, limit: int) -> np.ndarray:
    """Window-relative starts of the chain of records beginning at 0 whose length prefix lies in ``win`` (at most
    ``limit``), exact for any lengths; the last one's payload may run past the window (the caller checks)."""
    m = len(win) - width + 1
    if m <= 0:
        return np.empty(0, dtype=np.int64)
    rows = np.lib.stride_tricks.sliding_window_view(win, width)
    lengths = np.ascontiguousarray(rows if little else rows[:, ::-1]).view("<u8" if width == 8 else "<u4")
    lengths = lengths.reshape(-1)[:m]
    end = np.int64(m)  # the one terminal: no whole prefix there
    jump = np.empty(m + 1, dtype=np.int64)
    jump[:m] = np.minimum(lengths, np.uint64(m)).astype(np.int64) + np.arange(width, m + width, dtype=np.int64)
    np.minimum(jump, end, out=jump)
    jump[m] = end
    chain = np.zeros(1, dtype=np.int64)
    while len(chain) < limit:
        more = jump[chain]
        stop = np.flatnonzero(more == end)
        if len(stop):
            chain = np.concatenate([chain, more[: stop[0]]])
            break
        chain = np.concatenate([chain, more])
        jump = jump[jump]
    return chain[:limit]
