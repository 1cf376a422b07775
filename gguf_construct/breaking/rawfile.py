"""The one field-level model of a GGUF file for breaking it on purpose, used by the mutations, the crafted files
(:mod:`.crafted`), the suite and the fuzzers.

:class:`RawFile` holds every field of a file as plain values (header words, keys as raw bytes, typed values or
encoded payloads, tensor infos, and the tensor data either as one blob per tensor or as the data section's bytes,
:attr:`RawFile.data`) so that a breakage can change exactly one field — including into something no valid
writer produces (a bad type id, a string length past the end, a count that cannot be satisfied).
:meth:`RawFile.encode` writes it through the generated family's permissive build and returns the byte range of
every field (:class:`Mark`) with the rule a file ending inside that field breaks; :meth:`RawFile.record_spans`
gives the byte range of every record.  Nothing here predicts what a checker reports for a file: the mutations
(:mod:`.mutations`) declare, next to each edit, the rules it breaks (:mod:`.intent`).
"""

from __future__ import annotations

import copy as _copy
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..format import fieldrules, fieldtree, structs
from ..format import spec as _spec
from ..rulebook import read_head
from ..format.enums import VALUE_TYPE_IDS
from ..format.reader import ALIGNMENT_KEY as _ALIGNMENT_KEY
from ..format.reader import DEFAULT_ALIGNMENT, LEGACY_MAGICS, align_offset

__all__ = [
    "Str",
    "Arr",
    "RawKV",
    "RawTI",
    "RawFile",
    "Mark",
    "from_document",
    "align",
    "marks_at",
    "VT",
    "SCALAR_FORMATS",
    "LEGACY_MAGICS",
    "encode_value",
    "tensor_nbytes",
]

VT = VALUE_TYPE_IDS  # the enum generated from the spec, as plain ints
ARRAY, STRING, BOOL, UINT32 = VT["ARRAY"], VT["STRING"], VT["BOOL"], VT["UINT32"]
# struct format of each fixed-size value type, from the spec's primitive encodings
SCALAR_FORMATS = {
    vt["id"]: structs.STRUCT_FORMATS[vt["encoding"]]
    for vt in structs.container_spec()["value_types"]
    if vt.get("encoding")
}
ALIGNMENT_KEY = _ALIGNMENT_KEY.encode()
BYTE_ORDERS_FIRST = structs.BYTE_ORDERS[0]  # the order a version word override is held in (see RawFile.raw_version)
WRITE_LIMIT = 1 << 20  # tensor data further than this into the data section is not written (offset mutations)


align = align_offset  # ``offset`` rounded up to a multiple of ``alignment`` (spec: align_offset), one definition


@dataclass
class Str:
    """A length-prefixed string; ``length`` overrides the written length field (e.g. past the end of the file)."""

    data: bytes
    length: int | None = None

    @property
    def declared(self) -> int:
        """The length written in the file."""
        return len(self.data) if self.length is None else self.length


def _as_str(s: bytes | Str) -> Str:
    return s if isinstance(s, Str) else Str(s)


@dataclass
class Arr:
    """An array value: element type id, items (numbers, bytes/Str, or nested :class:`Arr`), optional length."""

    item_type: int
    items: list
    length: int | None = None

    @property
    def declared(self) -> int:
        """The element count written in the file."""
        return len(self.items) if self.length is None else self.length


@dataclass
class RawKV:
    """One metadata record.  ``value`` is an int/float (scalars), bytes or :class:`Str` (STRING), :class:`Arr`.

    For a ``vtype`` that is not a value type, ``value`` is raw bytes written after the type.
    """

    key: bytes | Str
    vtype: int
    value: Any


@dataclass
class RawTI:
    """One tensor info plus the tensor's bytes (``blob``), written at ``offset`` in the data section (unless the
    file holds its data section as one blob, :attr:`RawFile.data`)."""

    name: bytes | Str
    dims: list[int]
    type: int
    offset: int
    blob: bytes = b""
    n_dims: int | None = None  # overrides len(dims) in the n_dimensions field


