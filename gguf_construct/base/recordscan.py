"""Locating runs of small tagged records without a Python step per record.

A *tagged record* is a length-prefixed string (``width`` bytes of length, then the bytes), a *selector* (an
unsigned integer of ``sel_width`` bytes) and a *body* whose size the selector decides through a table
(``sizes[selector]``): a size in bytes, :data:`STRING_BODY` (the body is one more length-prefixed string) or
:data:`STOP` (the record is not read in bulk; selectors past the table's end stop too).  GGUF's KV pairs (key,
value type, value) and tensor infos (name, n_dimensions, dimensions, type and offset: the body's size is
``n * dim_width + tail``) are both such records; the caller builds the table from the spec, so nothing here knows
a width of the format.

:func:`scan_records` follows a run of records from a position and stops before the first one that cannot be read
in bulk (a selector that stops, a record running past the buffer's end): the caller reads that one its own way
(the record-by-record reader with its findings) and scans on after it.  Two exact ways, as in
:mod:`~gguf_construct.base.stringwalk`:

- compiled (the ``fast`` extra): the loop a C reader runs, about 2-5 ns per record once compiled (cached on
  disk; numba is imported on first use, for a run of :data:`COMPILED_FROM` records or more: loading it costs
  about as much as numpy's way on 100,000 records);
- numpy: every byte position of a window gets its successor (the end of a record starting there, or a terminal),
  and the chain from the window's first record is found by pointer doubling: the window's size times the logarithm
  of its record count, no Python work per record.
"""

from __future__ import annotations

import functools

import numpy as np

from .pages import release

__all__ = ["STOP", "STRING_BODY", "scan_records", "read_uints"]

STOP = -1  # the record is not read in bulk
STRING_BODY = -2  # the body is a length-prefixed string
_WINDOW = 1 << 16  # bytes of a numpy window (its temporaries: about 40 bytes a byte)
_RELEASE = 64 << 20  # bytes scanned between giving the mapped pages back (base/pages.py)
_LONG_RECORD = 1 << 10  # records this long are stepped over one at a time by the numpy way
COMPILED_FROM = 100_000  # records asked for from which the compiled walk is used (numba's start-up: ~0.3 s)


