"""The structural walk: read a file record by record and keep going after problems.

Each KV pair and tensor info is parsed with the generated *compiled* struct of its type; when that fails the
same record is read again with the family's located, tolerant read (:mod:`gguf_construct.format.fieldtree`), whose
problem names the offset, field path and rule, and whose partial record holds the values the finding reports.
Offsets of fields come from the field tree (:meth:`KV.at`, :meth:`TensorInfo.at`), never from hand arithmetic.
A record whose length cannot be known ends the walk of its section (one finding, no cascade): the KV pairs after
it and the tensor infos cannot be located.  Everything the walk reads goes into a
:class:`Context` for the rule predicates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Callable

from ..format import structs
from ..format.constructs import BufferStream, encode_text
from ..format.enums import VALUE_TYPE_IDS
from ..format.reader import ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAX_DIMS, align_offset, bootstrap
from ..format.spec import TensorTypeSpec
from . import records
from .catalog import Hit, structural

__all__ = ["KV", "TensorInfo", "Context", "walk", "ARRAY", "STRING", "BOOL"]

structural(
    "HDR-TRUNC",
    "HDR-MAGIC",
    "HDR-MAGIC-LEGACY",
    "HDR-VERSION",
    "HDR-COUNT",
    "KV-TRUNC",
    "KV-TYPE",
    "STR-EOF",
    "ARR-TYPE",
    "ARR-EOF",
    "TI-TRUNC",
    "ARR-TOO-DEEP",
)

_VT = VALUE_TYPE_IDS  # the enum generated from the spec, as plain ints
ARRAY, STRING, BOOL = _VT["ARRAY"], _VT["STRING"], _VT["BOOL"]
ALIGNMENT_TYPE: int = _VT[structs.container_spec()["layout"]["alignment"]["type"]]


def type_name(vtype: int) -> str:
    """Name of a metadata value type, or its number when it has none."""
    vt = structs.value_types().get(vtype)
    return vt["name"] if vt else str(vtype)


@dataclass(slots=True)
class KV:
    """One metadata pair as read: record offset, key (str and raw bytes), value type and parsed value.  Slotted: a
    head of millions of pairs is millions of these."""

    index: int
    offset: int
    key: str
    key_bytes: bytes
    vtype: int
    value: Any
    end: int
    tree: Any = field(default=None, repr=False)  # the parsed record (parsed when first needed: see at())
    family: Any = field(default=None, repr=False)
    buf: Any = field(default=None, repr=False)  # the buffer read (where a record read in bulk is parsed again)
    _value_at: int | None = field(default=None, repr=False, compare=False)  # value_offset, once asked

    def at(self, rel: str) -> int:
        """Start offset of a field of this record, e.g. ``value_type`` or ``value.data``."""
        if self.tree is None and rel in ("value_type", "value"):  # read in bulk: no second read of a long value
            shape = records.kv_shape(self.family.version, self.family.byte_order)
            assert shape is not None  # a record read in bulk has a bulk shape
            type_at = self.offset + shape.width + len(self.key_bytes)
            return type_at if rel == "value_type" else type_at + shape.sel_width
        return self.family.offset_of("metadata_kv", _tree_of(self, "metadata_kv"), self.offset, rel)

    @property
    def value_offset(self) -> int:
        """Start offset of the value (located when first asked)."""
        if self._value_at is None:
            self._value_at = self.at("value")
        return self._value_at

    @property
    def item_type(self) -> int | None:
        """Element type of an ARRAY value (None otherwise)."""
        return self.value.type if self.vtype == ARRAY else None

    @property
    def path(self) -> str:
        """Field path of the record, e.g. ``metadata_kv[3]``."""
        return f"metadata_kv[{self.index}]"

    def type_label(self) -> str:
        """``UINT32`` or ``ARRAY[INT32]``."""
        if self.vtype == ARRAY:
            return f"ARRAY[{type_name(self.value.type)}]"
        return type_name(self.vtype)


@dataclass(slots=True)
class TensorInfo:
    """One tensor info as read, plus what follows from it (type spec, element count, byte size).  Slotted, as KV."""

    index: int
    offset: int
    name: str
    name_bytes: bytes
    n_dims: int
    dims: tuple[int, ...]
    type: int
    data_offset: int
    end: int
    spec: TensorTypeSpec | None = None
    nelem: int | None = None
    nbytes: int | None = None  # None when the size is undefined (bad type, shape or overflow)
    tree: Any = field(default=None, repr=False)  # the parsed record (parsed when first needed: see at())
    family: Any = field(default=None, repr=False)
    buf: Any = field(default=None, repr=False)  # the buffer read (where a record read in bulk is parsed again)
    _type_at: int | None = field(default=None, repr=False, compare=False)  # type_offset, once asked

    def at(self, rel: str) -> int:
        """Start offset of a field of this record, e.g. ``n_dimensions`` or ``offset``."""
        return self.family.offset_of("tensor_info", _tree_of(self, "tensor_info"), self.offset, rel)

    @property
    def type_offset(self) -> int:
        """Start offset of the type field (located when first asked)."""
        if self._type_at is None:
            self._type_at = self.at("type")
        return self._type_at

    @property
    def path(self) -> str:
        """Field path of the record, e.g. ``tensor_infos[2]``."""
        return f"tensor_infos[{self.index}]"


def _tree_of(record: "KV | TensorInfo", type_name: str) -> Any:
    """The parse tree of a record; a record read in bulk (:mod:`.records`) has none until a field's offset is asked
    for, and is then parsed again, once, where it was read (it parsed in bulk, so it parses)."""
    if record.tree is None:
        record.tree = record.family.record_parser(type_name)(BufferStream(record.buf, record.offset))
    return record.tree


_ABSENT = object()  # a fact not yet in Context.cache (None is a fact)


@dataclass
class Context:
    """Everything known about one file while it is checked."""

    buf: Any
    file: str | None = None
    file_name: str | None = None
    data: bool = False
    size: int = 0
    raw_version: int | None = None
    version: int | None = None
    byte_order: str | None = None
    family: Any = None
    header_size: int = 0
    kv_count: int | None = None
    tensor_count: int | None = None
    kvs: list[KV] = field(default_factory=list)
    kv_complete: bool = False
    tensors: list[TensorInfo] = field(default_factory=list)
    ti_complete: bool = False
    head_end: int | None = None
    alignment: int = DEFAULT_ALIGNMENT
    data_start: int | None = None
    hits: list[tuple[str, Hit]] = field(default_factory=list)
    cache: dict = field(default_factory=dict)  # facts shared by several predicates
    remote: Any = None  # the RemoteFile behind buf when checking a URL (bytes arrive only when fetched)
    shard_tensors: list[TensorInfo] = field(default_factory=list)  # the other shards', when this is a first shard
    _first: dict[str, KV] | None = None

    def hit(self, rule_id: str, offset: int | None, path: str, /, **params: Any) -> None:
        """Record a finding of the structural walk (``offset`` and ``path`` locate it; ``params`` fill the
        message template, which may have an ``offset`` field of its own)."""
        self.hits.append((rule_id, Hit(offset, path, **params)))

    def derived(self, name: str, build: Callable[["Context"], Any]) -> Any:
        """A fact several predicates share (``build(self)``), computed once per file and kept in :attr:`cache`."""
        got = self.cache.get(name, _ABSENT)
        if got is _ABSENT:
            got = self.cache[name] = build(self)
        return got

    def first(self, key: str) -> KV | None:
        """The first KV pair with this key (None when absent)."""
        if self._first is None:
            self._first = {}
            for kv in self.kvs:
                self._first.setdefault(kv.key, kv)
        return self._first.get(key)

    def scalar(self, key: str, *types: int) -> Any:
        """Value of a scalar key whose type is one of ``types`` (any non-array type when none given)."""
        kv = self.first(key)
        if kv is None or kv.vtype == ARRAY or (types and kv.vtype not in types):
            return None
        return kv.value

    def readable(self, start: int, end: int) -> bool:
        """True when [start, end) may be read: always for local files; for a URL when already fetched, else
        fetched now if it is the head's padding or ``data`` was asked for (header-only checks skip the rest)."""
        if self.remote is None or self.remote.has(start, end):
            return True
        if self.data or (self.data_start is not None and end <= self.data_start):
            self.remote.ensure(start, end)
            return True
        return False

    def read_to(self) -> int:
        """End of what the walk consumed: the last record read, or the offset where it stopped."""
        ends = [0] + [kv.end for kv in self.kvs[-1:]] + [t.end for t in self.tensors[-1:]]
        ends += [h.offset for _, h in self.hits if h.offset is not None]
        return max(ends)

    @property
    def head_complete(self) -> bool:
        """True when every KV pair and tensor info was read."""
        return self.kv_complete and self.ti_complete

    @property
    def layout_known(self) -> bool:
        """True when the data section can be examined (head read, data section reachable)."""
        return self.head_complete and self.data_start is not None

    @property
    def model_tensors(self) -> list[TensorInfo]:
        """The tensors of the model this file names: its own, then (for the first shard of a split model) those
        of the other shards, as llama.cpp gathers them (what the rules of scope model judge)."""
        return self.tensors + self.shard_tensors if self.shard_tensors else self.tensors

    def tensor_ready(self) -> list[TensorInfo]:
        """Tensors whose byte size is defined."""
        return [t for t in self.tensors if t.nbytes is not None]


