"""Compiled decoders of the K-quants (Q2_K .. Q8_K, 256-weight super-blocks), written as ggml's
``dequantize_row_q*_K`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel
from .legacy import u16, u32


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),)


@helper
def scale_min_k4(x, i, o, j):
    """ggml's ``get_scale_min_k4``: the 6-bit scale and min of sub-block ``j`` from the 12 bytes at ``o``."""
    if j < 4:
        return np.int32(x[i, o + j] & 63), np.int32(x[i, o + j + 4] & 63)
    sc = (x[i, o + j + 4] & 0xF) | ((x[i, o + j - 4] >> 6) << 4)
    m = (x[i, o + j + 4] >> 4) | ((x[i, o + j] >> 6) << 4)
    return np.int32(sc), np.int32(m)


@kernel
def decode_q2_k(x, y, f16):
    # scales[16] @0, qs[64] @16, d @80, dmin @82
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 80)]
        dmin = f16[u16(x, i, 82)]
        k = 0
        s = 0
        for n in range(2):
            q = 16 + 32 * n
            for shift in range(0, 8, 2):
                for half in range(2):
                    sc = x[i, s]
                    s += 1
                    dl = d * np.float32(sc & 0xF)
                    ml = dmin * np.float32(sc >> 4)
                    for l in range(16):
                        y[i, k + l] = dl * np.float32((x[i, q + 16 * half + l] >> shift) & 3) - ml
                    k += 16


@kernel
def decode_q3_k(x, y, f16):
    # hmask[32] @0, qs[64] @32, scales (12 bytes) @96, d @108
    scales = np.empty(16, dtype=np.int32)
    for i in range(x.shape[0]):
        d_all = f16[u16(x, i, 108)]
        for s in range(16):
            lo = np.int32(x[i, 96 + s]) & 0xF if s < 8 else np.int32(x[i, 96 + s - 8]) >> 4
            hi = (np.int32(x[i, 104 + s % 4]) >> (2 * (s // 4))) & 3
            scales[s] = np.int32(lo | (hi << 4)) - 32
        k = 0
        s = 0
        m = 1
        for n in range(2):
            q = 32 + 32 * n
            for shift in range(0, 8, 2):
                for half in range(2):
                    dl = d_all * np.float32(scales[s])
                    s += 1
                    for l in range(16):
                        v = np.int32((x[i, q + 16 * half + l] >> shift) & 3)
                        if not (x[i, 16 * half + l] & m):
                            v -= 4
                        y[i, k + l] = dl * np.float32(v)
                    k += 16
                m <<= 1


@kernel
def decode_q4_k(x, y, f16):
    # d @0, dmin @2, scales[12] @4, qs[128] @16
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 0)]
        dmin = f16[u16(x, i, 2)]
        for c in range(4):
            sc1, m1 = scale_min_k4(x, i, 4, 2 * c)
            sc2, m2 = scale_min_k4(x, i, 4, 2 * c + 1)
            d1 = d * np.float32(sc1)
            n1 = dmin * np.float32(m1)
            d2 = d * np.float32(sc2)
            n2 = dmin * np.float32(m2)
            q = 16 + 32 * c
            for l in range(32):
                y[i, 64 * c + l] = d1 * np.float32(x[i, q + l] & 0xF) - n1
            for l in range(32):
                y[i, 64 * c + 32 + l] = d2 * np.float32(x[i, q + l] >> 4) - n2


@kernel
def decode_q5_k(x, y, f16):
    # d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 0)]
        dmin = f16[u16(x, i, 2)]
        u1 = 1
        u2 = 2
        for c in range(4):
            sc1, m1 = scale_min_k4(x, i, 4, 2 * c)
            sc2, m2 = scale_min_k4(x, i, 4, 2 * c + 1)
            d1 = d * np.float32(sc1)
            n1 = dmin * np.float32(m1)
            d2 = d * np.float32(sc2)
            n2 = dmin * np.float32(m2)
            q = 48 + 32 * c
            for l in range(32):
                h = 16 if x[i, 16 + l] & u1 else 0
                y[i, 64 * c + l] = d1 * np.float32((x[i, q + l] & 0xF) + h) - n1
            for l in range(32):
                h = 16 if x[i, 16 + l] & u2 else 0
                y[i, 64 * c + 32 + l] = d2 * np.float32((x[i, q + l] >> 4) + h) - n2
            u1 <<= 2
            u2 <<= 2


@kernel
def decode_q6_k(x, y, f16):
    # ql[128] @0, qh[64] @128, scales int8[16] @192, d @208
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 208)]
        for n in range(2):
            ql = 64 * n
            qh = 128 + 32 * n
            sc = 192 + 8 * n
            o = 128 * n
            for l in range(32):
                s = l // 16
                h = x[i, qh + l]
                q1 = np.int32((x[i, ql + l] & 0xF) | ((h & 3) << 4)) - 32
                q2 = np.int32((x[i, ql + l + 32] & 0xF) | (((h >> 2) & 3) << 4)) - 32
                q3 = np.int32((x[i, ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32
                q4 = np.int32((x[i, ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32
                y[i, o + l] = d * np.float32(np.int8(x[i, sc + s])) * np.float32(q1)
                y[i, o + l + 32] = d * np.float32(np.int8(x[i, sc + s + 2])) * np.float32(q2)
                y[i, o + l + 64] = d * np.float32(np.int8(x[i, sc + s + 4])) * np.float32(q3)
                y[i, o + l + 96] = d * np.float32(np.int8(x[i, sc + s + 6])) * np.float32(q4)


@kernel
def decode_q8_k(x, y, f16):
    # d float32 @0, qs int8[256] @4, bsums (unused)
    for i in range(x.shape[0]):
        d = x[i, 0:4].copy().view(np.float32)[0]
        for j in range(256):
            y[i, j] = d * np.float32(np.int8(x[i, 4 + j]))
