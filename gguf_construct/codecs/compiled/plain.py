"""Compiled codecs of the 16-bit float types F16 and BF16 (one value per block).  F32, F64 and the integer
types are plain copies, which numpy does best: they keep the numpy path.  Kernels take ``x``
(n, type_size) uint8 little-endian values, ``y`` (n, 1) float32 and the tables :func:`tables` names; they
read the bytes as native words, which presumes a little-endian host like every platform numba supports."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from ._scalar import fp16_bits
from ._stream import store_fence, stream_store, streams


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),) if name == "F16" else ()


_STREAM_ROW = 64  # values per streamed row (a multiple of the 8 of the widest streaming store)


@kernel
def decode_f16(x, y, f16, stream=False):
    h = x.view(np.uint16).reshape(-1)  # little-endian host: the bytes as 16-bit words
    out = y.reshape(-1)
    n = out.shape[0]
    if streams(y, stream):  # rows of _STREAM_ROW through a scratch row, then the rest
        row = np.empty(_STREAM_ROW, dtype=np.float32)
        done = n - n % _STREAM_ROW
        for s in range(0, done, _STREAM_ROW):
            for j in range(row.shape[0]):
                row[j] = f16[h[s + j]]
            stream_store(out[s : s + _STREAM_ROW], row)
        store_fence()
        for i in range(done, n):
            out[i] = f16[h[i]]
    else:
        for i in range(n):
            out[i] = f16[h[i]]


@kernel
def decode_bf16(x, y, stream=False):
    h = x.view(np.uint16).reshape(-1)
    out = y.reshape(-1)
    bits = out.view(np.uint32)  # the 16 bits become the upper half of the float32
    n = bits.shape[0]
    if streams(y, stream):
        row = np.empty(_STREAM_ROW, dtype=np.float32)
        row_bits = row.view(np.uint32)
        done = n - n % _STREAM_ROW
        for s in range(0, done, _STREAM_ROW):
            for j in range(row.shape[0]):
                row_bits[j] = np.uint32(h[s + j]) << 16
            stream_store(out[s : s + _STREAM_ROW], row)
        store_fence()
        for i in range(done, n):
            bits[i] = np.uint32(h[i]) << 16
    else:
        for i in range(n):
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
