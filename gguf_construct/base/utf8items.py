"""Judging many short byte strings at once: which of them are not valid UTF-8, whatever their content.

The strings lie in one byte region, separated by ASCII bytes (a string array's length prefixes, their non-ASCII
bytes zeroed by the caller).  No valid multi-byte sequence holds or follows an ASCII byte, so the region decodes
strictly exactly when every string does, and an invalid sequence never spans two strings.  One strict decode
(C speed) clears a region that is valid; otherwise the region is decoded once with ``surrogateescape``, where each
byte that is not UTF-8 becomes one character U+DC80..U+DCFF, and those characters are located with numpy: their
byte offsets are the running sum of the characters' UTF-8 widths, and ``searchsorted`` names the string each is
in.  The cost follows the bytes, never the number of invalid strings.
"""

from __future__ import annotations

import numpy as np

__all__ = ["invalid_strings", "escaped_offsets"]

_ESCAPE_LO, _ESCAPE_HI = 0xDC80, 0xDCFF  # the characters surrogateescape stands a non-UTF-8 byte for


def escaped_offsets(text: str, nbytes: int) -> np.ndarray:
    """Byte offsets, in the ``nbytes`` bytes ``text`` was decoded from (UTF-8 with ``surrogateescape``), of the
    bytes that were not UTF-8 (ascending, int64)."""
    # the code points, 4 bytes each, in one C copy (a numpy str array is UCS-4; an encode would call its error
    # handler for every escape)
    codes = np.array(text).reshape(1).view(np.uint32)
    escaped = codes >= _ESCAPE_LO
    escaped &= codes <= _ESCAPE_HI
    where = np.flatnonzero(escaped)
    if len(text) == nbytes or not len(where):  # every character one byte: the offsets are the positions
        return where
    # UTF-8 width of each character: 1, 2, 3 or 4; an escape stands for one byte
    widths = np.ones(len(codes), dtype=np.uint8)
    widths += codes >= 0x80
    widths += codes >= 0x800
    widths += codes >= 0x10000
    widths[escaped] = 1
    del codes, escaped
    ends = np.cumsum(widths, dtype=np.int64)
    return ends[where] - 1


def invalid_strings(region, heads: np.ndarray) -> np.ndarray:
    """Indices (ascending) of the strings of ``region`` (bytes-like; string k starts at ``heads[k]``, ascending,
    and every byte between two strings is ASCII) that are not valid UTF-8."""
    try:
        str(region, "utf-8")
        return np.empty(0, dtype=np.int64)
    except UnicodeDecodeError:
        pass
    offsets = escaped_offsets(str(region, "utf-8", "surrogateescape"), len(region))
    owners = np.searchsorted(heads, offsets, side="right") - 1
    if not len(owners):  # pragma: no cover - a strict failure always leaves an escape
        return owners
    return owners[np.concatenate(([True], owners[1:] != owners[:-1]))]