def walk(ctx: Context) -> None:
    """Read the header, the KV pairs and the tensor infos of ``ctx.buf`` into ``ctx``; never raises on bad input."""
    buf = ctx.buf
    size = ctx.size = len(buf)
    boot = bootstrap(buf)
    min_header = structs.family(structs.current_version(), structs.BYTE_ORDERS[0]).min_sizes["header"]
    if boot.rule == "HDR-TRUNC":
        ctx.hit("HDR-TRUNC", size, boot.path, offset=size, expected=min_header)
        return
    if boot.rule == "HDR-MAGIC":
        ctx.hit("HDR-MAGIC", boot.field_start, boot.path, value=boot.magic)
        if boot.legacy:
            ctx.hit("HDR-MAGIC-LEGACY", boot.field_start, boot.path, value=boot.magic, format=boot.legacy)
        return
    ctx.raw_version = boot.raw_version
    if boot.rule == "HDR-VERSION":
        ctx.hit("HDR-VERSION", boot.field_start, boot.path, value=boot.version, raw=ctx.raw_version)
        return
    version, byte_order = boot.version, boot.byte_order
    ctx.version, ctx.byte_order = version, byte_order
    fam = ctx.family = structs.family(version, byte_order)
    hsize = ctx.header_size = fam.min_sizes["header"]
    if size < hsize:
        ctx.hit("HDR-TRUNC", size, "header", offset=size, expected=hsize)
        return
    header = fam.read("header", buf, 0, "header").root
    ctx.kv_count, ctx.tensor_count = int(header["metadata_kv_count"].value), int(header["tensor_count"].value)
    remaining = size - hsize
    kv_need = ctx.kv_count * fam.min_sizes["metadata_kv"]
    if ctx.kv_count >= 2**63 or kv_need > remaining:
        count = header["metadata_kv_count"]
        ctx.hit(
            "HDR-COUNT", count.start, count.path, field="metadata_kv_count", value=ctx.kv_count, remaining=remaining
        )
        return
    counts_ok = True
    if ctx.tensor_count >= 2**63 or ctx.tensor_count * fam.min_sizes["tensor_info"] > remaining - kv_need:
        count = header["tensor_count"]
        ctx.hit("HDR-COUNT", count.start, count.path, field="tensor_count", value=ctx.tensor_count, remaining=remaining)
        counts_ok = False
    stream = BufferStream(buf, hsize)
    if not _walk_kvs(ctx, stream) or not counts_ok:
        return
    _walk_tensor_infos(ctx, stream)


