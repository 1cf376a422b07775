"""Reading runs of KV pairs and tensor infos in bulk: the record shapes from the spec, their fields as columns.

The walk (:mod:`.walk`) reads a file's head record by record through the generated parser only where it must (an
array value, a record that breaks a rule); runs of the other records are located by
:func:`gguf_construct.base.recordscan.scan_records` and their fields read here with numpy gathers, the texts
decoded a chunk at a time, so that millions of small records cost no Python step each.  Every width comes from
spec/gguf.yaml through the family's version and byte order: a KV pair is a string (the key), a selector (the value
type) and a body sized by the selector (a primitive's size, a string, or not in bulk: arrays and unknown types); a
tensor info is a string (the name), a count (n_dimensions, up to its ``valid`` maximum), that many dimensions and
fixed fields after them.  A spec whose records do not have these shapes gets no bulk reader (``None``) and is read
record by record.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

import numpy as np

from ..base.pages import release
from ..base.recordscan import STOP, STRING_BODY, read_uints, scan_records
from ..format import spec as _spec
from ..format.constructs import Float32NaN
from ..format.reader import align_offset, tensor_extent
from ..format.spec import tensor_type_by_id
from ..format.structs import container_spec, field_limit, is_string_type, resolve_alias, value_types

__all__ = ["RecordShape", "kv_shape", "tensor_info_shape", "scan", "kv_columns", "tensor_info_columns", "extents"]

_TEXT_CHUNK = 1 << 22  # bytes of texts gathered and decoded at a time


@dataclass(frozen=True)
class RecordShape:
    """How one family lays out a kind of record: the string's length width, the selector's width and the body
    size of every selector (:data:`~gguf_construct.base.recordscan.STOP` where a record is read one by one)."""

    width: int
    little: bool
    byte_order: str
    sel_width: int
    sizes: np.ndarray
    fields: tuple[tuple[str, np.dtype], ...] = ()  # a tensor info's repeated field, then its fixed fields
    kinds: tuple[str, ...] = ()  # a KV pair's value kind per value type ("" where not in bulk)
    dtypes: tuple[np.dtype | None, ...] = ()  # a KV pair's value dtype per value type


def _primitive(name: str, version: int) -> str | None:
    if name in container_spec()["aliases"]:
        return resolve_alias(name, version)
    return name if name in _spec.primitives() else None


def _string_width(type_name: str, version: int) -> int | None:
    if not is_string_type(type_name):
        return None
    prim = _primitive(container_spec()["types"][type_name]["seq"][0]["type"], version)
    return _spec.primitives()[prim].size if prim else None


@functools.lru_cache(maxsize=None)
def kv_shape(version: int, byte_order: str) -> RecordShape | None:
    """The bulk shape of ``metadata_kv`` in a family: key string, value-type selector, value by the selector."""
    seq = container_spec()["types"]["metadata_kv"]["seq"]
    if len(seq) != 3 or "switch_on" not in seq[2] or seq[2]["switch_on"] != seq[1]["id"]:
        return None
    width = _string_width(seq[0].get("type", ""), version)
    sel = _primitive(seq[1].get("type", ""), version)
    if width is None or sel is None:
        return None
    vts = value_types()
    sizes = np.full(max(vts) + 1, STOP, dtype=np.int64)
    kinds, dtypes = [""] * len(sizes), [None] * len(sizes)
    for vid, vt in vts.items():
        if vt.get("encoding") in _spec.primitives():
            sizes[vid] = _spec.primitives()[vt["encoding"]].size
            kinds[vid] = vt["encoding"]
            dtypes[vid] = _spec.numpy_dtype(vt["encoding"], byte_order)
        elif "encoding" not in vt and _string_width(vt["type"], version) == width:
            sizes[vid], kinds[vid] = STRING_BODY, "text"
    return RecordShape(
        width,
        byte_order == "little",
        byte_order,
        _spec.primitives()[sel].size,
        sizes,
        kinds=tuple(kinds),
        dtypes=tuple(dtypes),
    )


@functools.lru_cache(maxsize=None)
def tensor_info_shape(version: int, byte_order: str) -> RecordShape | None:
    """The bulk shape of ``tensor_info``: name string, a count, that many of one primitive, fixed primitives."""
    seq = container_spec()["types"]["tensor_info"]["seq"]
    if len(seq) < 3 or seq[2].get("repeat") != seq[1]["id"]:
        return None
    width = _string_width(seq[0].get("type", ""), version)
    prims = [_primitive(f.get("type", ""), version) for f in seq[1:]]
    if width is None or None in prims or any("repeat" in f for f in seq[3:]):
        return None
    sizes_of = [_spec.primitives()[p].size for p in prims]  # type: ignore[index]
    tail = sum(sizes_of[2:])
    limit = field_limit("tensor_info", seq[1]["id"])
    sizes = np.arange(limit + 1, dtype=np.int64) * sizes_of[1] + tail
    fields = tuple((f["id"], _spec.numpy_dtype(p, byte_order)) for f, p in zip(seq[2:], prims[1:]))  # type: ignore[arg-type]
    return RecordShape(width, byte_order == "little", byte_order, sizes_of[0], sizes, fields=fields)


def scan(buf, pos: int, count: int, shape: RecordShape) -> tuple[np.ndarray, int]:
    """Starts of the run of whole records of ``shape`` at ``pos`` (at most ``count``) and where it ends."""
    return scan_records(buf, pos, count, shape.width, shape.little, shape.sel_width, shape.sizes)


def _gather(whole: np.ndarray, at: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The values of ``dtype`` (in its byte order) at the positions ``at`` of ``whole``, in native order."""
    rows = whole[at[:, None] + np.arange(dtype.itemsize)]
    return rows.view(dtype).reshape(-1).astype(dtype.newbyteorder("="))


