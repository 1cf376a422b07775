"""Compiled decoders of IQ3_XXS and IQ3_S (4-weight vectors from 3-bit grids, with signs), written as ggml's
``dequantize_row_iq3_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._iq import signed
from ._jit import kernel
from .legacy import u16, u32


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    if name == "IQ3_XXS":
        return (_tables.fp16(), _tables.grid("iq3xxs_grid"), _tables.small("ksigns_iq2xs"),
                _tables.small("kmask_iq2xs"))
    return (_tables.fp16(), _tables.grid("iq3s_grid"), _tables.small("kmask_iq2xs"))


@kernel
def decode_iq3_xxs(x, y, f16, grid, ksigns, kmask):
    # d @0, qs[64] @2, scales_and_signs (8 words) @66
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 0)]
        for ib in range(8):
            aux = u32(x, i, 66 + 4 * ib)
            db = d * (np.float32(0.5) + np.float32(aux >> 28)) * np.float32(0.5)
            for l in range(4):
                signs = ksigns[(aux >> (7 * l)) & 127]
                g1 = x[i, 2 + 8 * ib + 2 * l]
                g2 = x[i, 2 + 8 * ib + 2 * l + 1]
                o = 32 * ib + 8 * l
                for j in range(4):
                    y[i, o + j] = signed(db * np.float32(grid[g1, j]), signs & kmask[j])
                    y[i, o + j + 4] = signed(db * np.float32(grid[g2, j]), signs & kmask[j + 4])


@kernel
def decode_iq3_s(x, y, f16, grid, kmask):
    # d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 0)]
        for ib in range(8):
            sc = np.int32(x[i, 106 + ib // 2]) >> (4 * (ib % 2))
            db = d * np.float32(1 + 2 * (sc & 0xF))
            qh = np.int32(x[i, 66 + ib])
            for l in range(4):
                g1 = np.int32(x[i, 2 + 8 * ib + 2 * l]) | ((qh << (8 - 2 * l)) & 256)
                g2 = np.int32(x[i, 2 + 8 * ib + 2 * l + 1]) | ((qh << (7 - 2 * l)) & 256)
                signs = x[i, 74 + 4 * ib + l]
                o = 32 * ib + 8 * l
                for j in range(4):
                    y[i, o + j] = signed(db * np.float32(grid[g1, j]), signs & kmask[j])
                    y[i, o + j + 4] = signed(db * np.float32(grid[g2, j]), signs & kmask[j + 4])