_BULK_FROM = 64  # records from which a run is read in bulk: fewer cost less one by one than numpy's set-up
_BULK_WORTH = 16  # records a run read in bulk must have for the next to be tried right after the record it stopped at


def _walk_kvs(ctx: Context, stream: BufferStream) -> bool:
    fam = ctx.family
    parse = fam.record_parser("metadata_kv")
    shape = records.kv_shape(ctx.version, ctx.byte_order)
    i, parse_from, backoff = 0, 0, 1
    while i < ctx.kv_count:
        if shape is not None and i >= parse_from and ctx.kv_count - i >= _BULK_FROM:  # a run read in bulk
            got = _kvs_in_bulk(ctx, stream, i, shape)
            i += got
            if i == ctx.kv_count:
                break
            # the record the run stopped at is read one by one; after a run of _BULK_WORTH records or more the
            # next run is tried right after it, after a shorter one twice as many records later as the last time
            # (up to _BULK_FROM): a record that is not read in bulk (an array of arrays) among many that are costs
            # one parse, and a stretch of such records no more than a bulk set-up per _BULK_FROM records
            parse_from = i + backoff
            backoff = 1 if got >= _BULK_WORTH else min(2 * backoff, _BULK_FROM)
        start = stream.pos
        try:
            tree = parse(stream)
        except RecursionError:
            _explain_kv(ctx, start, i, too_deep=True)
            return False
        except Exception:  # noqa: BLE001 - compiled code may raise anything on bad input
            resume = _explain_kv(ctx, start, i)
            if resume is None:
                return False
            stream.pos = resume
            i += 1
            continue
        ctx.kvs.append(
            KV(i, start, tree.key, encode_text(tree.key), int(tree.value_type), tree.value, stream.pos, tree, fam)
        )
        i += 1
    ctx.kv_complete = True
    return True


