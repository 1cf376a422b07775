"""Safe Construct building blocks that the struct generator (:mod:`gguf_construct.format.structs`) composes.

Construct's compiled mode skips length checks and its arrays trust their counts, so the generator never emits raw
``Bytes``/``Array`` for untrusted lengths.  Every count and length here is checked against the bytes that remain
*before* anything is allocated or looped, and failures raise :class:`FieldError` with the stream offset.
Large arrays of numbers become numpy arrays in one step; arrays of strings are located in one vectorised scan and
kept as the stream's bytes (:class:`~gguf_construct.format.stringlist.StringList`).
"""

from __future__ import annotations

import struct as _struct

import numpy as np
from . import fieldrules
from ..base.pages import release
from .spec import byte_order as byte_order_of
from ..base.stringscan import scan_string_starts
from ..base.arrayscan import scan_arrays
from ..base.recordscan import read_uints
from .lazystring import LazyString
from .stringlist import StringList
from construct import Construct, ConstructError, ListContainer, SizeofError, stream_tell

__all__ = [
    "BufferStream",
    "FieldError",
    "remaining",
    "GGUFString",
    "NumericArray",
    "StringArray",
    "CheckedArray",
    "ArrayScan",
    "InnerArrays",
    "Reject",
    "Float32Field",
    "Float32NaN",
    "decode_text",
    "encode_text",
]


class FieldError(ConstructError):
    """A field could not be read; carries the offset where the field starts and the rule it breaks, which is not
    decided here: the generator gives each construct the rule the spec declares for its field, and a construct
    made without one takes the spec's rule for what it stands for (:func:`~gguf_construct.format.fieldrules.default_rule`)."""

    def __init__(self, message: str, offset: int | None, path: str | None = None, rule: str | None = None):
        super().__init__(message, path=path)
        self.offset = offset
        self.rule = rule


class BufferStream:
    """A minimal read/seek stream over a bytes-like object without copying it (mmap, bytes, memoryview)."""

    __slots__ = ("buf", "pos", "size")

    def __init__(self, buf, pos: int = 0):
        self.buf = memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf
        self.pos = pos
        self.size = len(self.buf)

    def read(self, n: int = -1) -> bytes:
        start = self.pos
        end = self.size if n is None or n < 0 else min(self.size, start + n)
        self.pos = end
        return bytes(self.buf[start:end])

    def write(self, data) -> int:  # pragma: no cover - parsing streams are read-only
        raise OSError("BufferStream is read-only")

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0:
            self.pos = offset
        elif whence == 1:
            self.pos += offset
        else:
            self.pos = self.size + offset
        return self.pos


def remaining(stream) -> int:
    """Bytes left in ``stream`` after its current position."""
    if isinstance(stream, BufferStream):
        return stream.size - stream.pos
    pos = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(pos)
    return end - pos


def decode_text(data) -> str:
    """Bytes to str, lossless for invalid UTF-8 (surrogateescape); the checker flags such strings."""
    return str(data, "utf-8", "surrogateescape")


def encode_text(text) -> bytes:
    """str (or :class:`~gguf_construct.format.lazystring.LazyString`) to bytes, the inverse of :func:`decode_text`."""
    return text.encode("utf-8", "surrogateescape")


def _fmt(width: int, byte_order: str) -> str:
    return byte_order_of(byte_order).struct + {4: "I", 8: "Q"}[width]