_LONG_TEXT = 1 << 12  # texts at least this long are decoded on their own, straight from the buffer


def texts(buf, starts: np.ndarray, ends: np.ndarray, want_bytes: bool = True) -> tuple[list[str], list[bytes]]:
    """The texts ``buf[starts[i]:ends[i]]`` as ``str`` (UTF-8, surrogateescape) and, with ``want_bytes``, as
    ``bytes``: short ones gathered a chunk at a time, joined with NUL bytes and split in one call where no text of
    the chunk holds a NUL byte; long ones (:data:`_LONG_TEXT` bytes or more: few, for their bytes) decoded one by
    one from the buffer, whose pages then go back (base/pages.py)."""
    lens = ends - starts
    long = np.flatnonzero(lens >= _LONG_TEXT)
    if not len(long):
        return _short_texts(buf, starts, ends, want_bytes)
    short = np.flatnonzero(lens < _LONG_TEXT)
    out_s, out_b = np.empty(len(starts), dtype=object), np.empty(len(starts), dtype=object)
    got_s, got_b = _short_texts(buf, starts[short], ends[short], want_bytes)
    out_s[short] = np.fromiter(got_s, dtype=object, count=len(short))
    if want_bytes:
        out_b[short] = np.fromiter(got_b, dtype=object, count=len(short))
    mv = memoryview(buf)
    for i in long.tolist():
        a, b = int(starts[i]), int(ends[i])
        out_s[i] = str(mv[a:b], "utf-8", "surrogateescape")
        if want_bytes:
            out_b[i] = bytes(mv[a:b])
        release(buf, a, b)
    return out_s.tolist(), out_b.tolist() if want_bytes else []


def _short_texts(buf, starts: np.ndarray, ends: np.ndarray, want_bytes: bool) -> tuple[list[str], list[bytes]]:
    whole = np.frombuffer(buf, dtype=np.uint8)
    lens = ends - starts
    out_s: list[str] = []
    out_b: list[bytes] = []
    n, i = len(starts), 0
    cum = np.cumsum(lens + 1)
    while i < n:
        j = max(i + 1, int(np.searchsorted(cum, (cum[i - 1] if i else 0) + _TEXT_CHUNK, side="right")))
        L = lens[i:j]
        room = L + 1
        at = np.cumsum(room) - room  # where each text starts in the joined chunk
        joined = np.zeros(int(room.sum()), dtype=np.uint8)
        body = np.ones(len(joined), dtype=bool)
        body[at + L] = False
        dest = np.flatnonzero(body)
        joined[dest] = whole[dest + np.repeat(starts[i:j] - at, L)]
        if np.count_nonzero(joined) == len(dest):  # no NUL inside a text: the NULs are the separators
            blob = joined[:-1].tobytes()
            if want_bytes:
                out_b.extend(blob.split(b"\0"))
            out_s.extend(str(blob, "utf-8", "surrogateescape").split("\0"))
        else:
            mv = memoryview(buf)
            for a, b in zip(starts[i:j].tolist(), ends[i:j].tolist()):
                raw = bytes(mv[a:b])
                if want_bytes:
                    out_b.append(raw)
                out_s.append(str(raw, "utf-8", "surrogateescape"))
        i = j
    return out_s, out_b


def kv_columns(buf, starts: np.ndarray, shape: RecordShape) -> tuple[list, list, list, list, list]:
    """Keys (str), keys (bytes), value types, values (as the record parser gives them) and ends of the KV records
    starting at ``starts``, all found by :func:`scan` with ``shape``."""
    whole = np.frombuffer(buf, dtype=np.uint8)
    w, little = shape.width, shape.little
    key_end = starts + w + read_uints(whole, starts, w, little).astype(np.int64)
    vtype = read_uints(whole, key_end, shape.sel_width, little).astype(np.int64)
    vpos = key_end + shape.sel_width
    body = shape.sizes[vtype]
    ends = vpos + body
    keys, key_bytes = texts(buf, starts + w, key_end)
    values = np.empty(len(starts), dtype=object)
    for vid in np.unique(vtype).tolist():
        rows = np.flatnonzero(vtype == vid)
        kind = shape.kinds[vid]
        if kind == "text":
            at = vpos[rows] + w
            end = at + read_uints(whole, vpos[rows], w, little).astype(np.int64)
            ends[rows] = end
            got: list = texts(buf, at, end, want_bytes=False)[0]
        else:
            dtype = shape.dtypes[vid]
            assert dtype is not None  # a type read in bulk has an encoding
            raw = _gather(whole, vpos[rows], dtype)
            if kind == "f4":
                got = raw.astype(np.float64).tolist()
                for k in np.flatnonzero(np.isnan(raw)).tolist():  # NaNs keep their bits, as Float32Field reads them
                    got[k] = Float32NaN(int(raw[k : k + 1].view(np.uint32)[0]))
            else:
                got = raw.tolist()
        values[rows] = np.fromiter(got, dtype=object, count=len(got))
    return keys, key_bytes, vtype.tolist(), values.tolist(), ends.tolist()


