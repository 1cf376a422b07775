"""Encoding many records of a head at once: KV pairs of scalar and STRING values, and tensor infos, as numpy scatters.

The mirror of :mod:`gguf_construct.rulebook.records`: the layouts are the same :class:`RecordShape` values, derived
from spec/gguf.yaml for the family being written (its string length width, its selector and count widths, its byte
order), so a conversion to the other byte order or version, or a file of millions of keys built in memory, costs a
few vectorised steps per run of records instead of a generated-struct build per record.  A record this cannot
encode exactly as the generated struct would (an array, a lazily read value, a NaN, a number out of its type's
range, a name past the dimension limit) returns ``None`` for its run and the caller builds it with the struct,
which also says why an impossible value cannot be written.
"""

from __future__ import annotations

import numpy as np

from ..format.constructs import encode_text
from ..rulebook.records import RecordShape

__all__ = ["encode_kvs", "encode_tensor_infos", "kv_encodable"]

_F32_MAX = float(np.finfo(np.float32).max)
_INF = float("inf")


def kv_encodable(shape: RecordShape, value) -> bool:
    """True when the KV value ``value`` (a GGUFValue) is encoded here exactly as the struct would: an integer (or
    bool) of an integer encoding, a finite or infinite float (not NaN) of a float32/float64 encoding, or a STRING
    holding a ``str``.  Anything else (an int given for a float type, a float for an integer type, another float
    width) goes to the struct, which converts or refuses it its own way."""
    vid = int(value.type)
    if vid >= len(shape.kinds) or not shape.kinds[vid]:
        return False
    kind, v = shape.kinds[vid], value.value
    if kind == "text":
        return type(v) is str
    if kind in ("f4", "f8"):
        return type(v) is float and v == v and (kind == "f8" or abs(v) <= _F32_MAX or abs(v) == _INF)
    if kind[0] in "iu" and kind[1:].isdigit():
        return type(v) is int or type(v) is bool
    return False


def _uint_bytes(values: np.ndarray, width: int, byte_order: str) -> np.ndarray:
    prefix = "<" if byte_order == "little" else ">"
    return np.ascontiguousarray(values, dtype=f"{prefix}u{width}").view(np.uint8).reshape(-1, width)


def _scatter(out: np.ndarray, at: np.ndarray, rows: np.ndarray) -> None:
    """Write row ``i`` of the byte matrix ``rows`` at ``out[at[i]:]``."""
    if len(at):
        out[at[:, None] + np.arange(rows.shape[1])] = rows


def _scatter_texts(out: np.ndarray, at: np.ndarray, texts: list[bytes], lens: np.ndarray) -> None:
    """Write ``texts[i]`` at ``out[at[i]:]``."""
    total = int(lens.sum())
    if not total:
        return
    joined = np.frombuffer(b"".join(texts), dtype=np.uint8)
    first = np.cumsum(lens) - lens  # where each text starts in the joined bytes
    out[np.repeat(at - first, lens) + np.arange(total)] = joined


def _records(texts: list[bytes], selectors: np.ndarray, rest: np.ndarray, shape: RecordShape):
    """Records that each start with a string (``texts[i]``, its length ``shape.width`` bytes) and a selector
    (``selectors[i]``, ``shape.sel_width`` bytes), then ``rest[i]`` bytes the caller fills: the zeroed byte array
    with the strings and selectors written, and where each record's rest starts."""
    n = len(texts)
    w, sel = shape.width, shape.sel_width
    text_len = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    rec_len = w + text_len + sel + rest
    starts = np.cumsum(rec_len) - rec_len
    out = np.zeros(int(rec_len.sum()), dtype=np.uint8)
    _scatter(out, starts, _uint_bytes(text_len, w, shape.byte_order))
    _scatter_texts(out, starts + w, texts, text_len)
    at = starts + w + text_len
    _scatter(out, at, _uint_bytes(selectors, sel, shape.byte_order))
    return out, at + sel


def encode_kvs(keys: list[str], values: list, shape: RecordShape) -> bytes | None:
    """The KV records of ``keys``/``values`` (GGUFValues, each :func:`kv_encodable`) in the family of ``shape``,
    or None when a number does not fit its type (the struct then says so)."""
    n = len(keys)
    w = shape.width
    vtype = np.fromiter((int(v.type) for v in values), dtype=np.int64, count=n)
    body = shape.sizes[vtype].copy()
    texts = np.flatnonzero(body < 0) if n else np.zeros(0, dtype=np.int64)  # STRING_BODY
    text_bytes = [encode_text(values[i].value) for i in texts.tolist()]
    text_len = np.fromiter(map(len, text_bytes), dtype=np.int64, count=len(texts))
    body[texts] = w + text_len
    out, value_at = _records([encode_text(k) for k in keys], vtype, body, shape)
    _scatter(out, value_at[texts], _uint_bytes(text_len, w, shape.byte_order))
    _scatter_texts(out, value_at[texts] + w, text_bytes, text_len)
    scalar = np.ones(n, dtype=bool)
    scalar[texts] = False
    for vid in np.unique(vtype[scalar]).tolist():
        rows = np.flatnonzero(scalar & (vtype == vid))
        dtype = shape.dtypes[vid]
        try:
            with np.errstate(over="raise", invalid="raise"):
                column = np.array([values[i].value for i in rows.tolist()], dtype=dtype)
        except (OverflowError, FloatingPointError, ValueError, TypeError):
            return None
        _scatter(out, value_at[rows], column.view(np.uint8).reshape(len(rows), -1))
    return out.tobytes()


def encode_tensor_infos(infos: list[tuple[str, tuple, int, int]], shape: RecordShape, limit: int) -> bytes | None:
    """The tensor info records of ``infos`` (name, shape in ggml order, type id, offset) in the family of
    ``shape`` (``limit``: the most dimensions the count field allows), or None when one does not fit (the struct
    then says why)."""
    n = len(infos)
    if not n:
        return b""
    (_, dim_dtype), *fixed = shape.fields
    n_dims = np.fromiter((len(dims) for _, dims, _, _ in infos), dtype=np.int64, count=n)
    if int(n_dims.max()) > limit or len(fixed) != 2:
        return None
    fixed_size = sum(dtype.itemsize for _, dtype in fixed)
    names = [encode_text(name) for name, _, _, _ in infos]
    out, dims_at = _records(names, n_dims, n_dims * dim_dtype.itemsize + fixed_size, shape)
    try:
        with np.errstate(over="raise", invalid="raise"):
            flat = np.array([d for _, dims, _, _ in infos for d in dims], dtype=dim_dtype)
            columns = [np.array([info[2 + k] for info in infos], dtype=dtype) for k, (_, dtype) in enumerate(fixed[:2])]
    except (OverflowError, FloatingPointError, ValueError, TypeError):
        return None
    total = int(n_dims.sum())
    if total:
        each = dim_dtype.itemsize
        first = np.cumsum(n_dims) - n_dims
        at = np.repeat(dims_at - first * each, n_dims) + np.arange(total) * each
        _scatter(out, at, flat.view(np.uint8).reshape(total, each))
    at = dims_at + n_dims * dim_dtype.itemsize
    for column, (_, dtype) in zip(columns, fixed):
        _scatter(out, at, column.view(np.uint8).reshape(n, dtype.itemsize))
        at = at + dtype.itemsize
    return out.tobytes()