@dataclass(frozen=True)
class Mark:
    """A field of the encoded file: [start, end), its path, and the rule a file ending inside it breaks.

    ``prechecks`` are (offset, bytes needed) pairs of the enclosing arrays: a reader checks an array's count
    against the bytes left before reading its elements, so a file ending less than ``needed`` bytes after
    ``offset`` breaks ARR-EOF instead.
    """

    start: int
    end: int
    path: str
    rule: str
    prechecks: tuple[tuple[int, int], ...] = ()


def encode_value(
    vtype: int | str, value: Any, *, version: int = 3, byte_order: str = "little", item_type: int | str | None = None
) -> bytes:
    """The payload bytes of a metadata value, written by the generated family's permissive build.

    Scalars are numbers, ``str``/``bytes`` for STRING; arrays take ``item_type`` and a list (for nested arrays,
    a list of ``(inner_item_type, inner_list)`` pairs).  Any number fits its field modulo its width, so invalid
    bools (2) are encodable.
    """
    vtype = VT[vtype] if isinstance(vtype, str) else vtype
    vt = structs.value_types()[vtype]
    fam = structs.family(version, byte_order)
    return fam.build(vt.get("encoding") or vt["type"], _build_value(vtype, value, item_type))[0]


def _build_value(vtype: int, value: Any, item_type: int | str | None = None) -> Any:
    """A value as the permissive build takes it."""
    if vtype == STRING:
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if vtype != ARRAY:
        return value
    item = VT[item_type] if isinstance(item_type, str) else item_type
    if item == ARRAY:
        return {"type": item, "data": [_build_value(ARRAY, inner, it) for it, inner in value]}
    return {"type": item, "data": [_build_value(item, v) for v in value]}  # type: ignore[arg-type]


def tensor_nbytes(t: RawTI) -> int:
    """The byte size of a tensor info's data (its type and dimensions)."""
    st = _spec.tensor_type_by_id()[t.type]
    n = 1
    for d in t.dims:
        n *= d
    return n // st.block_size * st.type_size


def _key_bytes(key: str | bytes) -> bytes:
    return key.encode() if isinstance(key, str) else key