def _kvs_in_bulk(ctx: Context, stream: BufferStream, index: int, shape: records.RecordShape) -> int:
    """Read the run of KV pairs at the stream's position that :mod:`.records` reads in bulk into ``ctx.kvs`` (the
    stream moves past them); how many."""
    starts, end = records.scan(ctx.buf, stream.pos, ctx.kv_count - index, shape)
    n = len(starts)
    if not n:
        return 0
    keys, key_bytes, vtypes, values, ends = records.kv_columns(ctx.buf, starts, shape)
    ctx.kvs.extend(
        map(
            KV,
            range(index, index + n),
            starts.tolist(),
            keys,
            key_bytes,
            vtypes,
            values,
            ends,
            repeat(None, n),
            repeat(ctx.family, n),
            repeat(ctx.buf, n),
        )
    )
    stream.pos = end
    return n


def _explain_kv(ctx: Context, start: int, index: int, too_deep: bool = False) -> int | None:
    """Report why KV pair ``index`` cannot be read; return where to resume, or None when the walk must stop.
    ``too_deep``: the compiled parser ran out of stack (nested arrays), whatever the tolerant read says."""
    base = f"metadata_kv[{index}]"
    reading = ctx.family.read("metadata_kv", ctx.buf, start, base)
    root, p = reading.root, reading.problem
    key_node = root.fields.get("key")
    key = key_node.value if key_node is not None and key_node.end is not None else None
    if too_deep:
        ctx.hit("ARR-TOO-DEEP", start, f"{base}.value", key=key, depth=">100")
        return None
    if p is None:
        ctx.hit("KV-TRUNC", start, base, offset=ctx.size, index=index)
        return None
    if p.rule == "ARR-TOO-DEEP":
        ctx.hit("ARR-TOO-DEEP", start, f"{base}.value", key=key, depth=">100")
        return None
    if p.rule == "STR-EOF" and p.record["len"].end is not None:
        length = p.record["len"]
        ctx.hit("STR-EOF", p.offset, p.path, offset=p.offset, length=length.value, remaining=ctx.size - length.end)
        return None
    if p.rule == "ARR-EOF":
        array = p.record
        n, item = array["len"].value, array["type"].value
        needed = n * ctx.family.case_min_size(item)
        ctx.hit(
            "ARR-EOF",
            array.start,
            p.path,
            key=key,
            length=n,
            type=type_name(item),
            needed=needed,
            remaining=ctx.size - p.offset,
        )
        return None
    if p.rule == "KV-TYPE":
        vtype = root["value_type"]
        ctx.hit("KV-TYPE", vtype.start, vtype.path, key=key, value=vtype.value)
        return None
    if p.rule == "ARR-TYPE":
        array = p.record
        ctx.hit("ARR-TYPE", array.start, p.path, key=key, value=array["type"].value)
        if array["len"].value == 0 and key is not None and array is root.fields.get("value"):
            return p.offset  # an empty top-level array: its length is known, go on after it
        return None
    ctx.hit("KV-TRUNC", p.offset, p.path, offset=ctx.size, index=index)
    return None


