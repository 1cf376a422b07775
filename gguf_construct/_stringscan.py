"""Locating the strings of a GGUF string array without a Python loop per string.

A string array is ``count`` records of (length, bytes).  Each record's position depends on the previous one, so
the positions form a chain.  For the short strings of tokenizer vocabularies the high bytes of every length prefix
are zero; such positions are *candidates*.  Every record start is a candidate whose predecessor's ``next``
pointer hits it, so two rounds of "keep candidates that some candidate points at" leave (almost only) the record
starts; the chain property ``start[i] + width + length[i] == start[i + 1]`` is then verified for every element,
and only the verified prefix is trusted.  Whatever cannot be verified (long strings, unlucky byte patterns) is
scanned one record at a time, so the result is always exact.
"""

from __future__ import annotations

import struct

import numpy as np

_LOW_BYTES = 2  # candidates have lengths below 2**16


def _scan_one(buf, pos: int, size: int, width: int, unpack_from) -> int:
    (n,) = unpack_from(buf, pos)
    return pos + width + n


def _window_chain(win: np.ndarray, width: int, little: bool, limit: int) -> np.ndarray:
    """Record starts (window-relative) of the chain that begins at 0, at most ``limit`` of them."""
    m = len(win) - width + 1
    if m <= 0:
        return np.empty(0, dtype=np.int64)
    zero = win == 0
    high = np.ones(m, dtype=bool)
    lo = _LOW_BYTES if little else 0
    for j in range(width - _LOW_BYTES):
        high &= zero[lo + j: lo + j + m]
    cand = np.flatnonzero(high)
    if len(cand) == 0 or cand[0] != 0:
        return np.empty(0, dtype=np.int64)
    b0 = 0 if little else width - _LOW_BYTES
    lo_byte, hi_byte = (b0, b0 + 1) if little else (b0 + 1, b0)
    lengths = win[cand + lo_byte].astype(np.int64) | (win[cand + hi_byte].astype(np.int64) << 8)
    nxt = cand + width + lengths
    # successor of each candidate as a candidate index; the sentinel len(cand) ends a chain
    sentinel = len(cand)
    index_of = np.full(len(win) + 1, sentinel, dtype=np.int64)
    index_of[cand] = np.arange(len(cand))
    succ = np.append(index_of[np.minimum(nxt, len(win))], sentinel)
    # pointer doubling: path[d] is the node at distance d from the root
    path = np.zeros(1, dtype=np.int64)
    jump = succ
    while len(path) < limit:
        ahead = jump[path]
        path = np.concatenate([path, ahead])
        if ahead[-1] == sentinel:
            break
        jump = jump[jump]
    path = path[:limit]
    ends = np.flatnonzero(path == sentinel)
    if len(ends):
        path = path[: ends[0]]
    return cand[path]


def scan_string_offsets(buf, pos: int, count: int, width: int, byte_order: str):
    """Start and end offsets of ``count`` length-prefixed strings at ``pos`` in ``buf``.

    Returns ``(starts, ends, end_pos)`` with int64 arrays of payload offsets, or raises ``IndexError`` with the
    index of the first record that does not fit (``args = (i, offset, length_or_None)``).
    """
    size = len(buf)
    unpack_from = struct.Struct(("<" if byte_order == "little" else ">") + {4: "I", 8: "Q"}[width]).unpack_from
    little = byte_order == "little"
    out: list[np.ndarray] = []
    done = 0
    window = max(4096, count * 16)
    while done < count:
        end = min(size, pos + window)
        win = np.frombuffer(buf, dtype=np.uint8, count=end - pos, offset=pos)
        chain = (_window_chain(win, width, little, count - done) if count - done > 64
                 else np.empty(0, dtype=np.int64))
        # the last verified start's record must lie inside the window to be trusted as complete
        if len(chain):
            last = int(chain[-1])
            (n,) = unpack_from(buf, pos + last)
            if last + width + n > len(win):
                chain = chain[:-1]
        if len(chain):
            out.append(chain + pos)
            done += len(chain)
            last = int(chain[-1]) + pos
            (n,) = unpack_from(buf, last)
            pos = last + width + n
            window = max(4096, (count - done) * 16, window)
            continue
        # slow path: one record at a time, for a stretch
        stretch = min(count - done, 256)
        starts = np.empty(stretch, dtype=np.int64)
        for i in range(stretch):
            if pos + width > size:
                raise IndexError(done + i, pos, None)
            (n,) = unpack_from(buf, pos)
            if n > size - pos - width:
                raise IndexError(done + i, pos, n)
            starts[i] = pos
            pos += width + n
        out.append(starts)
        done += stretch
    starts = np.concatenate(out) if out else np.empty(0, dtype=np.int64)
    # payload ranges; lengths re-read vectorized is not possible in general, so derive from the chain
    heads = starts
    ends_next = np.empty_like(heads)
    ends_next[:-1] = heads[1:]
    ends_next[-1:] = pos
    return heads + width, ends_next, pos