class GGUFString(Construct):
    """A length-prefixed string: ``len`` (``width`` bytes, unsigned) then ``len`` bytes of UTF-8; a string that
    runs past the end breaks ``rule``.  With ``lazy_over``, a string of more bytes read from a buffer is a
    :class:`~gguf_construct.format.lazystring.LazyString` over it (nothing decoded); built, a LazyString is
    written a chunk at a time."""

    def __init__(self, width: int, byte_order: str, rule: str | None = None, lazy_over: int | None = None):
        super().__init__()
        self.width = width
        self.byte_order = byte_order
        self.rule = rule if rule is not None else fieldrules.default_rule("string")
        self.lazy_over = lazy_over
        self._len = _struct.Struct(_fmt(width, byte_order))

    def _parse(self, stream, context, path):
        start = stream_tell(stream, path)
        head = stream.read(self.width)
        if len(head) != self.width:
            raise FieldError(
                f"string length truncated: need {self.width} bytes, {len(head)} left", start, path, rule=self.rule
            )
        (n,) = self._len.unpack(head)
        left = remaining(stream)
        if n > left:
            raise FieldError(f"string length {n} exceeds the {left} bytes remaining", start, path, rule=self.rule)
        if isinstance(stream, BufferStream):  # decoded from the buffer itself: no copy of the bytes first
            at = stream.pos
            stream.pos += n
            if self.lazy_over is not None and n > self.lazy_over:
                return LazyString(stream.buf, at, n)
            text = decode_text(stream.buf[at : at + n])
            release(stream.buf, at, at + n)  # a long value's pages leave the process once decoded
            return text
        return decode_text(stream.read(n))

    def _build(self, obj, stream, context, path):
        if isinstance(obj, LazyString):  # copied from the file a chunk at a time
            stream.write(self._len.pack(obj.nbytes))
            for chunk in obj.raw_chunks():
                stream.write(chunk)
            return obj
        data = encode_text(obj) if isinstance(obj, str) else bytes(obj)
        stream.write(self._len.pack(len(data)))
        stream.write(data)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)


def _check_count(stream, count, min_size: int, what: str, path: str, start: int, rule: str) -> int:
    if not isinstance(count, int) or count < 0:
        raise FieldError(f"invalid {what} count {count!r}", start, path, rule=rule)
    left = remaining(stream)
    if count * min_size > left:
        raise FieldError(
            f"{what} count {count} needs at least {count * min_size} bytes, {left} remaining", start, path, rule=rule
        )
    return count


class NumericArray(Construct):
    """``count`` fixed-size numbers parsed into a native-order numpy array in one step; a count the bytes left
    cannot hold breaks ``rule``."""

    def __init__(self, count, dtype: np.dtype, as_bool: bool = False, rule: str | None = None):
        super().__init__()
        self.count = count
        self.dtype = np.dtype(dtype)
        self.native = self.dtype.newbyteorder("=")
        self.as_bool = as_bool
        self.rule = rule if rule is not None else fieldrules.default_rule("numbers")

    def _parse(self, stream, context, path):
        start = stream_tell(stream, path)
        count = self.count(context) if callable(self.count) else self.count
        _check_count(stream, count, self.dtype.itemsize, "array element", path, start, self.rule)
        nbytes = count * self.dtype.itemsize
        if isinstance(stream, BufferStream):
            arr = np.frombuffer(stream.buf, dtype=self.dtype, count=count, offset=stream.pos)
            arr = arr.astype(self.native, copy=True)
            release(stream.buf, stream.pos, stream.pos + nbytes)  # the copy is kept: the mapped pages may go
            stream.pos += nbytes
        else:
            arr = np.frombuffer(stream.read(nbytes), dtype=self.dtype, count=count)
            arr = arr.astype(self.native, copy=True)
        return arr.view(np.bool_) if self.as_bool else arr

    def _build(self, obj, stream, context, path):
        arr = np.asarray(obj)
        if self.as_bool:  # bool arrays keep their raw bytes (only 0 and 1 are valid; the checker says so)
            data = arr.view(np.uint8) if arr.dtype == np.bool_ else arr.astype(np.uint8)
        else:
            data = arr.astype(self.dtype, copy=False)
        stream.write(np.ascontiguousarray(data).tobytes())
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)


