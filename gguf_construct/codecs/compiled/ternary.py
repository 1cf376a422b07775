"""Compiled decoders of TQ1_0 (base-3 packed trits) and TQ2_0 (2-bit trits), written as ggml's
``dequantize_row_tq*_0`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel
from ._scalar import c_lround_low_byte, put_fp16
from .legacy import u16


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),)


@helper
def trit(b, p):
    """The base-3 digit of the byte ``b`` selected by ``p = 3^n`` (n-th, most significant first), minus 1:
    ggml's ``((uint16_t)(uint8_t)(b * 3^n) * 3) >> 8``."""
    q = (np.int32(b) * p) & 0xFF
    return ((q * 3) >> 8) - 1


@helper
def put_trits(out, o, step, v, d, five):
    """Write the trits of byte ``v`` (most significant first) times ``d`` to ``out[o]``, ``out[o + step]``, ...:
    five of them, or the first four when ``five`` is False.  One byte read feeding every multiplier lets the
    byte loop vectorize (a loop per multiplier re-reads the bytes and checks them for aliasing each time)."""
    out[o] = np.float32(trit(v, 1)) * d
    out[o + step] = np.float32(trit(v, 3)) * d
    out[o + 2 * step] = np.float32(trit(v, 9)) * d
    out[o + 3 * step] = np.float32(trit(v, 27)) * d
    if five:
        out[o + 4 * step] = np.float32(trit(v, 81)) * d


@kernel
def decode_tq1_0(x, y, f16):
    # qs[48] @0 (32 bytes of five trits, then 16), qh[4] @48 (four trits each), d @52
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 52)]
        for m in range(32):  # byte m: weights m + 32n
            put_trits(out, m, 32, np.int32(b[m]), d, True)
        for m in range(16):  # byte 32 + m: weights 160 + m + 16n
            put_trits(out, 160 + m, 16, np.int32(b[32 + m]), d, True)
        for j in range(4):  # qh[j]: weights 240 + j + 4n (its fifth trit is padding)
            put_trits(out, 240 + j, 4, np.int32(b[48 + j]), d, False)


@kernel
def decode_tq2_0(x, y, f16):
    # qs[64] @0, d @64
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 64)]
        for h in range(2):
            q = b[32 * h : 32 * h + 32]
            for l in range(4):
                o = out[128 * h + 32 * l : 128 * h + 32 * l + 32]
                for m in range(qk // 8):
                    o[m] = np.float32(((np.int32(q[m]) >> (2 * l)) & 3) - 1) * d


# ------------------------------------------------------------------------------------------------ encoders
# quantize_row_tq1_0_ref / quantize_row_tq2_0_ref (importance weights are ignored).  Kernels take ``x``
# (n_blocks, 256) float32, ``y`` (n_blocks, type_size) uint8, ``qw`` (unused) and the fp16 table.


def encode_tables(name: str) -> tuple:
    """The lookup tables the encoder of ``name`` takes after ``x, y, qw``."""
    return (_tables.fp16(),)


@helper
def ternary_scale(xb, out, o, f16):
    """``amax = MAX(amax, fabsf(x))`` over the block (the macro: a NaN stays only until the next value), stored
    as fp16 at byte ``o``; returns ``id = d ? 1/d : 0``."""
    amax = np.float32(0.0)
    for j in range(xb.shape[0]):
        ax = abs(xb[j])
        amax = amax if amax > ax else ax
    put_fp16(out, o, amax, f16)
    return np.float32(1.0) / amax if amax != 0 else np.float32(0.0)


@helper
def trit_of(v, idv):
    """``lroundf(v * id) + 1`` kept to its low byte (the packing is uint8 arithmetic)."""
    return (c_lround_low_byte(v * idv) + 1) & 0xFF


@kernel
def encode_tq1_0(x, y, qw, f16):
    # qs[48] @0, qh[4] @48, d @52
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        idv = ternary_scale(xb, out, 52, f16)
        for m in range(32):  # byte m: weights m + 32n, most significant first
            q = 0
            for n in range(5):
                q = (q * 3 + trit_of(xb[m + 32 * n], idv)) & 0xFF
            out[m] = np.uint8((q * 256 + 242) // 243)
        for m in range(16):  # byte 32 + m: weights 160 + m + 16n
            q = 0
            for n in range(5):
                q = (q * 3 + trit_of(xb[160 + m + 16 * n], idv)) & 0xFF
            out[32 + m] = np.uint8((q * 256 + 242) // 243)
        for j in range(4):  # qh[j]: weights 240 + j + 4n, then a fifth, zero trit
            q = 0
            for n in range(4):
                q = (q * 3 + trit_of(xb[240 + j + 4 * n], idv)) & 0xFF
            q = (q * 3) & 0xFF
            out[48 + j] = np.uint8((q * 256 + 242) // 243)


@kernel
def encode_tq2_0(x, y, qw, f16):
    # qs[64] @0, d @64
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        idv = ternary_scale(xb, out, 64, f16)
        for h in range(2):
            for m in range(32):
                q = 0
                for n in range(4):
                    q += (trit_of(xb[128 * h + m + 32 * n], idv) & 3) << (2 * n)
                out[32 * h + m] = np.uint8(q & 0xFF)
