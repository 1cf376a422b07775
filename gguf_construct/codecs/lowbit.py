"""Q1_0 and Q2_0: one fp16 scale per block with 1-bit signs or 2-bit codes.

Decoding (ggml ``dequantize_row_q1_0`` / ``_q2_0``):

* Q1_0 (128 weights): ``y[j] = d`` if bit ``j`` (least significant bit of ``qs[0]`` first) is set, else ``-d``.
* Q2_0 (64 weights): ``y[j] = (q[j] - 1) * d`` with ``q[j] = (qs[j // 4] >> 2 * (j % 4)) & 3``.

Encoding follows ``quantize_row_q1_0_ref`` / ``quantize_row_q2_0_ref``; ggml ignores importance weights for both
types (``quantize_q1_0`` / ``quantize_q2_0`` call the reference quantizer row by row either way), so ``imatrix``
has no effect.

This module also holds the small decoding helpers shared by the other codecs of this family (``fp4``,
``ternary``, ``iq4``): chunked iteration and byte-table lookups on whole blocks.
"""

from __future__ import annotations

import numpy as np

from . import block_dtype
from ._common import (
    block_bytes,
    c_float_to_int32,
    decode_chunks,
    fp16_to_fp32,
    fp32_to_fp16,
    output_array,
    roundf,
    seq_sum,
)

__all__ = ["decode_q1_0", "encode_q1_0", "decode_q2_0", "encode_q2_0"]

_F32 = np.float32

# --------------------------------------------------------------------------------------------------------------
# helpers shared by this family's decoders
# --------------------------------------------------------------------------------------------------------------

CHUNK_VALUES = 1 << 19  # decoded floats per chunk (2 MiB): temporaries stay in cache


def chunks(n_blocks: int, block_size: int):
    """:func:`._common.decode_chunks` with this family's larger chunks of ``CHUNK_VALUES`` values."""
    return decode_chunks(n_blocks, block_size, CHUNK_VALUES)


def byte_table(values) -> bytes:
    """A 256-entry int8 table for ``bytes.translate`` (the fastest byte -> byte lookup available)."""
    v = np.asarray(values)
    assert v.shape == (256,) and v.min() >= -128 and v.max() <= 127
    return v.astype(np.int8).tobytes()


def translate(raw: bytes, table: bytes, shape) -> np.ndarray:
    """Map every byte of ``raw`` through ``table``; the result as int8 of ``shape``."""
    return np.frombuffer(raw.translate(table), dtype=np.int8).reshape(shape)


def nibble_tables(values) -> tuple[bytes, bytes]:
    """``bytes.translate`` tables giving ``values[b & 15]`` and ``values[b >> 4]`` for every byte b."""
    v = np.asarray(values)
    b = np.arange(256)
    return byte_table(v[b & 15]), byte_table(v[b >> 4])


