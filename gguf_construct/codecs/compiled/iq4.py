"""Compiled decoders of IQ4_NL and IQ4_XS (4-bit indices into the non-linear ``kvalues_iq4nl``), written as
ggml's ``dequantize_row_iq4_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks,
``y`` (n_blocks, block_size) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel, routine
from ._scalar import nearest_int, put_fp16
from ._search import first_abs_max
from .legacy import u16


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``: fp16 and the value table."""
    return (_tables.fp16(), _tables.floats("kvalues_iq4nl"))


@kernel
def decode_iq4_nl(x, y, f16, kv):
    # d @0, qs[16] @2
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(16):
            q = b[2 + j]
            out[j] = d * kv[q & 0xF]
            out[j + 16] = d * kv[q >> 4]


@kernel
def decode_iq4_xs(x, y, f16, kv):
    # d @0, scales_h (u16) @2, scales_l[4] @4, qs[128] @8
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        sh = u16(b, 2)
        for ib in range(8):
            ls = ((np.int32(b[4 + ib // 2]) >> (4 * (ib % 2))) & 0xF) | np.int32(((sh >> (2 * ib)) & 3) << 4)
            dl = d * np.float32(ls - 32)
            for j in range(16):
                q = b[8 + 16 * ib + j]
                out[32 * ib + j] = dl * kv[q & 0xF]
                out[32 * ib + j + 16] = dl * kv[q >> 4]


# ------------------------------------------------------------------------------------------------ encoders
# quantize_row_iq4_nl_impl (ntry = 7) for 32-weight blocks (IQ4_NL) and 256-weight super-blocks of eight
# (IQ4_XS).  Kernels take ``x`` (n_blocks, block_size) float32, ``y`` (n_blocks, type_size) uint8, ``qw``
# (blocks per row, block_size) importance weights ((0, block_size): none) and :func:`encode_tables`.

_NTRY = 7


def encode_tables(name: str) -> tuple:
    """The lookup tables the encoder of ``name`` takes after ``x, y, qw``: fp16, the value table and the
    decision thresholds of ``best_index_int8`` (from the numpy codec, which derives them from the table)."""
    from ..iq4 import _THR

    if len(_THR) != 15:
        raise AssertionError("spec error: best_indices compares with the 15 thresholds of a 16-value table")
    return (_tables.fp16(), _tables.floats("kvalues_iq4nl"), np.ascontiguousarray(_THR, dtype=np.float32))


@helper
def best_indices(xb, idv, thr, idx):
    """``idx[j]`` = ggml's ``best_index_int8(16, kvalues, idv * xb[j])``: the entry whose decision interval holds
    the value, i.e. the number of thresholds <= it (the numpy codec proves this equal to ggml's bisection for
    every float32); NaN: the last entry.  The 15 thresholds are named one by one so that they stay in registers
    and LLVM vectorizes the loop over j (a loop over them, or over a tuple, kept it scalar: 2.8-10x slower)."""
    t0, t1, t2, t3, t4, t5, t6, t7 = thr[0], thr[1], thr[2], thr[3], thr[4], thr[5], thr[6], thr[7]
    t8, t9, t10, t11, t12, t13, t14 = thr[8], thr[9], thr[10], thr[11], thr[12], thr[13], thr[14]
    for j in range(xb.shape[0]):
        v = idv * xb[j]
        k = (
            np.int32(v >= t0)
            + np.int32(v >= t1)
            + np.int32(v >= t2)
            + np.int32(v >= t3)
            + np.int32(v >= t4)
            + np.int32(v >= t5)
            + np.int32(v >= t6)
            + np.int32(v >= t7)
            + np.int32(v >= t8)
            + np.int32(v >= t9)
            + np.int32(v >= t10)
            + np.int32(v >= t11)
            + np.int32(v >= t12)
            + np.int32(v >= t13)
            + np.int32(v >= t14)
        )
        idx[j] = k if v == v else np.int32(15)


@routine
def group_sums(xb, w, kv, thr, idv, idx):
    """(sum w*q*x, sum w*q*q) of the group quantized with 1/scale ``idv`` (``idx``: int32 scratch for the
    codes, found in one vectorized pass before the sums, which C's order keeps serial)."""
    best_indices(xb, idv, thr, idx)
    sumqx = np.float32(0.0)
    sumq2 = np.float32(0.0)
    for j in range(xb.shape[0]):
        q = kv[idx[j]]
        wq = w[j] * q
        sumqx += wq * xb[j]
        sumq2 += wq * q
    return sumqx, sumq2


@routine
def group_scale(xb, w, kv, thr, idx):
    """The scale search of ``quantize_row_iq4_nl_impl`` for one group of 32 weights (``idx``: int32 scratch)."""
    amax, mx = first_abs_max(xb)
    if amax < np.float32(1e-15):  # GROUP_MAX_EPS
        return np.float32(0.0)
    d = -mx / kv[0]
    sumqx, sumq2 = group_sums(xb, w, kv, thr, np.float32(1.0) / d, idx)
    d = sumqx / sumq2 if sumq2 > 0 else np.float32(0.0)
    best = d * sumqx
    for itry in range(-_NTRY, _NTRY + 1):
        sumqx, sumq2 = group_sums(xb, w, kv, thr, np.float32(itry + np.int32(kv[0])) / mx, idx)
        if sumq2 > 0 and sumqx * sumqx > best * sumq2:
            d = sumqx / sumq2
            best = d * sumqx
    return d


@helper
def group_weights(xb, q, sigma2, w):
    """``w = qw * sqrtf(sigma2 + x*x)``, or ``x*x`` without importance weights (``q`` empty)."""
    for j in range(xb.shape[0]):
        x2 = xb[j] * xb[j]
        w[j] = q[j] * np.sqrt(sigma2 + x2) if q.shape[0] else x2


@helper
def put_codes(out, o, xb, idl, thr, idx):
    """The 32 codes of a group, byte j holding codes j (low nibble) and j + 16 (high), at byte ``o``."""
    best_indices(xb, idl, thr, idx)
    for j in range(16):
        out[o + j] = np.uint8(idx[j] | (idx[j + 16] << 4))


@kernel
def encode_iq4_nl(x, y, qw, f16, kv, thr):
    # d @0, qs[16] @2
    w = np.empty(32, dtype=np.float32)
    idx = np.empty(32, dtype=np.int32)
    none = np.empty(0, dtype=np.float32)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        q = qw[i % qw.shape[0]] if qw.shape[0] else none
        s = np.float32(0.0)
        for j in range(32):
            s += xb[j] * xb[j]
        group_weights(xb, q, s * np.float32(2.0 / 32), w)
        scale = group_scale(xb, w, kv, thr, idx)
        put_fp16(out, 0, scale, f16)
        put_codes(out, 2, xb, np.float32(1.0) / scale if scale != 0 else np.float32(0.0), thr, idx)


@kernel
def encode_iq4_xs(x, y, qw, f16, kv, thr):
    # d @0, scales_h (u16) @2, scales_l[4] @4, qs[128] @8
    w = np.empty(32, dtype=np.float32)
    idx = np.empty(32, dtype=np.int32)
    scales = np.empty(8, dtype=np.float32)
    none = np.empty(0, dtype=np.float32)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        out[:] = 0
        q = qw[i % qw.shape[0]] if qw.shape[0] else none
        s = np.float32(0.0)
        for j in range(256):
            s += xb[j] * xb[j]
        sigma2 = s * np.float32(2.0 / 256)
        amax = np.float32(0.0)
        max_scale = np.float32(0.0)
        for ib in range(8):
            xs = xb[32 * ib : 32 * ib + 32]
            group_weights(xs, q[32 * ib : 32 * ib + 32] if q.shape[0] else none, sigma2, w)
            scales[ib] = group_scale(xs, w, kv, thr, idx)
            if abs(scales[ib]) > amax:
                amax = abs(scales[ib])
                max_scale = scales[ib]
        d = -max_scale / np.float32(32.0)
        put_fp16(out, 0, d, f16)
        idv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
        sh = 0
        for ib in range(8):
            ls = min(max(nearest_int(idv * scales[ib]), -32), 31)
            dl = d * np.float32(ls)
            idl = np.float32(1.0) / dl if dl != 0 else np.float32(0.0)
            put_codes(out, 8 + 16 * ib, xb[32 * ib : 32 * ib + 32], idl, thr, idx)
            u = ls + 32
            out[4 + ib // 2] |= np.uint8((u & 0xF) << (4 * (ib % 2)))
            sh |= (u >> 4) << (2 * ib)
        out[2] = np.uint8(sh & 0xFF)
        out[3] = np.uint8(sh >> 8)