class StringArray(Construct):
    """``count`` length-prefixed strings, located in one vectorised scan and returned as a
    :class:`~gguf_construct.format.stringlist.StringList` over the stream's bytes (decoded when accessed)."""

    def __init__(self, count, width: int, byte_order: str, rule: str | None = None, element_rule: str | None = None):
        super().__init__()
        self.count = count
        self.width = width
        self.byte_order = byte_order
        self.rule = rule if rule is not None else fieldrules.default_rule("strings")
        self.element_rule = element_rule if element_rule is not None else fieldrules.default_rule("string")
        self._len = _struct.Struct(_fmt(width, byte_order))

    def _parse(self, stream, context, path):
        start = stream_tell(stream, path)
        count = self.count(context) if callable(self.count) else self.count
        _check_count(stream, count, self.width, "string array element", path, start, self.rule)
        if not isinstance(stream, BufferStream):
            # materialize the rest once; parsing from a generic stream is the slow path anyway
            rest = stream.read()
            inner = BufferStream(rest)
            out = self._scan(inner, count, start, path)
            stream.seek(start + inner.pos)
            return out
        return self._scan(stream, count, start, path)

    def _scan(self, stream: BufferStream, count: int, start: int, path: str) -> StringList:
        base = stream.pos
        try:
            starts, end = scan_string_starts(stream.buf, base, count, self.width, byte_order_of(self.byte_order).struct)
        except IndexError as exc:
            index, offset, length = exc.args
            what = (
                f"string length truncated in element {index}"
                if length is None
                else f"string length {length} exceeds the {stream.size - offset - self.width} bytes remaining"
            )
            raise FieldError(what, offset, f"{path} -> [{index}]", rule=self.element_rule) from None
        stream.pos = end
        items = StringList.from_records(stream.buf, starts, end, self.width, self.byte_order)
        release(stream.buf, base, end)  # judged: the pages leave the process until an item is read
        return items

    def _build(self, obj, stream, context, path):
        if isinstance(obj, StringList):  # written as read when the layout matches: no string is decoded
            for chunk in obj.encode_chunks(self.width, self.byte_order):  # a run at a time
                stream.write(chunk)
            return obj
        pack = self._len.pack
        chunks = []
        for text in obj:
            data = encode_text(text) if isinstance(text, str) else bytes(text)
            chunks.append(pack(len(data)))
            chunks.append(data)
        stream.write(b"".join(chunks))
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)


class ArrayScan:
    """How the inner arrays of an array of arrays are located in bulk (:func:`~..base.arrayscan.scan_arrays`): the
    widths of the element type and the count, the string length's width, the byte order and the table of element
    sizes by type, all derived from the spec by the struct generator."""

    __slots__ = ("sel_width", "count_width", "string_width", "byte_order", "little", "sizes")

    def __init__(self, sel_width: int, count_width: int, string_width: int, byte_order: str, sizes: np.ndarray):
        self.sel_width = sel_width
        self.count_width = count_width
        self.string_width = string_width
        self.byte_order = byte_order
        self.little = byte_order_of(byte_order).struct == "<"
        self.sizes = np.ascontiguousarray(sizes, dtype=np.int64)

    def layout(self) -> tuple[int, int, int, str]:
        """What two scans must share for one's bytes to be written as the other's."""
        return (self.sel_width, self.count_width, self.string_width, self.byte_order)


