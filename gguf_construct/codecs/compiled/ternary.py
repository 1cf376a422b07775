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
def trit(b, n):
    """The n-th base-3 digit of the byte ``b``, most significant first, minus 1: ggml's
    ``((uint16_t)(uint8_t)(b * 3^n) * 3) >> 8``."""
    q = (np.int32(b) * np.int32(3 ** n)) & 0xFF
    return np.int32((q * 3) >> 8) - 1


@kernel
def decode_tq1_0(x, y, f16):
    # qs[48] @0 (32 bytes of five trits, then 16), qh[4] @48 (four trits each), d @52
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 52)]
        k = 0
        for n in range(5):
            for m in range(32):
                y[i, k] = np.float32(trit(x[i, m], n)) * d
                k += 1
        for n in range(5):
            for m in range(16):
                y[i, k] = np.float32(trit(x[i, 32 + m], n)) * d
                k += 1
        for n in range(4):
            for j in range(4):
                y[i, k] = np.float32(trit(x[i, 48 + j], n)) * d
                k += 1


@kernel
def decode_tq2_0(x, y, f16):
    # qs[64] @0, d @64
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 64)]
        for h in range(2):
            for l in range(4):
                for m in range(32):
                    q = (np.int32(x[i, 32 * h + m]) >> (2 * l)) & 3
                    y[i, 128 * h + 32 * l + m] = np.float32(q - 1) * d
