"""The compiled walks of the scans in base/ (numba: the ``fast`` extra), imported only when a scan is long enough.

They are defined here at module level, not inside the loader that imports numba, because numba's on-disk cache
finds a function again only by its module and name: a walk defined inside another function, calling another such
function, was compiled anew by every process (about 0.6 s of CPU before the first record, and a new cache file each
time).  Every width and byte order is an argument; nothing here knows the format.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["read_uint", "walk_inner_arrays", "walk_strings"]


@numba.njit(cache=True, nogil=True)
def read_uint(buf, pos, width, little):  # pragma: no cover - compiled
    """The unsigned integer of ``width`` bytes at ``buf[pos]`` in the given byte order."""
    n = np.uint64(0)
    for k in range(width):
        b = np.uint64(buf[pos + (k if little else width - 1 - k)])
        n |= b << np.uint64(8 * k)
    return n


@numba.njit(cache=True, nogil=True)
def walk_inner_arrays(buf, pos, count, sel_width, count_width, string_width, little, sizes, starts):  # pragma: no cover
    """base/arrayscan.py's walk: ``(done, end)`` over up to ``count`` inner arrays, their starts into ``starts``."""
    size = buf.shape[0]
    nsizes = np.uint64(sizes.shape[0])
    for i in range(count):
        if pos + sel_width + count_width > size:
            return i, pos
        sel = read_uint(buf, pos, sel_width, little)
        if sel >= nsizes:
            return i, pos
        item = sizes[np.int64(sel)]
        n = read_uint(buf, pos + sel_width, count_width, little)
        p = pos + sel_width + count_width
        left = np.uint64(size - p)
        if item == -2:
            if n > left // np.uint64(string_width):
                return i, pos
            for _ in range(np.int64(n)):
                if p + string_width > size:
                    return i, pos
                m = read_uint(buf, p, string_width, little)
                if m > np.uint64(size - p - string_width):
                    return i, pos
                p += string_width + np.int64(m)
        elif item <= 0:
            return i, pos
        else:
            if n > left // np.uint64(item):
                return i, pos
            p += np.int64(n) * item
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