class InnerArrays:
    """The inner arrays of an array of arrays, kept as their offsets in the buffer (8 bytes each): an item is
    parsed when it is read (the same value a parse of the whole array gives), ``convert`` applied to it.  Read-only;
    written back, the bytes are copied as they are when the layout matches."""

    __slots__ = ("buf", "starts", "end", "_parse", "scan", "convert")

    def __init__(self, buf, starts: np.ndarray, end: int, parse, scan: ArrayScan, convert=None):
        self.buf = buf
        self.starts = starts
        self.end = end
        self._parse = parse
        self.scan = scan
        self.convert = convert

    def __len__(self) -> int:
        return len(self.starts)

    def _item(self, i: int):
        item = self._parse(BufferStream(self.buf, int(self.starts[i])))
        return item if self.convert is None else self.convert(item)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self.starts)))]
        n = len(self.starts)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("inner array index out of range")
        return self._item(i)

    def __iter__(self):
        for i in range(len(self.starts)):
            yield self._item(i)

    def __eq__(self, other) -> bool:
        if isinstance(other, InnerArrays) and other.convert is self.convert and len(other) == len(self):
            if other.scan.layout() == self.scan.layout() and self.raw_size() == other.raw_size():
                return all(a == b for a, b in zip(self.raw_chunks(), other.raw_chunks()))
        try:
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<InnerArrays: {len(self)} arrays>"

    def mapped(self, convert) -> "InnerArrays":
        """The same inner arrays, each item passed through ``convert`` when read."""
        return InnerArrays(self.buf, self.starts, self.end, self._parse, self.scan, convert)

    def item_types(self) -> np.ndarray:
        """The element type of every inner array (uint64), read in one gather: no item is parsed."""
        return self._header_column(self.starts, 0, self.scan.sel_width)

    def item_counts(self) -> np.ndarray:
        """The element count of every inner array (uint64), read in one gather: no item is parsed."""
        return self._header_column(self.starts, self.scan.sel_width, self.scan.count_width)

    def headers(self, chunk: int = 1 << 18):
        """``(first index, types, counts)`` of the inner arrays ``chunk`` at a time (the temporaries are a
        chunk's): no item is parsed."""
        for first in range(0, len(self.starts), chunk):
            at = self.starts[first : first + chunk]
            types = self._header_column(at, 0, self.scan.sel_width)
            yield first, types, self._header_column(at, self.scan.sel_width, self.scan.count_width)

    def _header_column(self, starts: np.ndarray, at: int, width: int) -> np.ndarray:
        whole = np.frombuffer(self.buf, dtype=np.uint8)
        return read_uints(whole, starts + at, width, self.scan.little)

    def raw_size(self) -> int:
        """Bytes the inner arrays occupy."""
        return self.end - int(self.starts[0]) if len(self.starts) else 0

    def raw_chunks(self, chunk: int = 1 << 20):
        """The inner arrays' bytes as stored, ``chunk`` bytes at a time."""
        if not len(self.starts):
            return
        view = memoryview(self.buf).cast("B") if not isinstance(self.buf, bytes) else memoryview(self.buf)
        for at in range(int(self.starts[0]), self.end, chunk):
            yield bytes(view[at : min(at + chunk, self.end)])


