"""Compiled decoders of the float types that decode to float32 (F32, F16, BF16; one value per block).  F64 and
the integer types keep their own dtype, which is a plain copy: they keep the numpy path.  Kernels take ``x``
(n, type_size) uint8 little-endian values, ``y`` (n, 1) float32 and the tables :func:`tables` names; they
read the bytes as native words, which presumes a little-endian host like every platform numba supports."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel


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


@kernel
def decode_f32(x, y):
    words = x.view(np.uint32).reshape(-1)
    bits = y.view(np.uint32).reshape(-1)  # copied bit for bit (NaN payloads too)
    for i in range(bits.shape[0]):
        bits[i] = words[i]
