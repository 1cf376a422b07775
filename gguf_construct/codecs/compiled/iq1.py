"""Compiled decoders of IQ1_S and IQ1_M (8-weight vectors of -1/0/1 from ``iq1s_grid`` shifted by a delta),
written as ggml's ``dequantize_row_iq1_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian
blocks, ``y`` (n_blocks, 256) float32 and the tables :func:`tables` names (the grid as float32 rows)."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from .legacy import u16


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``: fp16, grid, delta magnitudes."""
    return (_tables.fp16(), _tables.grid_floats("iq1s_grid"), _tables.floats("iq1_delta"))


@kernel
def decode_iq1_s(x, y, f16, grid, deltas):
    # d @0, qs[32] @2, qh (8 u16) @34
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            qh = u16(b, 34 + 2 * ib)
            dl = d * np.float32(2 * ((qh >> 12) & 7) + 1)
            delta = -deltas[0] if qh & 0x8000 else deltas[0]
            for l in range(4):
                g = grid[np.int32(b[2 + 4 * ib + l]) | np.int32(((qh >> (3 * l)) & 7) << 8)]
                o = out[32 * ib + 8 * l:32 * ib + 8 * l + 8]
                for j in range(8):
                    o[j] = dl * (g[j] + delta)


@kernel
def decode_iq1_m(x, y, f16, grid, deltas):
    # qs[32] @0, qh[16] @32, scales (4 u16) @48; the fp16 d is spread over the top nibbles of the scales
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        s0 = u16(b, 48)
        s1 = u16(b, 50)
        s2 = u16(b, 52)
        s3 = u16(b, 54)
        d = f16[(s0 >> 12) | ((s1 >> 8) & 0x00F0) | ((s2 >> 4) & 0x0F00) | (s3 & 0xF000)]
        for ib in range(8):
            sc = u16(b, 48 + 2 * (ib // 2))
            dl1 = d * np.float32(2 * ((sc >> (6 * (ib % 2))) & 7) + 1)
            dl2 = d * np.float32(2 * ((sc >> (6 * (ib % 2) + 3)) & 7) + 1)
            h0 = np.int32(b[32 + 2 * ib])
            h1 = np.int32(b[33 + 2 * ib])
            for l in range(4):
                h = h0 if l < 2 else h1
                nib = (h >> (4 * (l % 2))) & 0xF
                g = grid[np.int32(b[4 * ib + l]) | ((nib & 7) << 8)]
                delta = -deltas[1] if nib & 8 else deltas[1]
                dl = dl1 if l < 2 else dl2
                o = out[32 * ib + 8 * l:32 * ib + 8 * l + 8]
                for j in range(8):
                    o[j] = dl * (g[j] + delta)