@dataclass
class RawFile:
    """Every field of a GGUF file, editable one by one.

    The tensor data is either each tensor's ``blob`` (written at its offset, the rest padding) or, when
    :attr:`data` is set, the data section's bytes as they are (from its aligned start; the blobs are not
    written), after :attr:`head_pad` (default: zeros to the alignment when there are tensors).
    """

    version: int = field(default_factory=structs.current_version)
    byte_order: str = structs.BYTE_ORDERS[0]
    kvs: list[RawKV] = field(default_factory=list)
    tensors: list[RawTI] = field(default_factory=list)
    data: bytes | None = None  # the data section as one blob, written verbatim (None: the tensors' blobs)
    magic: bytes = b"GGUF"
    raw_version: int | None = None  # the version word as read little-endian, overriding version/byte order
    n_tensors: int | None = None
    n_kv: int | None = None
    swapped_counts: frozenset = frozenset()  # header count fields written in the other byte order
    pad_byte: int = 0
    tail: bytes = b""
    truncate: int | None = None  # keep only this many bytes
    intents: list = field(default_factory=list)  # the declared intents of the breakages applied (see .intent)
    head_pad: bytes | None = None  # with ``data``: the bytes between the tensor infos and the data section

    # -- reading --------------------------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> "RawFile":
        """A file whose head can be read, split into its parts: each KV pair's value as its encoded payload
        (:class:`~gguf_construct.format.fieldtree.Raw`), the tensor infos, and the data section as one blob."""
        ctx = read_head(bytes(data))
        if not ctx.head_complete:
            raise ValueError("from_bytes needs a file whose head can be read")
        buf = ctx.buf
        kvs = [RawKV(kv.key_bytes, kv.vtype, fieldtree.Raw(bytes(buf[kv.value_offset : kv.end]))) for kv in ctx.kvs]
        tensors = [RawTI(t.name_bytes, list(t.dims), t.type, t.data_offset) for t in ctx.tensors]
        start = ctx.data_start if ctx.data_start is not None else ctx.head_end
        return cls(ctx.version, ctx.byte_order, kvs, tensors, bytes(buf[start:]))

    @property
    def version_word(self) -> int | None:
        """The version word as written in the file's byte order (an override of :attr:`raw_version`), or None."""
        if self.raw_version is None:
            return None
        return int.from_bytes(self.raw_version.to_bytes(4, BYTE_ORDERS_FIRST), self.byte_order)  # type: ignore[arg-type]

    @version_word.setter
    def version_word(self, word: int | None) -> None:
        self.raw_version = (
            None if word is None else int.from_bytes((word % 2**32).to_bytes(4, self.byte_order), BYTE_ORDERS_FIRST)  # type: ignore[arg-type]
        )

    # -- metadata -------------------------------------------------------------------------------------------
    def value_bytes(self, vtype, value, item_type=None) -> bytes:
        """:func:`encode_value` in this file's version and byte order."""
        return encode_value(vtype, value, version=self.version, byte_order=self.byte_order, item_type=item_type)

    def index(self, key: str | bytes) -> int:
        """Position of the first KV pair with ``key``."""
        key = _key_bytes(key)
        return next(i for i, kv in enumerate(self.kvs) if _as_str(kv.key).data == key)

    def set(self, key: str | bytes, vtype, value, item_type=None) -> "RawFile":
        """Replace the value of ``key`` (kept in place) or append the pair, encoded by the permissive build."""
        vt = VT[vtype] if isinstance(vtype, str) else vtype
        return self.set_raw(key, vt, self.value_bytes(vt, value, item_type))

    def set_raw(self, key: str | bytes, vtype, payload: bytes) -> "RawFile":
        """Replace or append a pair with a hand-made payload (written as given)."""
        key_b = _key_bytes(key)
        kv = RawKV(key_b, VT[vtype] if isinstance(vtype, str) else vtype, fieldtree.Raw(bytes(payload)))
        try:
            self.kvs[self.index(key_b)] = kv
        except StopIteration:
            self.kvs.append(kv)
        return self

    def remove(self, key: str | bytes) -> "RawFile":
        """Drop the pair(s) with ``key``."""
        key_b = _key_bytes(key)
        self.kvs = [kv for kv in self.kvs if _as_str(kv.key).data != key_b]
        return self

    def tensor(self, name: str | bytes) -> RawTI:
        """The tensor info called ``name``."""
        name_b = _key_bytes(name)
        return next(t for t in self.tensors if _as_str(t.name).data == name_b)

    def append_tensor(self, name: str | bytes, type_name: str, dims: list[int], raw: bytes) -> "RawFile":
        """Add a tensor at the canonical offset after the current data (the data section padded to the
        alignment); a file of blobs gets the bytes as the new tensor's blob."""
        a = self.alignment
        end = max((t.offset + tensor_nbytes(t) for t in self.tensors), default=0)
        offset = align_offset(end, a)
        tid = next(t.id for t in _spec.tensor_types() if t.name == type_name)
        if self.data is None:
            self.tensors.append(RawTI(_key_bytes(name), list(dims), tid, offset, bytes(raw)))
            return self
        data = self.data[:offset].ljust(offset, b"\0") + raw
        self.data = data.ljust(align_offset(len(data), a), b"\0")
        self.tensors.append(RawTI(_key_bytes(name), list(dims), tid, offset))
        return self

    # -- widths ---------------------------------------------------------------------------------------------
    @property
    def wide(self) -> int:
        """Width of counts, string lengths, array lengths and dimensions (4 in v1, else 8)."""
        return self.family.primitive_width("count_t")

    @property
    def family(self) -> structs.StructFamily:
        """The generated struct family of this file's version and byte order."""
        return structs.family(self.version, self.byte_order)

    @property
    def bo(self) -> str:
        """struct byte-order prefix."""
        return structs.byte_order(self.byte_order).struct

    def copy(self) -> "RawFile":
        """A copy whose lists can be edited without touching this one (without the intents, which name the
        records of this one); a file holding its data section as one blob is copied whole."""
        if self.data is not None:
            return _copy.deepcopy(replace(self, intents=[]))
        return replace(self, kvs=[replace(k) for k in self.kvs], tensors=[replace(t) for t in self.tensors], intents=[])

    def fields(self) -> "RawFile":
        """This file's head with the tensor data left to the tensors' blobs (none yet): the same records, no
        data section, padding, tail or truncation -- what a breakage of :mod:`.mutations` edits."""
        return RawFile(
            self.version,
            self.byte_order,
            list(self.kvs),
            list(self.tensors),
            magic=self.magic,
            raw_version=self.raw_version,
            n_kv=self.n_kv,
            n_tensors=self.n_tensors,
        )

    # -- layout ---------------------------------------------------------------------------------------------
    @property
    def alignment(self) -> int:
        """ALIGNMENT as a reader computes it: the first general.alignment when it is a non-zero UINT32 (a number
        or its encoded payload), else 32."""
        for kv in self.kvs:
            if _as_str(kv.key).data == ALIGNMENT_KEY:
                value = kv.value
                if kv.vtype == UINT32 and isinstance(value, fieldtree.Raw):
                    value = int.from_bytes(value.data[:4], self.byte_order)  # type: ignore[arg-type]
                if kv.vtype == UINT32 and isinstance(value, int) and value > 0:
                    return value
                return DEFAULT_ALIGNMENT
        return DEFAULT_ALIGNMENT

    def relayout(self) -> "RawFile":
        """Lay the tensors out canonically for the current alignment (in order, each at the aligned end of the
        previous one), keeping their bytes (the blobs, or their ranges of :attr:`data`)."""
        a = self.alignment
        if self.data is not None:
            body = b""
            for t in self.tensors:
                raw = self.data[t.offset : t.offset + tensor_nbytes(t)]
                t.offset = len(body)
                body = (body + raw).ljust(align_offset(len(body) + len(raw), a), b"\0")
            self.data = body
            return self
        pos = 0
        for t in self.tensors:
            t.offset = pos
            pos = align(pos + len(t.blob), a)
        return self

    # -- encoding -------------------------------------------------------------------------------------------
    def head_value(self) -> dict:
        """The head as a value for the generated family's permissive build (overrides written as given)."""

        def count(n: int | None, records: list, name: str) -> Any:
            value = len(records) if n is None else n
            if name not in self.swapped_counts:
                return value
            width = self.family.primitive_width("count_t")
            other = structs.byte_order(self.byte_order).other.name
            return fieldtree.Raw((value % (1 << (8 * width))).to_bytes(width, other))

        header = {
            "magic": fieldtree.Raw(self.magic),
            "version": self.version
            if self.raw_version is None
            else fieldtree.Raw(self.raw_version.to_bytes(4, BYTE_ORDERS_FIRST)),  # type: ignore[arg-type]
            "tensor_count": count(self.n_tensors, self.tensors, "tensor_count"),
            "metadata_kv_count": count(self.n_kv, self.kvs, "metadata_kv_count"),
        }
        kvs = [
            {"key": _string_value(kv.key), "value_type": kv.vtype, "value": _value(kv.vtype, kv.value)}
            for kv in self.kvs
        ]
        infos = [
            {
                "name": _string_value(t.name),
                "n_dimensions": len(t.dims) if t.n_dims is None else t.n_dims,
                "dimensions": list(t.dims),
                "type": t.type,
                "offset": t.offset,
            }
            for t in self.tensors
        ]
        return {"header": header, "metadata_kv": kvs, "tensor_infos": infos}

    def encode(self, with_marks: bool = True) -> tuple[bytes, list[Mark], int]:
        """``(bytes, marks, head_end)``: the file, every field's location, the end of the tensor infos.

        The head is written by the generated family's permissive build; the marks are the leaves of the tree it
        returns, each with the rule a file ending inside that field breaks (none when ``with_marks`` is false),
        then the head padding, the tensors' bytes and the final padding of the data section.
        """
        head, tree = self.family.build("file_head", self.head_value())
        out = bytearray(head)
        marks = _head_marks(tree, self.family) if with_marks else []
        head_end = len(out)
        if self.data is not None:  # the data section as one blob, after the padding as given
            pad = self._head_padding(head_end)
            out.extend(pad)
            if pad:
                marks.append(Mark(head_end, len(out), "padding", "DATA-START"))
            if self.data:
                marks.append(Mark(len(out), len(out) + len(self.data), "tensor_data", "DATA-BOUNDS"))
            out.extend(self.data)
            return self._finish(out, marks, head_end)
        if self.tensors:
            a = self.alignment
            start = align(head_end, a)
            padding = Mark(head_end, start, "padding", "DATA-START")
            if start - head_end > WRITE_LIMIT:  # a huge alignment: the file ends inside the padding
                out.extend(bytes([self.pad_byte]) * WRITE_LIMIT)
                marks.append(padding)
                return self._finish(out, marks, head_end)
            out.extend(bytes([self.pad_byte]) * (start - head_end))
            if start > head_end:
                marks.append(padding)
            ends = [t.offset + len(t.blob) for t in self.tensors if t.offset + len(t.blob) <= WRITE_LIMIT]
            last = max(ends, default=0)
            data = bytearray(bytes([self.pad_byte]) * align(last, a))
            for t in self.tensors:
                if t.offset + len(t.blob) <= WRITE_LIMIT:
                    data[t.offset : t.offset + len(t.blob)] = t.blob
            out.extend(data)
            if last:
                marks.append(Mark(start, start + last, "tensor_data", "DATA-BOUNDS"))
            if len(out) > start + last:
                marks.append(Mark(start + last, len(out), "tensor_data.padding", "DATA-TRAILING-PAD"))
        return self._finish(out, marks, head_end)

    def head(self) -> bytes:
        """Header, KV pairs and tensor infos, written by the generated family's permissive build."""
        return self.family.build("file_head", self.head_value())[0]

    def _head_padding(self, head_end: int) -> bytes:
        if self.head_pad is not None:
            return self.head_pad
        return bytes([self.pad_byte]) * (align_offset(head_end, self.alignment) - head_end) if self.tensors else b""

    def head_padding(self) -> bytes:
        """The padding written after the head with :attr:`data` (:attr:`head_pad`, or zeros to the alignment when
        there are tensors)."""
        return self._head_padding(len(self.head()))

    def to_bytes(self) -> bytes:
        """The file."""
        return self.encode(with_marks=False)[0]

    def layout(self) -> "Layout":
        """Where the records and sections of the encoded file lie (before :attr:`truncate` applies)."""
        head, tree = self.family.build("file_head", self.head_value())
        records = {}
        for name, items in (("metadata_kv", self.kvs), ("tensor_infos", self.tensors)):
            for i, record in enumerate(items):
                node = tree.find(f"{name}[{i}]")
                records[id(record)] = (node.start, node.end)
        size = len(replace(self, truncate=None).encode(with_marks=False)[0])
        tensor_infos = tree.find("tensor_infos").start if "tensor_infos" in tree.fields else len(head)
        return Layout(records, tensor_infos, len(head), size - len(self.tail), size)

    def _finish(self, out: bytearray, marks: list[Mark], head_end: int) -> tuple[bytes, list[Mark], int]:
        """Append the tail, apply the truncation: the result of :meth:`encode`."""
        out.extend(self.tail)
        data = bytes(out)
        if self.truncate is not None:
            data = data[: self.truncate]
        return data, marks, head_end


