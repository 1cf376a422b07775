"""Compiled decoders of the K-quants (Q2_K .. Q8_K, 256-weight super-blocks), written as ggml's
``dequantize_row_q*_K`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names; loop lengths come from ``qk = y.shape[1]`` (see
:mod:`.legacy`)."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel
from .legacy import u16, u32


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),)


@helper
def scale_min_k4(sc, j):
    """ggml's ``get_scale_min_k4``: the 6-bit scale and min of sub-block ``j`` from the 12 bytes ``sc``."""
    if j < 4:
        return np.int32(sc[j] & 63), np.int32(sc[j + 4] & 63)
    s = (np.int32(sc[j + 4]) & 0xF) | ((np.int32(sc[j - 4]) >> 6) << 4)
    m = (np.int32(sc[j + 4]) >> 4) | ((np.int32(sc[j]) >> 6) << 4)
    return s, m


@kernel
def decode_q2_k(x, y, f16):
    # scales[16] @0, qs[64] @16, d @80, dmin @82; per 32 outputs (shift j of 32 bytes), two sub-blocks of 16
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 80)]
        dmin = f16[u16(b, 82)]
        for n in range(2):
            q = b[16 + 32 * n:48 + 32 * n]
            for j in range(4):
                s = 8 * n + 2 * j
                dl0 = d * np.float32(np.int32(b[s]) & 0xF)
                ml0 = dmin * np.float32(np.int32(b[s]) >> 4)
                dl1 = d * np.float32(np.int32(b[s + 1]) & 0xF)
                ml1 = dmin * np.float32(np.int32(b[s + 1]) >> 4)
                o = out[128 * n + 32 * j:128 * n + 32 * j + 32]
                for l in range(qk // 8):
                    v = np.float32((np.int32(q[l]) >> (2 * j)) & 3)
                    o[l] = dl0 * v - ml0 if l < 16 else dl1 * v - ml1


@kernel
def decode_q3_k(x, y, f16):
    # hmask[32] @0, qs[64] @32, scales (12 bytes) @96, d @108; per 32 outputs two sub-blocks of 16
    qk = y.shape[1]
    scales = np.empty(16, dtype=np.float32)
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d_all = f16[u16(b, 108)]
        for s in range(16):
            lo = np.int32(b[96 + s]) & 0xF if s < 8 else np.int32(b[96 + s - 8]) >> 4
            hi = (np.int32(b[104 + s % 4]) >> (2 * (s // 4))) & 3
            scales[s] = d_all * np.float32((lo | (hi << 4)) - 32)
        hm = b[0:32]
        for n in range(2):
            q = b[32 + 32 * n:64 + 32 * n]
            for j in range(4):
                dl0 = scales[8 * n + 2 * j]
                dl1 = scales[8 * n + 2 * j + 1]
                m = 4 * n + j  # the hmask bit of these outputs; clear means - 4
                o = out[128 * n + 32 * j:128 * n + 32 * j + 32]
                for l in range(qk // 8):
                    v = ((np.int32(q[l]) >> (2 * j)) & 3) - ((((np.int32(hm[l]) >> m) & 1) ^ 1) << 2)
                    o[l] = (dl0 if l < 16 else dl1) * np.float32(v)


@kernel
def decode_q4_k(x, y, f16):
    # d @0, dmin @2, scales[12] @4, qs[128] @16
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        dmin = f16[u16(b, 2)]
        sc = b[4:16]
        for c in range(4):
            sc1, m1 = scale_min_k4(sc, 2 * c)
            sc2, m2 = scale_min_k4(sc, 2 * c + 1)
            d1 = d * np.float32(sc1)
            n1 = dmin * np.float32(m1)
            d2 = d * np.float32(sc2)
            n2 = dmin * np.float32(m2)
            q = b[16 + 32 * c:48 + 32 * c]
            y1 = out[64 * c:64 * c + 32]
            y2 = out[64 * c + 32:64 * c + 64]
            for l in range(qk // 8):
                y1[l] = d1 * np.float32(np.int32(q[l]) & 0xF) - n1
            for l in range(qk // 8):
                y2[l] = d2 * np.float32(np.int32(q[l]) >> 4) - n2


@kernel
def decode_q5_k(x, y, f16):
    # d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        dmin = f16[u16(b, 2)]
        sc = b[4:16]
        qh = b[16:48]
        for c in range(4):
            sc1, m1 = scale_min_k4(sc, 2 * c)
            sc2, m2 = scale_min_k4(sc, 2 * c + 1)
            d1 = d * np.float32(sc1)
            n1 = dmin * np.float32(m1)
            d2 = d * np.float32(sc2)
            n2 = dmin * np.float32(m2)
            q = b[48 + 32 * c:80 + 32 * c]
            y1 = out[64 * c:64 * c + 32]
            y2 = out[64 * c + 32:64 * c + 64]
            for l in range(qk // 8):  # high bit: bit 2c (first half) and 2c + 1 (second) of qh[l], worth 16
                y1[l] = d1 * np.float32((np.int32(q[l]) & 0xF) + (((np.int32(qh[l]) >> (2 * c)) & 1) << 4)) - n1
            for l in range(qk // 8):
                y2[l] = d2 * np.float32((np.int32(q[l]) >> 4) + (((np.int32(qh[l]) >> (2 * c + 1)) & 1) << 4)) - n2


@kernel
def decode_q6_k(x, y, f16):
    # ql[128] @0, qh[64] @128, scales int8[16] @192, d @208
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 208)]
        for n in range(2):
            ql = b[64 * n:64 * n + 64]
            qh = b[128 + 32 * n:160 + 32 * n]
            o = out[128 * n:128 * n + 128]
            for half in range(2):  # l = 16 * half + (0 .. 15) uses scales 8n + half + 0, 2, 4, 6
                s1 = d * np.float32(np.int8(b[192 + 8 * n + half]))
                s2 = d * np.float32(np.int8(b[194 + 8 * n + half]))
                s3 = d * np.float32(np.int8(b[196 + 8 * n + half]))
                s4 = d * np.float32(np.int8(b[198 + 8 * n + half]))
                for j in range(qk // 16):
                    l = 16 * half + j
                    h = np.int32(qh[l])
                    q1 = ((np.int32(ql[l]) & 0xF) | ((h & 3) << 4)) - 32
                    q2 = ((np.int32(ql[l + 32]) & 0xF) | (((h >> 2) & 3) << 4)) - 32
                    q3 = ((np.int32(ql[l]) >> 4) | (((h >> 4) & 3) << 4)) - 32
                    q4 = ((np.int32(ql[l + 32]) >> 4) | (((h >> 6) & 3) << 4)) - 32
                    o[l] = s1 * np.float32(q1)
                    o[l + 32] = s2 * np.float32(q2)
                    o[l + 64] = s3 * np.float32(q3)
                    o[l + 96] = s4 * np.float32(q4)


@kernel
def decode_q8_k(x, y, f16):
    # d float32 @0, qs int8[256] @4, bsums (only for dot products)
    qk = y.shape[1]
    word = np.empty(1, dtype=np.uint32)
    as_float = word.view(np.float32)  # reinterprets the 32 bits of d
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        word[0] = u32(b, 0)
        d = as_float[0]
        for j in range(qk):
            out[j] = d * np.float32(np.int8(b[4 + j]))
