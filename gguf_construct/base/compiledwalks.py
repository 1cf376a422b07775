"""The compiled walks of the scans in base/ (numba: the ``fast`` extra), imported only when a scan is long enough.

They are defined here at module level, not inside the loader that imports numba, because numba's on-disk cache
finds a function again only by its module and name: a walk defined inside another function, calling another such
function, was compiled anew by every process (about 0.6 s of CPU before the first record, and a new cache file each
time).  Every width and byte order is an argument; nothing here knows the format.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["array_body_end", "inner_array_end", "read_uint", "walk_inner_arrays", "walk_records", "walk_strings"]


@numba.njit(cache=True, nogil=True)
def read_uint(buf, pos, width, little):  # pragma: no cover - compiled
    """The unsigned integer of ``width`` bytes at ``buf[pos]`` in the given byte order."""
    n = np.uint64(0)
    for k in range(width):
        b = np.uint64(buf[pos + (k if little else width - 1 - k)])
        n |= b << np.uint64(8 * k)
    return n


@numba.njit(cache=True, nogil=True)
def array_body_end(buf, p, item, n, string_width, little):  # pragma: no cover - compiled
    """Where the ``n`` elements of an array at ``p`` end: ``item`` bytes each, or (``item`` -2) ``n`` strings of
    ``string_width``-byte lengths; -1 when they run past the end or ``item`` is not read in bulk (0 or less)."""
    size = buf.shape[0]
    if item == -2:
        if n > np.uint64(size - p) // np.uint64(string_width):
            return -1
        for _ in range(np.int64(n)):
            if p + string_width > size:
                return -1
            m = read_uint(buf, p, string_width, little)
            if m > np.uint64(size - p - string_width):
                return -1
            p += string_width + np.int64(m)
        return p
    if item <= 0 or n > np.uint64(size - p) // np.uint64(item):
        return -1
    return p + np.int64(n) * item


@numba.njit(cache=True, nogil=True)
def inner_array_end(buf, p, sel_width, count_width, string_width, little, sizes):  # pragma: no cover - compiled
    """Where the array at ``p`` (an element selector, a count, the elements as ``sizes[selector]`` says) ends; -1
    when its header or elements run past the end, or its selector is past the table or not read in bulk."""
    if p + sel_width + count_width > buf.shape[0]:
        return -1
    sel = read_uint(buf, p, sel_width, little)
    if sel >= np.uint64(sizes.shape[0]):
        return -1
    n = read_uint(buf, p + sel_width, count_width, little)
    return array_body_end(buf, p + sel_width + count_width, sizes[np.int64(sel)], n, string_width, little)


@numba.njit(cache=True, nogil=True)
def walk_inner_arrays(buf, pos, count, sel_width, count_width, string_width, little, sizes, starts):  # pragma: no cover
    """base/arrayscan.py's walk: ``(done, end)`` over up to ``count`` inner arrays, their starts into ``starts``."""
    for i in range(count):
        p = inner_array_end(buf, pos, sel_width, count_width, string_width, little, sizes)
        if p < 0:
            return i, pos
        starts[i] = pos
        pos = p
    return count, pos


@numba.njit(cache=True, nogil=True)
def walk_strings(buf, pos, count, width, little, starts):  # pragma: no cover - compiled
    """base/stringwalk.py's walk: ``(done, end, problem)`` over up to ``count`` length-prefixed strings."""
    size = buf.shape[0]
    for i in range(count):
        if pos + width > size:
            return i, pos, -1
        n = read_uint(buf, pos, width, little)
        if n > np.uint64(size - pos - width):
            return i, pos, 1
        starts[i] = pos + width
        pos += width + np.int64(n)
    return count, pos, 0


@numba.njit(cache=True, nogil=True)
def walk_records(buf, pos, count, width, little, sel_width, sizes, asel, acount, items, starts):  # pragma: no cover
    """base/recordscan.py's walk: ``(done, end)`` over up to ``count`` KV records or tensor infos (the size of
    a record's body by its selector in ``sizes``; arrays laid out by ``asel``, ``acount`` and ``items``)."""
    size = buf.shape[0]
    nsizes = np.uint64(sizes.shape[0])
    nitems = np.uint64(items.shape[0])
    for i in range(count):
        if pos + width > size:
            return i, pos
        n = read_uint(buf, pos, width, little)
        if n > np.uint64(size - pos - width):
            return i, pos
        p = pos + width + np.int64(n)
        if p + sel_width > size:
            return i, pos
        sel = read_uint(buf, p, sel_width, little)
        if sel >= nsizes:
            return i, pos
        body = sizes[np.int64(sel)]
        p += sel_width
        if body == -2:
            if p + width > size:
                return i, pos
            m = read_uint(buf, p, width, little)
            if m > np.uint64(size - p - width):
                return i, pos
            body = width + np.int64(m)
        elif body == -3:  # an array, or an array of arrays (one level): `arrays` arrays of elements
            head = asel + acount
            if p + head > size:
                return i, pos
            arrays, q = 1, p
            it = read_uint(buf, p, asel, little)
            if it < nitems and items[np.int64(it)] == -4:
                c = read_uint(buf, p + asel, acount, little)
                q = p + head
                if c > np.uint64(size - q) // np.uint64(head):
                    return i, pos
                arrays = np.int64(c)
            for _ in range(arrays):
                q = inner_array_end(buf, q, asel, acount, width, little, items)
                if q < 0:
                    return i, pos
            body = q - p
        elif body < 0 or body > size - p:
            return i, pos
        starts[i] = pos
        pos = p + body
    return count, pos
