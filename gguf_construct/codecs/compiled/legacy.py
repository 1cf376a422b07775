"""Compiled decoders of the legacy 32-weight blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1), written as ggml's
``dequantize_row_*`` loops.  Every kernel takes ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 32) float32 output and the tables :func:`tables` names.

Loop lengths are taken from ``qk = y.shape[1]`` (the block size) rather than written as constants in all the
compiled kernels: LLVM fully unrolls a short loop of known length before it could vectorize it, and the
unrolled stores then cannot be reordered past the loads (it cannot tell that ``x`` and ``y`` do not overlap);
a loop of unknown length is vectorized with a run-time overlap check.
"""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel
from ._scalar import c_int, put_fp16, roundf
from ._search import first_abs_max, make_qkx_quants, make_qx_quants, qkx_scratch
from ._stream import store_fence, stream_store, streams


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),)


@helper
def u16(b, o):
    """The little-endian 16-bit word at byte ``o`` of the block ``b``."""
    return np.uint32(b[o]) | (np.uint32(b[o + 1]) << 8)


@helper
def u32(b, o):
    """The little-endian 32-bit word at byte ``o`` of the block ``b``."""
    return u16(b, o) | (u16(b, o + 2) << 16)


@helper
def add(a, b):
    """``a + b`` as x86 computes it in C, NaN included: a NaN result is ``a`` when ``a`` is a NaN, else ``b``
    when that is one, else the default NaN of an invalid sum.  Written out because LLVM may swap the operands
    of an addition, and x86 returns the NaN of the operand that ends up first."""
    r = a + b
    if r != r:
        r = a if a != a else (b if b != b else r)
    return r


