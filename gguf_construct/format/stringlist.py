"""The strings of a GGUF string array, kept as the file's bytes until one is asked for.

A vocabulary holds hundreds of thousands of strings; making each a Python ``str`` costs more than reading the whole
file does in C.  :class:`StringList` is an immutable sequence over the bytes of the array: reading a file computes
only where every string starts and ends (:mod:`gguf_construct.base.stringscan`) and which strings are not valid UTF-8
or hold a NUL byte; an item is decoded when it is accessed.  It behaves as a ``list`` of ``str`` does for reading
(``len``, indexing, slicing, iteration, ``in``, ``index``, ``count``, ``==`` and ordering against lists, ``+``,
``repr``, pickling), is unhashable as a list is, and :meth:`StringList.to_list` gives a plain list.

Strings are decoded as UTF-8 with ``surrogateescape``, so bytes that are not UTF-8 survive a round trip.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, SupportsIndex, overload

import numpy as np

from ..base.pages import release
from ..base.stringscan import scan_string_starts
from ..base.utf8items import invalid_strings
from ..base.utf8stream import first_invalid_utf8
from .spec import byte_order as _byte_order
from .spec import numpy_dtype

__all__ = ["StringList"]

_CHUNK = 8192  # strings per bulk decode: large enough to amortise numpy calls, small enough to stay in cache
_EMPTY = np.empty(0, dtype=np.int64)


def _text(data) -> str:
    return str(data, "utf-8", "surrogateescape")


class StringList(Sequence):
    """An immutable list of ``str`` over the length-prefixed strings of a GGUF string array.

    ``StringList(["a", "b"])`` builds one from strings; reading a file makes them over the file's bytes (a memory
    map stays referenced while a list made from it lives).  Beyond the ``list`` protocol:
    :meth:`to_list`, :meth:`raw` (an item's bytes), :meth:`lengths` (every item's byte length),
    :attr:`valid_utf8` / :meth:`invalid_utf8` and :attr:`has_nul` / :meth:`nul_items` (decided when the list was
    made, without decoding items one by one), and :meth:`encode` (the records as GGUF stores them).
    """

    # _ends is None for adjacent records (the usual case): an item ends where the next one's length prefix
    # starts, the last at _last_end, so a list read from a file keeps 8 bytes an item (its payload's start)
    __slots__ = ("_buf", "_starts", "_ends", "_last_end", "_width", "_order", "_bad", "_nul", "_contig")
    _ends: np.ndarray | None

    def __init__(self, items: Iterable[str] = ()):
        encoded = []
        for s in items:
            if not isinstance(s, str):
                raise TypeError(f"a StringList holds str, not {type(s).__name__}")
            encoded.append(s.encode("utf-8", "surrogateescape"))
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        starts = np.arange(1, len(encoded) + 1, dtype=np.int64) * 8 + np.cumsum(lengths) - lengths
        data = _records(b"".join(encoded), lengths, 8, "little")
        self._init(data, starts, len(data), 8, "little", True, *_assess(data, starts, len(data), 8))

    def _init(self, buf, starts, ends, width, order, contig, bad, nul) -> None:
        """``ends``: the payloads' ends (an array), or for adjacent records (``contig``) the last one's (an int)."""
        self._buf = buf if isinstance(buf, (bytes, memoryview)) else memoryview(buf)
        self._starts = starts
        if isinstance(ends, np.ndarray):
            self._ends, self._last_end = ends, int(ends[-1]) if len(ends) else 0
        else:
            self._ends, self._last_end = None, int(ends)
        self._width, self._order, self._contig = width, order, contig
        self._bad, self._nul = bad, nul

    @classmethod
    def _make(cls, buf, starts, ends, width, order, contig, bad, nul) -> "StringList":
        out = object.__new__(cls)
        out._init(buf, starts, ends, width, order, contig, bad, nul)
        return out

    @classmethod
    def from_records(cls, buf, starts: np.ndarray, ends, width: int, byte_order: str) -> "StringList":
        """The list over adjacent records in ``buf`` (each a ``width``-byte length in ``byte_order``, then the
        bytes): ``starts`` are the payloads' offsets as :func:`~gguf_construct.base.stringscan.scan_string_starts`
        finds them, ``ends`` the end of the last record (or every payload's end, an array).  Only the starts are
        kept.  UTF-8 validity and NUL bytes are decided here, once."""
        end = int(ends[-1]) if isinstance(ends, np.ndarray) and len(ends) else ends
        end = 0 if isinstance(end, np.ndarray) else int(end)
        bad, nul = _assess(buf, starts, end, width)
        return cls._make(buf, starts, end, width, byte_order, True, bad, nul)

    # -- where items end -----------------------------------------------------------------------------------------
    def _end(self, i: int) -> int:
        """Where item ``i`` (0 <= i < len) ends."""
        if self._ends is not None:
            return int(self._ends[i])
        return int(self._starts[i + 1]) - self._width if i + 1 < len(self._starts) else self._last_end

    def _ends_of(self, i: int, j: int) -> np.ndarray:
        """The ends of items ``i..j-1`` (a new array unless they are stored)."""
        if self._ends is not None:
            return self._ends[i:j]
        out = np.empty(max(0, j - i), dtype=np.int64)
        if len(out):
            np.subtract(self._starts[i + 1 : j], self._width, out=out[:-1])
            out[-1] = self._end(j - 1)
        return out

    def _ends_at(self, items: np.ndarray) -> np.ndarray:
        """The ends of the items at the indices ``items``."""
        if self._ends is not None:
            return self._ends[items]
        n = len(self._starts)
        nxt = self._starts[np.minimum(items + 1, n - 1)] - self._width
        return np.where(items + 1 < n, nxt, self._last_end)

    # -- the list protocol ---------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: SupportsIndex) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> "StringList": ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._slice(index)
        try:
            i = index.__index__()
        except AttributeError:
            raise TypeError(f"list indices must be integers or slices, not {type(index).__name__}") from None
        n = len(self._starts)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("list index out of range")
        return _text(self._buf[int(self._starts[i]) : self._end(i)])

    def _slice(self, sl: slice) -> "StringList":
        n = len(self._starts)
        start, stop, step = sl.indices(n)
        bad = _reindex(self._bad, start, stop, step)
        nul = _reindex(self._nul, start, stop, step)
        contig = self._contig and (step == 1 or len(range(start, stop, step)) <= 1)
        if step == 1 and self._ends is None:  # still adjacent records: the starts and the last end say it all
            end = self._end(stop - 1) if stop > start else 0
            return self._make(self._buf, self._starts[sl], end, self._width, self._order, contig, bad, nul)
        picked = np.arange(start, stop, step, dtype=np.int64)
        ends = self._ends_at(picked)
        return self._make(self._buf, self._starts[sl], ends, self._width, self._order, contig, bad, nul)

    def __iter__(self) -> Iterator[str]:
        for i in range(0, len(self._starts), _CHUNK):
            yield from self._decode_run(i, min(len(self._starts), i + _CHUNK))

    def __reversed__(self) -> Iterator[str]:
        for i in range(len(self._starts), 0, -_CHUNK):
            yield from reversed(self._decode_run(max(0, i - _CHUNK), i))

    def _decode_run(self, i: int, j: int) -> list[str]:
        """Items ``i..j-1`` as str: one decode of their joined bytes split at a separator, where that is exact.  The
        separator is an ASCII byte none of the items holds (the zero byte of the length prefixes, or when some item
        holds a NUL another one; a run whose items hold every ASCII byte is decoded in halves)."""
        if j <= i:
            return []
        buf, starts, ends = self._buf, self._starts[i:j], self._ends_of(i, j)
        width = self._width
        lengths = ends - starts
        if not self._contig or j - i < 4 or int(lengths.max()) >> ((width - 1) * 8):
            return [_text(buf[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]
        joined = self._joined(starts, ends)
        sep = 0
        if len(self._nul) and np.any((self._nul >= i) & (self._nul < j)):
            counts = np.bincount(joined, minlength=256)[:128]
            counts[0] -= j - i  # the separators
            free = np.flatnonzero(counts == 0)
            if not len(free):
                mid = (i + j) // 2
                return self._decode_run(i, mid) + self._decode_run(mid, j)
            sep = int(free[0])
            joined[np.arange(j - i, dtype=np.int64) + np.cumsum(lengths) - lengths] = sep
        parts = str(joined.data, "utf-8", "surrogateescape").split(chr(sep))
        del parts[0]
        return parts

    def __contains__(self, value: object) -> bool:
        return len(self._matches(value, 0, len(self), 1)) > 0

    def index(self, value: Any, start: SupportsIndex = 0, stop: SupportsIndex = 2**63 - 1) -> int:
        """The first index of ``value`` in ``[start, stop)``, as ``list.index`` (``ValueError`` when absent)."""
        lo, hi, _ = slice(start, stop).indices(len(self))
        found = self._matches(value, lo, hi, 1)
        if not len(found):
            raise ValueError(f"{value!r} is not in list")
        return int(found[0])

    def indices_of(self, value: Any) -> np.ndarray:
        """The indices of the items equal to ``value``, ascending (compared as bytes, no str per item)."""
        return self._matches(value, 0, len(self), None)

    def first_outside(self, values: Iterable[str]) -> int | None:
        """The index of the first item that is none of ``values``, or None (one byte comparison per value)."""
        known = np.zeros(len(self), dtype=bool)
        for value in set(values):
            known[self._matches(value, 0, len(self), None)] = True
        return None if known.all() else int(np.argmin(known))

    def count(self, value: Any) -> int:
        """How many items equal ``value``."""
        return len(self._matches(value, 0, len(self), None))

    def _matches(self, value: object, lo: int, hi: int, first: int | None) -> np.ndarray:
        """Indices in ``[lo, hi)`` of the items equal to ``value``, compared as bytes (at most ``first``)."""
        if not isinstance(value, str) or hi <= lo:
            return _EMPTY
        try:
            want = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate no decoded item can hold
            return _EMPTY
        starts = self._starts[lo:hi]
        spans = self._ends_of(lo, hi)
        # the lengths: in place when the ends were made for this call (stored ends are left alone)
        spans = spans - starts if self._ends is not None else np.subtract(spans, starts, out=spans)
        cand = np.flatnonzero(spans == len(want))
        del spans
        if len(want) and len(cand):
            target = np.frombuffer(want, dtype=np.uint8)
            whole = np.frombuffer(self._buf, dtype=np.uint8)
            keep = []
            for a in range(0, len(cand), _CHUNK):
                part = cand[a : a + _CHUNK]
                rows = whole[starts[part][:, None] + np.arange(len(want))]
                keep.append(part[(rows == target).all(axis=1)])
                if first is not None and len(keep[-1]):
                    break
            cand = np.concatenate(keep)
        return (cand[:first] if first is not None else cand) + lo

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringList):
            return self._same(other)
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def _same(self, other: "StringList") -> bool:
        if len(self) != len(other):
            return False
        if self._contig and other._contig and self._width == other._width and self._order == other._order and len(self):
            # the records in one layout: equal bytes are equal prefixes (lengths) and payloads.  Compared a chunk at
            # a time, each chunk's mapped pages given back (base/pages.py)
            a, b = self._region(), other._region()
            if len(a) != len(b):
                return False
            at_a, at_b = int(self._starts[0]) - self._width, int(other._starts[0]) - other._width
            for i in range(0, len(a), _RELEASE_BYTES):
                j = min(len(a), i + _RELEASE_BYTES)
                same = a[i:j] == b[i:j]
                release(self._buf, at_a + i, at_a + j)
                release(other._buf, at_b + i, at_b + j)
                if not same:
                    return False
            return True
        if not np.array_equal(self.lengths(), other.lengths()):
            return False
        return all(self.raw(i) == other.raw(i) for i in range(len(self)))

    def _compare(self, other: object, op) -> bool:
        if isinstance(other, (StringList, list)):
            return op(self.to_list(), list(other))
        return NotImplemented

    def __lt__(self, other):
        return self._compare(other, list.__lt__)

    def __le__(self, other):
        return self._compare(other, list.__le__)

    def __gt__(self, other):
        return self._compare(other, list.__gt__)

    def __ge__(self, other):
        return self._compare(other, list.__ge__)

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a list is

    def __add__(self, other):
        if isinstance(other, (StringList, list)):
            return self.to_list() + list(other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, list):
            return other + self.to_list()
        return NotImplemented

    def __mul__(self, n: SupportsIndex) -> list[str]:
        return self.to_list() * n

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return repr(self.to_list())

    def __reduce__(self):
        return _from_records_bytes, (bytes(self.encode(8, "little")), len(self))

    def __copy__(self) -> "StringList":
        return self

    def __deepcopy__(self, memo) -> "StringList":
        return self

    # -- beyond a list -------------------------------------------------------------------------------------------
    def to_list(self) -> list[str]:
        """Every item as a ``str``, in a new plain ``list``."""
        out: list[str] = []
        for i in range(0, len(self._starts), _CHUNK):
            out += self._decode_run(i, min(len(self._starts), i + _CHUNK))
        return out

    def raw(self, index: SupportsIndex) -> bytes:
        """The bytes of one item as the file holds them."""
        i = index.__index__()
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("list index out of range")
        return bytes(self._buf[int(self._starts[i]) : self._end(i)])

    def lengths(self) -> np.ndarray:
        """The byte length of every item (int64)."""
        if self._ends is not None:
            return self._ends - self._starts
        out = np.empty_like(self._starts)
        if len(out):
            np.subtract(self._starts[1:], self._starts[:-1], out=out[:-1])
            out[:-1] -= self._width
            out[-1] = self._last_end - int(self._starts[-1])
        return out

    def lengths_at(self, items: np.ndarray) -> np.ndarray:
        """The byte lengths of the items at the indices ``items`` (no array of every length)."""
        items = np.asarray(items, dtype=np.int64)
        return self._ends_at(items) - self._starts[items]

    @property
    def valid_utf8(self) -> bool:
        """True when every item is valid UTF-8."""
        return not len(self._bad)

    def invalid_utf8(self) -> np.ndarray:
        """Indices of the items that are not valid UTF-8 (they decode with surrogateescape), ascending."""
        return self._bad.copy()

    @property
    def has_nul(self) -> bool:
        """True when some item holds a NUL byte."""
        return bool(len(self._nul))

    def nul_items(self) -> np.ndarray:
        """Indices of the items holding a NUL byte, ascending."""
        return self._nul.copy()

    def first_nul(self, items: np.ndarray) -> np.ndarray:
        """The byte position of the first NUL in each of ``items`` (indices of items holding one, ascending),
        found a run of items at a time without a Python step per item."""
        out = np.empty(len(items), dtype=np.int64)
        whole = np.frombuffer(self._buf, dtype=np.uint8)
        for a in range(0, len(items), _CHUNK):
            part = items[a : a + _CHUNK]
            starts = self._starts[part]
            lengths = self._ends_at(part) - starts
            heads = np.cumsum(lengths) - lengths
            offsets = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(heads, lengths)
            zero = whole[np.repeat(starts, lengths) + offsets] == 0
            first = np.flatnonzero(zero)  # ascending: the first zero of each item comes first
            owner = np.searchsorted(heads, first, side="right") - 1
            keep = np.concatenate(([True], owner[1:] != owner[:-1])) if len(owner) else owner.astype(bool)
            out[a : a + len(part)] = -1
            out[a + owner[keep]] = first[keep] - heads[owner[keep]]
        return out

    def all_distinct(self) -> bool:
        """True when no two items are equal (see :meth:`first_repeat`)."""
        return self.first_repeat() is None

    def first_repeat(self, skip_empty: bool = False) -> int | None:
        """The index of the first item equal to an earlier one (as bytes; empty items left out when
        ``skip_empty``), or None, decided in bounded memory without a Python step per item.

        One 64-bit keyed hash per item (vectorised over runs of about a MiB; an item longer than
        :data:`_HASH_INLINE` bytes hashed a chunk at a time), its low bits replaced by the item's index, sorted in
        place: 8 bytes an item.  Equal items sit together, in index order, so every item but the first of a run of
        equal high bits is a candidate; the least candidate is compared exactly with the earlier items of its run
        (a hash collision, which the per-process key makes unforeseeable, moves on to the next candidate)."""
        n = len(self)
        if n < 2:
            return None
        bits = n.bit_length()
        mask = np.uint64((1 << bits) - 1)
        keys = np.empty(n, dtype=np.uint64)
        for i, j, lengths in self._runs():
            run = keys[i:j]
            run[:] = self._hash_run(i, j, lengths)
            run >>= np.uint64(bits)
            run <<= np.uint64(bits)
            run |= np.arange(i, j, dtype=np.uint64)
        keys.sort()
        floor = -1
        while True:
            found = self._least_candidate(keys, mask, floor, skip_empty)
            if found is None:
                return None
            c, pos = found
            lo = int(np.searchsorted(keys, keys[pos] & ~mask, side="left"))
            mine = self._identity(c)
            if any(self._identity(k) == mine for k in (keys[lo:pos] & mask).tolist()):
                return c
            floor = c  # a collision: no earlier item equals it

    def _least_candidate(
        self, keys: np.ndarray, mask: np.uint64, floor: int, skip_empty: bool
    ) -> tuple[int, int] | None:
        """(index, position in ``keys``) of the least item above ``floor`` whose key's high bits equal the
        previous key's (``keys`` sorted), judged a block at a time; empty items left out when ``skip_empty``."""
        best: tuple[int, int] | None = None
        for a in range(1, len(keys), _BLOCK):
            b = min(len(keys), a + _BLOCK)
            pos = np.flatnonzero(((keys[a:b] ^ keys[a - 1 : b - 1]) & ~mask) == 0) + a
            cand = (keys[pos] & mask).astype(np.int64)
            keep = cand > floor
            if skip_empty and len(cand):
                keep &= self.lengths_at(cand) > 0
            if keep.any():
                k = int(np.argmin(np.where(keep, cand, np.iinfo(np.int64).max)))
                if best is None or int(cand[k]) < best[0]:
                    best = int(cand[k]), int(pos[k])
        return best

    def empty_items(self) -> np.ndarray:
        """Indices of the empty items, ascending (judged run by run)."""
        found = [np.flatnonzero(lengths == 0) + i for i, _, lengths in self._runs()]
        return np.concatenate(found) if found else _EMPTY

    def numbered_items(self, prefix: bytes, suffix: bytes) -> tuple[np.ndarray, np.ndarray]:
        """(indices, numbers) of the items that are ``prefix``, a number in decimal as ``str(int)`` writes it (no
        sign, no leading zero) and ``suffix``: judged on the bytes, a run at a time, without a step per item."""
        digits_max = 18  # below 2**63: no index has more digits
        shortest, longest = len(prefix) + len(suffix) + 1, len(prefix) + len(suffix) + digits_max
        whole = np.frombuffer(self._buf, dtype=np.uint8) if len(self) else np.empty(0, np.uint8)
        out_i, out_v = [], []
        for i, _, lengths in self._runs():
            k = np.flatnonzero((lengths >= shortest) & (lengths <= longest))
            if not len(k):
                continue
            starts, sizes = self._starts[i + k], lengths[k]
            for offset, want in enumerate(prefix):  # the prefix, byte by byte
                keep = whole[starts + offset] == want
                k, starts, sizes = k[keep], starts[keep], sizes[keep]
            for back, want in enumerate(reversed(suffix)):
                keep = whole[starts + sizes - 1 - back] == want
                k, starts, sizes = k[keep], starts[keep], sizes[keep]
            ndig = sizes - len(prefix) - len(suffix)
            value = np.zeros(len(k), dtype=np.int64)
            ok = np.ones(len(k), dtype=bool)
            for d in range(digits_max):
                inside = d < ndig
                byte = whole[np.where(inside, starts + len(prefix) + d, 0)].astype(np.int64) - 48
                ok &= ~inside | ((byte >= 0) & (byte <= 9))
                value = np.where(inside, value * 10 + np.clip(byte, 0, 9), value)
            lead = whole[starts + len(prefix)] if len(k) else np.empty(0, np.uint8)
            ok &= (lead != 48) | (ndig == 1)  # no leading zero
            out_i.append(k[ok] + i)
            out_v.append(value[ok])
        if not out_i:
            return _EMPTY, _EMPTY
        return np.concatenate(out_i), np.concatenate(out_v)

    def has_empty(self) -> bool:
        """True when some item is the empty string (judged run by run, no array of every length)."""
        return any(bool((lengths == 0).any()) for _, _, lengths in self._runs())

    def _runs(self) -> Iterator[tuple[int, int, np.ndarray]]:
        """(i, j, lengths of items i..j-1) over the list in runs of at most ``4 * _CHUNK`` items and about
        :data:`_ASSESS_BYTES` bytes of items up to :data:`_HASH_INLINE` long."""
        n = len(self)
        i = 0
        while i < n:
            j = min(n, i + 4 * _CHUNK)
            lengths = self._ends_of(i, j) - self._starts[i:j]
            within = np.cumsum(np.minimum(lengths, _HASH_INLINE))
            cut = max(1, int(np.searchsorted(within, _ASSESS_BYTES, side="right")))
            if cut < j - i:
                j, lengths = i + cut, lengths[:cut]
            yield i, j, lengths
            i = j

    def _hash_run(self, i: int, j: int, lengths: np.ndarray) -> np.ndarray:
        """The 64-bit hash of items ``i..j-1`` (equal items, equal hashes)."""
        weights = _hash_weights()
        short = lengths <= _HASH_INLINE
        starts = self._starts[i:j]
        if short.all():
            kept, kept_lengths = starts, lengths
        else:
            kept, kept_lengths = starts[short], lengths[short]
        heads = np.cumsum(kept_lengths) - kept_lengths
        total = int(kept_lengths.sum())
        whole = np.frombuffer(self._buf, dtype=np.uint8)
        payload = whole[np.repeat(kept - heads, kept_lengths) + np.arange(total, dtype=np.int64)] if total else b""
        out = np.empty(j - i, dtype=np.uint64)
        out[short] = _hash_items(payload, kept_lengths, weights)
        for k in np.flatnonzero(~short).tolist():
            out[k] = int.from_bytes(self._long_digest(i + k, 8), "little")
        return out

    def _long_digest(self, k: int, size: int) -> bytes:
        """A BLAKE2b digest of item ``k``'s bytes, read a chunk at a time."""
        digest = hashlib.blake2b(digest_size=size)
        a, b = int(self._starts[k]), self._end(k)
        for pos in range(a, b, _ASSESS_BYTES):
            digest.update(self._buf[pos : min(b, pos + _ASSESS_BYTES)])
        release(self._buf, a, b)
        return digest.digest()

    def _identity(self, k: int) -> bytes | tuple[int, bytes]:
        """What tells item ``k`` from the others: its bytes, or for an item over :data:`_HASH_INLINE` bytes its
        length and 32-byte BLAKE2b digest (a long item is never held whole)."""
        n = self._end(k) - int(self._starts[k])
        return self.raw(k) if n <= _HASH_INLINE else (n, self._long_digest(k, 32))

    def _payload_of(self, i: int, j: int) -> bytes:
        """The bytes of items ``i..j-1`` joined."""
        if self._contig:
            return self[i:j]._payload()
        return b"".join(self._buf[a:b] for a, b in zip(self._starts[i:j].tolist(), self._ends_of(i, j).tolist()))

    def _joined(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The bytes of adjacent records with each length prefix cut to its zero high byte (a separator), a new
        array."""
        width = self._width
        lo = int(starts[0]) - width
        region = np.frombuffer(self._buf, dtype=np.uint8, count=int(ends[-1]) - lo, offset=lo)
        keep = np.ones(len(region), dtype=bool)
        first = starts - lo - width + (0 if _low_byte_first(self._order) else 1)
        for k in range(width - 1):
            keep[first + k] = False
        return region[keep]

    def encode(self, width: int = 8, byte_order: str = "little") -> bytes | memoryview:
        """The items as GGUF stores a string array's data: each a ``width``-byte length in ``byte_order``, then its
        bytes.  Records read from a file in the same layout are returned as they are (a view, no copy)."""
        if not len(self):
            return b""
        if self._contig and width == self._width and byte_order == self._order:
            return self._region()
        lengths = self.lengths()
        if width == 4 and int(lengths.max()) >= 2**32:
            raise OverflowError("a string longer than 4 GiB does not fit a 4-byte length")
        if self._contig:
            payload = self._payload()
        else:
            payload = b"".join(
                self._buf[a:b] for a, b in zip(self._starts.tolist(), self._ends_of(0, len(self)).tolist())
            )
        return _records(payload, lengths, width, byte_order)

    def encode_chunks(self, width: int = 8, byte_order: str = "little") -> Iterator[bytes | memoryview]:
        """:meth:`encode` a run of items at a time (about a MiB each, or one long item's records a chunk at a
        time), so that writing a list in another layout never holds all of it."""
        if not len(self):
            return
        if self._contig and width == self._width and byte_order == self._order:
            region, at = self._region(), int(self._starts[0]) - self._width
            for a in range(0, len(region), _RELEASE_BYTES):
                b = min(len(region), a + _RELEASE_BYTES)
                yield region[a:b]
                release(self._buf, at + a, at + b)
            return
        released = int(self._starts[0]) - self._width
        for i, j, lengths in self._runs():
            if width == 4 and int(lengths.max()) >= 2**32:
                raise OverflowError("a string longer than 4 GiB does not fit a 4-byte length")
            at = i
            for k in (np.flatnonzero(lengths > _HASH_INLINE) + i).tolist():  # long items: streamed on their own
                if k > at:
                    yield self[at:k].encode(width, byte_order)
                yield _prefix(self._end(k) - int(self._starts[k]), width, byte_order)
                a, b = int(self._starts[k]), self._end(k)
                for pos in range(a, b, _ASSESS_BYTES):
                    yield bytes(self._buf[pos : min(b, pos + _ASSESS_BYTES)])
                release(self._buf, a, b)
                at = k + 1
            if j > at:
                yield self[at:j].encode(width, byte_order)
            done = self._end(j - 1)
            if self._contig and done - released >= _RELEASE_BYTES:  # the runs read: their mapped pages go back
                release(self._buf, released, done)
                released = done

    def _region(self) -> memoryview:
        lo = int(self._starts[0]) - self._width
        return memoryview(self._buf)[lo : self._end(len(self) - 1)]

    def _payload(self) -> bytes:
        """Every item's bytes joined (contiguous records only)."""
        lo = int(self._starts[0]) - self._width
        region = np.frombuffer(self._buf, dtype=np.uint8, count=self._end(len(self) - 1) - lo, offset=lo)
        keep = np.ones(len(region), dtype=bool)
        for k in range(self._width):
            keep[self._starts - lo - self._width + k] = False
        return region[keep].tobytes()


_BLOCK = 1 << 16  # sorted keys judged per step when looking for repeats (the temporaries are a block's)
_HASH_INLINE = 4096  # items up to this many bytes are hashed together, vectorised; longer ones on their own


@functools.lru_cache(maxsize=1)
def _hash_weights() -> np.ndarray:
    """The odd random weights of :func:`_hash_items`, one per byte position of an item up to _HASH_INLINE, drawn
    afresh in each process (from the system's entropy), so that no file can be made to collide on purpose."""
    return np.random.default_rng().integers(0, 2**63, _HASH_INLINE + 1, dtype=np.uint64) * 2 + 1


def _hash_items(payload, lengths: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each item of the joined ``payload`` (equal items, equal hashes): the length times
    ``weights[0]`` plus each byte times ``weights[1 + its position in the item]``, modulo 2**64."""
    out = lengths.astype(np.uint64) * weights[0]
    if len(payload):
        heads = np.cumsum(lengths) - lengths
        within = np.arange(1, len(payload) + 1, dtype=np.int64) - np.repeat(heads, lengths)
        data = payload if isinstance(payload, np.ndarray) else np.frombuffer(payload, dtype=np.uint8)
        terms = data.astype(np.uint64) * weights[within]
        filled = lengths > 0
        out[filled] += np.add.reduceat(terms, heads[filled])
    return out


@functools.lru_cache(maxsize=None)
def _low_byte_first(byte_order: str) -> bool:
    """Whether the spec's byte order ``byte_order`` puts the low byte first (packed with its struct prefix)."""
    return struct.pack(_byte_order(byte_order).struct + "H", 1)[0] == 1


def _prefix(length: int, width: int, byte_order: str) -> bytes:
    """One string record's length prefix."""
    return length.to_bytes(width, "little" if _low_byte_first(byte_order) else "big")


def _from_records_bytes(data: bytes, count: int) -> StringList:
    """Unpickle: ``count`` little-endian 8-byte-length records."""
    starts, end = scan_string_starts(data, 0, count, 8, _byte_order("little").struct)
    return StringList.from_records(data, starts, end, 8, "little")


def _records(payload: bytes, lengths: np.ndarray, width: int, byte_order: str) -> bytes:
    """GGUF string records from the joined item bytes and their lengths, built with one scatter per prefix byte."""
    n = len(lengths)
    if not n:
        return b""
    out = np.empty(n * width + len(payload), dtype=np.uint8)
    heads = np.arange(n, dtype=np.int64) * width + np.cumsum(lengths) - lengths
    prefix = lengths.astype(numpy_dtype({4: "u4", 8: "u8"}[width], byte_order)).view(np.uint8).reshape(n, width)
    body = np.ones(len(out), dtype=bool)
    for k in range(width):
        out[heads + k] = prefix[:, k]
        body[heads + k] = False
    out[body] = np.frombuffer(payload, dtype=np.uint8)
    return out.tobytes()


def _reindex(marked: np.ndarray, start: int, stop: int, step: int) -> np.ndarray:
    """Positions in the slice ``start:stop:step`` (normalised) of the marked indices of the whole list (ascending):
    the marks within the slice's span are found by bisection, so a slice costs its own marks, not all of them."""
    if not len(marked):
        return marked
    lo, hi = (start, stop) if step > 0 else (stop + 1, start + 1)
    a, b = np.searchsorted(marked, [lo, hi])
    inside = marked[a:b]
    if step == 1:
        return inside - start
    return np.flatnonzero(np.isin(np.arange(start, stop, step), inside))


_ASSESS_BYTES = 1 << 20  # bytes of records judged per step: steps grow with the bytes, never with the items
_RELEASE_BYTES = 64 << 20  # bytes judged between giving the mapped pages back


def _assess(buf, starts: np.ndarray, top: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(items not valid UTF-8, items holding a NUL) of adjacent records, without a ``str`` or a Python step per
    item, whatever the items hold.

    Run by run of records of about :data:`_ASSESS_BYTES` bytes (so the number of runs follows the bytes, not the
    item count, and the temporaries are a run's); an item longer than that is a run of its own, judged a chunk at a
    time.  NUL: the zero bytes of the run, less those the length prefixes hold, say whether a payload has one (only
    then are they located).  UTF-8: with every prefix byte ASCII (the prefixes of strings of 128 bytes or more are
    zeroed in a copy of the run), :func:`~gguf_construct.base.utf8items.invalid_strings` judges the run's items
    at once.
    """
    n = len(starts)
    if not n:
        return _EMPTY, _EMPTY
    lo = int(starts[0]) - width
    region = np.frombuffer(buf, dtype=np.uint8, count=top - lo, offset=lo)
    view = memoryview(buf)
    bad: list[np.ndarray] = []
    nul: list[np.ndarray] = []
    i = released = 0
    while i < n:
        j = _run_end(starts, i, top, width)
        if j == i + 1 and _item_end(starts, i, top, width) - int(starts[i]) > _ASSESS_BYTES:
            a, b = int(starts[i]), _item_end(starts, i, top, width)
            if _long_item_has_nul(buf, a, b):
                nul.append(np.array([i], dtype=np.int64))
            if (
                first_invalid_utf8(bytes(view[p : min(b, p + _ASSESS_BYTES)]) for p in range(a, b, _ASSESS_BYTES))
                is not None
            ):
                bad.append(np.array([i], dtype=np.int64))
            release(buf, a, b)
            released = b - lo
            i = j
            continue
        lengths = (
            np.diff(starts[i : j + 1]) - width
            if j < n
            else np.append(np.diff(starts[i:j]) - width, top - starts[j - 1])
        )
        a, b = int(starts[i]) - width - lo, (int(starts[j]) - width - lo if j < n else len(region))
        heads = starts[i:j] - width - lo - a + width  # payload offsets within the run
        run = region[a:b]
        prefix_zeros = (j - i) * (width - 1) + int(np.count_nonzero(lengths == 0))  # below 256: one non-zero byte
        wide = lengths[lengths >= 256]
        if len(wide):
            prefix_zeros += sum(int(np.count_nonzero((wide >> (8 * k)) & 0xFF == 0)) for k in range(width))
            prefix_zeros -= len(wide) * (width - 1)
        if len(run) - int(np.count_nonzero(run)) != prefix_zeros:
            nul.append(_nul_items(run, heads, width) + i)
        long = lengths >= 128
        if long.any():
            text = run.copy()
            for k in range(width):
                text[heads[long] - width + k] = 0
            found = invalid_strings(memoryview(text), heads)
        else:
            found = invalid_strings(view[lo + a : lo + b], heads)
        if len(found):
            bad.append(found + i)
        if b - released >= _RELEASE_BYTES:  # judged: the mapped pages go back (base/pages.py)
            release(buf, lo + released, lo + b)
            released = b
        i = j
    return (np.concatenate(bad) if bad else _EMPTY), (np.concatenate(nul) if nul else _EMPTY)


def _item_end(starts: np.ndarray, i: int, top: int, width: int) -> int:
    """Where the payload of item ``i`` of adjacent records ends."""
    return int(starts[i + 1]) - width if i + 1 < len(starts) else top


def _run_end(starts: np.ndarray, i: int, top: int, width: int) -> int:
    """The end ``j`` of the run of records from item ``i``: the items that start and end within
    :data:`_ASSESS_BYTES` bytes of item ``i``'s start, at least one."""
    limit = int(starts[i]) + _ASSESS_BYTES
    j = int(np.searchsorted(starts, limit, side="right"))  # items i..j-1 start within the limit
    if j - i > 1 and _item_end(starts, j - 1, top, width) > limit:
        j -= 1
    return max(j, i + 1)


def _long_item_has_nul(buf, a: int, b: int) -> bool:
    """Whether ``buf[a:b]`` holds a zero byte, counted a chunk at a time."""
    whole = np.frombuffer(buf, dtype=np.uint8)
    return any(
        np.count_nonzero(whole[p : min(b, p + _ASSESS_BYTES)]) < min(b, p + _ASSESS_BYTES) - p
        for p in range(a, b, _ASSESS_BYTES)
    )


def _nul_items(region: np.ndarray, rel: np.ndarray, width: int) -> np.ndarray:
    """The items whose payload (at ``rel``, in ``region`` of adjacent records with ``width``-byte prefixes) holds
    a zero byte: the zero bytes less the prefixes' are located, and only they are looked up."""
    zero = region == 0
    for k in range(width):
        zero[rel - width + k] = False
    items = np.searchsorted(rel, np.flatnonzero(zero), side="right") - 1  # ascending
    return items[np.concatenate(([True], items[1:] != items[:-1]))] if len(items) else items
