"""A field-level model of a GGUF file for breaking it on purpose, with an independent labelling oracle.

:class:`RawFile` holds every field of a file as plain values (header words, keys as raw bytes, typed values,
tensor infos, tensor blobs) so that a mutation can change exactly one field — including into something no valid
writer produces (a bad type id, a string length past the end, a count that cannot be satisfied).
:meth:`RawFile.encode` writes it and returns the byte offset of every field (:class:`Mark`).

:func:`expected_rules` derives, from the fields alone and the rules of ``spec/rules.yaml``, the set of rule IDs
a conformance checker must report for the encoded bytes (optionally truncated).  It is written from the spec's
definitions, not from the checker's code, so the two can be tested against each other.  Layouts are taken from
``spec/gguf.yaml`` (widths of the version aliases) and ``spec/tensor_types`` (block sizes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from .. import structs
from ..checker.security import alignment_too_large, data_size_overflow
from .. import fieldtree
from ..enums import GGUFValueType
from ..reader import ALIGNMENT_KEY as _ALIGNMENT_KEY
from ..reader import DEFAULT_ALIGNMENT, LEGACY_MAGICS, MAX_DIMS
from ..reader import MAX_KEY_BYTES as MAX_KEY
from ..reader import MAX_NAME_BYTES as MAX_NAME
from ..spec import tensor_type_by_id

__all__ = ["Str", "Arr", "RawKV", "RawTI", "RawFile", "Mark", "expected_rules", "from_document", "align",
           "VT", "SCALAR_FORMATS", "LEGACY_MAGICS"]

VT = {vt.name: int(vt) for vt in GGUFValueType}  # the enum generated from the spec, as plain ints
ARRAY, STRING, BOOL, UINT32 = VT["ARRAY"], VT["STRING"], VT["BOOL"], VT["UINT32"]
# struct format and size of each fixed-size value type, from the spec's primitive encodings
_PRIM_FMT = {"u1": "B", "i1": "b", "u2": "H", "i2": "h", "u4": "I", "i4": "i", "u8": "Q", "i8": "q", "f4": "f",
             "f8": "d"}
SCALAR_FORMATS = {vt["id"]: _PRIM_FMT[vt["encoding"]] for vt in structs.container_spec()["value_types"]
                  if vt.get("encoding")}
_SINCE = {vt["id"]: vt.get("since", 1) for vt in structs.container_spec()["value_types"]}
ALIGNMENT_KEY = _ALIGNMENT_KEY.encode()
WRITE_LIMIT = 1 << 20  # tensor data further than this into the data section is not written (offset mutations)


def align(offset: int, alignment: int) -> int:
    """``offset`` rounded up to a multiple of ``alignment`` (spec: align_offset)."""
    return offset + (alignment - offset % alignment) % alignment


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
    """One tensor info plus the tensor's bytes (``blob``), written at ``offset`` in the data section."""

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