@kernel
def decode_q4_0(x, y, f16):
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(qk // 2):
            q = np.int32(b[2 + j])
            out[j] = np.float32((q & 0xF) - 8) * d
            out[j + qk // 2] = np.float32((q >> 4) - 8) * d


@kernel
def decode_q4_1(x, y, f16):
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        m = f16[u16(b, 2)]
        for j in range(qk // 2):
            q = np.int32(b[4 + j])
            out[j] = add(np.float32(q & 0xF) * d, m)
            out[j + qk // 2] = add(np.float32(q >> 4) * d, m)


@kernel
def decode_q5_0(x, y, f16):
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        qh = u32(b, 2)
        for j in range(qk // 2):
            q = np.int32(b[6 + j])
            h0 = np.int32(((qh >> j) << 4) & 0x10)
            h1 = np.int32((qh >> (j + 12)) & 0x10)
            out[j] = np.float32(((q & 0xF) | h0) - 16) * d
            out[j + qk // 2] = np.float32(((q >> 4) | h1) - 16) * d


@kernel
def decode_q5_1(x, y, f16):
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        m = f16[u16(b, 2)]
        qh = u32(b, 4)
        for j in range(qk // 2):
            q = np.int32(b[8 + j])
            h0 = np.int32(((qh >> j) << 4) & 0x10)
            h1 = np.int32((qh >> (j + 12)) & 0x10)
            out[j] = add(np.float32((q & 0xF) | h0) * d, m)
            out[j + qk // 2] = add(np.float32((q >> 4) | h1) * d, m)


@helper
def q8_0_block(b, out, f16, qk):
    """One Q8_0 block ``b`` (d @0, qs int8[qk] @2) into ``out``."""
    d = f16[u16(b, 0)]
    for j in range(qk):
        out[j] = np.float32(np.int8(b[2 + j])) * d


@kernel
def decode_q8_0(x, y, f16, stream=False):
    qk = y.shape[1]
    if streams(y, stream):
        row = np.empty(qk, dtype=np.float32)
        for i in range(x.shape[0]):
            q8_0_block(x[i], row, f16, qk)
            stream_store(y[i], row)
        store_fence()
    else:
        for i in range(x.shape[0]):
            q8_0_block(x[i], y[i], f16, qk)


@kernel
def decode_q8_1(x, y, f16):
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(qk):
            out[j] = np.float32(np.int8(b[4 + j])) * d


# ------------------------------------------------------------------------------------------------ encoders
# quantize_row_q*_ref, and with importance weights quantize_row_q4_0/q4_1/q5_0/q5_1_impl (whose sigma2 is taken
# over the whole row).  Kernels take ``x`` (n_blocks, 32) float32, ``y`` (n_blocks, type_size) uint8, ``qw``
# (blocks per row, 32) importance weights ((0, 32): none) and the fp16 table.


def encode_tables(name: str) -> tuple:
    """The lookup tables the encoder of ``name`` takes after ``x, y, qw``."""
    return (_tables.fp16(),)


@helper
def inverse(d):
    """``d ? 1.0f/d : 0.0f`` (a NaN counts as true)."""
    return np.float32(1.0) / d if d != 0 else np.float32(0.0)


@helper
def c_int8(f):
    """``(int8_t)f`` on x86: the low byte of the 32-bit truncation, as a signed value."""
    return np.int32(np.int8(c_int(f)))


@helper
def row_weights(x, i, q, w, sigma2):
    """``w[j] = qw[j] * sqrtf(sigma2 + x[j]*x[j])`` for block ``i``; ``sigma2`` is recomputed at the first
    block of each row (``sum x^2 / n_per_row``, in order) and returned."""
    nbr = q.shape[0]
    if i % nbr == 0:
        s = np.float32(0.0)
        for k in range(i, i + nbr):
            for j in range(32):
                s += x[k, j] * x[k, j]
        sigma2 = s / np.float32(32 * nbr)
    xb = x[i]
    for j in range(32):
        w[j] = q[i % nbr, j] * np.sqrt(sigma2 + xb[j] * xb[j])
    return sigma2


@helper
def put_qh(out, o, L):
    """The 32-bit word whose bit j is bit 4 of ``L[j]``, little-endian at byte ``o``."""
    for k in range(4):
        byte = 0
        for b in range(8):
            byte |= ((L[8 * k + b] >> 4) & 1) << b
        out[o + k] = np.uint8(byte)


@kernel
def encode_q4_0(x, y, qw, f16):
    L = np.empty(32, dtype=np.int32)
    w = np.empty(32, dtype=np.float32)
    sigma2 = np.float32(0.0)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        if qw.shape[0]:
            sigma2 = row_weights(x, i, qw, w, sigma2)
            put_fp16(out, 0, make_qx_quants(xb, 8, L, w), f16)
        else:
            _, mx = first_abs_max(xb)
            d = mx / np.float32(-8.0)
            idv = inverse(d)
            put_fp16(out, 0, d, f16)
            for j in range(32):
                L[j] = min(15, c_int8(xb[j] * idv + np.float32(8.5))) & 0xFF
        for j in range(16):
            out[2 + j] = np.uint8((L[j] | (L[j + 16] << 4)) & 0xFF)


@kernel
def encode_q4_1(x, y, qw, f16):
    L = np.empty(32, dtype=np.int32)
    Laux, F = qkx_scratch(32)
    w = np.empty(32, dtype=np.float32)
    sigma2 = np.float32(0.0)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        if qw.shape[0]:
            sigma2 = row_weights(x, i, qw, w, sigma2)
            d, the_min = make_qkx_quants(xb, w, L, Laux, F, 15, np.float32(-0.9), np.float32(0.05), 36, False, True)
            put_fp16(out, 0, d, f16)
            put_fp16(out, 2, -the_min, f16)
        else:
            mn, mx = min_max(xb)
            d = (mx - mn) / np.float32(15.0)
            idv = inverse(d)
            put_fp16(out, 0, d, f16)
            put_fp16(out, 2, mn, f16)
            for j in range(16):  # straight into the nibbles (one vectorized pass, no scratch)
                lo = min(15, c_int8((xb[j] - mn) * idv + np.float32(0.5))) & 0xFF
                hi = min(15, c_int8((xb[j + 16] - mn) * idv + np.float32(0.5))) & 0xFF
                out[4 + j] = np.uint8((lo | (hi << 4)) & 0xFF)
            continue
        for j in range(16):
            out[4 + j] = np.uint8((L[j] | (L[j + 16] << 4)) & 0xFF)


@kernel
def encode_q5_0(x, y, qw, f16):
    L = np.empty(32, dtype=np.int32)
    w = np.empty(32, dtype=np.float32)
    sigma2 = np.float32(0.0)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        if qw.shape[0]:
            sigma2 = row_weights(x, i, qw, w, sigma2)
            put_fp16(out, 0, make_qx_quants(xb, 16, L, w), f16)
        else:
            _, mx = first_abs_max(xb)
            d = mx / np.float32(-16.0)
            idv = inverse(d)
            put_fp16(out, 0, d, f16)
            for j in range(32):
                L[j] = min(31, c_int8(xb[j] * idv + np.float32(16.5))) & 0xFF
        put_qh(out, 2, L)
        for j in range(16):
            out[6 + j] = np.uint8((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4))


@kernel
def encode_q5_1(x, y, qw, f16):
    L = np.empty(32, dtype=np.int32)
    Laux, F = qkx_scratch(32)
    w = np.empty(32, dtype=np.float32)
    sigma2 = np.float32(0.0)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        if qw.shape[0]:
            sigma2 = row_weights(x, i, qw, w, sigma2)
            d, the_min = make_qkx_quants(xb, w, L, Laux, F, 31, np.float32(-0.9), np.float32(0.05), 36, False, True)
            put_fp16(out, 0, d, f16)
            put_fp16(out, 2, -the_min, f16)
        else:
            mn, mx = min_max(xb)
            d = (mx - mn) / np.float32(31.0)
            idv = inverse(d)
            put_fp16(out, 0, d, f16)
            put_fp16(out, 2, mn, f16)
            for j in range(32):
                L[j] = c_int(((xb[j] - mn) * idv + np.float32(0.5))) & 0xFF  # (uint8_t), no clamp
        put_qh(out, 4, L)
        for j in range(16):
            out[8 + j] = np.uint8((L[j] & 0xF) | ((L[j + 16] & 0xF) << 4))


@helper
def min_max(xb):
    """``min = FLT_MAX, max = -FLT_MAX; for v: if (v < min) min = v; if (v > max) max = v;``."""
    mn = np.float32(3.4028234663852886e38)
    mx = -mn
    for j in range(xb.shape[0]):  # as selects: x86's minss / maxss are exactly these, no branch to mispredict
        v = xb[j]
        mn = v if v < mn else mn
        mx = v if v > mx else mx
    return mn, mx


@helper
def encode_q8(xb, out, qs_at, f16):
    """quantize_row_q8_0_ref on one block (``amax = MAX(amax, fabsf(v))``, the macro's NaN behaviour);
    returns (d, sum of the stored int8 quants)."""
    amax = np.float32(0.0)
    for j in range(32):
        ax = abs(xb[j])
        amax = amax if amax > ax else ax
    d = amax / np.float32(127.0)
    idv = inverse(d)
    put_fp16(out, 0, d, f16)
    total = 0
    for j in range(32):
        q = c_int8(roundf(xb[j] * idv))
        out[qs_at + j] = np.uint8(q & 0xFF)
        total += q
    return d, total


@kernel
def encode_q8_0(x, y, qw, f16):
    for i in range(x.shape[0]):
        encode_q8(x[i], y[i], 2, f16)


@kernel
def encode_q8_1(x, y, qw, f16):
    for i in range(x.shape[0]):
        d, total = encode_q8(x[i], y[i], 4, f16)
        put_fp16(y[i], 2, np.float32(total) * d, f16)
