"""Compiled codecs of the 16-bit float types F16 and BF16 (one value per block).  F32, F64 and the integer
types are plain copies, which numpy does best: they keep the numpy path.  Kernels take ``x``
(n, type_size) uint8 little-endian values, ``y`` (n, 1) float32 and the tables :func:`tables` names; they
read the bytes as native words, which presumes a little-endian host like every platform numba supports."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from ._scalar import fp16_bits


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),) if name == "F16" else ()


@kernel
def decode_f16(x, y, f16):
    h = x.view(np.uint16).reshape(-1)  # little-endian host: the bytes as 16-bit words
    out = y.reshape(-1)
    for i in range(out.shape[0]):
        out[i] = f16[h[i]]


@kernel
def decode_bf16(x, y):
    h = x.view(np.uint16).reshape(-1)
    bits = y.view(np.uint32).reshape(-1)  # the 16 bits become the upper half of the float32
    for i in range(bits.shape[0]):
        bits[i] = np.uint32(h[i]) << 16


# ------------------------------------------------------------------------------------------------ encoders
# ``x`` (n, 1) float32, ``y`` (n, type_size) uint8 (written as native words: little-endian host), ``qw`` unused.


def encode_tables(name: str) -> tuple:
    """The lookup tables the encoder of ``name`` takes after ``x, y, qw`` (none)."""
    return ()


@kernel
def encode_f16(x, y, qw):
    src = x.reshape(-1)
    h = y.view(np.uint16).reshape(-1)  # GGML_FP32_TO_FP16
    for i in range(h.shape[0]):
        h[i] = np.uint16(fp16_bits(src[i]))


@kernel
def encode_bf16(x, y, qw):
    src = x.reshape(-1).view(np.uint32)
    h = y.view(np.uint16).reshape(-1)
    for i in range(h.shape[0]):  # GGML_FP32_TO_BF16: NaN keeps its top bits with the quiet bit; else nearest even
        u = src[i]
        if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
            h[i] = np.uint16((u >> 16) | 64)
        else:
            h[i] = np.uint16(np.uint32(u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16)
