"""Compiled decoders of IQ4_NL and IQ4_XS (4-bit indices into the non-linear ``kvalues_iq4nl``), written as
ggml's ``dequantize_row_iq4_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks,
``y`` (n_blocks, block_size) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from .legacy import u16


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``: fp16 and the value table."""
    return (_tables.fp16(), _tables.floats("kvalues_iq4nl"))


@kernel
def decode_iq4_nl(x, y, f16, kv):
    # d @0, qs[16] @2
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for j in range(16):
            q = b[2 + j]
            out[j] = d * kv[q & 0xF]
            out[j + 16] = d * kv[q >> 4]


@kernel
def decode_iq4_xs(x, y, f16, kv):
    # d @0, scales_h (u16) @2, scales_l[4] @4, qs[128] @8
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        sh = u16(b, 2)
        for ib in range(8):
            ls = ((np.int32(b[4 + ib // 2]) >> (4 * (ib % 2))) & 0xF) | np.int32(((sh >> (2 * ib)) & 3) << 4)
            dl = d * np.float32(ls - 32)
            for j in range(16):
                q = b[8 + 16 * ib + j]
                out[32 * ib + j] = dl * kv[q & 0xF]
                out[32 * ib + j + 16] = dl * kv[q >> 4]
