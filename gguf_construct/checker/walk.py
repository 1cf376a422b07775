"""The structural walk: read a file record by record and keep going after problems.

Each KV pair and tensor info is parsed with the generated *compiled* struct of its type; when that fails the
same record is parsed again with the interpreted struct, whose :class:`~gguf_construct.constructs.FieldError`
names the offset, field and rule.  A record whose length cannot be known ends the walk of its section (one finding,
no cascade): the KV pairs after it and the tensor infos cannot be located.  Everything the walk reads goes into a
:class:`Context` for the rule predicates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .. import structs
from ..constructs import BufferStream, FieldError, decode_text, encode_text
from ..errors import construct_path_to_field_path
from ..layout import LEGACY_MAGICS, align_offset
from ..spec import TensorTypeSpec, tensor_type_by_id
from .rules import Hit, structural

__all__ = ["KV", "TensorInfo", "Context", "walk", "ARRAY", "STRING", "BOOL"]

structural("HDR-TRUNC", "HDR-MAGIC", "HDR-MAGIC-LEGACY", "HDR-VERSION", "HDR-COUNT", "KV-TRUNC", "KV-TYPE",
           "STR-EOF", "ARR-TYPE", "ARR-EOF", "TI-TRUNC", "ARR-TOO-DEEP")

_VT = {vt["name"]: vt["id"] for vt in structs.container_spec()["value_types"]}
ARRAY, STRING, BOOL = _VT["ARRAY"], _VT["STRING"], _VT["BOOL"]
DEFAULT_ALIGNMENT: int = structs.container_spec()["layout"]["alignment"]["default"]
ALIGNMENT_KEY: str = structs.container_spec()["layout"]["alignment"]["key"]
ALIGNMENT_TYPE: int = _VT[structs.container_spec()["layout"]["alignment"]["type"]]


def type_name(vtype: int) -> str:
    """Name of a metadata value type, or its number when it has none."""
    vt = structs.value_types().get(vtype)
    return vt["name"] if vt else str(vtype)


@dataclass
class KV:
    """One metadata pair as read: record offset, key (str and raw bytes), value type and parsed value."""

    index: int
    offset: int
    key: str
    key_bytes: bytes
    vtype: int
    value_offset: int
    value: Any
    end: int

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


@dataclass
class TensorInfo:
    """One tensor info as read, plus what follows from it (type spec, element count, byte size)."""

    index: int
    offset: int
    name: str
    name_bytes: bytes
    n_dims: int
    dims: tuple[int, ...]
    type: int
    data_offset: int
    end: int
    type_offset: int = 0
    spec: TensorTypeSpec | None = None
    nelem: int | None = None
    nbytes: int | None = None  # None when the size is undefined (bad type, shape or overflow)

    @property
    def path(self) -> str:
        """Field path of the record, e.g. ``tensor_infos[2]``."""
        return f"tensor_infos[{self.index}]"


@dataclass
class Context:
    """Everything known about one file while it is checked."""

    buf: Any
    file: str | None = None
    file_name: str | None = None
    profile: str = "spec"
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
    _first: dict[str, KV] | None = None

    def hit(self, rule_id: str, offset: int | None, path: str, /, **params: Any) -> None:
        """Record a finding of the structural walk (``offset`` and ``path`` locate it; ``params`` fill the
        message template, which may have an ``offset`` field of its own)."""
        self.hits.append((rule_id, Hit(offset, path, **params)))

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

    def tensor_ready(self) -> list[TensorInfo]:
        """Tensors whose byte size is defined."""
        return [t for t in self.tensors if t.nbytes is not None]


def _uint(buf, offset: int, width: int, byte_order: str) -> int | None:
    if offset < 0 or offset + width > len(buf):
        return None
    return int.from_bytes(bytes(buf[offset:offset + width]), byte_order)


def walk(ctx: Context) -> None:
    """Read the header, the KV pairs and the tensor infos of ``ctx.buf`` into ``ctx``; never raises on bad input."""
    buf = ctx.buf
    size = ctx.size = len(buf)
    min_header = structs.family(structs.container_spec()["meta"]["current_version"], "little").min_sizes["header"]
    if size < 4:
        ctx.hit("HDR-TRUNC", size, "header.magic", offset=size, expected=min_header)
        return
    magic = bytes(buf[:4])
    if magic != structs.container_spec()["meta"]["magic"].encode("ascii"):
        ctx.hit("HDR-MAGIC", 0, "header.magic", value=magic)
        legacy = LEGACY_MAGICS.get(magic)
        if legacy:
            ctx.hit("HDR-MAGIC-LEGACY", 0, "header.magic", value=magic, format=legacy)
        return
    if size < 8:
        ctx.hit("HDR-TRUNC", size, "header.version", offset=size, expected=min_header)
        return
    version, byte_order = structs.detect(bytes(buf[:8]))
    ctx.raw_version = int.from_bytes(bytes(buf[4:8]), "little")
    if version not in structs.versions():
        ctx.hit("HDR-VERSION", 4, "header.version", value=version, raw=ctx.raw_version)
        return
    ctx.version, ctx.byte_order = version, byte_order
    fam = ctx.family = structs.family(version, byte_order)
    hsize = ctx.header_size = fam.min_sizes["header"]
    if size < hsize:
        ctx.hit("HDR-TRUNC", size, "header", offset=size, expected=hsize)
        return
    header = fam.compiled_types["header"].parse(bytes(buf[:hsize]))
    ctx.kv_count, ctx.tensor_count = int(header.metadata_kv_count), int(header.tensor_count)
    remaining = size - hsize
    kv_need = ctx.kv_count * fam.min_sizes["metadata_kv"]
    if ctx.kv_count >= 2**63 or kv_need > remaining:
        ctx.hit("HDR-COUNT", 8, "header.metadata_kv_count", field="metadata_kv_count", value=ctx.kv_count,
                remaining=remaining)
        return
    counts_ok = True
    if ctx.tensor_count >= 2**63 or ctx.tensor_count * fam.min_sizes["tensor_info"] > remaining - kv_need:
        ctx.hit("HDR-COUNT", 8, "header.tensor_count", field="tensor_count", value=ctx.tensor_count,
                remaining=remaining)
        counts_ok = False
    stream = BufferStream(buf, hsize)
    if not _walk_kvs(ctx, stream) or not counts_ok:
        return
    _walk_tensor_infos(ctx, stream)


def _read_string(buf, offset: int, width: int, byte_order: str) -> bytes | None:
    n = _uint(buf, offset, width, byte_order)
    if n is None or offset + width + n > len(buf):
        return None
    return bytes(buf[offset + width:offset + width + n])


def _walk_kvs(ctx: Context, stream: BufferStream) -> bool:
    fam, buf = ctx.family, ctx.buf
    parse = fam.compiled_types["metadata_kv"].parse_stream
    strw = fam.primitive_width("strlen_t")
    for i in range(ctx.kv_count):
        start = stream.pos
        try:
            tree = parse(stream)
        except RecursionError:
            key = _read_string(buf, start, strw, ctx.byte_order)
            ctx.hit("ARR-TOO-DEEP", start, f"metadata_kv[{i}].value", key=decode_text(key or b""),
                    depth=">100")
            return False
        except Exception:  # noqa: BLE001 - compiled code may raise anything on bad input
            resume = _explain_kv(ctx, start, i)
            if resume is None:
                return False
            stream.pos = resume
            continue
        key_bytes = encode_text(tree.key)
        value_offset = start + strw + len(key_bytes) + 4
        ctx.kvs.append(KV(i, start, tree.key, key_bytes, int(tree.value_type), value_offset, tree.value,
                          stream.pos))
    ctx.kv_complete = True
    return True


def _explain_kv(ctx: Context, start: int, index: int) -> int | None:
    """Report why KV pair ``index`` cannot be read; return where to resume, or None when the walk must stop."""
    fam, buf, bo, size = ctx.family, ctx.buf, ctx.byte_order, ctx.size
    strw, arrw = fam.primitive_width("strlen_t"), fam.primitive_width("arrlen_t")
    key_raw = _read_string(buf, start, strw, bo)
    key = decode_text(key_raw) if key_raw is not None else None
    base = f"metadata_kv[{index}]"
    try:
        fam.types["metadata_kv"].parse_stream(BufferStream(buf, start))
    except FieldError as exc:
        rule, off, sub = exc.rule, exc.offset, construct_path_to_field_path(exc.path or "")
    except RecursionError:
        ctx.hit("ARR-TOO-DEEP", start, f"{base}.value", key=key, depth=">100")
        return None
    except Exception:  # noqa: BLE001
        rule, off, sub = None, start, ""
    else:
        rule, off, sub = None, start, ""
    path = f"{base}.{sub}" if sub else base
    if rule == "STR-EOF" and off is not None:
        n = _uint(buf, off, strw, bo)
        if n is not None:
            ctx.hit("STR-EOF", off, path, offset=off, length=n, remaining=size - off - strw)
            return None
    elif rule == "ARR-EOF" and off is not None:
        item = _uint(buf, off - arrw - 4, 4, bo)
        n = _uint(buf, off - arrw, arrw, bo)
        vt = structs.value_types().get(item)
        if vt is not None and n is not None:
            if vt["name"] == "STRING":
                per = strw
            elif vt["name"] == "ARRAY":
                per = 4 + arrw
            else:
                per = fam.primitive_width(vt["encoding"])
            ctx.hit("ARR-EOF", off - arrw - 4, path, key=key, length=n, type=vt["name"], needed=n * per,
                    remaining=size - off)
            return None
    elif rule == "KV-TYPE" and off is not None:
        ctx.hit("KV-TYPE", off - 4, f"{base}.value_type", key=key, value=_uint(buf, off - 4, 4, bo))
        return None
    elif rule == "ARR-TYPE" and off is not None:
        head = off - arrw - 4
        n = _uint(buf, off - arrw, arrw, bo)
        ctx.hit("ARR-TYPE", head, path, key=key, value=_uint(buf, head, 4, bo))
        if n == 0 and key_raw is not None and head == start + strw + len(key_raw) + 4:
            return off  # an empty top-level array: its length is known, go on after it
        return None
    ctx.hit("KV-TRUNC", off if off is not None else start, path, offset=size, index=index)
    return None


def _walk_tensor_infos(ctx: Context, stream: BufferStream) -> None:
    fam = ctx.family
    parse = fam.compiled_types["tensor_info"].parse_stream
    strw = fam.primitive_width("strlen_t")
    dimw = fam.primitive_width("dim_t")
    for i in range(ctx.tensor_count):
        start = stream.pos
        try:
            tree = parse(stream)
        except Exception:  # noqa: BLE001
            _explain_ti(ctx, start, i)
            return
        name_bytes = encode_text(tree.name)
        dims = tuple(int(d) for d in tree.dimensions)
        type_offset = start + strw + len(name_bytes) + 4 + dimw * len(dims)
        ctx.tensors.append(TensorInfo(i, start, tree.name, name_bytes, int(tree.n_dimensions), dims,
                                      int(tree.type), int(tree.offset), stream.pos, type_offset))
    ctx.ti_complete = True
    ctx.head_end = stream.pos


def _explain_ti(ctx: Context, start: int, index: int) -> None:
    fam, buf, bo, size = ctx.family, ctx.buf, ctx.byte_order, ctx.size
    strw = fam.primitive_width("strlen_t")
    base = f"tensor_infos[{index}]"
    try:
        fam.types["tensor_info"].parse_stream(BufferStream(buf, start))
    except FieldError as exc:
        rule, off, sub = exc.rule, exc.offset, construct_path_to_field_path(exc.path or "")
    except Exception:  # noqa: BLE001
        rule, off, sub = None, start, ""
    else:
        rule, off, sub = None, start, ""
    path = f"{base}.{sub}" if sub else base
    if rule == "STR-EOF" and off is not None:
        n = _uint(buf, off, strw, bo)
        if n is not None:
            ctx.hit("STR-EOF", off, path, offset=off, length=n, remaining=size - off - strw)
            return
    if rule == "ARR-EOF" and off is not None and sub.startswith("dimensions"):
        n_dims = _uint(buf, off - 4, 4, bo)
        name = _read_string(buf, start, strw, bo)
        if n_dims is not None and n_dims > 4:
            ctx.hit("TI-NDIMS", off - 4, f"{base}.n_dimensions", name=decode_text(name or b""), value=n_dims)
            return
    ctx.hit("TI-TRUNC", off if off is not None else start, path, offset=size, index=index)


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
    types = tensor_type_by_id()
    for t in ctx.tensors:
        t.spec = types.get(t.type)
        if any(d >= 2**63 for d in t.dims):
            continue
        n = 1
        for d in t.dims:
            n *= d
        t.nelem = n
        st = t.spec
        if st is None or not st.is_current or n >= 2**63:
            continue
        ne0 = t.dims[0] if t.dims else 1
        if ne0 % st.block_size:
            continue
        nbytes = n // st.block_size * st.type_size
        if nbytes >= 2**64 or align_offset(nbytes, ctx.alignment) >= 2**64:
            continue
        t.nbytes = nbytes


def display_name(source, path: str | None) -> str | None:
    """The name shown for a source: its path, a file object's name, or None for bytes."""
    if path:
        return path
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else None


def base_name(name: str | None) -> str | None:
    """The bare file name (no directories), used by the naming rules."""
    return os.path.basename(name) if name else None

