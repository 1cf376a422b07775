"""Scalar conversions of ggml for the compiled encoders: the same rules as :mod:`.._common` (whose constants
they use), one value at a time."""

from __future__ import annotations

import numpy as np

from .._common import (
    _ABS_MASK,
    _EXP_MASK,
    _F32_HALF_INF,
    _F32_NORMAL_HALF,
    _MAGIC,
    _POINT_FIVE,
    _POINT_FIVE_BITS,
    _REBIAS_ROUND,
)
from ._jit import helper


@helper
def nearest_int(f):
    """ggml's ``nearest_int``: the bits of ``f + 12582912.f``, low 23 bits, minus 2**22."""
    v = np.float32(np.float32(f) + _MAGIC)
    return np.int32(np.int32(v.view(np.int32)) & 0x007FFFFF) - np.int32(0x00400000)


@helper
def fp16_bits(f):
    """ggml's ``GGML_FP32_TO_FP16`` as uint32 bits: round to nearest even, overflow to inf, NaN to 0x7E00."""
    u = np.float32(f).view(np.uint32)
    a = np.uint32(u & _ABS_MASK)
    sign = np.uint32((u >> 16) & 0x8000)
    if a > _EXP_MASK:
        return np.uint32(sign | 0x7E00)
    if a >= _F32_HALF_INF:
        return np.uint32(sign | 0x7C00)
    if a < _F32_NORMAL_HALF:  # adding 0.5f rounds |f| to a multiple of 2**-24 (nearest even)
        rounded = np.float32(np.float32(a.view(np.float32)) + _POINT_FIVE).view(np.uint32)
        return np.uint32(sign | np.uint32(rounded - _POINT_FIVE_BITS))
    return np.uint32(sign | (np.uint32(np.uint32(a + ((a >> 13) & 1)) + _REBIAS_ROUND) >> 13))


@helper
def put_fp16(out, o, f, f16):
    """Store ``f`` as little-endian fp16 at byte ``o`` of ``out``; returns the stored value widened again."""
    h = fp16_bits(f)
    out[o] = np.uint8(h & 0xFF)
    out[o + 1] = np.uint8(h >> 8)
    return f16[h]


@helper
def c_int(f):
    """C's ``(int)f`` on x86 (``cvttss2si``): truncation; NaN and values outside int32 give INT32_MIN."""
    if f >= np.float32(-2147483648.0) and f < np.float32(2147483648.0):
        return np.int32(f)
    return np.int32(-2147483648)


@helper
def c_lround_low_byte(f):
    """The low byte of C's ``lroundf(f)`` on x86-64 (half away from zero; NaN and values outside int64 give
    LONG_MIN, whose low byte is 0)."""
    if not abs(f) < np.float32(9.2233720e18):
        return np.int64(0)
    t = np.float32(np.trunc(f))
    if abs(f - t) >= np.float32(0.5):
        t += np.float32(1.0) if f > 0 else np.float32(-1.0)
    return np.int64(t) & 0xFF


@helper
def roundf(f):
    """C ``roundf``: half away from zero, in float32."""
    t = np.float32(np.trunc(f))
    if abs(f - t) >= np.float32(0.5):
        t += np.float32(1.0) if f > 0 else np.float32(-1.0)
    return t
