"""Q1_0 and Q2_0: one fp16 scale per block with 1-bit signs or 2-bit codes.

Decoding (ggml ``dequantize_row_q1_0`` / ``_q2_0``):

* Q1_0 (128 weights): ``y[j] = d`` if bit ``j`` (little-endian bit order over ``qs``) is set, else ``-d``.
* Q2_0 (64 weights): ``y[j] = (q[j] - 1) * d`` with ``q[j] = (qs[j // 4] >> 2 * (j % 4)) & 3``.

Encoding follows ``quantize_row_q1_0_ref`` / ``quantize_row_q2_0_ref``; ggml ignores importance weights for both
types (``quantize_q1_0``/``quantize_q2_0`` call the reference path row by row either way), so ``imatrix`` has no
effect here.
"""

from __future__ import annotations

import numpy as np

from . import block_dtype

__all__ = ["decode_q1_0", "encode_q1_0", "decode_q2_0", "encode_q2_0"]

_F32 = np.float32

# --------------------------------------------------------------------------------------------------------------
# shared float helpers (ggml semantics); used by the other codecs of this family as well
# --------------------------------------------------------------------------------------------------------------


def f16_to_f32(h: np.ndarray) -> np.ndarray:
    """ggml's FP16 -> FP32 conversion: exact widening, signalling NaNs come out quiet (bit 22 set)."""
    f = np.asarray(h).astype(np.float32)
    nan = np.isnan(f)
    if nan.any():
        f.view(np.uint32)[nan] |= np.uint32(0x00400000)
    return f


def f32_to_f16(f: np.ndarray) -> np.ndarray:
    """ggml's FP32 -> FP16 conversion (round to nearest even, overflow to infinity, NaN -> sign | 0x7E00),
    returned as a float16 array holding exactly those bits."""
    f = np.asarray(f, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = f.astype(np.float16)
    nan = np.isnan(f)
    if nan.any():
        hb = h.view(np.uint16)
        sign = (f.view(np.uint32)[nan] >> np.uint32(16)).astype(np.uint16) & np.uint16(0x8000)
        hb[nan] = sign | np.uint16(0x7E00)
    return h


def seq_sum(a: np.ndarray) -> np.ndarray:
    """Sum float32 ``a`` over axis 0 strictly left to right starting from +0, as a C ``for`` loop does."""
    s = np.zeros(a.shape[1:], dtype=np.float32)
    for j in range(a.shape[0]):
        s += a[j]
    return s


def c_float_to_int32(v: np.ndarray) -> np.ndarray:
    """C ``(int)`` conversion of float32 as x86-64 does it: truncation, and INT_MIN for NaN or out of range."""
    v = np.asarray(v, dtype=np.float32)
    ok = np.abs(v) < _F32(2147483648.0)  # False for NaN
    out = np.full(v.shape, np.iinfo(np.int32).min, dtype=np.int32)
    out[ok] = v[ok].astype(np.int32)
    return out


def c_roundf(v: np.ndarray) -> np.ndarray:
    """C ``roundf``: round half away from zero, in float32 (exact)."""
    v = np.asarray(v, dtype=np.float32)
    t = np.trunc(v)
    with np.errstate(invalid="ignore"):
        up = np.abs(v - t) >= _F32(0.5)
    return np.where(up, t + np.copysign(_F32(1.0), v), t).astype(np.float32)


# --------------------------------------------------------------------------------------------------------------
# Q1_0
# --------------------------------------------------------------------------------------------------------------

def decode_q1_0(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d = f16_to_f32(blocks["d"])
    bits = np.unpackbits(blocks["qs"], axis=1, bitorder="little").view(bool)  # (n, 128)
    return np.where(bits, d[:, None], -d[:, None])


def encode_q1_0(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    x = rows.reshape(-1, 128)
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype("Q1_0"))
    sum_abs = seq_sum(np.abs(x).T)
    d = sum_abs / _F32(128)
    out["d"] = f32_to_f16(d)
    out["qs"] = np.packbits(x >= _F32(0), axis=1, bitorder="little")
    return out


# --------------------------------------------------------------------------------------------------------------
# Q2_0
# --------------------------------------------------------------------------------------------------------------

# byte -> its four 2-bit codes minus one, lowest pair first (derived, not data)
_Q2_CODES = (((np.arange(256)[:, None] >> (2 * np.arange(4))) & 3) - 1).astype(np.float32)


def decode_q2_0(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d = f16_to_f32(blocks["d"])
    v = _Q2_CODES[blocks["qs"]].reshape(n, 64)
    v *= d[:, None]
    return v


def encode_q2_0(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    x = rows.reshape(-1, 64)
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype("Q2_0"))
    ax = np.abs(x)
    amax = np.fmax.reduce(ax, axis=1, initial=_F32(0))  # `if (a > amax) amax = a`: NaNs never win
    d = amax
    with np.errstate(divide="ignore"):
        idv = np.where(d > 0, _F32(1) / d, _F32(0)).astype(np.float32)
    out["d"] = f32_to_f16(d)
    with np.errstate(invalid="ignore", over="ignore"):
        q = c_float_to_int32(c_roundf(x * idv[:, None])).astype(np.int64) + 1
    q = np.clip(q, 0, 3).astype(np.uint8).reshape(n, 16, 4)
    out["qs"] = q[..., 0] | (q[..., 1] << 2) | (q[..., 2] << 4) | (q[..., 3] << 6)
    return out
