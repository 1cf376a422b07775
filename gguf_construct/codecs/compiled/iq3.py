"""Compiled decoders of IQ3_XXS and IQ3_S (4-weight vectors from 3-bit grids, with signs), written as ggml's
``dequantize_row_iq3_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names: the grid as float32 rows and the sign factors
(``sign[s][j]`` is ggml's ``s & kmask_iq2xs[j] ? -1.f : 1.f``)."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from .legacy import u16, u32


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    if name == "IQ3_XXS":
        return (_tables.fp16(), _tables.grid_floats("iq3xxs_grid"), _tables.small("ksigns_iq2xs"),
                _tables.sign_factors())
    return (_tables.fp16(), _tables.grid_floats("iq3s_grid"), _tables.sign_factors())


@kernel
def decode_iq3_xxs(x, y, f16, grid, ksigns, sign):
    # d @0, qs[64] @2, scales_and_signs (8 words) @66
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            aux = u32(b, 66 + 4 * ib)
            db = d * (np.float32(0.5) + np.float32(aux >> 28)) * np.float32(0.5)
            for l in range(4):
                s = sign[ksigns[(aux >> (7 * l)) & 127]]
                g1 = grid[b[2 + 8 * ib + 2 * l]]
                g2 = grid[b[2 + 8 * ib + 2 * l + 1]]
                o = out[32 * ib + 8 * l:32 * ib + 8 * l + 8]
                for j in range(4):
                    o[j] = db * g1[j] * s[j]
                    o[j + 4] = db * g2[j] * s[j + 4]


@kernel
def decode_iq3_s(x, y, f16, grid, sign):
    # d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            sc = np.int32(b[106 + ib // 2]) >> (4 * (ib % 2))
            db = d * np.float32(1 + 2 * (sc & 0xF))
            qh = np.int32(b[66 + ib])
            for l in range(4):
                g1 = grid[np.int32(b[2 + 8 * ib + 2 * l]) | ((qh << (8 - 2 * l)) & 256)]
                g2 = grid[np.int32(b[2 + 8 * ib + 2 * l + 1]) | ((qh << (7 - 2 * l)) & 256)]
                s = sign[b[74 + 4 * ib + l]]
                o = out[32 * ib + 8 * l:32 * ib + 8 * l + 8]
                for j in range(4):
                    o[j] = db * g1[j] * s[j]
                    o[j + 4] = db * g2[j] * s[j + 4]
