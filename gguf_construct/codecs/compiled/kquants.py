"""Compiled decoders of the K-quants (Q2_K .. Q8_K, 256-weight super-blocks), written as ggml's
``dequantize_row_q*_K`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names; loop lengths come from ``qk = y.shape[1]`` (see
:mod:`.legacy`), except in Q4_K's and Q5_K's (see the comment above them)."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel, routine
from ._scalar import nearest_int, put_fp16
from ._search import (
    _EPS,
    first_abs_max,
    make_qkx_quants,
    make_qp_quants,
    make_qx_quants,
    make_qx_quants_lanes,
    qkx_scratch,
    sum_squares,
)
from ._stream import store_fence, stream_store, streams
from .legacy import u16, u32


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),)


def encode_tables(name: str) -> tuple:
    """The lookup tables the encoder of ``name`` takes after ``x, y, qw``."""
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
            q = b[16 + 32 * n : 48 + 32 * n]
            for j in range(4):
                s = 8 * n + 2 * j
                dl0 = d * np.float32(np.int32(b[s]) & 0xF)
                ml0 = dmin * np.float32(np.int32(b[s]) >> 4)
                dl1 = d * np.float32(np.int32(b[s + 1]) & 0xF)
                ml1 = dmin * np.float32(np.int32(b[s + 1]) >> 4)
                o = out[128 * n + 32 * j : 128 * n + 32 * j + 32]
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
            q = b[32 + 32 * n : 64 + 32 * n]
            for j in range(4):
                dl0 = scales[8 * n + 2 * j]
                dl1 = scales[8 * n + 2 * j + 1]
                m = 4 * n + j  # the hmask bit of these outputs; clear means - 4
                o = out[128 * n + 32 * j : 128 * n + 32 * j + 32]
                for l in range(qk // 8):
                    v = ((np.int32(q[l]) >> (2 * j)) & 3) - ((((np.int32(hm[l]) >> m) & 1) ^ 1) << 2)
                    o[l] = (dl0 if l < 16 else dl1) * np.float32(v)


# Q4_K and Q5_K: the 8 sub-block scales and mins are worked out first into two small arrays; then each half of
# 64 outputs is a loop over its 32 bytes that LLVM vectorizes 8 floats wide.  Unlike the other kernels these
# loops have the constant length 32 (with ``qk // 8`` Q4_K ran at 0.85x C instead of 1.4x).  Measured against
# other shapes of the same arithmetic (a byte scratch filled from 64-bit words, scales inside the loop over
# halves, one loop or two per half): these two were the fastest, and LLVM vectorizes some near neighbours of
# them badly (down to 0.4x C), so a change here wants ``bench_codecs --kernels`` before and after.


@helper
def k4_scales(b, f16, dl, ml):
    """``d * scale`` and ``dmin * min`` of the 8 sub-blocks of a Q4_K / Q5_K block into ``dl`` and ``ml``."""
    d = f16[u16(b, 0)]
    dmin = f16[u16(b, 2)]
    sc = b[4:16]
    for j in range(8):
        s, m = scale_min_k4(sc, j)
        dl[j] = d * np.float32(s)
        ml[j] = dmin * np.float32(m)


@helper
def k4_block(b, out, f16, dl, ml, fifth_bit):
    """One Q4_K block (``fifth_bit`` False, a constant) or Q5_K block ``b`` into ``out``.  Q4_K: d @0, dmin @2,
    scales[12] @4, qs[128] @16; Q5_K the same but qh[32] @16 and qs[128] @48.  Per 64 outputs 32 bytes of qs:
    the low nibbles, then the high ones; Q5_K's fifth bit of output l of half c is bit 2c (first 32) or 2c + 1
    (next 32) of qh[l]."""
    k4_scales(b, f16, dl, ml)
    qh = b[16:48]
    at = 48 if fifth_bit else 16
    for c in range(4):
        d1, n1, d2, n2 = dl[2 * c], ml[2 * c], dl[2 * c + 1], ml[2 * c + 1]
        q = b[at + 32 * c : at + 32 + 32 * c]
        y1 = out[64 * c : 64 * c + 32]
        y2 = out[64 * c + 32 : 64 * c + 64]
        if fifth_bit:
            for l in range(32):
                y1[l] = d1 * np.float32((np.int32(q[l]) & 0xF) | (((np.int32(qh[l]) >> (2 * c)) & 1) << 4)) - n1
            for l in range(32):
                y2[l] = d2 * np.float32((np.int32(q[l]) >> 4) | (((np.int32(qh[l]) >> (2 * c + 1)) & 1) << 4)) - n2
        else:
            for l in range(32):
                y1[l] = d1 * np.float32(np.int32(q[l]) & 0xF) - n1
                y2[l] = d2 * np.float32(np.int32(q[l]) >> 4) - n2


@helper
def k4_rows(x, y, f16, stream, fifth_bit):
    """Q4_K's or Q5_K's blocks ``x`` into ``y`` (:func:`k4_block`), with streaming stores when ``stream``."""
    dl = np.empty(8, dtype=np.float32)
    ml = np.empty(8, dtype=np.float32)
    if streams(y, stream):
        row = np.empty(y.shape[1], dtype=np.float32)
        for i in range(x.shape[0]):
            k4_block(x[i], row, f16, dl, ml, fifth_bit)
            stream_store(y[i], row)
        store_fence()
    else:
        for i in range(x.shape[0]):
            k4_block(x[i], y[i], f16, dl, ml, fifth_bit)


@kernel
def decode_q4_k(x, y, f16, stream=False):
    k4_rows(x, y, f16, stream, False)


@kernel
def decode_q5_k(x, y, f16, stream=False):
    k4_rows(x, y, f16, stream, True)


@kernel
def decode_q6_k(x, y, f16):
    # ql[128] @0, qh[64] @128, scales int8[16] @192, d @208
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 208)]
        for n in range(2):
            ql = b[64 * n : 64 * n + 64]
            qh = b[128 + 32 * n : 160 + 32 * n]
            o = out[128 * n : 128 * n + 128]
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


# ------------------------------------------------------------------------------------------------ encoders
#
# ggml's quantize_row_q*_K_ref (no importance weights) and quantize_row_q*_K_impl (with them), block by block.
# Encoder kernels take ``x`` (n_blocks, 256) float32, ``y`` (n_blocks, type_size) uint8 to fill, ``qw``
# (blocks per row, 256) float32 importance weights of each block position in a row ((0, 256): none; the caller
# hands whole rows, so block i has position i % len(qw)) and the fp16 table.


@kernel
def encode_q2_k(x, y, qw, f16):
    # scales[16] @0, qs[64] @16, d @80, dmin @82
    L = np.empty(256, dtype=np.int32)
    Laux, F = qkx_scratch(16)
    w = np.empty(16, dtype=np.float32)
    scales = np.empty(16, dtype=np.float32)
    mins = np.empty(16, dtype=np.float32)
    sw = np.empty(16, dtype=np.float32)
    Ls = np.empty(16, dtype=np.int32)
    Lm = np.empty(16, dtype=np.int32)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        out[:] = 0
        if qw.shape[0] == 0:
            max_scale = np.float32(0.0)
            max_min = np.float32(0.0)
            for j in range(16):
                xs = xb[16 * j : 16 * j + 16]
                for l in range(16):
                    w[l] = abs(xs[l])
                scales[j], mins[j] = make_qkx_quants(
                    xs, w, L[16 * j : 16 * j + 16], Laux, F, 3, np.float32(-0.5), np.float32(0.1), 15, True, False
                )
                if scales[j] > max_scale:
                    max_scale = scales[j]
                if mins[j] > max_min:
                    max_min = mins[j]
            if max_scale > 0:
                iscale = np.float32(15.0) / max_scale
                for j in range(16):
                    out[j] = np.uint8(nearest_int(iscale * scales[j]) & 0xFF)
                d = put_fp16(out, 80, max_scale / np.float32(15.0), f16)
            else:
                d = put_fp16(out, 80, np.float32(0.0), f16)
            if max_min > 0:
                iscale = np.float32(15.0) / max_min
                for j in range(16):
                    out[j] |= np.uint8((nearest_int(iscale * mins[j]) << 4) & 0xFF)
                dmin = put_fp16(out, 82, max_min / np.float32(15.0), f16)
            else:
                dmin = put_fp16(out, 82, np.float32(0.0), f16)
        else:
            q = qw[i % qw.shape[0]]
            sigma2 = sum_squares(xb) / np.float32(256.0)
            for j in range(16):
                xs = xb[16 * j : 16 * j + 16]
                s = np.float32(0.0)
                for l in range(16):
                    w[l] = q[16 * j + l] * np.sqrt(sigma2 + xs[l] * xs[l])
                    s += w[l]
                sw[j] = s
                scales[j], mins[j] = make_qkx_quants(
                    xs, w, L[16 * j : 16 * j + 16], Laux, F, 3, np.float32(-0.9), np.float32(0.05), 36, False, True
                )
            dm = make_qp_quants(scales, 15, Ls, sw)
            mm = make_qp_quants(mins, 15, Lm, sw)
            d = put_fp16(out, 80, dm, f16)
            dmin = put_fp16(out, 82, mm, f16)
            for j in range(16):
                out[j] = np.uint8((Ls[j] | (Lm[j] << 4)) & 0xFF)
        for j in range(16):
            dl = d * np.float32(np.int32(out[j]) & 0xF)
            if dl == 0:
                continue
            dml = dmin * np.float32(np.int32(out[j]) >> 4)
            for ii in range(16):
                L[16 * j + ii] = min(max(nearest_int((xb[16 * j + ii] + dml) / dl), 0), 3)
        for j in range(0, 256, 128):
            for l in range(32):
                out[16 + j // 4 + l] = np.uint8(
                    L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6)
                )


@routine
def encode_k45_block(xb, out, q, nmax, L, Laux, F, w, scales, mins, sw, Ls, Lm, f16):
    """One block of Q4_K (``nmax`` 15) or Q5_K (31) up to the requantized ``L`` (scales, d, dmin written);
    ``q``: the block's importance weights or an empty array."""
    if q.shape[0] == 0:
        max_scale = np.float32(0.0)
        max_min = np.float32(0.0)
        for j in range(8):
            xs = xb[32 * j : 32 * j + 32]
            av_x = np.sqrt(sum_squares(xs) / np.float32(32.0))
            for l in range(32):
                w[l] = av_x + abs(xs[l])
            if nmax == 15:
                scales[j], mins[j] = make_qkx_quants(
                    xs, w, L[32 * j : 32 * j + 32], Laux, F, 15, np.float32(-1.0), np.float32(0.1), 20, False, False
                )
            else:
                scales[j], mins[j] = make_qkx_quants(
                    xs, w, L[32 * j : 32 * j + 32], Laux, F, 31, np.float32(-0.5), np.float32(0.1), 15, False, False
                )
            if scales[j] > max_scale:
                max_scale = scales[j]
            if mins[j] > max_min:
                max_min = mins[j]
        inv_scale = np.float32(63.0) / max_scale if max_scale > 0 else np.float32(0.0)
        inv_min = np.float32(63.0) / max_min if max_min > 0 else np.float32(0.0)
        for j in range(8):
            Ls[j] = min(nearest_int(inv_scale * scales[j]) & 0xFF, 63)
            Lm[j] = min(nearest_int(inv_min * mins[j]) & 0xFF, 63)
        d_block = max_scale / np.float32(63.0)
        m_block = max_min / np.float32(63.0)
    else:
        sigma2 = np.float32(2.0) * sum_squares(xb) / np.float32(256.0)
        for j in range(8):
            xs = xb[32 * j : 32 * j + 32]
            s = np.float32(0.0)
            for l in range(32):
                w[l] = q[32 * j + l] * np.sqrt(sigma2 + xs[l] * xs[l])
                s += w[l]
            sw[j] = s
            scales[j], mins[j] = make_qkx_quants(
                xs, w, L[32 * j : 32 * j + 32], Laux, F, nmax, np.float32(-0.9), np.float32(0.05), 36, False, True
            )
        d_block = make_qp_quants(scales[:8], 63, Ls, sw[:8])
        m_block = make_qp_quants(mins[:8], 63, Lm, sw[:8])
        if nmax == 31:
            for j in range(8):
                Ls[j] = min(Ls[j], 63)
                Lm[j] = min(Lm[j], 63)
    for j in range(8):
        ls = Ls[j]
        lm = Lm[j]
        if j < 4:
            out[4 + j] = np.uint8(ls & 0xFF)
            out[8 + j] = np.uint8(lm & 0xFF)
        else:
            out[8 + j] = np.uint8(((ls & 0xF) | ((lm & 0xF) << 4)) & 0xFF)
            out[4 + j - 4] |= np.uint8(((ls >> 4) << 6) & 0xFF)
            out[4 + j] |= np.uint8(((lm >> 4) << 6) & 0xFF)
    d = put_fp16(out, 0, d_block, f16)
    dmin = put_fp16(out, 2, m_block, f16)
    sc = out[4:16]
    for j in range(8):
        s, m = scale_min_k4(sc, j)
        dl = d * np.float32(s)
        if dl == 0:
            continue
        dml = dmin * np.float32(m)
        for ii in range(32):
            L[32 * j + ii] = min(max(nearest_int((xb[32 * j + ii] + dml) / dl), 0), nmax)