@dataclass
class RawFile:
    """Every field of a GGUF file, editable one by one."""

    version: int
    byte_order: str
    kvs: list[RawKV] = field(default_factory=list)
    tensors: list[RawTI] = field(default_factory=list)
    magic: bytes = b"GGUF"
    raw_version: int | None = None  # the version word as read little-endian, overriding version/byte order
    n_tensors: int | None = None
    n_kv: int | None = None
    swapped_counts: frozenset = frozenset()  # header count fields written in the other byte order
    pad_byte: int = 0
    tail: bytes = b""
    truncate: int | None = None  # keep only this many bytes

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
        return "<" if self.byte_order == "little" else ">"

    def copy(self) -> "RawFile":
        """A copy whose lists can be edited without touching this one."""
        return replace(self, kvs=[replace(k) for k in self.kvs], tensors=[replace(t) for t in self.tensors])

    # -- layout ---------------------------------------------------------------------------------------------
    def alignment(self) -> int:
        """ALIGNMENT: the first general.alignment when it is a non-zero UINT32, else 32."""
        for kv in self.kvs:
            if _as_str(kv.key).data == ALIGNMENT_KEY:
                if kv.vtype == UINT32 and isinstance(kv.value, int) and kv.value > 0:
                    return kv.value
                return DEFAULT_ALIGNMENT
        return DEFAULT_ALIGNMENT

    def relayout(self) -> None:
        """Give the tensors canonical offsets for the current alignment (in order, each aligned)."""
        a = self.alignment()
        pos = 0
        for t in self.tensors:
            t.offset = pos
            pos = align(pos + len(t.blob), a)

    # -- encoding -------------------------------------------------------------------------------------------
    def head_value(self) -> dict:
        """The head as a value for the generated family's permissive build (overrides written as given)."""
        def count(n: int | None, records: list, name: str) -> Any:
            value = len(records) if n is None else n
            if name not in self.swapped_counts:
                return value
            width = self.family.primitive_width("count_t")
            other = "big" if self.byte_order == "little" else "little"
            return fieldtree.Raw((value % (1 << (8 * width))).to_bytes(width, other))

        header = {"magic": fieldtree.Raw(self.magic),
                  "version": self.version if self.raw_version is None
                  else fieldtree.Raw(struct.pack("<I", self.raw_version)),
                  "tensor_count": count(self.n_tensors, self.tensors, "tensor_count"),
                  "metadata_kv_count": count(self.n_kv, self.kvs, "metadata_kv_count")}
        kvs = [{"key": _string_value(kv.key), "value_type": kv.vtype, "value": _value(kv.vtype, kv.value)}
               for kv in self.kvs]
        infos = [{"name": _string_value(t.name), "n_dimensions": len(t.dims) if t.n_dims is None else t.n_dims,
                  "dimensions": list(t.dims), "type": t.type, "offset": t.offset} for t in self.tensors]
        return {"header": header, "metadata_kv": kvs, "tensor_infos": infos}

    def encode(self, with_marks: bool = True) -> tuple[bytes, list[Mark], int]:
        """``(bytes, marks, head_end)``: the file, every field's location, the end of the tensor infos.

        The head is written by the generated family's permissive build; the marks are the leaves of the tree it
        returns, each with the rule a file ending inside that field breaks (none when ``with_marks`` is false).
        """
        head, tree = self.family.build("file_head", self.head_value())
        out = bytearray(head)
        marks = [Mark(n.start, n.end, n.path, _truncation_rule(n)) for n in tree.walk()
                 if not n.fields and n.end > n.start and n is not tree] if with_marks else []
        head_end = len(out)
        if self.tensors:
            a = self.alignment()
            start = align(head_end, a)
            if start - head_end > WRITE_LIMIT:  # a huge alignment: the file ends inside the padding
                out.extend(bytes([self.pad_byte]) * WRITE_LIMIT)
                marks.append(Mark(head_end, start, "padding", "DATA-START"))
                return self._finish(out, marks, head_end)
            out.extend(bytes([self.pad_byte]) * (start - head_end))
            marks.append(Mark(head_end, start, "padding", "DATA-START"))
            ends = [t.offset + len(t.blob) for t in self.tensors if t.offset + len(t.blob) <= WRITE_LIMIT]
            size = align(max(ends, default=0), a)
            data = bytearray(bytes([self.pad_byte]) * size)
            for i, t in enumerate(self.tensors):
                if t.offset + len(t.blob) <= WRITE_LIMIT:
                    data[t.offset:t.offset + len(t.blob)] = t.blob
            out.extend(data)
            marks.append(Mark(start, len(out), "tensor_data", "DATA-BOUNDS"))
        return self._finish(out, marks, head_end)

    def _finish(self, out: bytearray, marks: list[Mark], head_end: int) -> tuple[bytes, list[Mark], int]:
        """Append the tail, apply the truncation: the result of :meth:`encode`."""
        out.extend(self.tail)
        data = bytes(out)
        if self.truncate is not None:
            data = data[:self.truncate]
        return data, marks, head_end


def _string_value(s: bytes | Str) -> dict:
    s = _as_str(s)
    return {"len": s.declared, "data": s.data}


