"""Locating the strings of a GGUF string array without a Python loop per string.

A string array is ``count`` records of (length, bytes); each record's position depends on the previous one.
For the short strings of tokenizer vocabularies (under 256 bytes) every length prefix is one non-zero-or-zero low
byte followed by zero bytes, so positions whose next ``width - 1`` bytes are zero are *candidates*.  Each
candidate's successor is ``position + width + low byte``; walking the candidates in order and checking
``successor[i] == candidate[i + 1]`` (one vectorized comparison) verifies the chain.  Where the check fails, the
true successor is looked up among the candidates (skipping the rare spurious ones) and verification goes on; where
a record is not a candidate (a string of 256 bytes or more), its length is read on its own and the chain goes on
after it.  The bytes are scanned a window at a time; the result is always exact.

Where that verification falls to a step per record (runs of empty strings, whose zero bytes are all candidates;
zero bytes inside payloads; strings of 256 bytes or more one after another), the window is *degenerate*: the
scan stops stepping and the rest of the array is followed by :mod:`gguf_construct.base.stringwalk`, compiled
(the ``fast`` extra) or by pointer doubling over each window (numpy).  No shape costs Python work per record.
"""

from __future__ import annotations

import struct

import numpy as np

from .pages import release
from .stringwalk import chain_by_doubling, walk_compiled

_WINDOW = 1 << 18  # bytes scanned at a time: the passes over a window stay in cache
_RELEASE = 64 << 20  # bytes scanned between giving the mapped pages back (base/pages.py)
_STEPS = 64  # Python steps a window may take before records per step are counted
_RECORDS_PER_STEP = 32  # fewer records per step than this after _STEPS steps: the window is degenerate


_LENGTH_CODES = {4: "I", 8: "Q"}  # struct code of an unsigned length prefix of each width


def _is_little(prefix: str) -> bool:
    """Whether the ``struct`` prefix ``prefix`` puts the low byte first (told by packing, not by its spelling)."""
    return struct.pack(prefix + "H", 1)[0] == 1


class _Degenerate(Exception):
    """The chain of a window is verified too few records per step: ``args[0]`` is what was verified so far."""


def _chain_in_window(win: np.ndarray, width: int, little: bool, limit: int, unpack_from) -> np.ndarray:
    """Window-relative starts of the verified chain of records beginning at 0 (at most ``limit``); ``unpack_from``
    reads one length prefix."""
    m = len(win) - width + 1
    if m <= 0:
        return np.empty(0, dtype=np.int64)
    zero = win == 0
    first_zero = 1 if little else 0
    # high[i]: the width - 1 bytes from i on are zero, built by doubling the run (3 passes for width 8, not 6)
    high, run = zero, 1
    while run < width - 1:
        step = min(run, width - 1 - run)
        high = high[:-step] & high[step:]
        run += step
    cand = np.flatnonzero(high[first_zero : first_zero + m])
    low = win[cand + (0 if little else width - 1)]
    nxt = cand + width + low
    bad = np.flatnonzero(nxt[:-1] != cand[1:])  # where a candidate's successor is not the next candidate
    pieces: list[np.ndarray] = []
    total, target, b = 0, 0, 0  # records placed, where the next record starts, index into bad
    steps = 0
    while total < limit:
        steps += 1
        if steps > _STEPS and total < steps * _RECORDS_PER_STEP:
            raise _Degenerate(np.concatenate(pieces)[:limit] if pieces else np.empty(0, dtype=np.int64))
        k = int(np.searchsorted(cand, target))
        if k < len(cand) and cand[k] == target:  # a verified run of candidates
            while b < len(bad) and bad[b] < k:
                b += 1
            j = int(bad[b]) if b < len(bad) else len(cand) - 1
            pieces.append(cand[k : j + 1])
            total += j + 1 - k
            target = int(nxt[j])
            continue
        # not a candidate (a string of 256 bytes or more, or too near the window's end): read its length
        if target + width > len(win):
            break
        (n,) = unpack_from(win, target)
        pieces.append(np.array([target], dtype=np.int64))
        total += 1
        target += width + n
        if target > len(win):
            break  # its payload runs past the window: the caller drops it
    if not pieces:
        return np.empty(0, dtype=np.int64)
    chain = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
    return chain[:limit]


def scan_string_offsets(buf, pos: int, count: int, width: int, prefix: str):
    """Payload start and end offsets of ``count`` length-prefixed strings at ``pos`` in ``buf``, whose lengths are
    ``width``-byte unsigned integers in the byte order of the ``struct`` prefix ``prefix`` (the spec's, passed
    down by the caller: ``format.spec.byte_order(name).struct``).

    Returns ``(starts, ends, end_pos)`` (int64 arrays).  Raises ``IndexError((index, offset, length_or_None))``
    for the first record that does not fit in ``buf``.  :func:`scan_string_starts` does without the ends (each is
    the next start less the prefix), half the memory.
    """
    starts, end = scan_string_starts(buf, pos, count, width, prefix)
    return starts, _ends_of(starts, end, width), end


