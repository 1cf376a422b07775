"""Judging many short byte strings at once: which of them are not valid UTF-8, whatever their content.

The strings lie in one byte region, separated by ASCII bytes (a string array's length prefixes, their non-ASCII
bytes zeroed by the caller).  No valid multi-byte sequence holds or follows an ASCII byte, so the region decodes
strictly exactly when every string does, and an invalid sequence never spans two strings.  One strict decode
(C speed) clears a region that is valid; otherwise the region is decoded once with ``surrogateescape``, where each
byte that is not UTF-8 becomes one character U+DC80..U+DCFF, and those characters are located with numpy: their
byte offsets are the running sum of the characters' UTF-8 widths, and one ``logical_or.reduceat`` over the bytes
tells which strings hold one.  The cost follows the bytes, never the number of invalid strings.
"""

from __future__ import annotations

import numpy as np

__all__ = ["invalid_strings", "escaped_bytes", "escaped_offsets"]

_ESCAPE_LO, _ESCAPE_HI = 0xDC80, 0xDCFF  # the characters surrogateescape stands a non-UTF-8 byte for


def escaped_bytes(text: str, nbytes: int) -> np.ndarray:
    """A mask over the ``nbytes`` bytes ``text`` was decoded from (UTF-8 with ``surrogateescape``): True at each
    byte that was not UTF-8."""
    # the code points, 4 bytes each, in one C copy (a numpy str array is UCS-4; an encode would call its error
    # handler for every escape)
    codes = np.array(text).reshape(1).view(np.uint32)
    escaped = codes >= _ESCAPE_LO
    escaped &= codes <= _ESCAPE_HI
    if len(codes) == nbytes:  # every character one byte: the mask over characters is the mask over bytes
        return escaped
    # UTF-8 width of each character: 1, 2, 3 or 4; an escape stands for one byte
    widths = np.ones(len(codes), dtype=np.uint8)
    widths += codes >= 0x80
    widths += codes >= 0x800
    widths += codes >= 0x10000
    widths[escaped] = 1
    del codes
    where = np.flatnonzero(escaped)
    out = np.zeros(nbytes, dtype=bool)
    if len(where):
        out[np.cumsum(widths, dtype=np.int64)[where] - 1] = True
    return out


def escaped_offsets(text: str, nbytes: int) -> np.ndarray:
    """Byte offsets, in the ``nbytes`` bytes ``text`` was decoded from (UTF-8 with ``surrogateescape``), of the
    bytes that were not UTF-8 (ascending, int64)."""
    return np.flatnonzero(escaped_bytes(text, nbytes))


def invalid_strings(region, heads: np.ndarray) -> np.ndarray:
    """Indices (ascending) of the strings of ``region`` (bytes-like; string k starts at ``heads[k]``, ascending,
    and every byte between two strings is ASCII) that are not valid UTF-8."""
    try:
        str(region, "utf-8")
        return np.empty(0, dtype=np.int64)
    except UnicodeDecodeError:
        pass
    nbytes = len(memoryview(region).cast("B"))
    escaped = escaped_bytes(str(region, "utf-8", "surrogateescape"), nbytes)
    if not len(heads):
        return np.empty(0, dtype=np.int64)
    # each string's bytes run to the next one's start (the ASCII bytes between hold no escape); a False byte at
    # the end lets an empty last string start there, and strings with no byte before the next are left out
    # (reduceat gives the next byte for them)
    bad = np.logical_or.reduceat(np.append(escaped, False), heads)
    bad[:-1] &= heads[1:] > heads[:-1]
    return np.flatnonzero(bad)