def _value(vtype: int, v: Any) -> Any:
    """A RawKV value as a value of the permissive build."""
    if vtype == STRING:
        return _string_value(v)
    if vtype == ARRAY:
        return {"type": v.item_type, "len": v.declared, "data": [_value(v.item_type, x) for x in v.items]}
    if vtype in SCALAR_FORMATS:
        return v
    return fieldtree.Raw(bytes(v))


_SECTION_RULES = {"header": "HDR-TRUNC", "metadata_kv": "KV-TRUNC", "tensor_infos": "TI-TRUNC"}


def _truncation_rule(node: fieldtree.Node) -> str:
    """The rule a file ending inside this written field breaks."""
    if node.type == "bytes":  # a string's payload
        return "STR-EOF"
    if node.type == "raw":  # the value of an unknown type, or the elements of an array of one
        return "ARR-TYPE" if node.path.endswith(".data") else "KV-TYPE"
    if node.item_width is not None and node.path.endswith(".data"):  # the elements of an array of numbers
        return "ARR-EOF"
    return _SECTION_RULES[node.path.split(".")[0].split("[")[0]]


def _min_size(vtype: int, fam: structs.StructFamily) -> int:
    """Smallest encoding of one value of ``vtype`` in ``fam`` (0 for invalid types)."""
    return fam.case_min_size(vtype) if vtype in structs.value_types() else 0


