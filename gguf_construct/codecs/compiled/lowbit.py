"""Compiled decoders of Q1_0 (sign bits) and Q2_0 (2-bit codes -1..2), written as ggml's loops.  Kernels take
``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y`` (n_blocks, block_size) float32 and the tables
:func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from ._scalar import c_int, put_fp16, roundf
from .legacy import u16


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),)


@kernel
def decode_q1_0(x, y, f16):
    # d @0, qs[16] @2: bit j set gives d, clear gives -d, which is d with its sign bit flipped (NaN too); as bit
    # operations, so that they vectorize (a select per value ran at a quarter of the numpy path's speed)
    qk = y.shape[1]
    words = y.view(np.uint32)
    for i in range(x.shape[0]):
        b, out = x[i], words[i]
        d = np.float32(f16[u16(b, 0)]).view(np.uint32)
        for j in range(qk):
            out[j] = d ^ ((np.uint32(~b[2 + j // 8] >> (j % 8)) & np.uint32(1)) << np.uint32(31))


@kernel
def decode_q2_0(x, y, f16):
    # d @0, qs[16] @2: four 2-bit codes per byte, lowest bits first
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(64):
            q = (np.int32(b[2 + j // 4]) >> (2 * (j % 4))) & 3
            out[j] = np.float32(q - 1) * d


# ------------------------------------------------------------------------------------------------ encoders
# ggml's Q1_0 / Q2_0 quantization (importance weights are ignored).  Kernels take ``x`` (n_blocks, block_size)
# float32, ``y`` (n_blocks, type_size) uint8, ``qw`` (unused) and the fp16 table.


def encode_tables(name: str) -> tuple:
    """The lookup tables the encoder of ``name`` takes after ``x, y, qw``."""
    return (_tables.fp16(),)


@kernel
def encode_q1_0(x, y, qw, f16):
    # d @0 (mean |x|), qs[16] @2: bit j set where x[j] >= 0 (NaN: clear)
    qk = x.shape[1]
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        s = np.float32(0.0)
        for j in range(qk):
            s += abs(xb[j])
        put_fp16(out, 0, s / np.float32(qk), f16)
        for k in range(qk // 8):
            byte = 0
            for b in range(8):
                if xb[8 * k + b] >= 0:
                    byte |= 1 << b
            out[2 + k] = np.uint8(byte)


@kernel
def encode_q2_0(x, y, qw, f16):
    # d @0 (max |x|), qs[16] @2: codes (int)roundf(x / d) + 1 in 0..3, four per byte, lowest bits first
    qk = x.shape[1]
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        d = np.float32(0.0)
        for j in range(qk):
            if abs(xb[j]) > d:
                d = abs(xb[j])
        idv = np.float32(1.0) / d if d > 0 else np.float32(0.0)
        put_fp16(out, 0, d, f16)
        for k in range(qk // 4):
            byte = 0
            for b in range(4):
                q = min(max(np.int64(c_int(roundf(xb[4 * k + b] * idv))) + 1, 0), 3)
                byte |= q << (2 * b)
            out[2 + k] = np.uint8(byte)