def tensor_info_columns(
    buf, starts: np.ndarray, shape: RecordShape
) -> tuple[list, list, list, list, dict[str, list], list]:
    """Names (str), names (bytes), dimension counts, dimensions (tuples of int), the fixed fields after them (a
    list of ints each, by field id) and ends of the tensor infos starting at ``starts``."""
    whole = np.frombuffer(buf, dtype=np.uint8)
    w, little = shape.width, shape.little
    name_end = starts + w + read_uints(whole, starts, w, little).astype(np.int64)
    count = read_uints(whole, name_end, shape.sel_width, little).astype(np.int64)
    dims_at = name_end + shape.sel_width
    (_, dim_dtype), *fixed = shape.fields
    names, name_bytes = texts(buf, starts + w, name_end)
    dims = np.empty(len(starts), dtype=object)
    for c in np.unique(count).tolist():
        rows = np.flatnonzero(count == c)
        if c:
            at = (dims_at[rows][:, None] + np.arange(c) * dim_dtype.itemsize).reshape(-1)
            grid = _gather(whole, at, dim_dtype).reshape(len(rows), c).tolist()
        else:
            grid = [[]] * len(rows)
        dims[rows] = np.fromiter(map(tuple, grid), dtype=object, count=len(rows))
    at = dims_at + count * dim_dtype.itemsize
    columns = {}
    for name, dtype in fixed:
        columns[name] = _gather(whole, at, dtype).tolist()
        at = at + dtype.itemsize
    return names, name_bytes, count.tolist(), dims.tolist(), columns, at.tolist()


_EXACT = 2.0**50  # element counts below this (estimated in float64) are multiplied exactly in int64


def extents(tensors: list, alignment: int) -> tuple[list, list, list]:
    """The type spec, element count and byte size of every tensor info (as
    :func:`~gguf_construct.format.reader.tensor_extent`, and no byte size where its padded size reaches 2^64),
    computed as arrays; shapes whose element count may not fit an int64 are sized one by one."""
    n = len(tensors)
    by_id = tensor_type_by_id()
    dims_list = list(map(attrgetter("dims"), tensors))
    types = np.fromiter(map(attrgetter("type"), tensors), dtype=np.int64, count=n)
    lens = np.fromiter(map(len, dims_list), dtype=np.int64, count=n)
    width = max(1, int(lens.max()) if n else 0)
    grid = np.ones((n, width), dtype=np.uint64)  # a tensor without dimensions is a scalar: ne[0] is 1
    grid[np.arange(width) < lens[:, None]] = np.fromiter(
        chain.from_iterable(dims_list), dtype=np.uint64, count=int(lens.sum())
    )
    exact = ~(grid >= np.uint64(2**63)).any(axis=1)
    exact &= np.prod(grid.astype(np.float64), axis=1) < _EXACT
    nelem = np.where(exact[:, None], grid, 1).astype(np.int64).prod(axis=1)
    table = max(by_id) + 1
    specs = np.empty(table + 1, dtype=object)  # the last: every id past the table (unknown)
    block = np.ones(table + 1, dtype=np.int64)
    size = np.zeros(table + 1, dtype=np.int64)
    current = np.zeros(table + 1, dtype=bool)
    for tid, spec_t in by_id.items():
        specs[tid], current[tid] = spec_t, spec_t.is_current
        if spec_t.is_current:  # a removed type is never sized (its block may be given as 0)
            block[tid], size[tid] = spec_t.block_size, spec_t.type_size
    slot = np.where((types >= 0) & (types < table), types, table)
    sized = exact & current[slot] & (grid[:, 0].astype(np.int64) % block[slot] == 0)
    nbytes = np.where(sized, nelem // block[slot] * size[slot], -1)
    spec_list = specs[slot].tolist()
    nelem_list: list = nelem.tolist()
    nbytes_list: list = [None if b < 0 else b for b in nbytes.tolist()] if not sized.all() else nbytes.tolist()
    for i in np.flatnonzero(~exact).tolist():  # shapes near or past 2^63 elements: Python integers
        extent = tensor_extent(dims_list[i], int(types[i]))
        nelem_list[i] = extent.nelem
        big = extent.nbytes is None or align_offset(extent.nbytes, alignment) >= 2**64
        nbytes_list[i] = None if big else extent.nbytes
    return spec_list, nelem_list, nbytes_list
