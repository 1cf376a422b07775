"""Compiled decoders of Q1_0 (sign bits) and Q2_0 (2-bit codes -1..2), written as ggml's loops.  Kernels take
``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y`` (n_blocks, block_size) float32 and the tables
:func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from .legacy import u16


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),)


@kernel
def decode_q1_0(x, y, f16):
    # d @0, qs[16] @2: bit j set gives d, clear gives -d
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(128):
            out[j] = d if (b[2 + j // 8] >> (j % 8)) & 1 else -d


@kernel
def decode_q2_0(x, y, f16):
    # d @0, qs[16] @2: four 2-bit codes per byte, lowest bits first
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(64):
            q = (np.int32(b[2 + j // 4]) >> (2 * (j % 4))) & 3
            out[j] = np.float32(q - 1) * d
