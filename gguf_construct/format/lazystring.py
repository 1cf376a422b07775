"""A long STRING value kept as the file's bytes until it is asked for.

A STRING value of more than ``reading.lazy_string_bytes`` bytes (spec/gguf.yaml) is read as a :class:`LazyString`:
a view over the memory-mapped file, as a :class:`~gguf_construct.format.stringlist.StringList` is for a string
array.  Nothing of it is decoded when the file is read.  It behaves as the ``str`` it stands for where that costs
a bounded chunk of memory -- ``len`` (characters), ``==`` and ``!=`` against ``str`` and other LazyStrings,
``in``, ``startswith``/``endswith``, slicing from the start (a preview), iteration -- and becomes that ``str`` for
anything else (``str(value)``, ordering, ``+`` and every other ``str`` method, reached through attribute
access), which costs the value's length in memory.  Two exceptions keep messages and lookups bounded:
``format(value)`` and f-strings give :meth:`LazyString.summary` (its first characters and byte length), and
``hash`` covers the length and the first and last 4 KiB, so a LazyString is not found in a set of plain strings
(none of which is that long).

Streaming: :meth:`LazyString.raw_chunks` gives the bytes ``reading.chunk_bytes`` at a time (the mapped pages go
back to the system after each chunk), :meth:`LazyString.iter_chunks` the decoded text (UTF-8 with
``surrogateescape``, a sequence cut at a chunk's edge decoded whole).  UTF-8 validity and the first NUL byte are
judged chunk by chunk (:mod:`gguf_construct.base.utf8stream`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..base.pages import RELEASE_MIN, release
from ..base.utf8stream import count_chars, decode_chunks, first_invalid_utf8, first_nul
from .spec import load_yaml

__all__ = ["LazyString", "LAZY_STRING_BYTES", "CHUNK_BYTES", "PREVIEW_CHARS", "text_nbytes", "text_chunks"]

_READING = load_yaml("gguf.yaml")["reading"]
LAZY_STRING_BYTES: int = _READING["lazy_string_bytes"]  # longer STRING values are read as LazyString
CHUNK_BYTES: int = _READING["chunk_bytes"]  # bytes of a long value judged, compared or copied at a time
PREVIEW_CHARS: int = _READING["preview_chars"]  # characters of a long value JSON output keeps without --full

_UNKNOWN = -1


class LazyString:
    """A STRING value over ``nbytes`` bytes at ``start`` of ``buf`` (a memory map stays referenced while it
    lives), decoded as UTF-8 with ``surrogateescape`` when asked for.  See the module's docstring for what it
    does without decoding the whole value."""

    __slots__ = ("_buf", "_start", "_nbytes", "_chars", "_bad", "_nul")

    def __init__(self, buf, start: int, nbytes: int):
        if start < 0 or nbytes < 0 or start + nbytes > len(buf):
            raise ValueError(f"{nbytes} bytes at {start} are not inside a buffer of {len(buf)}")
        self._buf = buf if isinstance(buf, (bytes, memoryview)) else memoryview(buf)
        self._start, self._nbytes = start, nbytes
        self._chars = self._bad = self._nul = _UNKNOWN

    # -- the bytes ------------------------------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        """The value's length in bytes, as the file stores it."""
        return self._nbytes

    def raw_chunks(self, size: int = CHUNK_BYTES, start: int = 0) -> Iterator[bytes]:
        """The value's bytes from byte ``start`` on, ``size`` at a time; the mapped pages of each chunk go back to
        the system once it is handed out and the next one is asked for."""
        buf, end = self._buf, self._start + self._nbytes
        pos = released = self._start + start
        while pos < end:
            stop = min(end, pos + size)
            yield bytes(buf[pos:stop])
            pos = stop
            if pos - released >= RELEASE_MIN or pos == end:  # ranges worth a system call (base/pages.py)
                release(buf, released, pos)
                released = pos

    def raw(self) -> bytes:
        """The whole value's bytes (its length in memory)."""
        return bytes(self._buf[self._start : self._start + self._nbytes])

    def iter_chunks(self, size: int = CHUNK_BYTES) -> Iterator[str]:
        """The value's text a chunk at a time (joined: ``str(self)``)."""
        return decode_chunks(self.raw_chunks(size))

    # -- judged chunk by chunk, once ----------------------------------------------------------------------------
    def first_invalid_utf8(self) -> int | None:
        """Byte offset of the first sequence that is not valid UTF-8, or None (judged once, chunk by chunk)."""
        if self._bad == _UNKNOWN:
            self._bad = first_invalid_utf8(self.raw_chunks())
        return self._bad

    @property
    def valid_utf8(self) -> bool:
        """True when the value's bytes are valid UTF-8."""
        return self.first_invalid_utf8() is None

    def first_nul(self) -> int | None:
        """Byte offset of the first NUL byte, or None (found once, chunk by chunk)."""
        if self._nul == _UNKNOWN:
            self._nul = first_nul(self.raw_chunks())
        return self._nul

    @property
    def has_nul(self) -> bool:
        """True when the value holds a NUL byte."""
        return self.first_nul() is not None

    def __len__(self) -> int:
        if self._chars == _UNKNOWN:
            self._chars = count_chars(self.raw_chunks())
        return self._chars

    # -- str behaviour in bounded memory ------------------------------------------------------------------------
    def preview(self, chars: int) -> str:
        """The first ``chars`` characters (decoding stops there)."""
        if chars <= 0:
            return ""
        parts, have = [], 0
        for text in self.iter_chunks():
            parts.append(text[: chars - have])
            have += len(parts[-1])
            if have >= chars:
                break
        return "".join(parts)

    def summary(self, chars: int = 160) -> str:
        """The first ``chars`` characters and the length, for a message: ``'abc...' (1048577 bytes)``."""
        return f"{self.preview(chars)}... ({self._nbytes} bytes)"

    def __getitem__(self, index: Any) -> str:
        if isinstance(index, slice):
            start, stop, step = index.start, index.stop, index.step
            if step in (None, 1) and (start is None or start >= 0) and stop is not None and stop >= 0:
                return self.preview(stop)[start:]  # a cut from the start: only that much is decoded
            return str(self)[index]
        i = index.__index__()
        if i < 0:
            return str(self)[i]
        got = self.preview(i + 1)[i:]  # decoded up to the character asked for
        if not got:
            raise IndexError("string index out of range")
        return got

    def __iter__(self) -> Iterator[str]:
        for text in self.iter_chunks():
            yield from text

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyString):
            if other._nbytes != self._nbytes:
                return False
            return all(a == b for a, b in zip(self.raw_chunks(), other.raw_chunks()))
        if isinstance(other, str):
            want = text_bytes(other)
            if want is None or len(want) != self._nbytes:
                return False
            pos = 0
            for chunk in self.raw_chunks():
                if want[pos : pos + len(chunk)] != chunk:
                    return False
                pos += len(chunk)
            return True
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        # bounded: the length and the first and last bytes.  Equal LazyStrings hash alike; a LazyString is not
        # found in a set or dict by an equal plain str (no name or key a set holds is that long)
        head = self._read(0, min(self._nbytes, 4096))
        return hash((LazyString, self._nbytes, head, self._read(max(0, self._nbytes - 4096))))

    def __contains__(self, sub: object) -> bool:
        if isinstance(sub, LazyString):
            sub = str(sub)
        if not isinstance(sub, str):
            raise TypeError(f"'in <LazyString>' requires str as left operand, not {type(sub).__name__}")
        want = text_bytes(sub)
        return want is not None and self.find_bytes(want) >= 0

    def find_bytes(self, needle: bytes) -> int:
        """Byte offset of the first occurrence of ``needle`` in the value's bytes, or -1 (searched a chunk at a
        time, with ``len(needle) - 1`` bytes carried over each edge)."""
        if not needle:
            return 0
        carry, pos = b"", 0  # pos: offset of carry's first byte
        for chunk in self.raw_chunks():
            window = carry + chunk
            at = window.find(needle)
            if at >= 0:
                return pos + at
            keep = min(len(window), len(needle) - 1)
            pos += len(window) - keep
            carry = window[len(window) - keep :] if keep else b""
        return -1

    def startswith(self, prefix: Any, start: Any = None, end: Any = None) -> bool:
        """As ``str.startswith`` (only the prefix's bytes are read when ``start``/``end`` are not given)."""
        if start is not None or end is not None or not isinstance(prefix, str):
            return str(self).startswith(prefix, start, end)
        want = text_bytes(prefix)
        return want is not None and self._nbytes >= len(want) and self._read(0, len(want)) == want

    def endswith(self, suffix: Any, start: Any = None, end: Any = None) -> bool:
        """As ``str.endswith`` (only the suffix's bytes are read when ``start``/``end`` are not given)."""
        if start is not None or end is not None or not isinstance(suffix, str):
            return str(self).endswith(suffix, start, end)
        want = text_bytes(suffix)
        return want is not None and self._nbytes >= len(want) and self._read(self._nbytes - len(want)) == want

    def isascii(self) -> bool:
        """True when every byte is ASCII (judged a chunk at a time)."""
        return all(chunk.isascii() for chunk in self.raw_chunks())

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        """As ``str.encode``; the value's own bytes for UTF-8 when they are valid (or ``errors`` is
        ``surrogateescape``)."""
        if encoding.lower().replace("_", "-") in ("utf-8", "utf8") and (errors == "surrogateescape" or self.valid_utf8):
            return self.raw()
        return str(self).encode(encoding, errors)

    def _read(self, a: int, b: int | None = None) -> bytes:
        b = self._nbytes if b is None else b
        return bytes(self._buf[self._start + a : self._start + b])

    # -- becoming the str ---------------------------------------------------------------------------------------
    def __str__(self) -> str:
        a, b = self._start, self._start + self._nbytes
        text = str(self._buf[a:b], "utf-8", "surrogateescape")
        release(self._buf, a, b)
        return text

    def __repr__(self) -> str:
        return f"<LazyString of {self._nbytes} bytes: {self.preview(40)!r}...>"

    def __format__(self, spec: str) -> str:
        return format(self.summary(), spec)  # f-strings (messages) name a long value; str() gives all of it

    def __bool__(self) -> bool:
        return self._nbytes > 0

    def __add__(self, other: Any) -> str:
        return str(self) + (str(other) if isinstance(other, LazyString) else other)

    def __radd__(self, other: Any) -> str:
        return other + str(self)

    def __lt__(self, other: Any) -> bool:
        return str(self) < str(other)

    def __le__(self, other: Any) -> bool:
        return str(self) <= str(other)

    def __gt__(self, other: Any) -> bool:
        return str(self) > str(other)

    def __ge__(self, other: Any) -> bool:
        return str(self) >= str(other)

    def __reduce__(self):
        return str, (str(self),)  # pickled as the str it stands for

    def __copy__(self) -> "LazyString":
        return self

    def __deepcopy__(self, memo) -> "LazyString":
        return self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(str(self), name)  # any other str method: on the whole value


def text_bytes(text: str) -> bytes | None:
    """``text`` as the bytes a file holds (UTF-8 with ``surrogateescape``), or None when it cannot be (a lone
    surrogate that no decoded value holds)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None


def text_nbytes(value: "str | LazyString | bytes") -> int:
    """The bytes a string value takes in a file, without encoding a :class:`LazyString`."""
    if isinstance(value, LazyString):
        return value.nbytes
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogateescape"))
    return len(value)


def text_chunks(value: "str | LazyString | bytes", size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """A string value's bytes a chunk at a time (a :class:`LazyString` straight from the file)."""
    if isinstance(value, LazyString):
        yield from value.raw_chunks(size)
        return
    data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    for i in range(0, len(data), size):
        yield data[i : i + size]