@np.errstate(all="ignore")  # inf * 0 and NaN scales are data here, not errors
def decode_nibbles(
    blocks: np.ndarray,
    q_offset: int,
    q_bytes: int,
    group: int,
    tables: tuple[bytes, bytes],
    scales: np.ndarray,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Decode 4-bit codes laid out in groups of ``group`` bytes, byte j of a group holding element j (low
    nibble) and element j + group (high nibble), as ``float(table[code]) * scale`` with one scale per group.

    ``qs`` is the byte range [q_offset, q_offset + q_bytes) of each block; ``scales`` is float32
    (n_blocks, q_bytes // group).  Returns float32 (n_blocks, 2 * q_bytes): ``out`` when given."""
    n = blocks.shape[0]
    n_groups = q_bytes // group
    raw = block_bytes(blocks)
    lo_t, hi_t = tables
    unit = np.dtype(f"V{group}")  # one group of bytes, moved as a single item
    result = output_array(out, n, 2 * q_bytes)
    out = result.reshape(n, n_groups, 2 * group)
    sc = scales.reshape(n, n_groups, 1)
    for s, e in chunks(n, 2 * q_bytes):
        c = e - s
        qs = raw[s:e, q_offset : q_offset + q_bytes].tobytes()
        v = np.empty((c * n_groups, 2, group), dtype=np.int8)  # per group: low-nibble values, high-nibble values
        vv = v.view(unit).reshape(c * n_groups, 2)
        vv[:, 0] = np.frombuffer(qs.translate(lo_t), dtype=unit)
        vv[:, 1] = np.frombuffer(qs.translate(hi_t), dtype=unit)
        o = out[s:e]
        np.copyto(o.reshape(-1), v.reshape(-1), casting="unsafe")  # one long int8 -> float32 conversion
        o *= sc[s:e]
    return result


def nan_safe_abs(x: np.ndarray) -> np.ndarray:
    """``fabsf(x)`` with NaNs replaced by 0, for the C idiom ``if (amax < fabsf(v)) amax = fabsf(v)`` (NaNs never
    win).  numpy's SIMD max/fmax mishandle signalling NaNs, so they are removed before reducing."""
    ax = np.abs(x)
    nan = np.isnan(ax)
    if nan.any():
        ax[nan] = 0
    return ax


# --------------------------------------------------------------------------------------------------------------
# Q1_0
# --------------------------------------------------------------------------------------------------------------


# byte -> for each of its 8 bits (least significant first) the float32 sign mask selecting -d (bit clear) or d
_Q1_SIGN_MASKS = ((1 - ((np.arange(256)[:, None] >> np.arange(8)) & 1)) << 31).astype(np.uint32)


def decode_q1_0(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    n = blocks.shape[0]
    d_bits = fp16_to_fp32(blocks["d"]).view(np.uint32)[:, None]
    qs = blocks["qs"]
    out = output_array(out, n, 128)
    ob = out.view(np.uint32)
    for s, e in chunks(n, 128):
        o = ob[s:e]
        np.take(_Q1_SIGN_MASKS, qs[s:e], axis=0, out=o.reshape(e - s, 16, 8), mode="clip")
        np.bitwise_xor(o, d_bits[s:e], out=o)  # bit ? d : -d, as a sign flip (exact for NaN too)
    return out


def encode_q1_0(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    x = rows.reshape(-1, 128)
    out = np.zeros(x.shape[0], dtype=block_dtype("Q1_0"))
    d = seq_sum(np.abs(x), axis=1) / _F32(128)  # sum_abs / qk
    out["d"] = fp32_to_fp16(d)
    out["qs"] = np.packbits(x >= _F32(0), axis=1, bitorder="little")  # NaN -> 0, -0.0 -> 1
    return out


# --------------------------------------------------------------------------------------------------------------
# Q2_0
# --------------------------------------------------------------------------------------------------------------

# byte -> its four 2-bit codes minus one (lowest pair first) as four int8 packed in a uint32 (derived layout)
_Q2_QUADS = (
    (((np.arange(256)[:, None] >> (2 * np.arange(4))) & 3) - 1).astype(np.int8).copy().view(np.uint32).reshape(256)
)


@np.errstate(all="ignore")
def decode_q2_0(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    n = blocks.shape[0]
    d = fp16_to_fp32(blocks["d"])[:, None]
    qs = blocks["qs"]
    out = output_array(out, n, 64)
    for s, e in chunks(n, 64):
        q = np.take(_Q2_QUADS, qs[s:e], mode="clip").view(np.int8)  # (c, 64): (q - 1) in element order
        np.multiply(q, d[s:e], out=out[s:e], dtype=np.float32, casting="unsafe")  # ((int)q - 1) * d
    return out


def encode_q2_0(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    x = rows.reshape(-1, 64)
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype("Q2_0"))
    d = nan_safe_abs(x).max(axis=1, initial=_F32(0))  # `if (a > amax) amax = a`
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        idv = np.where(d > 0, _F32(1) / d, _F32(0)).astype(np.float32)
        out["d"] = fp32_to_fp16(d)
        q = c_float_to_int32(roundf(x * idv[:, None])).astype(np.int64) + 1  # (int)roundf(w * id) + 1
    q = np.clip(q, 0, 3).astype(np.uint8).reshape(n, 16, 4)
    out["qs"] = q[..., 0] | (q[..., 1] << 2) | (q[..., 2] << 4) | (q[..., 3] << 6)
    return out
