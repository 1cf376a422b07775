"""Reading runs of KV pairs and tensor infos in bulk: the record shapes from the spec, their fields as columns.

The walk (:mod:`.walk`) reads a file's head record by record through the generated parser only where it must (an
array value, a record that breaks a rule); runs of the other records are located by
:func:`gguf_construct.base.recordscan.scan_records` and their fields read here with numpy gathers, the texts
decoded a chunk at a time, so that millions of small records cost no Python step each.  Every width comes from
spec/gguf.yaml through the family's version and byte order: a KV pair is a string (the key), a selector (the value
type) and a body sized by the selector (a primitive's size, a string, an array of primitives or strings, or not in
bulk: arrays of arrays and unknown types); an array's value is made as the record parser makes it (a native-order
numpy array, a bool view for BOOL elements, a :class:`~gguf_construct.format.stringlist.StringList` over the
buffer, in a ``Container`` of ``type``, ``len`` and ``data``), many small arrays from one gather; a
tensor info is a string (the name), a count (n_dimensions, up to its ``valid`` maximum), that many dimensions and
fixed fields after them.  A spec whose records do not have these shapes gets no bulk reader (``None``) and is read
record by record.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter

import numpy as np
from construct import Container

from ..base.pages import release
from ..base.recordscan import (
    ARRAY_BODY,
    ARRAY_ITEMS,
    STOP,
    STRING_BODY,
    ArrayBody,
    read_uints,
    scan_records,
    string_runs,
)
from ..format import spec as _spec
from ..format.constructs import BufferStream, Float32NaN
from ..format.stringlist import StringList
from ..format.reader import align_offset, tensor_extent
from ..format.spec import tensor_type_by_id
from ..format.structs import container_spec, family, field_limit, is_string_type, resolve_alias, value_types

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
    arrays: ArrayBody | None = None  # how a KV pair's array value is laid out (None: arrays are read one by one)
    as_bool: tuple[bool, ...] = ()  # per value type: an array of it is a bool view (as the record parser makes it)
    version: int = 0  # the family's version (a KV pair's record parser, for arrays of arrays)


def _primitive(name: str, version: int) -> str | None:
    if name in container_spec()["aliases"]:
        return resolve_alias(name, version)
    return name if name in _spec.primitives() else None


def _string_width(type_name: str, version: int) -> int | None:
    if not is_string_type(type_name):
        return None
    prim = _primitive(container_spec()["types"][type_name]["seq"][0]["type"], version)
    return _spec.primitives()[prim].size if prim else None


def _array_body(type_name: str, version: int, byte_order: str, width: int) -> ArrayBody | None:
    """The bulk layout of an array type (a selector, a count, then elements switched on the selector and repeated
    by the count), or None: each element type's size (a primitive's, :data:`STRING_BODY` for a string of the
    record's width, :data:`STOP` for the others: arrays of arrays, strings of another width)."""
    seq = container_spec()["types"].get(type_name, {}).get("seq", [])
    if len(seq) != 3 or seq[2].get("switch_on") != seq[0]["id"] or seq[2].get("repeat") != seq[1]["id"]:
        return None
    sel, count = _primitive(seq[0].get("type", ""), version), _primitive(seq[1].get("type", ""), version)
    if sel is None or count is None:
        return None
    vts = value_types()
    items = np.full(max(vts) + 1, STOP, dtype=np.int64)
    for vid, vt in vts.items():
        if vt.get("encoding") in _spec.primitives():
            items[vid] = _spec.primitives()[vt["encoding"]].size
        elif "encoding" not in vt and _string_width(vt["type"], version) == width:
            items[vid] = STRING_BODY
        elif vt.get("type") == type_name:  # arrays of arrays: one level is followed, each read by the parser
            items[vid] = ARRAY_ITEMS
    size = _spec.primitives()
    return ArrayBody(size[sel].size, size[count].size, items, _spec.byte_order(byte_order).struct)


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
    arrays = None
    for vid, vt in vts.items():
        if vt.get("encoding") in _spec.primitives():
            sizes[vid] = _spec.primitives()[vt["encoding"]].size
            kinds[vid] = vt["encoding"]
            dtypes[vid] = _spec.numpy_dtype(vt["encoding"], byte_order)
        elif "encoding" not in vt and _string_width(vt["type"], version) == width:
            sizes[vid], kinds[vid] = STRING_BODY, "text"
        elif "encoding" not in vt:
            found = _array_body(vt["type"], version, byte_order, width)  # None when the type is not an array
            if found is not None:
                sizes[vid], kinds[vid], arrays = ARRAY_BODY, "array", found
    return RecordShape(
        width,
        byte_order == "little",
        byte_order,
        _spec.primitives()[sel].size,
        sizes,
        kinds=tuple(kinds),
        dtypes=tuple(dtypes),
        arrays=arrays,
        version=version,
        as_bool=tuple(vts[v]["name"] == "BOOL" if v in vts else False for v in range(len(sizes))),
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
    return scan_records(buf, pos, count, shape.width, shape.little, shape.sel_width, shape.sizes, shape.arrays)


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


_OWN_ARRAY = 1 << 12  # arrays of at least this many bytes are copied on their own (the parser's way)
_GATHER = 1 << 22  # bytes of small arrays gathered at a time
_EMPTY = np.empty(0, dtype=np.int64)


def _array_values(buf, at: np.ndarray, shape: RecordShape, records: np.ndarray) -> tuple[list, np.ndarray]:
    """The values of the array bodies at ``at`` (each a ``Container`` of ``type``, ``len`` and ``data``, as the
    record parser makes it) and where each ends: the arrays of one element type are read together, an array of
    arrays by the record parser (from its record's start, ``records``), one at a time."""
    arrays = shape.arrays
    assert arrays is not None  # a KV pair whose value is an array in bulk has an array layout
    whole = np.frombuffer(buf, dtype=np.uint8)
    types = read_uints(whole, at, arrays.sel_width, shape.little).astype(np.int64)
    counts = read_uints(whole, at + arrays.sel_width, arrays.count_width, shape.little).astype(np.int64)
    data_at = at + arrays.sel_width + arrays.count_width
    ends = np.empty(len(at), dtype=np.int64)
    datas = np.empty(len(at), dtype=object)
    parsed: list[tuple[np.ndarray, list]] = []
    for item in np.unique(types).tolist():
        rows = np.flatnonzero(types == item)
        if arrays.items[item] == ARRAY_ITEMS:
            parsed.append((rows, _parsed_values(buf, records[rows], shape, ends, rows)))
            continue
        if arrays.items[item] == STRING_BODY:
            got, ends[rows] = _string_arrays(buf, data_at[rows], counts[rows], shape)
        else:
            dtype = shape.dtypes[item]
            assert dtype is not None  # an element read in bulk has an encoding
            got = _numeric_arrays(buf, data_at[rows], counts[rows], dtype, shape.as_bool[item])
            ends[rows] = data_at[rows] + counts[rows] * dtype.itemsize
        datas[rows] = np.fromiter(got, dtype=object, count=len(rows))
    fields = zip(types.tolist(), counts.tolist(), datas.tolist())
    values = list(map(Container, map(zip, repeat(_ARRAY_FIELDS), fields)))  # no Python call per array
    for rows, got in parsed:
        for k, value in zip(rows.tolist(), got):
            values[k] = value
    return values, ends


def _parsed_values(buf, records: np.ndarray, shape: RecordShape, ends: np.ndarray, rows: np.ndarray) -> list:
    """The values of the KV records at ``records`` read by the record parser (their ends into ``ends[rows]``)."""
    parse = family(shape.version, shape.byte_order).record_parser("metadata_kv")
    out = []
    for k, start in zip(rows.tolist(), records.tolist()):
        stream = BufferStream(buf, start)
        out.append(parse(stream).value)
        ends[k] = stream.pos
    return out


_ARRAY_FIELDS = ("type", "len", "data")  # a parsed array value's fields (the spec's gguf_array)


def _numeric_arrays(buf, data_at: np.ndarray, counts: np.ndarray, dtype: np.dtype, as_bool: bool) -> list:
    """Native-order copies of ``counts[k]`` numbers of ``dtype`` at ``data_at[k]`` (bool views with ``as_bool``):
    small arrays slices of one gathered copy a chunk at a time, big ones copied one by one from the buffer."""
    whole = np.frombuffer(buf, dtype=np.uint8)
    native = dtype.newbyteorder("=")
    nbytes = counts * dtype.itemsize
    out = np.empty(len(counts), dtype=object)
    for k in np.flatnonzero(nbytes >= _OWN_ARRAY).tolist():
        a, n = int(data_at[k]), int(counts[k])
        arr = np.frombuffer(buf, dtype=dtype, count=n, offset=a).astype(native, copy=True)
        release(buf, a, a + n * dtype.itemsize)
        out[k] = arr.view(np.bool_) if as_bool else arr
    small = np.flatnonzero(nbytes < _OWN_ARRAY)
    cum = np.cumsum(nbytes[small])
    i = 0
    while i < len(small):
        j = max(i + 1, int(np.searchsorted(cum, (cum[i - 1] if i else 0) + _GATHER, side="right")))
        rows = small[i:j]
        size = nbytes[rows]
        first = np.cumsum(size) - size  # where each array starts in the gathered bytes
        total = int(size.sum())
        raw = whole[np.repeat(data_at[rows] - first, size) + np.arange(total, dtype=np.int64)]
        values = raw.view(dtype).astype(native)
        if as_bool:
            values = values.view(np.bool_)
        lo = (first // dtype.itemsize).tolist()
        hi = ((first + size) // dtype.itemsize).tolist()
        out[rows] = np.fromiter(map(values.__getitem__, map(slice, lo, hi)), dtype=object, count=len(rows))
        i = j
    return out.tolist()


def _string_arrays(buf, data_at: np.ndarray, counts: np.ndarray, shape: RecordShape) -> tuple[list, np.ndarray]:
    """StringLists over the ``counts[k]`` strings at ``data_at[k]`` (as the record parser makes them) and where each
    array ends: the strings located together, their UTF-8 validity and NUL bytes judged together."""
    w, little = shape.width, shape.little
    arrays = shape.arrays
    assert arrays is not None
    starts = string_runs(buf, data_at, counts, w, little, arrays.prefix)
    whole = np.frombuffer(buf, dtype=np.uint8)
    lengths = read_uints(whole, starts - w, w, little).astype(np.int64)
    first = np.cumsum(counts) - counts
    last = first + counts - 1
    has = counts > 0
    ends = data_at.copy()
    ends[has] = starts[last[has]] + lengths[last[has]]
    bad, nul = _judged(buf, starts, lengths, shape)
    bad_of = _per_array(bad, first, counts)
    nul_of = _per_array(nul, first, counts)
    order = shape.byte_order
    buf = buf if isinstance(buf, bytes) else memoryview(buf).cast("B")  # the buffer a parsed list holds
    make = StringList._make  # the list from_records makes, its judgement made above for all arrays at once
    lists = [
        make(buf, starts[a : a + c], e, w, order, True, b, n)
        for a, c, e, b, n in zip(first.tolist(), counts.tolist(), ends.tolist(), bad_of, nul_of)
    ]
    return lists, ends


def _per_array(marked: np.ndarray, first: np.ndarray, counts: np.ndarray) -> list:
    """The marked string indices (of all arrays' strings) of each array, relative to its first string."""
    out = [_EMPTY] * len(counts)
    if not len(marked):
        return out
    owner = np.searchsorted(first, marked, side="right") - 1  # ascending, as the marked indices are
    arrays, at = np.unique(owner, return_index=True)
    for k, own in zip(arrays.tolist(), np.split(marked - first[owner], at[1:])):
        out[k] = own
    return out


def _judged(buf, starts: np.ndarray, lengths: np.ndarray, shape: RecordShape) -> tuple[np.ndarray, np.ndarray]:
    """(invalid UTF-8, holding a NUL) indices of the strings at ``starts``: their records copied side by side a
    chunk at a time and judged by :class:`StringList` in one go."""
    w = shape.width
    whole = np.frombuffer(buf, dtype=np.uint8)
    bad: list[np.ndarray] = []
    nul: list[np.ndarray] = []
    room = lengths + w
    cum = np.cumsum(room)
    i, n = 0, len(starts)
    while i < n:
        j = max(i + 1, int(np.searchsorted(cum, (cum[i - 1] if i else 0) + _GATHER, side="right")))
        size = room[i:j]
        first = np.cumsum(size) - size
        total = int(size.sum())
        joined = whole[np.repeat(starts[i:j] - w - first, size) + np.arange(total, dtype=np.int64)]
        judged = StringList.from_records(joined.tobytes(), first + w, total, w, shape.byte_order)
        bad.append(judged.invalid_utf8() + i)
        nul.append(judged.nul_items() + i)
        i = j
    if not bad:
        return _EMPTY, _EMPTY
    return np.concatenate(bad), np.concatenate(nul)


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
        if kind == "array":
            got, ends[rows] = _array_values(buf, vpos[rows], shape, starts[rows])
        elif kind == "text":
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
