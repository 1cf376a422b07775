"""Locating runs of small tagged records without a Python step per record.

A *tagged record* is a length-prefixed string (``width`` bytes of length, then the bytes), a *selector* (an
unsigned integer of ``sel_width`` bytes) and a *body* whose size the selector decides through a table
(``sizes[selector]``): a size in bytes, :data:`STRING_BODY` (the body is one more length-prefixed string) or
:data:`STOP` (the record is not read in bulk; selectors past the table's end stop too).  GGUF's KV pairs (key,
value type, value) and tensor infos (name, n_dimensions, dimensions, type and offset: the body's size is
``n * dim_width + tail``) are both such records; the caller builds the table from the spec, so nothing here knows
a width of the format.  A body may also be :data:`ARRAY_BODY`, an *array* laid out as :class:`ArrayBody` says: an
element selector, a count and that many elements, each sized by a second table (a size, :data:`STRING_BODY` or
:data:`STOP`: arrays of arrays and unknown element types are not read in bulk).

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

from typing import NamedTuple

import numpy as np

from .extras import compiled_walk
from .arrayscan import scan_arrays
from .pages import release
from .stringscan import scan_string_starts

__all__ = ["STOP", "STRING_BODY", "ARRAY_BODY", "ARRAY_ITEMS", "ArrayBody", "scan_records", "read_uints", "string_runs"]

STOP = -1  # the record is not read in bulk
STRING_BODY = -2  # the body is a length-prefixed string
ARRAY_BODY = -3  # the body is an array (see ArrayBody)
ARRAY_ITEMS = -4  # an array's elements are arrays of the same layout (one level: theirs may not be)
_RUN_ROUNDS = 256  # string elements of arrays found by a scan that string_runs follows together (more: on its own)


class ArrayBody(NamedTuple):
    """How an array body is laid out: the element selector's and the count's widths, the size of each element
    type (``items[selector]``: a size in bytes, :data:`STRING_BODY`, :data:`ARRAY_ITEMS` or :data:`STOP`) and the
    ``struct`` prefix of the byte order (for :func:`~gguf_construct.base.stringscan.scan_string_starts`)."""

    sel_width: int
    count_width: int
    items: np.ndarray
    prefix: str


_NO_ARRAYS = ArrayBody(4, 8, np.empty(0, dtype=np.int64), "<")  # no selector has an array body
_WINDOW = 1 << 16  # bytes of a numpy window (its temporaries: about 40 bytes a byte)
_RELEASE = 64 << 20  # bytes scanned between giving the mapped pages back (base/pages.py)
_FIRST_WINDOW = 1 << 12  # bytes of a scan's first numpy window
_LONG_RECORD = 1 << 10  # records this long are stepped over one at a time by the numpy way
COMPILED_FROM = 100_000  # records asked for from which the compiled walk is used (numba's start-up: ~0.3 s)
COMPILED_AFTER = 4 << 20  # bytes numpy follows before the compiled walk takes the rest (numba's start-up: ~0.9 s
# of CPU, numpy's ~0.1 s per MB of long records)


def _kernel():
    """The compiled walk (base/compiledwalks.py), or None when numba is not installed."""
    return compiled_walk("walk_records")


def read_uints(whole: np.ndarray, at: np.ndarray, width: int, little: bool) -> np.ndarray:
    """The unsigned integers of ``width`` bytes at the positions ``at`` of the byte array ``whole`` (every
    ``at + width`` within it), as uint64."""
    out = np.zeros(len(at), dtype=np.uint64)
    for k in range(width):
        byte = whole[at + (k if little else width - 1 - k)].astype(np.uint64)
        out |= byte << np.uint64(8 * k)
    return out


def _jumps(
    win: np.ndarray, width: int, little: bool, sel_width: int, sizes: np.ndarray, arrays: ArrayBody
) -> np.ndarray:
    """For every position of ``win``: where a record starting there ends (``len(win)`` when it ends exactly at the
    window's end), or ``len(win) + 1`` when no whole record starts there; two absorbing terminals follow."""
    m = len(win)
    bad = np.int64(m + 1)
    pos = np.arange(m, dtype=np.int64)

    def read(at: np.ndarray, w: int, ok: np.ndarray) -> np.ndarray:
        ok &= at + w <= m
        return read_uints(win, np.where(ok, at, 0), w, little) if m >= w else np.zeros(len(at), dtype=np.uint64)

    ok = np.ones(m, dtype=bool)
    n = read(pos, width, ok)
    ok &= n <= np.maximum(m - pos - width, 0).astype(np.uint64)
    lengths = np.where(ok, pos + width + n.astype(np.int64), m + 1)  # where a string at each position ends
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
    array = np.flatnonzero(ok & (body == ARRAY_BODY))
    if len(array):
        ends, whole_array = _array_ends(win, p[array], width, little, arrays, lengths)
        ok[array] &= whole_array
        body[array] = ends - p[array]
    ok &= body >= 0
    nxt = p + np.where(ok, body, 0)
    ok &= nxt <= m
    jump = np.empty(m + 2, dtype=np.int64)
    jump[:m] = np.where(ok, nxt, bad)
    jump[m], jump[m + 1] = m, bad
    return jump


def _array_ends(win: np.ndarray, at: np.ndarray, width: int, little: bool, arrays: ArrayBody, string_ends: np.ndarray):
    """Where the array bodies at the positions ``at`` of ``win`` end, and which are whole: fixed-size elements by
    arithmetic, string elements by :func:`_strings_end`."""
    m = len(win)
    items = arrays.items
    ok = at + arrays.sel_width + arrays.count_width <= m
    safe = np.where(ok, at, 0)
    it = read_uints(win, safe, arrays.sel_width, little)
    ok &= it < np.uint64(len(items))
    item = items[np.where(ok, it, 0).astype(np.int64)]
    count = read_uints(win, safe + arrays.sel_width, arrays.count_width, little)
    data = at + arrays.sel_width + arrays.count_width
    left = np.maximum(m - data, 0).astype(np.uint64)
    fixed = ok & (item > 0)
    fixed &= count <= left // np.maximum(item, 1).astype(np.uint64)
    ends = data + np.where(fixed, count, 0).astype(np.int64) * np.where(fixed, item, 0)
    strings = ok & (item == STRING_BODY) & (count <= left // np.uint64(width))
    rows = np.flatnonzero(strings)
    if len(rows):
        ends[rows], whole = _strings_end(string_ends, data[rows], count[rows].astype(np.int64))
        strings[rows] = whole
    return ends, fixed | strings


def _strings_end(string_ends: np.ndarray, at: np.ndarray, counts: np.ndarray):
    """Where ``counts[k]`` strings from ``at[k]`` of a window end, and whether they are whole in it (``string_ends``:
    where a string at each position of the window ends, past its end, ``len + 1``, where none is whole): every
    position's successor raised to each count's power by binary lifting, the table squared once per bit of the
    largest count (the window's size times that many steps, whatever the counts)."""
    m = len(string_ends)
    step = np.empty(m + 2, dtype=np.int64)  # m: the window's end (no string starts there), m + 1: absorbing
    step[:m] = string_ends
    step[m], step[m + 1] = m + 1, m + 1
    cur = np.minimum(at, m + 1).astype(np.int64)
    left = counts.copy()
    while left.any():
        cur = np.where((left & 1).astype(bool), step[cur], cur)
        left >>= 1
        if left.any():
            step = step[step]
    return cur, cur <= m


def _first_end(
    whole: np.ndarray, pos: int, width: int, little: bool, sel_width: int, sizes: np.ndarray, arrays: ArrayBody
) -> tuple[int, bool] | None:
    """Where the record at ``pos`` ends and whether :func:`_jumps` follows it too, or None when it is not whole or
    its selector stops (one record, read with Python integers: it decides the window)."""
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
    elif body == ARRAY_BODY:
        return _first_array_end(whole, at, width, little, arrays)
    return (at + body, True) if at + body <= size else None


def _first_array_end(
    whole: np.ndarray, at: int, width: int, little: bool, arrays: ArrayBody
) -> tuple[int, bool] | None:
    """:func:`_first_end` of an array body at ``at``."""
    size = len(whole)
    order = "little" if little else "big"
    data = at + arrays.sel_width + arrays.count_width
    if data > size:
        return None
    it = int.from_bytes(whole[at : at + arrays.sel_width].tobytes(), order)
    count = int.from_bytes(whole[at + arrays.sel_width : data].tobytes(), order)
    item = int(arrays.items[it]) if it < len(arrays.items) else STOP
    if item == ARRAY_ITEMS:  # an array of arrays: located by the scan the parser uses, a record of its own
        inner = np.where(arrays.items == ARRAY_ITEMS, STOP, arrays.items)
        if count * (arrays.sel_width + arrays.count_width) > size - data:
            return None
        starts, end = scan_arrays(whole, data, count, arrays.sel_width, arrays.count_width, width, little, inner)
        return (end, False) if len(starts) == count else None
    if item > 0:
        return (data + count * item, True) if count * item <= size - data else None
    if item != STRING_BODY or count * width > size - data:
        return None
    try:  # located in one vectorised scan, whatever the count
        _, end = scan_string_starts(whole, data, count, width, arrays.prefix)
    except IndexError:
        return None
    return end, True


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
    buf,
    pos: int,
    count: int,
    width: int,
    little: bool,
    sel_width: int,
    sizes: np.ndarray,
    arrays: ArrayBody | None = None,
) -> tuple[np.ndarray, int]:
    """Starts of the run of at most ``count`` whole tagged records at ``pos`` of ``buf`` (int64) and where the run
    ends: the run stops before the first record that is not whole or whose selector stops (see the module's
    docstring; ``arrays``: the layout of :data:`ARRAY_BODY` bodies); the compiled walk when numba is installed
    and the run is long (:data:`COMPILED_FROM` records asked for, or :data:`COMPILED_AFTER` bytes followed by
    numpy), numpy's pointer doubling otherwise."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    arrays = _NO_ARRAYS if arrays is None else arrays._replace(items=np.ascontiguousarray(arrays.items, np.int64))
    kernel = _kernel() if count >= COMPILED_FROM else None  # a usual head never imports numba
    whole = np.frombuffer(buf, dtype=np.uint8)
    args = (width, little, sel_width, sizes, arrays)
    if kernel is not None:
        return _scan_compiled(kernel, buf, whole, pos, count, *args)
    starts, end = _scan_numpy(buf, whole, pos, count, *args, stop_after=COMPILED_AFTER)
    if len(starts) < count and end - pos >= COMPILED_AFTER and _kernel() is not None:  # long records: compiled
        more, end = _scan_compiled(_kernel(), buf, whole, end, count - len(starts), *args)
        starts = np.concatenate([starts, more])
    return starts, end


def _scan_compiled(kernel, buf, whole, pos, count, width, little, sel_width, sizes, arrays) -> tuple[np.ndarray, int]:
    starts = np.empty(count, dtype=np.int64)
    done, end = 0, pos
    piece = max(1, _RELEASE // 64)  # records per call: the pages read go back between calls
    asel, acount, items = arrays.sel_width, arrays.count_width, arrays.items
    while done < count:
        take = min(piece, count - done)
        got, new_end = kernel(
            whole, end, take, width, little, sel_width, sizes, asel, acount, items, starts[done : done + take]
        )
        release(buf, end, new_end)
        done, end = done + int(got), int(new_end)
        if got < take:
            break
    return starts[:done], end


def _scan_numpy(
    buf, whole, pos, count, width, little, sel_width, sizes, arrays, stop_after: int | None = None
) -> tuple[np.ndarray, int]:
    """The numpy way; with ``stop_after``, it stops once it has followed that many bytes (the caller may go on
    compiled)."""
    pieces: list[np.ndarray] = []
    done, mean, released, begin = 0, 64, pos, pos
    budget = _FIRST_WINDOW  # bytes the next window may take (a run may stop early: records it cannot follow)
    size = len(whole)
    while done < count and pos < size and (stop_after is None or pos - begin < stop_after):
        if pos - released >= _RELEASE:
            release(buf, released, pos)
            released = pos
        got = _first_end(whole, pos, width, little, sel_width, sizes, arrays)
        if got is None or got[0] - pos > _WINDOW:
            break  # not read in bulk, or one long record: the caller reads it its own way
        first, followed = got
        if first - pos >= _LONG_RECORD or not followed:  # taken as read: one step per KiB (or per 16 strings)
            pieces.append(np.array([pos], dtype=np.int64))
            done, pos = done + 1, first
            continue
        span = min(size - pos, max(first - pos, min(budget, (count - done) * mean * 5 // 4)))
        chain, end = _chain(_jumps(whole[pos : pos + span], width, little, sel_width, sizes, arrays), count - done)
        budget = min(_WINDOW, max(_FIRST_WINDOW, 2 * end))  # twice what this window's chain took
        pieces.append(chain + pos)
        done += len(chain)
        mean = max(mean, -(-end // len(chain)))
        pos += end
    starts = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
    return starts, pos


def string_runs(buf, data: np.ndarray, counts: np.ndarray, width: int, little: bool, prefix: str) -> np.ndarray:
    """Payload starts of the strings of several string arrays, one array's after another's: the ``counts[k]``
    length-prefixed strings at ``data[k]`` of ``buf`` (all whole: a scan found them).  Arrays of up to
    :data:`_RUN_ROUNDS` strings are followed together a round per string; a longer one is located by
    :func:`~gguf_construct.base.stringscan.scan_string_starts` on its own (a step per at least that many strings)."""
    whole = np.frombuffer(buf, dtype=np.uint8)
    counts = counts.astype(np.int64)
    first = np.cumsum(counts) - counts
    out = np.empty(int(counts.sum()), dtype=np.int64)
    short = np.flatnonzero(counts <= _RUN_ROUNDS)
    cur, left, at = data[short].astype(np.int64), counts[short], first[short]
    while len(cur):
        live = left > 0
        cur, left, at = cur[live], left[live], at[live]
        if not len(cur):
            break
        out[at] = cur + width
        cur = cur + width + read_uints(whole, cur, width, little).astype(np.int64)
        left, at = left - 1, at + 1
    for k in np.flatnonzero(counts > _RUN_ROUNDS).tolist():
        starts, _ = scan_string_starts(buf, int(data[k]), int(counts[k]), width, prefix)
        out[first[k] : first[k] + counts[k]] = starts
    return out