@functools.lru_cache(maxsize=None)
def _kernel():
    """The compiled walk, or None when numba is not installed."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(cache=True, nogil=True)
    def read(buf, pos, width, little):  # pragma: no cover - compiled
        n = np.uint64(0)
        for k in range(width):
            b = np.uint64(buf[pos + (k if little else width - 1 - k)])
            n |= b << np.uint64(8 * k)
        return n

    @numba.njit(cache=True, nogil=True)
    def walk(buf, pos, count, width, little, sel_width, sizes, starts):  # pragma: no cover - compiled
        size = buf.shape[0]
        nsizes = np.uint64(sizes.shape[0])
        for i in range(count):
            if pos + width > size:
                return i, pos
            n = read(buf, pos, width, little)
            if n > np.uint64(size - pos - width):
                return i, pos
            p = pos + width + np.int64(n)
            if p + sel_width > size:
                return i, pos
            sel = read(buf, p, sel_width, little)
            if sel >= nsizes:
                return i, pos
            body = sizes[np.int64(sel)]
            p += sel_width
            if body == -2:
                if p + width > size:
                    return i, pos
                m = read(buf, p, width, little)
                if m > np.uint64(size - p - width):
                    return i, pos
                body = width + np.int64(m)
            elif body < 0 or body > size - p:
                return i, pos
            starts[i] = pos
            pos = p + body
        return count, pos

    return walk


def read_uints(whole: np.ndarray, at: np.ndarray, width: int, little: bool) -> np.ndarray:
    """The unsigned integers of ``width`` bytes at the positions ``at`` of the byte array ``whole`` (every
    ``at + width`` within it), as uint64."""
    out = np.zeros(len(at), dtype=np.uint64)
    for k in range(width):
        byte = whole[at + (k if little else width - 1 - k)].astype(np.uint64)
        out |= byte << np.uint64(8 * k)
    return out


def _jumps(win: np.ndarray, width: int, little: bool, sel_width: int, sizes: np.ndarray) -> np.ndarray:
    """For every position of ``win``: where a record starting there ends (``len(win)`` when it ends exactly at the
    window's end), or ``len(win) + 1`` when no whole record starts there; two absorbing terminals follow."""
    m = len(win)
    bad = np.int64(m + 1)
    pos = np.arange(m, dtype=np.int64)

    def read(at: np.ndarray, w: int, ok: np.ndarray) -> np.ndarray:
        ok &= at + w <= m
        return read_uints(win, np.where(ok, at, 0), w, little) if m >= w else np.zeros(m, dtype=np.uint64)

    ok = np.ones(m, dtype=bool)
    n = read(pos, width, ok)
    ok &= n <= np.maximum(m - pos - width, 0).astype(np.uint64)
    p = pos + width + np.where(ok, n, 0).astype(np.int64)
    sel = read(p, sel_width, ok)
    ok &= sel < np.uint64(len(sizes))
    body = sizes[np.where(ok, sel, 0).astype(np.int64)]
    ok &= body != STOP
    p += sel_width
    string = ok & (body == STRING_BODY)
    if string.any():
        whole_string = string.copy()
        inner = read(p, width, whole_string)
        whole_string &= inner <= np.maximum(m - p - width, 0).astype(np.uint64)
        ok &= ~string | whole_string
        body = np.where(whole_string, width + np.where(whole_string, inner, 0).astype(np.int64), body)
    ok &= body >= 0
    nxt = p + np.where(ok, body, 0)
    ok &= nxt <= m
    jump = np.empty(m + 2, dtype=np.int64)
    jump[:m] = np.where(ok, nxt, bad)
    jump[m], jump[m + 1] = m, bad
    return jump


def _first_end(whole: np.ndarray, pos: int, width: int, little: bool, sel_width: int, sizes: np.ndarray) -> int | None:
    """Where the record at ``pos`` ends, or None when it is not whole or its selector stops (one record, read
    with Python integers: it decides the window)."""
    order = "little" if little else "big"
    size = len(whole)

    def read(at: int, w: int) -> int | None:
        return int.from_bytes(whole[at : at + w].tobytes(), order) if at + w <= size else None

    n = read(pos, width)
    if n is None:
        return None
    sel = read(pos + width + n, sel_width)
    if sel is None or sel >= len(sizes) or sizes[sel] == STOP:
        return None
    at = pos + width + n + sel_width
    body = int(sizes[sel])
    if body == STRING_BODY:
        inner = read(at, width)
        if inner is None:
            return None
        body = width + inner
    return at + body if at + body <= size else None


def _chain(jump: np.ndarray, limit: int) -> tuple[np.ndarray, int]:
    """Window-relative starts of the whole records from 0 on (at most ``limit``) and where the last one ends."""
    m = len(jump) - 2
    first = jump
    chain = np.zeros(1, dtype=np.int64)
    while len(chain) < limit:
        more = jump[chain]
        stop = np.flatnonzero(more >= m)
        if len(stop):
            chain = np.concatenate([chain, more[: stop[0]]])
            break
        chain = np.concatenate([chain, more])
        jump = jump[jump]
    chain = chain[:limit]
    if len(chain) and first[chain[-1]] > m:  # the last node starts no whole record
        chain = chain[:-1]
    return chain, (int(first[chain[-1]]) if len(chain) else 0)


def scan_records(
    buf, pos: int, count: int, width: int, little: bool, sel_width: int, sizes: np.ndarray
) -> tuple[np.ndarray, int]:
    """Starts of the run of at most ``count`` whole tagged records at ``pos`` of ``buf`` (int64) and where the run
    ends: the run stops before the first record that is not whole or whose selector stops (see the module's
    docstring); the compiled walk when numba is installed, numpy's pointer doubling otherwise."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    kernel = _kernel() if count >= COMPILED_FROM else None  # a usual head never imports numba
    whole = np.frombuffer(buf, dtype=np.uint8)
    if kernel is not None:
        starts = np.empty(count, dtype=np.int64)
        done, end = 0, pos
        piece = max(1, _RELEASE // 64)  # records per call: the pages read go back between calls
        while done < count:
            take = min(piece, count - done)
            got, new_end = kernel(whole, end, take, width, little, sel_width, sizes, starts[done : done + take])
            release(buf, end, new_end)
            done, end = done + int(got), int(new_end)
            if got < take:
                break
        return starts[:done], end
    return _scan_numpy(buf, whole, pos, count, width, little, sel_width, sizes)


def _scan_numpy(buf, whole, pos, count, width, little, sel_width, sizes) -> tuple[np.ndarray, int]:
    pieces: list[np.ndarray] = []
    done, mean, released = 0, 64, pos
    size = len(whole)
    while done < count and pos < size:
        if pos - released >= _RELEASE:
            release(buf, released, pos)
            released = pos
        first = _first_end(whole, pos, width, little, sel_width, sizes)
        if first is None or first - pos > _WINDOW:
            break  # not read in bulk, or one long record: the caller reads it its own way
        if first - pos >= _LONG_RECORD:  # a long record is taken as read: one step per KiB at most, no window
            pieces.append(np.array([pos], dtype=np.int64))
            done, pos = done + 1, first
            continue
        span = min(size - pos, _WINDOW, max(1 << 12, first - pos, (count - done) * mean * 5 // 4))
        chain, end = _chain(_jumps(whole[pos : pos + span], width, little, sel_width, sizes), count - done)
        pieces.append(chain + pos)
        done += len(chain)
        mean = max(mean, -(-end // len(chain)))
        pos += end
    starts = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
    return starts, pos