def _string_value(s: bytes | Str) -> dict:
    s = _as_str(s)
    return {"len": s.declared, "data": s.data}


def _value(vtype: int, v: Any) -> Any:
    """A RawKV value as a value of the permissive build (a :class:`~gguf_construct.format.fieldtree.Raw` payload is
    written as it is, whatever the type)."""
    if isinstance(v, fieldtree.Raw):
        return v
    if vtype == STRING:
        return _string_value(v)
    if vtype == ARRAY:
        return {"type": v.item_type, "len": v.declared, "data": [_value(v.item_type, x) for x in v.items]}
    if vtype in SCALAR_FORMATS:
        return v
    return fieldtree.Raw(bytes(v))


@dataclass(frozen=True)
class Layout:
    """Byte positions in an encoded :class:`RawFile`: each record's [start, end) by ``id()`` of its
    :class:`RawKV` / :class:`RawTI`, where the tensor infos start, where the head and the data section end, and
    the whole size (tail included, truncation not applied)."""

    records: dict[int, tuple[int, int]]
    tensor_infos: int
    head_end: int
    data_end: int
    size: int


def _head_marks(tree: fieldtree.Node, fam: structs.StructFamily) -> list[Mark]:
    """The written leaf fields of the head, each with its truncation rule and the count pre-checks of the arrays
    around it (offset of the elements, bytes their count needs at least)."""
    arrays = []
    for n in tree.walk():
        if n.type == "gguf_array" and {"type", "len", "data"} <= set(n.fields):
            item = n.fields["type"].value
            if item in structs.value_types():
                data = n.fields["data"]
                arrays.append((data.path, data.start, n.fields["len"].value * fam.case_min_size(item)))
    marks = []
    for n in tree.walk():
        if n.fields or n.end <= n.start or n is tree:
            continue
        pre = tuple((start, need) for path, start, need in arrays if n.path == path or n.path.startswith(path + "["))
        marks.append(Mark(n.start, n.end, n.path, _truncation_rule(n), pre))
    return marks