def _walk_tensor_infos(ctx: Context, stream: BufferStream) -> None:
    fam = ctx.family
    parse = fam.record_parser("tensor_info")
    shape = records.tensor_info_shape(ctx.version, ctx.byte_order)
    i = 0
    while i < ctx.tensor_count:
        if shape is not None and ctx.tensor_count - i >= _BULK_FROM:  # a run read in bulk
            i += _tensor_infos_in_bulk(ctx, stream, i, shape)
            if i == ctx.tensor_count:
                break
        start = stream.pos
        try:
            tree = parse(stream)
        except Exception:  # noqa: BLE001
            _explain_ti(ctx, start, i)
            return
        dims = tuple(int(d) for d in tree.dimensions)
        ctx.tensors.append(
            TensorInfo(
                i,
                start,
                tree.name,
                encode_text(tree.name),
                int(tree.n_dimensions),
                dims,
                int(tree.type),
                int(tree.offset),
                stream.pos,
                tree=tree,
                family=fam,
            )
        )
        i += 1
    ctx.ti_complete = True
    ctx.head_end = stream.pos


def _tensor_infos_in_bulk(ctx: Context, stream: BufferStream, index: int, shape: records.RecordShape) -> int:
    """Read the run of tensor infos at the stream's position that :mod:`.records` reads in bulk into
    ``ctx.tensors`` (the stream moves past them); how many."""
    starts, end = records.scan(ctx.buf, stream.pos, ctx.tensor_count - index, shape)
    n = len(starts)
    if not n:
        return 0
    names, name_bytes, counts, dims, fixed, ends = records.tensor_info_columns(ctx.buf, starts, shape)
    ctx.tensors.extend(
        map(
            TensorInfo,
            range(index, index + n),
            starts.tolist(),
            names,
            name_bytes,
            counts,
            dims,
            fixed["type"],
            fixed["offset"],
            ends,
            *(repeat(None, n) for _ in range(4)),  # spec, nelem, nbytes (derive_layout's), tree (parsed when asked)
            repeat(ctx.family, n),
            repeat(ctx.buf, n),
        )
    )
    stream.pos = end
    return n


_DIMS = structs.field_spec("tensor_info", "dimensions")


def _explain_ti(ctx: Context, start: int, index: int) -> None:
    base = f"tensor_infos[{index}]"
    reading = ctx.family.read("tensor_info", ctx.buf, start, base)
    root, p = reading.root, reading.problem
    if p is None:
        ctx.hit("TI-TRUNC", start, base, offset=ctx.size, index=index)
        return
    if p.rule == "STR-EOF" and p.record["len"].end is not None:
        length = p.record["len"]
        ctx.hit("STR-EOF", p.offset, p.path, offset=p.offset, length=length.value, remaining=ctx.size - length.end)
        return
    if p.rule == "ARR-EOF" and p.path == f"{base}.{_DIMS['id']}":
        count = root[_DIMS["repeat"]]
        if not structs.is_valid("tensor_info", _DIMS["repeat"], count.value):
            name = root["name"].value if root["name"].end is not None else ""
            ctx.hit("TI-NDIMS", count.start, count.path, name=name, value=count.value, expected=MAX_DIMS)
            return
    ctx.hit("TI-TRUNC", p.offset, p.path, offset=ctx.size, index=index)


def derive_layout(ctx: Context) -> None:
    """Alignment, data-section start and every tensor's type spec, element count and byte size."""
    kv = ctx.first(ALIGNMENT_KEY)
    if kv is not None and kv.vtype == ALIGNMENT_TYPE and kv.value > 0:
        ctx.alignment = int(kv.value)
    if ctx.head_complete:
        start = align_offset(ctx.head_end, ctx.alignment)
        if ctx.tensors and start > ctx.size:
            ctx.data_start = None
        else:
            ctx.data_start = start
    if not ctx.tensors:
        return
    for t, spec_t, nelem, nbytes in zip(ctx.tensors, *records.extents(ctx.tensors, ctx.alignment)):
        t.spec, t.nelem, t.nbytes = spec_t, nelem, nbytes


def display_name(source, path: str | None) -> str | None:
    """The name shown for a source: its path, a file object's name, or None for bytes."""
    if path:
        return path
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else None


def base_name(name: str | None) -> str | None:
    """The bare file name (no directories), used by the naming rules."""
    return os.path.basename(name) if name else None