def scan_string_starts(buf, pos: int, count: int, width: int, prefix: str):
    """Payload start offsets of ``count`` length-prefixed strings at ``pos`` in ``buf`` and where the last one
    ends: ``(starts, end_pos)``; ``prefix`` and ``IndexError`` as in :func:`scan_string_offsets`."""
    size = len(buf)
    unpack_from = struct.Struct(prefix + _LENGTH_CODES[width]).unpack_from
    little = _is_little(prefix)
    heads: list[np.ndarray] = []
    done = 0
    mean = 2 * width + 8  # bytes per record, a guess until the first window says
    degenerate = False
    released = pos
    while done < count:
        if pos - released >= _RELEASE:
            release(buf, released, pos)
            released = pos
        chain = np.empty(0, dtype=np.int64)
        if count - done > 16:
            # no further than the remaining records need at the mean size so far (with a margin)
            end = min(size, pos + min(_WINDOW, max(1 << 12, (count - done) * mean * 5 // 4)))
            win = np.frombuffer(buf, dtype=np.uint8, count=end - pos, offset=pos)
            if degenerate:
                chain = chain_by_doubling(win, width, little, count - done)
            else:
                try:
                    chain = _chain_in_window(win, width, little, count - done, unpack_from)
                except _Degenerate as exc:
                    chain, degenerate = exc.args[0], True
                    walked = _walk_rest(buf, pos, chain, heads, done, count, width, little, unpack_from)
                    if walked is not None:
                        return walked
            if len(chain):
                last = int(chain[-1])
                (n,) = unpack_from(buf, pos + last)
                if last + width + n > len(win):  # its payload runs past the window: not verified yet
                    chain = chain[:-1]
        if len(chain):
            heads.append(chain + pos)
            done += len(chain)
            last = int(chain[-1]) + pos
            (n,) = unpack_from(buf, last)
            mean = max(mean, -(-(last + width + n - pos) // len(chain)))
            pos = last + width + n
            continue
        # one record at a time: a string longer than the window, a record near the end, or a small array
        if pos + width > size:
            raise IndexError(done, pos, None)
        (n,) = unpack_from(buf, pos)
        if n > size - pos - width:
            raise IndexError(done, pos, n)
        heads.append(np.array([pos], dtype=np.int64))
        pos += width + n
        done += 1
    starts = np.concatenate(heads) if heads else np.empty(0, dtype=np.int64)
    del heads
    starts += width
    return starts, pos


def _ends_of(starts: np.ndarray, end: int, width: int) -> np.ndarray:
    """Payload ends of adjacent records: each next record's prefix, the last one at ``end``."""
    ends = np.empty_like(starts)
    np.subtract(starts[1:], width, out=ends[:-1])
    if len(ends):
        ends[-1] = end
    return ends


def _walk_rest(
    buf, pos: int, chain: np.ndarray, heads: list, done: int, count: int, width: int, little: bool, unpack_from
):
    """``scan_string_offsets``'s result when the compiled walk follows the rest of the array from ``pos`` (where
    ``chain``, window relative, is already verified and ``heads`` hold the ``done`` records before it), or None
    without numba.  The walk writes the payload starts into the one output array (no copies of it)."""
    at = pos
    if len(chain):  # the last verified record is read again by the walk (its payload may run past the window)
        at = pos + int(chain[-1])
        chain = chain[:-1]
    out = np.empty(count, dtype=np.int64)
    filled = 0
    for piece in heads + [chain + pos]:
        out[filled : filled + len(piece)] = piece + width
        filled += len(piece)
    piece = max(1, _RELEASE // (2 * width))  # records per call: the pages read so far go back between calls
    end = at
    while True:
        take = min(piece, count - filled)
        walked = walk_compiled(buf, end, take, width, little, out[filled : filled + take])
        if walked is None:
            return None
        heads.clear()
        got, new_end, problem = walked
        release(buf, end, new_end)
        filled, end = filled + got, new_end
        if problem:
            raise IndexError(*_problem_at(buf, end, filled, width, unpack_from))
        if filled == count:
            return out, end


def _problem_at(buf, pos: int, index: int, width: int, unpack_from) -> tuple:
    """The ``IndexError`` arguments for record ``index`` at ``pos``, which does not fit in ``buf``."""
    if pos + width > len(buf):
        return index, pos, None
    (n,) = unpack_from(buf, pos)
    return index, pos, n
