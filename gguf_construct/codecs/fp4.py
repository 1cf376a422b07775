"""MXFP4 and NVFP4: 4-bit E2M1 values with a shared power-of-two (E8M0) or UE4M3 scale.

Both use the doubled E2M1 table ``kvalues_mxfp4`` (spec/tables) and scales decoded at half their value, so
``y = kvalues_mxfp4[code] * scale``:

* MXFP4 (32 weights): ``scale = 2^(e - 128)`` (``GGML_E8M0_TO_FP32_HALF``; e = 0 and 1 give the subnormals
  2^-128 and 2^-127); ``y[j] = kv[qs[j] & 0xF] * scale``, ``y[j+16] = kv[qs[j] >> 4] * scale``.
* NVFP4 (64 weights = 4 sub-blocks of 16): ``scale_s = ue4m3_half[d[s]]`` (spec/tables);
  ``y[16s+j] = kv[qs[8s+j] & 0xF] * scale_s``, ``y[16s+j+8] = kv[qs[8s+j] >> 4] * scale_s``.

Encoding follows ``quantize_row_mxfp4_ref`` / ``quantize_row_nvfp4_ref``; ggml ignores importance weights for
both types.
"""

from __future__ import annotations

import numpy as np

from ..format import spec
from . import block_dtype
from ._common import c_float_to_int32
from .lowbit import decode_nibbles, nan_safe_abs, nibble_tables

__all__ = ["decode_mxfp4", "encode_mxfp4", "decode_nvfp4", "encode_nvfp4", "e8m0_half", "fp32_to_ue4m3"]

_F32 = np.float32

_KV = spec.table("kvalues_mxfp4")
_KVF = _KV.astype(np.float32)
_UE4M3 = spec.table("ue4m3_half")
_TABLES = nibble_tables(_KV)


def e8m0_half(e: np.ndarray) -> np.ndarray:
    """``GGML_E8M0_TO_FP32_HALF``: 2^(e-128) as float32 (e < 2 gives the subnormals 2^-128, 2^-127)."""
    e = np.asarray(e, dtype=np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - np.uint32(1)) << np.uint32(23)).astype(np.uint32)
    return bits.view(np.float32)