class CheckedArray(Construct):
    """``count`` items of ``subcon``; the count is checked against ``min_size`` bytes per item first.  With
    ``bulk`` (an array whose items are arrays), the items of a buffer are located by
    :func:`~..base.arrayscan.scan_arrays` and kept as :class:`InnerArrays`; an item the scan cannot read sends the
    whole array to the item-by-item parse, whose findings are those of the file."""

    def __init__(self, count, subcon: Construct, min_size: int, what: str, rule: str, bulk: ArrayScan | None = None):
        super().__init__()
        self.count = count
        self.subcon = subcon
        self.min_size = min_size
        self.what = what
        self.rule = rule
        self.bulk = bulk
        self._item_parser = None

    def _parse(self, stream, context, path):
        start = stream_tell(stream, path)
        count = self.count(context) if callable(self.count) else self.count
        _check_count(stream, count, self.min_size, self.what, path, start, self.rule)
        found = self.in_bulk(stream, count)
        if found is not None:
            return found
        out = ListContainer()
        for i in range(count):
            context._index = i
            out.append(self.subcon._parsereport(stream, context, f"{path} -> [{i}]"))
        return out

    def in_bulk(self, stream, count: int) -> InnerArrays | None:
        """The ``count`` items at the stream's position located in bulk (the stream moves past them), or None when
        this array is not read so (no ``bulk``, not a buffer, an item the scan stops at)."""
        if self.bulk is None or not isinstance(stream, BufferStream) or count == 0:
            return None
        b = self.bulk
        starts, end = scan_arrays(
            stream.buf, stream.pos, count, b.sel_width, b.count_width, b.string_width, b.little, b.sizes
        )
        if len(starts) < count:
            return None
        stream.pos = end
        return InnerArrays(stream.buf, starts, end, self.parse_item, b)

    def parse_item(self, stream):
        """One item at the stream's position, by the compiled parser of ``subcon`` (compiled on first use)."""
        if self._item_parser is None:
            self._item_parser = self.subcon.compile()
        return self._item_parser.parse_stream(stream, _root=None)

    def _build(self, obj, stream, context, path):
        if isinstance(obj, InnerArrays) and self.bulk is not None and obj.scan.layout() == self.bulk.layout():
            for chunk in obj.raw_chunks():  # written as read: no item parsed
                stream.write(chunk)
            return obj
        for i, item in enumerate(obj):
            context._index = i
            self.subcon._build(item, stream, context, f"{path} -> [{i}]")
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)

    def checked_count(self, io, count) -> int:
        """Used by compiled code: validate ``count`` before the generated loop runs."""
        return _check_count(io, count, self.min_size, self.what, "(compiled)", stream_tell(io, None), self.rule)

    def _emitparse(self, code):
        code.linkedinstances[id(self)] = self
        fname = f"parse_checkedarray_{code.allocateId()}"
        code.append(f"""
            def {fname}(io, this):
                count = linkedinstances[{id(self)}].checked_count(io, {self.count})
                found = linkedinstances[{id(self)}].in_bulk(io, count)
                if found is not None:
                    return found
                return ListContainer(({self.subcon._compileparse(code)}) for i in range(count))
        """)
        return f"{fname}(io, this)"


class Float32NaN(float):
    """A float32 NaN read from a file, remembering its exact bits (Python's float would quiet a signalling NaN)."""

    __slots__ = ("bits",)

    def __new__(cls, bits: int):
        obj = super().__new__(cls, float("nan"))
        obj.bits = bits
        return obj

    def __repr__(self) -> str:
        return f"nan(0x{self.bits:08x})"


class Float32Field(Construct):
    """An IEEE binary32 scalar that round-trips every bit pattern, NaN payloads included; a short read breaks
    ``rule``."""

    def __init__(self, byte_order: str, rule: str | None = None):
        super().__init__()
        self.rule = rule if rule is not None else fieldrules.default_rule("f4")
        order = byte_order_of(byte_order).struct
        self._bits = _struct.Struct(order + "I")
        self._float = _struct.Struct(order + "f")

    def _parse(self, stream, context, path):
        start = stream_tell(stream, path)
        data = stream.read(4)
        if len(data) != 4:
            raise FieldError(f"float32 truncated: {len(data)} of 4 bytes", start, path, rule=self.rule)
        (value,) = self._float.unpack(data)
        if value != value:
            return Float32NaN(self._bits.unpack(data)[0])
        return value

    def _build(self, obj, stream, context, path):
        if isinstance(obj, Float32NaN):
            stream.write(self._bits.pack(obj.bits))
        else:
            stream.write(self._float.pack(obj))
        return obj

    def _sizeof(self, context, path):
        return 4


class Reject(Construct):
    """The default case of a switch: the selector has no meaning, so the input is invalid."""

    def __init__(self, message: str, rule: str):
        super().__init__()
        self.message = message
        self.rule = rule

    def _parse(self, stream, context, path):
        raise FieldError(self.message.format(this=context), stream_tell(stream, path), path, rule=self.rule)

    def _build(self, obj, stream, context, path):
        raise FieldError(self.message.format(this=context), None, path, rule=self.rule)

    def _sizeof(self, context, path):
        raise SizeofError(path=path)