def _truncation_rule(node: fieldtree.Node) -> str:
    """The rule a file ending inside this written field breaks (the rules as the spec declares them for the
    fields, :mod:`gguf_construct.format.fieldrules`)."""
    if node.type == "bytes":  # a string's payload
        return fieldrules.truncated_rule("gguf_string")
    if node.type == "raw":  # the value of an unknown type, or the elements of an array of one
        return (
            fieldrules.field_rule("gguf_array", "data", "selector")
            if node.path.endswith(".data")
            else fieldrules.field_rule("metadata_kv", "value", "selector")
        )
    if node.item_width is not None and node.path.endswith(".data"):  # the elements of an array of numbers
        return fieldrules.field_rule("gguf_array", "data", "count")
    section = node.path.split(".")[0].split("[")[0]  # header, metadata_kv or tensor_infos: a field of file_head
    return fieldrules.truncated_rule(structs.field_spec("file_head", section)["type"])


# -- from a valid document -------------------------------------------------------------------------------------
def _value_from(gv) -> tuple[int, Any]:
    vt = int(gv.type)
    if vt == STRING:
        return vt, gv.value.encode("utf-8", "surrogateescape")
    if vt == BOOL:
        return vt, int(bool(gv.value))
    if vt != ARRAY:
        return vt, gv.value
    item = int(gv.item_type)
    if item == ARRAY:
        return vt, Arr(item, [_value_from(inner)[1] for inner in gv.value])
    if item == STRING:
        return vt, Arr(item, [s.encode("utf-8", "surrogateescape") for s in gv.value])
    vals = gv.value.tolist() if hasattr(gv.value, "tolist") else list(gv.value)
    if item == BOOL:
        vals = [int(bool(v)) for v in vals]
    return vt, Arr(item, vals)


def from_document(doc) -> RawFile:
    """The :class:`RawFile` of a :class:`~gguf_construct.strategies.Document` (canonical layout)."""
    raw = RawFile(doc.version, doc.byte_order)
    for key, gv in doc.metadata:
        vt, v = _value_from(gv)
        raw.kvs.append(RawKV(key.encode("utf-8", "surrogateescape"), vt, v))
    for name, gtype, shape, blob in doc.tensors:
        raw.tensors.append(RawTI(name.encode("utf-8", "surrogateescape"), list(shape), int(gtype), 0, bytes(blob)))
    raw.relayout()
    return raw


def marks_at(marks: Iterable[Mark], cut: int) -> Mark | None:
    """The field a file cut at ``cut`` ends inside (or just before), if any."""
    for m in marks:
        if m.start <= cut < m.end:
            return m
    return None