@kernel
def encode_q4_k(x, y, qw, f16):
    # d @0, dmin @2, scales[12] @4, qs[128] @16
    L = np.empty(256, dtype=np.int32)
    Laux, F = qkx_scratch(32)
    w = np.empty(32, dtype=np.float32)
    scales = np.empty(8, dtype=np.float32)
    mins = np.empty(8, dtype=np.float32)
    sw = np.empty(8, dtype=np.float32)
    Ls = np.empty(8, dtype=np.int32)
    Lm = np.empty(8, dtype=np.int32)
    none = np.empty(0, dtype=np.float32)
    for i in range(x.shape[0]):
        out = y[i]
        out[:] = 0
        q = qw[i % qw.shape[0]] if qw.shape[0] else none
        encode_k45_block(x[i], out, q, 15, L, Laux, F, w, scales, mins, sw, Ls, Lm, f16)
        for c in range(4):
            for l in range(32):
                out[16 + 32 * c + l] = np.uint8(L[64 * c + l] | (L[64 * c + 32 + l] << 4))


@kernel
def encode_q5_k(x, y, qw, f16):
    # d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48
    L = np.empty(256, dtype=np.int32)
    Laux, F = qkx_scratch(32)
    w = np.empty(32, dtype=np.float32)
    scales = np.empty(8, dtype=np.float32)
    mins = np.empty(8, dtype=np.float32)
    sw = np.empty(8, dtype=np.float32)
    Ls = np.empty(8, dtype=np.int32)
    Lm = np.empty(8, dtype=np.int32)
    none = np.empty(0, dtype=np.float32)
    for i in range(x.shape[0]):
        out = y[i]
        out[:] = 0
        q = qw[i % qw.shape[0]] if qw.shape[0] else none
        encode_k45_block(x[i], out, q, 31, L, Laux, F, w, scales, mins, sw, Ls, Lm, f16)
        m1 = 1
        m2 = 2
        for c in range(4):
            for j in range(32):
                l1 = L[64 * c + j]
                if l1 > 15:
                    l1 -= 16
                    out[16 + j] |= np.uint8(m1)
                l2 = L[64 * c + 32 + j]
                if l2 > 15:
                    l2 -= 16
                    out[16 + j] |= np.uint8(m2)
                out[48 + 32 * c + j] = np.uint8((l1 | (l2 << 4)) & 0xFF)
            m1 <<= 2
            m2 <<= 2


