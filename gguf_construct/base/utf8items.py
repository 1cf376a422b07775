"""Judging many short byte strings at once: which of them are not valid UTF-8, whatever their content.

The strings lie in one byte region, at least three ASCII bytes apart (a string array's length prefixes, their
non-ASCII bytes zeroed by the caller).  No valid multi-byte sequence holds or follows an ASCII byte, so the region
decodes strictly exactly when every string does: one strict decode (C speed) clears a region that is valid.
Otherwise every byte is classed with numpy (ASCII, continuation, lead of a 2-, 3- or 4-byte sequence, never valid)
and a byte is *wrong* where UTF-8 (RFC 3629, as Python's strict decoder reads it) is broken: a byte that is never
valid, a continuation byte no lead expects, a byte a lead expects that is no continuation, or a second byte outside
its lead's range (overlong forms, surrogates, code points past U+10FFFF).  A broken sequence is flagged within its
own string or in the ASCII bytes after it, so one ``logical_or.reduceat`` over the bytes tells which strings hold a
wrong byte.  A few passes over the bytes, whatever they hold: the cost never follows the number of invalid
strings or bytes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["invalid_strings", "wrong_bytes"]


def wrong_bytes(data: np.ndarray) -> np.ndarray:
    """A mask over ``data`` (uint8) that is True at the bytes where UTF-8 is broken (see the module); a sequence
    cut by the end is flagged at the last byte.  ``data`` is valid UTF-8 exactly when the mask is all False."""
    n = len(data)
    # comparisons only (fast on bytes): a table lookup would widen every byte to an index
    below_f5 = data < 0xF5
    lead = (data >= 0xC2) & below_f5  # expects one continuation byte or more
    wrong = (data >= 0xC0) & (data < 0xC2)  # C0, C1, F5..FF: never valid
    wrong |= ~below_f5
    expected = np.zeros(n + 3, dtype=bool)  # the positions some lead expects a continuation byte at
    expected[1 : n + 1] = lead
    three = (data >= 0xE0) & below_f5
    expected[2 : n + 2] |= three
    wide = np.flatnonzero(three[:-1]) if np.count_nonzero(three) * 16 < n else None  # few leads of 3 or 4 bytes
    three &= data >= 0xF0  # now: leads of four bytes
    expected[3 : n + 3] |= three
    cont = data >= 0x80
    cont &= data < 0xC0
    wrong |= cont != expected[:n]  # a continuation byte where none is expected, or the reverse
    if n and expected[n:].any():
        wrong[-1] = True
    # the second byte of the leads whose range is narrower than a continuation byte's (all of 3 or 4 bytes): of
    # the few such leads, gathered; of many, compared in place (a gather costs a step per lead)
    if wide is not None:
        lead_byte, second = data[wide], data[wide + 1]
        narrow = (lead_byte == 0xE0) & (second < 0xA0)  # overlong
        narrow |= (lead_byte == 0xED) & (second > 0x9F)  # a surrogate
        narrow |= (lead_byte == 0xF0) & (second < 0x90)  # overlong
        narrow |= (lead_byte == 0xF4) & (second > 0x8F)  # past U+10FFFF
        wrong[wide[narrow] + 1] = True
    else:
        lead_byte, second = data[:-1], data[1:]
        narrow = (lead_byte == 0xE0) & (second < 0xA0)
        narrow |= (lead_byte == 0xED) & (second > 0x9F)
        narrow |= (lead_byte == 0xF0) & (second < 0x90)
        narrow |= (lead_byte == 0xF4) & (second > 0x8F)
        wrong[1:] |= narrow
    return wrong


def invalid_strings(region, heads: np.ndarray) -> np.ndarray:
    """Indices (ascending) of the strings of ``region`` (bytes-like; string k starts at ``heads[k]``, ascending;
    at least three ASCII bytes before each string and between two strings) that are not valid UTF-8."""
    try:
        str(region, "utf-8")
        return np.empty(0, dtype=np.int64)
    except UnicodeDecodeError:
        pass
    if not len(heads):
        return np.empty(0, dtype=np.int64)
    wrong = wrong_bytes(np.frombuffer(region, dtype=np.uint8))
    # each string's bytes run to the next one's start (a sequence it breaks is flagged there at the latest); a
    # False byte at the end lets an empty last string start there, and strings with no byte before the next are
    # left out (reduceat gives the next byte for them)
    bad = np.logical_or.reduceat(np.append(wrong, False), heads)
    bad[:-1] &= heads[1:] > heads[:-1]
    return np.flatnonzero(bad)