def decode_mxfp4(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return decode_nibbles(blocks, 1, 16, 16, _TABLES, e8m0_half(blocks["e"])[:, None], out)


def decode_nvfp4(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return decode_nibbles(blocks, 4, 32, 8, _TABLES, _UE4M3[blocks["d"]], out)


def _best_index(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``best_index_mxfp4`` for every element of x (.., k) with the scale d (..,): the first of the 16 codes
    minimising ``fabsf(kv[i]*d - x)``.  Negative codes never beat code 0 for x >= 0 (nor positive ones for
    x < 0) -- their error is never smaller, and ties go to the lower index -- so only code 0 and the seven
    codes of x's sign are tried, in table order."""
    ax = np.abs(x)
    dd = d[..., None]
    best = np.zeros(x.shape, dtype=np.uint8)
    err = np.empty(x.shape, dtype=np.float32)
    better = np.empty(x.shape, dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        best_err = np.abs(_KVF[0] * dd - ax)
        for i in range(1, 8):
            np.subtract(_KVF[i] * dd, ax, out=err)
            np.abs(err, out=err)
            np.less(err, best_err, out=better)  # strict: the first minimum wins; NaN never
            np.copyto(best, np.uint8(i), where=better)
            np.minimum(best_err, err, out=best_err)
        np.less(x, 0, out=better)
        better &= best > 0
    np.copyto(best, best + np.uint8(8), where=better)
    return best


# MXFP4's scales are powers of two: in units of the scale (q = |x| / d, exact) the candidates are the integers
# _K8 and, for q below 2^24, every error |k - q| is exact, so the first nearest is the one past each midpoint
# between neighbours that q exceeds (a tie keeps the lower code).  Scales far from 1 (products or differences
# that would overflow or lose bits), q from 2^20 on, infinities and NaNs take :func:`_best_index`.
_K8 = np.ascontiguousarray(_KVF[:8])
_MIDPOINTS = (_K8[:-1] + _K8[1:]) / _F32(2)
_SAFE_SCALES = (_F32(2.0**-100), _F32(2.0**100))
_SAFE_Q = _F32(2.0**20)


def _best_index_pow2(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """:func:`_best_index` for power-of-two scales ``d`` (MXFP4): one comparison per midpoint instead of an
    error per candidate."""
    ax = np.abs(x)
    dd = d[..., None]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        q = ax / dd
    best = np.zeros(x.shape, dtype=np.uint8)
    for m in _MIDPOINTS:
        best += q > m
    negative = (x < 0) & (best > 0)
    best |= negative.view(np.uint8) << np.uint8(3)
    safe_scales = (dd >= _SAFE_SCALES[0]) & (dd <= _SAFE_SCALES[1])
    if safe_scales.all() and q.size and q.max() <= _SAFE_Q:  # a NaN fails the comparison
        return best
    unsure = np.nonzero(~((q <= _SAFE_Q) & safe_scales))
    best[unsure] = _best_index(x[unsure][:, None], np.broadcast_to(dd, x.shape)[unsure])[:, 0]
    return best


def _pack(codes: np.ndarray, half: int) -> np.ndarray:
    c = codes.reshape(-1, 2, half)
    return c[:, 0, :] | (c[:, 1, :] << np.uint8(4))


def encode_mxfp4(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    x = rows.reshape(-1, 32)
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype("MXFP4"))
    amax = nan_safe_abs(x).max(axis=1, initial=_F32(0))
    # e = (uint8_t)(floorf(log2f(amax)) - 2 + 127) for amax > 0.  log2f is correctly rounded here (the double
    # result rounded to float); the float -> uint8_t conversion keeps the low byte of the (int) conversion.
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log2(amax.astype(np.float64)).astype(np.float32)
        ef = np.floor(lg) - _F32(2) + _F32(127)
    e = np.where(amax > 0, c_float_to_int32(ef) & 0xFF, 0).astype(np.uint8)
    out["e"] = e
    out["qs"] = _pack(_best_index_pow2(x, e8m0_half(e)), 16)
    return out


def fp32_to_ue4m3(x: np.ndarray) -> np.ndarray:
    """``ggml_fp32_to_ue4m3``: positive float32 to an unsigned E4M3 byte (mantissa rounded half up, saturating
    at 0x7E = 448; zero, negatives and NaN give 0; subnormals ``(int)(x * 512 + 0.5)`` clamped to 7)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        pos = x > 0
        x = np.minimum(x, _F32(448.0))
    bits = x.view(np.uint32).astype(np.int64)
    ue_exp = ((bits >> 23) & 0xFF) - 127 + 7
    man = ((bits >> 20) & 7) + ((bits >> 19) & 1)
    carry = man > 7
    man = np.where(carry, 0, man)
    exp = ue_exp + carry
    normal = np.where(exp >= 15, 0x7E, (exp << 3) | man)
    with np.errstate(invalid="ignore", over="ignore"):
        sub = c_float_to_int32(x * _F32(512.0) + _F32(0.5)).astype(np.int64)
    sub = np.where(sub < 1, 0, np.minimum(sub, 7))
    res = np.where(ue_exp <= 0, sub, normal)
    return np.where(pos, res, 0).astype(np.uint8)


def encode_nvfp4(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    x = rows.reshape(-1, 4, 16)
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype("NVFP4"))
    amax = nan_safe_abs(x).max(axis=2, initial=_F32(0))  # (n, 4)
    ue = fp32_to_ue4m3(amax / _F32(6.0))
    out["d"] = ue
    codes = _best_index(x, _UE4M3[ue])  # (n, 4, 16)
    out["qs"] = _pack(codes.reshape(n * 4, 16), 8).reshape(n, 32)
    return out