@kernel
def encode_q6_k(x, y, qw, f16):
    # ql[128] @0, qh[64] @128, scales int8[16] @192, d @208; the 16 sub-blocks searched side by side
    X = np.empty((16, 16), dtype=np.float32)  # X[i, ib] = weight i of sub-block ib
    W = np.empty((16, 16), dtype=np.float32)
    LT = np.empty((16, 16), dtype=np.int32)
    L = np.empty(256, dtype=np.int32)
    scales = np.empty(16, dtype=np.float32)
    lanes = np.empty((6, 16), dtype=np.float32)  # per-lane scratch of the search
    upd = np.empty(16, dtype=np.bool_)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        out[:] = 0
        for ib in range(16):
            for l in range(16):
                v = xb[16 * ib + l]
                X[l, ib] = v
                W[l, ib] = qw[i % qw.shape[0], 16 * ib + l] if qw.shape[0] else v * v
        make_qx_quants_lanes(X, 32, LT, W, scales, lanes[0], lanes[1], lanes[2], lanes[3], lanes[4], lanes[5], upd)
        max_scale = np.float32(0.0)
        max_abs = np.float32(0.0)
        for ib in range(16):
            for l in range(16):
                L[16 * ib + l] = LT[l, ib]
            if abs(scales[ib]) > max_abs:
                max_abs = abs(scales[ib])
                max_scale = scales[ib]
        if max_abs < _EPS:
            put_fp16(out, 208, np.float32(0.0), f16)
            continue
        iscale = np.float32(-128.0) / max_scale
        d = put_fp16(out, 208, np.float32(1.0) / iscale, f16)
        for ib in range(16):
            out[192 + ib] = np.uint8(min(nearest_int(iscale * scales[ib]), 127) & 0xFF)
        for j in range(16):
            dl = d * np.float32(np.int8(out[192 + j]))
            if dl == 0:
                continue
            for ii in range(16):
                L[16 * j + ii] = min(max(nearest_int(xb[16 * j + ii] / dl), -32), 31) + 32
        for n in range(2):
            j = 128 * n
            for l in range(32):
                q1 = L[j + l] & 0xF
                q2 = L[j + l + 32] & 0xF
                q3 = L[j + l + 64] & 0xF
                q4 = L[j + l + 96] & 0xF
                out[64 * n + l] = np.uint8(q1 | (q3 << 4))
                out[64 * n + l + 32] = np.uint8(q2 | (q4 << 4))
                out[128 + 32 * n + l] = np.uint8(
                    (L[j + l] >> 4)
                    | ((L[j + l + 32] >> 4) << 2)
                    | ((L[j + l + 64] >> 4) << 4)
                    | ((L[j + l + 96] >> 4) << 6)
                )


