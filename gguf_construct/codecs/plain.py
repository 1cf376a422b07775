"""Plain (unquantized) element types: F32, F16, BF16, F64, I8, I16, I32, I64.

Each "block" is one element (block size 1), so decoders return shape ``(n, 1)`` and encoders take any row shape.

* F16 / BF16 follow ggml's own conversions bit for bit (``ggml_fp16_to_fp32_row`` / ``ggml_fp32_to_fp16_row``,
  ``ggml_bf16_to_fp32_row`` / ``ggml_fp32_to_bf16_row_ref``; see :mod:`._common`), which is what
  ``ggml_quantize_chunk`` uses for these types.
* F32 is a copy.  F64 decodes to float64; encoding widens the (float32 or float64) input to float64 exactly.
* ggml has no codec for the integer types.  Decoding returns the integers in their own dtype; encoding is a
  plain cast that accepts only values that round-trip: integer-valued input within the type's range
  (anything else raises ``ValueError`` rather than wrapping or truncating silently).
"""

from __future__ import annotations

import numpy as np

from . import block_dtype
from ._common import bf16_to_fp32, fp16_to_fp32, fp32_to_fp16


def _values(blocks: np.ndarray) -> np.ndarray:
    return blocks["value"]


def _as_blocks(name: str, flat: np.ndarray) -> np.ndarray:
    """Wrap a flat little-endian array of element values as the type's structured block array (no copy)."""
    dt = block_dtype(name)
    flat = np.ascontiguousarray(flat, dtype=dt.fields["value"][0])
    return flat.view(dt)


# ---------------------------------------------------------------------------------------------------- floats


def decode_f32(blocks: np.ndarray) -> np.ndarray:
    return _values(blocks).astype(np.float32).reshape(-1, 1)


def encode_f32(rows: np.ndarray, imatrix=None) -> np.ndarray:
    return _as_blocks("F32", np.asarray(rows, dtype=np.float32).reshape(-1))


def decode_f16(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    values = fp16_to_fp32(_values(blocks), out)
    return values.reshape(-1, 1) if out is None else out


def encode_f16(rows: np.ndarray, imatrix=None) -> np.ndarray:
    return _as_blocks("F16", fp32_to_fp16(np.asarray(rows, dtype=np.float32).reshape(-1)))


def decode_bf16(blocks: np.ndarray) -> np.ndarray:
    return bf16_to_fp32(_values(blocks)).reshape(-1, 1)


_BF16_CHUNK = 1 << 16  # values per chunk (256 KiB of input): the temporaries stay in L2


def _bf16_chunk(u: np.ndarray, out: np.ndarray, t: np.ndarray) -> None:
    """:func:`._common.fp32_to_bf16` of the float32 bits ``u`` into ``out`` (uint16), ``t`` uint32 scratch:
    ``(u + 0x7fff + ((u >> 16) & 1)) >> 16`` in wrapping 32-bit arithmetic; NaNs keep their upper half with
    the quiet bit forced."""
    np.right_shift(u, np.uint32(16), out=t)
    t &= np.uint32(1)
    t += np.uint32(0x7FFF)
    t += u
    t >>= np.uint32(16)
    np.copyto(out, t, casting="unsafe")
    np.bitwise_and(u, np.uint32(0x7FFFFFFF), out=t)
    nan = t > np.uint32(0x7F800000)
    if nan.any():
        out[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(64)).astype(np.uint16)


def encode_bf16(rows: np.ndarray, imatrix=None) -> np.ndarray:
    u = np.ascontiguousarray(rows, dtype=np.float32).reshape(-1).view(np.uint32)
    out = np.empty(u.size, dtype=np.uint16)
    t = np.empty(min(u.size, _BF16_CHUNK), dtype=np.uint32)
    for s in range(0, u.size, _BF16_CHUNK):
        e = min(u.size, s + _BF16_CHUNK)
        _bf16_chunk(u[s:e], out[s:e], t[: e - s])
    return _as_blocks("BF16", out)


def decode_f64(blocks: np.ndarray) -> np.ndarray:
    return _values(blocks).astype(np.float64).reshape(-1, 1)


def encode_f64(rows: np.ndarray, imatrix=None) -> np.ndarray:
    return _as_blocks("F64", np.asarray(rows).astype(np.float64).reshape(-1))


# -------------------------------------------------------------------------------------------------- integers


def _encode_int(name: str, dtype: np.dtype, rows) -> np.ndarray:
    rows = np.asarray(rows)
    info = np.iinfo(dtype)
    if rows.dtype.kind in "ui":
        if rows.size and (rows.min() < info.min or rows.max() > info.max):
            raise ValueError(f"{name}: values outside [{info.min}, {info.max}]")
        return _as_blocks(name, rows.astype(dtype).reshape(-1))
    if rows.dtype.kind == "b":
        return _as_blocks(name, rows.astype(dtype).reshape(-1))
    if rows.dtype.kind == "O":  # Python ints of any size
        flat = rows.reshape(-1)
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in flat):
            raise TypeError(f"{name}: object arrays must hold integers")
        if flat.size and (min(flat) < info.min or max(flat) > info.max):
            raise ValueError(f"{name}: values outside [{info.min}, {info.max}]")
        return _as_blocks(name, np.array([int(v) for v in flat], dtype=dtype))
    if rows.dtype.kind != "f":
        raise TypeError(f"{name}: cannot encode values of dtype {rows.dtype}")
    flat = rows.reshape(-1)
    if not np.all(np.isfinite(flat)) or not np.array_equal(flat, np.trunc(flat)):
        raise ValueError(f"{name}: values must be integers (got non-integral, NaN or infinite values)")
    if flat.size and (flat.min() < info.min or flat.max() > info.max):
        raise ValueError(f"{name}: values outside [{info.min}, {info.max}]")
    out = flat.astype(dtype)
    if not np.array_equal(out.astype(flat.dtype), flat):  # float input beyond the float's exact integer range
        raise ValueError(f"{name}: values do not round-trip exactly")
    return _as_blocks(name, out)


def decode_i8(blocks: np.ndarray) -> np.ndarray:
    return _values(blocks).astype(np.int8).reshape(-1, 1)


def encode_i8(rows: np.ndarray, imatrix=None) -> np.ndarray:
    return _encode_int("I8", np.dtype(np.int8), rows)


def decode_i16(blocks: np.ndarray) -> np.ndarray:
    return _values(blocks).astype(np.int16).reshape(-1, 1)


def encode_i16(rows: np.ndarray, imatrix=None) -> np.ndarray:
    return _encode_int("I16", np.dtype(np.int16), rows)


def decode_i32(blocks: np.ndarray) -> np.ndarray:
    return _values(blocks).astype(np.int32).reshape(-1, 1)


def encode_i32(rows: np.ndarray, imatrix=None) -> np.ndarray:
    return _encode_int("I32", np.dtype(np.int32), rows)


def decode_i64(blocks: np.ndarray) -> np.ndarray:
    return _values(blocks).astype(np.int64).reshape(-1, 1)


def encode_i64(rows: np.ndarray, imatrix=None) -> np.ndarray:
    return _encode_int("I64", np.dtype(np.int64), rows)
