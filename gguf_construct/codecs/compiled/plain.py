"""Compiled decoders of the float types that decode to float32 (F32, F16, BF16; one value per block).  F64 and
the integer types keep their own dtype, which is a plain copy: they keep the numpy path.  Kernels take ``x``
(n, type_size) uint8 little-endian values, ``y`` (n, 1) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from .legacy import u16, u32


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    return (_tables.fp16(),) if name == "F16" else ()


@kernel
def decode_f16(x, y, f16):
    for i in range(x.shape[0]):
        y[i, 0] = f16[u16(x, i, 0)]


@kernel
def decode_bf16(x, y):
    bits = y.view(np.uint32)  # the 16 bits become the upper half of the float32
    for i in range(x.shape[0]):
        bits[i, 0] = u16(x, i, 0) << 16


@kernel
def decode_f32(x, y):
    bits = y.view(np.uint32)  # copied bit for bit (NaN payloads too)
    for i in range(x.shape[0]):
        bits[i, 0] = u32(x, i, 0)