@helper
def make_q3_quants(x, nmax, L):
    """``make_q3_quants(n, nmax, x, L, do_rmse = true)``: weights ``x * x``, then up to five refining rounds."""
    n = x.shape[0]
    amax, mx = first_abs_max(x)
    if amax < _EPS:
        for i in range(n):
            L[i] = 0
        return np.float32(0.0)
    iscale = -np.float32(nmax) / mx
    sumlx = np.float32(0.0)
    suml2 = np.float32(0.0)
    for i in range(n):
        l = min(max(nearest_int(iscale * x[i]), -nmax), nmax - 1)
        L[i] = l
        w = x[i] * x[i]
        sumlx += w * x[i] * np.float32(l)
        suml2 += w * np.float32(l) * np.float32(l)
    for _ in range(5):
        n_changed = 0
        for i in range(n):
            w = x[i] * x[i]
            li = np.float32(L[i])
            slx = sumlx - w * x[i] * li
            if slx > 0:
                sl2 = suml2 - w * li * li
                new_l = min(max(nearest_int(x[i] * sl2 / slx), -nmax), nmax - 1)
                if new_l != L[i]:
                    slx += w * x[i] * np.float32(new_l)
                    sl2 += w * np.float32(new_l) * np.float32(new_l)
                    if sl2 > 0 and slx * slx * suml2 > sumlx * sumlx * sl2:
                        L[i] = new_l
                        sumlx = slx
                        suml2 = sl2
                        n_changed += 1
        if n_changed == 0:
            break
    for i in range(n):
        L[i] += nmax
    return sumlx / suml2 if suml2 > 0 else np.float32(0.0)


