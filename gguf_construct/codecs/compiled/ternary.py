"""Compiled decoders of TQ1_0 (base-3 packed trits) and TQ2_0 (2-bit trits), written as ggml's
``dequantize_row_tq*_0`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel
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


@kernel
def decode_tq1_0(x, y, f16):
    # qs[48] @0 (32 bytes of five trits, then 16), qh[4] @48 (four trits each), d @52
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 52)]
        p = np.int32(1)
        for n in range(5):
            for m in range(qk // 8):
                out[32 * n + m] = np.float32(trit(b[m], p)) * d
            p *= 3
        p = np.int32(1)
        for n in range(5):
            for m in range(qk // 16):
                out[160 + 16 * n + m] = np.float32(trit(b[32 + m], p)) * d
            p *= 3
        p = np.int32(1)
        for n in range(4):
            for j in range(4):
                out[240 + 4 * n + j] = np.float32(trit(b[48 + j], p)) * d
            p *= 3


@kernel
def decode_tq2_0(x, y, f16):
    # qs[64] @0, d @64
    qk = y.shape[1]
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 64)]
        for h in range(2):
            q = b[32 * h:32 * h + 32]
            for l in range(4):
                o = out[128 * h + 32 * l:128 * h + 32 * l + 32]
                for m in range(qk // 8):
                    o[m] = np.float32(((np.int32(q[m]) >> (2 * l)) & 3) - 1) * d