def _pack_one(bo: str, vtype: int, v) -> bytes:
    fmt = SCALAR_FORMATS[vtype]
    if fmt in "fd":
        return struct.pack(bo + fmt, float(v))
    bits = struct.calcsize(fmt) * 8
    if fmt.islower() and fmt not in "fd":  # signed: wrap into range
        v = (int(v) + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
    else:
        v = int(v) % 2**bits
    return struct.pack(bo + fmt, v)


def _pack_many(bo: str, vtype: int, items) -> bytes:
    return b"".join(_pack_one(bo, vtype, v) for v in items)


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


# -- the labelling oracle --------------------------------------------------------------------------------------
def _utf8_ok(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _string_rules(s: bytes) -> set[str]:
    out = set()
    if not _utf8_ok(s):
        out.add("STR-UTF8")
    if b"\0" in s:
        out.add("STR-NUL")
    return out


_SEG_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-") | frozenset(range(0x80, 0x100))


def key_rules(key: bytes) -> set[str]:
    """Rules a key breaks on its own (syntax, length, UTF-8)."""
    out = _string_rules(key)
    if not key:
        return out | {"KV-KEY-EMPTY"}
    if len(key) > MAX_KEY:
        out.add("KV-KEY-LEN")
    if any(b >= 0x80 for b in key):
        out.add("KV-KEY-ASCII")
    segs = key.split(b".")
    if any(not set(seg) <= _SEG_CHARS for seg in segs):
        out.add("KV-KEY-CHARSET")
    if b"" in segs:
        out.add("KV-KEY-SEGMENT")
    if b"-" in key:
        out.add("KV-KEY-HYPHEN")
    if b"." not in key:
        out.add("KV-KEY-FLAT")
    return out


def _array_rules(a: Arr, depth: int, version: int) -> tuple[set[str], int]:
    out: set[str] = set()
    deepest = depth
    if _SINCE.get(a.item_type, 1) > version:
        out.add("KV-TYPE-V1")
    if a.item_type == BOOL and any(int(v) > 1 for v in a.items):
        out.add("KV-BOOL")
    if a.item_type == STRING:
        for s in a.items:
            out |= _string_rules(_as_str(s).data)
    if a.item_type == ARRAY:
        for inner in a.items:
            r, d = _array_rules(inner, depth + 1, version)
            out |= r
            deepest = max(deepest, d)
    return out, deepest


def _value_ok(vtype: int, v: Any, remaining: int, fam: structs.StructFamily) -> tuple[str | None, int]:
    """(rule that stops the parse, or None; encoded size) for a value with ``remaining`` bytes available."""
    if vtype in SCALAR_FORMATS:
        n = _min_size(vtype, fam)
        return (None if n <= remaining else "KV-TRUNC"), n
    if vtype == STRING:
        s = _as_str(v)
        w = fam.min_sizes["gguf_string"]
        if remaining < w:
            return "KV-TRUNC", 0
        if s.declared > remaining - w:
            return "STR-EOF", 0
        return None, w + s.declared
    if vtype == ARRAY:
        head = fam.min_sizes["gguf_array"]
        if remaining < head:
            return "KV-TRUNC", 0
        if v.item_type not in SCALAR_FORMATS and v.item_type not in (STRING, ARRAY):
            return ("ARR-TYPE-EMPTY" if v.declared == 0 else "ARR-TYPE"), head
        left = remaining - head
        per = _min_size(v.item_type, fam)
        if v.declared * per > left:
            return "ARR-EOF", 0
        if v.item_type in SCALAR_FORMATS:
            return None, head + v.declared * per
        used = head
        for item in v.items[:v.declared]:
            rule, n = _value_ok(v.item_type, item, remaining - used, fam)
            if rule:  # inside an array nothing can be skipped, not even an empty array of a bad type
                return ("ARR-TYPE" if rule == "ARR-TYPE-EMPTY" else rule), 0
            used += n
        return None, used
    return "KV-TYPE", 0


def tensor_nbytes(t: RawTI, alignment: int) -> int | None:
    """Byte size of a tensor's data, or None when it is undefined (bad type, shape or overflow)."""
    spec = tensor_type_by_id().get(t.type)
    if any(d >= 2**63 for d in t.dims) or spec is None or not spec.is_current:
        return None
    n = 1
    for d in t.dims:
        n *= d
    if n >= 2**63:
        return None
    ne0 = t.dims[0] if t.dims else 1
    if ne0 % spec.block_size:
        return None
    nbytes = n // spec.block_size * spec.type_size
    if nbytes >= 2**64 or align(nbytes, alignment) >= 2**64:
        return None
    return nbytes


def tensor_rules(t: RawTI, alignment: int) -> set[str]:
    """Rules one complete tensor info breaks on its own."""
    out = set()
    name = _as_str(t.name).data
    out |= _string_rules(name)
    if len(name) > MAX_NAME:
        out.add("TI-NAME-LEN")
    elif len(name) == MAX_NAME:
        out.add("TI-NAME-64")
    if not name:
        out.add("TI-NAME-EMPTY")
    if len(t.dims) > MAX_DIMS:
        out.add("TI-NDIMS")
    if not t.dims:
        out.add("TI-NDIMS-ZERO")
    if any(d >= 2**63 for d in t.dims):
        out.add("TI-DIM-RANGE")
    if any(d == 0 for d in t.dims):
        out.add("TI-DIM-ZERO")
    spec = tensor_type_by_id().get(t.type)
    current = spec is not None and spec.is_current
    if not current:
        out.add("TI-TYPE")
    if not any(d >= 2**63 for d in t.dims):
        n = 1
        for d in t.dims:
            n *= d
        if n >= 2**63:
            out.add("TI-NELEM-OVERFLOW")
        elif current:
            nbytes = -(-n // spec.block_size) * spec.type_size
            if nbytes >= 2**64 or align(nbytes, alignment) >= 2**64:
                out.add("TI-NBYTES-OVERFLOW")
    if current:
        ne0 = t.dims[0] if t.dims else 1
        if ne0 < 2**63 and ne0 % spec.block_size:
            out.add("TI-BLOCK")
    if t.offset % alignment:
        out.add("TI-OFFSET-ALIGN")
    return out


def alignment_rules(vtype: int, value: Any) -> set[str]:
    """Rules a ``general.alignment`` value of type ``vtype`` breaks."""
    if vtype != UINT32:
        return {"ALIGN-TYPE"}
    a = int(value)
    if a == 0:
        return {"ALIGN-ZERO"}
    out = set()
    if a % 8:
        out.add("ALIGN-MULT8")
    if a & (a - 1):
        out.add("ALIGN-POW2")
    if alignment_too_large(a):
        out.add("SEC-ALIGN-HUGE")
    return out


def _kv_rules(raw: RawFile, kvs: list[RawKV], complete: bool) -> set[str]:
    out: set[str] = set()
    seen: set[bytes] = set()
    for kv in kvs:
        key = _as_str(kv.key).data
        out |= key_rules(key)
        if key in seen:
            out.add("KV-KEY-DUP")
        seen.add(key)
        if _SINCE.get(kv.vtype, 1) > raw.version:
            out.add("KV-TYPE-V1")
        if kv.vtype == BOOL and int(kv.value) > 1:
            out.add("KV-BOOL")
        if kv.vtype == STRING:
            out |= _string_rules(_as_str(kv.value).data)
        if kv.vtype == ARRAY:
            r, depth = _array_rules(kv.value, 1, raw.version)
            out |= r
            if kv.value.item_type == ARRAY:
                out.add("ARR-NESTED")
            if depth > 2:
                out.add("ARR-DEPTH")
    first = next((kv for kv in kvs if _as_str(kv.key).data == ALIGNMENT_KEY), None)
    if first is not None:
        out |= alignment_rules(first.vtype, first.value)
    elif complete:
        out.add("ALIGN-DEFAULT")
    return out


def _header_rules(raw: RawFile, data: bytes) -> tuple[set[str], int | None, str | None]:
    """(rules, version, byte order) from the first bytes, as a reader detects them."""
    if len(data) < 4:
        return {"HDR-TRUNC"}, None, None
    if data[:4] != b"GGUF":
        return {"HDR-MAGIC"} | ({"HDR-MAGIC-LEGACY"} if data[:4] in LEGACY_MAGICS else set()), None, None
    if len(data) < 8:
        return {"HDR-TRUNC"}, None, None
    version, bo = structs.detect(data[:8])
    if version not in (1, 2, 3):
        return {"HDR-VERSION"}, None, None
    out = set()
    if bo == "big":
        out.add("HDR-ENDIAN")
        if version < 3:
            out.add("HDR-BE-PRE-V3")
    if version == 1:
        out.add("HDR-V1-UNSUPPORTED")
    if version != 3:
        out.add("HDR-VER-LEGACY")
    return out, version, bo


def expected_rules(raw: RawFile) -> set[str]:
    """Every rule ID the encoded (and possibly truncated) file breaks or triggers, by the spec's definitions.

    Includes warnings and infos of the container layer (header facts, key syntax, alignment, tensor infos, data
    layout); the metadata-schema (META-*), naming (NAME-*), KV-NAMESPACE, TI-TYPE-NEW and --data rules are not
    predicted.
    The file's version and byte order must be those of ``raw`` when its header is valid.
    """
    data, _, head_end = raw.encode(with_marks=False)
    size = len(data)
    out, version, _ = _header_rules(raw, data)
    if version is None:
        return out
    w, fam = raw.wide, raw.family
    hsize = fam.min_sizes["header"]
    if size < hsize:
        return out | {"HDR-TRUNC"}
    header = fam.read("header", data[:hsize]).root
    n_ti, n_kv = header["tensor_count"].value, header["metadata_kv_count"].value
    min_kv, min_ti = fam.min_sizes["metadata_kv"], fam.min_sizes["tensor_info"]
    remaining = size - hsize
    if n_kv >= 2**63 or n_kv * min_kv > remaining:
        return out | {"HDR-COUNT"}
    counts_ok = not (n_ti >= 2**63 or n_ti * min_ti > remaining - n_kv * min_kv)
    if not counts_ok:
        out.add("HDR-COUNT")
    assert n_kv == len(raw.kvs) and (n_ti == len(raw.tensors) or not counts_ok), "counts must match the records"
    # KV records: walk them as a reader does, stopping at the first that cannot be read
    pos = hsize
    parsed: list[RawKV] = []
    stop = None
    for kv in raw.kvs:
        key = _as_str(kv.key)
        if size - pos < w:
            stop = "KV-TRUNC"
            break
        if key.declared > size - pos - w:
            stop = "STR-EOF"
            break
        pos += w + key.declared
        if size - pos < 4:
            stop = "KV-TRUNC"
            break
        pos += 4
        rule, n = _value_ok(kv.vtype, kv.value, size - pos, fam)
        if rule == "ARR-TYPE-EMPTY":  # an empty top-level array of a bad type: its length is known, go on
            out.add("ARR-TYPE")
            pos += n
            continue
        if rule:
            stop = rule
            break
        pos += n
        parsed.append(kv)
    out |= _kv_rules(raw, parsed, stop is None)
    if stop:
        return out | {stop}
    if not counts_ok:
        return out
    alignment = raw.alignment()
    ok_tensors: list[RawTI] = []
    for t in raw.tensors:
        name = _as_str(t.name)
        nd = len(t.dims) if t.n_dims is None else t.n_dims
        if size - pos < w:
            stop = "TI-TRUNC"
        elif name.declared > size - pos - w:
            stop = "STR-EOF"
        else:
            pos += w + name.declared
            if size - pos < 4:
                stop = "TI-TRUNC"
            elif nd * w > size - pos - 4:
                stop = "TI-NDIMS" if nd > MAX_DIMS else "TI-TRUNC"
            elif size - pos - 4 - nd * w < 12:
                stop = "TI-TRUNC"
            else:
                pos += 4 + nd * w + 12
        if stop:
            break
        ok_tensors.append(t)
    names: set[bytes] = set()
    for t in ok_tensors:
        out |= tensor_rules(t, alignment)
        n = _as_str(t.name).data
        if n in names:
            out.add("TI-NAME-DUP")
        names.add(n)
    if stop:
        return out | {stop}
    assert pos == head_end
    if raw.tensors and data_size_overflow([tensor_nbytes(t, alignment) for t in raw.tensors], alignment):
        out.add("SEC-DATA-SIZE-OVERFLOW")
    return out | layout_rules(raw, data, head_end, alignment)


def layout_rules(raw: RawFile, data: bytes, head_end: int, alignment: int) -> set[str]:
    """Data-section rules: start, bounds, overlap, canonical order, padding, trailing bytes."""
    out: set[str] = set()
    size = len(data)
    start = align(head_end, alignment)
    tensors = raw.tensors
    if tensors and start > size:
        return {"DATA-START"}
    sizes = [tensor_nbytes(t, alignment) for t in tensors]
    avail = size - start
    ready = [(t, n) for t, n in zip(tensors, sizes) if n is not None]
    inb = [(t, n) for t, n in ready if t.offset + n <= avail]
    if len(inb) != len(ready) or any(n is None and t.offset > avail for t, n in zip(tensors, sizes)):
        out.add("DATA-BOUNDS")
    reach = -1
    for i, t, n in sorted(((i, t, n) for i, (t, n) in enumerate(zip(tensors, sizes)) if n), key=lambda x:
                          (x[1].offset, x[0])):
        if t.offset < reach:
            out.add("DATA-OVERLAP")
        reach = max(reach, t.offset + n)
    expected = 0
    for t, n in zip(tensors, sizes):
        if t.offset != expected:
            out.add("DATA-ORDER")
        if n is None:
            break
        expected = t.offset + align(n, alignment)
    # padding ranges (absolute) that should be zero
    if not tensors:
        ranges = [(head_end, min(size, start))]
    else:
        ranges = [(head_end, start)]
        srt = sorted(inb, key=lambda x: x[0].offset)
        for i, (t, n) in enumerate(srt):
            end = t.offset + n
            stop = align(end, alignment)
            if i + 1 < len(srt):
                stop = min(stop, srt[i + 1][0].offset)
            if stop > end:
                ranges.append((start + end, start + stop))
    if any(any(data[a:min(b, size)]) for a, b in ranges):
        out.add("DATA-PAD-ZERO")
    padded = None
    if tensors and len(ready) == len(tensors):
        padded = start + align(max(t.offset + n for t, n in ready), alignment)
    if tensors and padded is not None and len(inb) == len(tensors) and padded > size:
        out.add("DATA-TRAILING-PAD")
    end = padded if tensors else start
    if end is not None and size > end:
        out.add("DATA-TRAILING-BYTES")
    return out


def marks_at(marks: Iterable[Mark], cut: int) -> Mark | None:
    """The field a file cut at ``cut`` ends inside (or just before), if any."""
    for m in marks:
        if m.start <= cut < m.end:
            return m
    return None
