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


@kernel
def decode_q8_0(x, y, f16):
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(qk):
            out[j] = np.float32(np.int8(b[2 + j])) * d


@kernel
def decode_q8_1(x, y, f16):
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(qk):
            out[j] = np.float32(np.int8(b[4 + j])) * d