@kernel
def encode_q3_k(x, y, qw, f16):
    # hmask[32] @0, qs[64] @32, scales (12 bytes) @96, d @108
    L = np.empty(256, dtype=np.int32)
    w = np.empty(16, dtype=np.float32)
    scales = np.empty(16, dtype=np.float32)
    sw = np.empty(16, dtype=np.float32)
    Ls = np.empty(16, dtype=np.int32)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        out[:] = 0
        if qw.shape[0] == 0:
            for j in range(16):
                scales[j] = make_q3_quants(xb[16 * j : 16 * j + 16], 4, L[16 * j : 16 * j + 16])
            _, max_scale = first_abs_max(scales)
            if max_scale != 0:
                iscale = np.float32(-32.0) / max_scale
                for j in range(16):
                    Ls[j] = min(max(np.int32(np.int8(nearest_int(iscale * scales[j]))), -32), 31) + 32
                d_block = np.float32(1.0) / iscale
            else:
                Ls[:] = 0
                d_block = np.float32(0.0)
        else:
            q = qw[i % qw.shape[0]]
            sigma2 = np.float32(2.0) * sum_squares(xb) / np.float32(256.0)
            for j in range(16):
                xs = xb[16 * j : 16 * j + 16]
                s = np.float32(0.0)
                for l in range(16):
                    w[l] = q[16 * j + l] * np.sqrt(sigma2 + xs[l] * xs[l])
                    s += w[l]
                sw[j] = s
                scales[j] = make_qx_quants(xs, 4, L[16 * j : 16 * j + 16], w)
            d_block = make_qx_quants(scales, 32, Ls, sw)
        for j in range(16):
            l = Ls[j]
            if j < 8:
                out[96 + j] = np.uint8(l & 0xF)
            else:
                out[96 + j - 8] |= np.uint8((l & 0xF) << 4)
            out[104 + j % 4] |= np.uint8(((l >> 4) << (2 * (j // 4))) & 0xFF)
        d = put_fp16(out, 108, d_block, f16)
        for j in range(16):
            lo = np.int32(out[96 + j]) & 0xF if j < 8 else np.int32(out[96 + j - 8]) >> 4
            hi = (np.int32(out[104 + j % 4]) >> (2 * (j // 4))) & 3
            dl = d * np.float32((lo | (hi << 4)) - 32)
            if dl == 0:
                continue
            for ii in range(16):
                L[16 * j + ii] = min(max(nearest_int(xb[16 * j + ii] / dl), -4), 3) + 4
        for l in range(32):  # L is 0..7: its bit 2 (L > 3) goes to bit k of hmask[l] for L[32k + l], then L -= 4
            m = np.int32(0)
            for k in range(8):
                v = L[32 * k + l]
                m |= (v >> 2) << k
                L[32 * k + l] = v & 3
            out[l] = np.uint8(m)
        for j in range(0, 256, 128):
            for l in range(32):
                out[32 + j // 4 + l] = np.uint8(
                    L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6)
                )


@kernel
def encode_q8_k(x, y, qw, f16):
    # d float32 @0, qs int8[256] @4, bsums int16[16] @260 (quantize_row_q8_K_ref; no importance weights)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        amax, mx = first_abs_max(xb)
        out[:] = 0
        if amax == 0:
            continue
        iscale = np.float32(-127.0) / mx
        for j in range(256):
            out[4 + j] = np.uint8(min(nearest_int(iscale * xb[j]), 127) & 0xFF)
        for g in range(16):
            s = 0
            for j in range(16):
                s += np.int32(np.int8(out[4 + 16 * g + j]))
            out[260 + 2 * g] = np.uint8(s & 0xFF)
            out[261 + 2 * g] = np.uint8((s >> 8) & 0xFF)
        d = np.float32(np.float32(1.0) / iscale).view(np.uint32)
        for k in range(4):
            out[k] = np.uint8((d >> (8 * k)) & 0xFF)
