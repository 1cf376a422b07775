"""Locating the inner arrays of an array of arrays without a parse per inner array.

An *inner array* is a selector (the element type, ``sel_width`` bytes), a count (``count_width`` bytes) and the
elements: ``count * sizes[selector]`` bytes when the table gives a size, ``count`` length-prefixed strings
(``string_width`` bytes of length each) for :data:`STRING_ITEMS`, and :data:`STOP` (or a selector past the table's
end) for an inner array that is not read in bulk (an array of arrays, an unknown type).  The caller builds the
table from the spec; nothing here knows a width of the format.

:func:`scan_arrays` follows the run of inner arrays from a position and stops before the first one it cannot read
in bulk (a selector that stops, a count the bytes left cannot hold, a string running past the end): the caller
then reads the array its own way, with its findings.  With the ``fast`` extra (numba) a compiled loop walks the
headers as a C reader does; without it a loop over ``struct.unpack_from`` (no parse, no object per inner array).
"""

from __future__ import annotations

import struct

import numpy as np

from .extras import compiled_walk
from .pages import release

__all__ = ["STOP", "STRING_ITEMS", "scan_arrays"]

STOP = -1  # the inner array is not read in bulk
STRING_ITEMS = -2  # the elements are length-prefixed strings
COMPILED_FROM = 100_000  # inner arrays from which the compiled walk is used (numba's start-up: ~0.3 s)
_PIECE = 1 << 20  # inner arrays per compiled call: the pages read go back between calls


def _kernel():
    """The compiled walk (base/compiledwalks.py), or None when numba is not installed."""
    return compiled_walk("walk_inner_arrays")


def _walk_python(buf, pos, count, sel_width, count_width, string_width, order, sizes, starts) -> tuple[int, int]:
    """The walk with ``struct.unpack_from`` (no numba): one loop step per inner array, no object made."""
    size = len(buf)
    head = struct.Struct(order + {4: "I", 8: "Q"}[sel_width] + {4: "I", 8: "Q"}[count_width])
    strlen = struct.Struct(order + {4: "I", 8: "Q"}[string_width])
    nsizes = len(sizes)
    table = sizes.tolist()
    step = sel_width + count_width
    for i in range(count):
        if pos + step > size:
            return i, pos
        sel, n = head.unpack_from(buf, pos)
        if sel >= nsizes:
            return i, pos
        item = table[sel]
        p = pos + step
        if item == STRING_ITEMS:
            if n * string_width > size - p:
                return i, pos
            for _ in range(n):
                if p + string_width > size:
                    return i, pos
                (m,) = strlen.unpack_from(buf, p)
                if m > size - p - string_width:
                    return i, pos
                p += string_width + m
        elif item <= 0 or n * item > size - p:
            return i, pos
        else:
            p += n * item
        starts[i] = pos
        pos = p
    return count, pos


def scan_arrays(
    buf,
    pos: int,
    count: int,
    sel_width: int,
    count_width: int,
    string_width: int,
    little: bool,
    sizes: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Starts (int64) of the run of at most ``count`` whole inner arrays at ``pos`` of ``buf`` and where the run
    ends: it stops before the first inner array that is not read in bulk (see the module's docstring)."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    starts = np.empty(count, dtype=np.int64)
    kernel = _kernel() if count >= COMPILED_FROM else None  # a usual head never imports numba
    if kernel is None:
        order = "<" if little else ">"
        done, end = _walk_python(buf, pos, count, sel_width, count_width, string_width, order, sizes, starts)
        return starts[:done], end
    whole = np.frombuffer(buf, dtype=np.uint8)
    done, end = 0, pos
    while done < count:
        take = min(_PIECE, count - done)
        got, new_end = kernel(
            whole, end, take, sel_width, count_width, string_width, little, sizes, starts[done : done + take]
        )
        release(buf, end, new_end)
        done, end = done + int(got), int(new_end)
        if got < take:
            break
    return starts[:done], end
