"""Compiled decoders of IQ2_XXS, IQ2_XS and IQ2_S (8-weight vectors from 2-bit grids, with sign bytes), written
as ggml's ``dequantize_row_iq2_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks,
``y`` (n_blocks, 256) float32 and the tables :func:`tables` names: the grid as float32 rows and the sign
factors (``sign[s][j]`` is ggml's ``s & kmask_iq2xs[j] ? -1.f : 1.f``)."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import kernel
from .legacy import u16, u32

_GRIDS = {"IQ2_XXS": "iq2xxs_grid", "IQ2_XS": "iq2xs_grid", "IQ2_S": "iq2s_grid"}


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``: fp16, grid, ksigns, sign factors."""
    return (_tables.fp16(), _tables.grid_floats(_GRIDS[name]), _tables.small("ksigns_iq2xs"),
            _tables.sign_factors())


@kernel
def decode_iq2_xxs(x, y, f16, grid, ksigns, sign):
    # d @0, qs (16 words) @2: per 32 weights a word of four grid indices and a word of signs and scale
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            a = 2 + 8 * ib
            aux = u32(b, a + 4)
            db = d * (np.float32(0.5) + np.float32(aux >> 28)) * np.float32(0.25)
            for l in range(4):
                g = grid[b[a + l]]
                s = sign[ksigns[(aux >> (7 * l)) & 127]]
                o = out[32 * ib + 8 * l:32 * ib + 8 * l + 8]
                for j in range(8):
                    o[j] = db * g[j] * s[j]


@kernel
def decode_iq2_xs(x, y, f16, grid, ksigns, sign):
    # d @0, qs (32 u16: 9-bit grid index, 7-bit sign index) @2, scales[8] @66
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            sc = np.int32(b[66 + ib])
            db0 = d * (np.float32(0.5) + np.float32(sc & 0xF)) * np.float32(0.25)
            db1 = d * (np.float32(0.5) + np.float32(sc >> 4)) * np.float32(0.25)
            for l in range(4):
                q = u16(b, 2 + 8 * ib + 2 * l)
                dl = db0 if l < 2 else db1
                g = grid[q & 511]
                s = sign[ksigns[q >> 9]]
                o = out[32 * ib + 8 * l:32 * ib + 8 * l + 8]
                for j in range(8):
                    o[j] = dl * g[j] * s[j]


@kernel
def decode_iq2_s(x, y, f16, grid, ksigns, sign):
    # d @0, qs[64] @2 (32 grid index bytes, then 32 sign bytes), qh[8] @66, scales[8] @74
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            sc = np.int32(b[74 + ib])
            db0 = d * (np.float32(0.5) + np.float32(sc & 0xF)) * np.float32(0.25)
            db1 = d * (np.float32(0.5) + np.float32(sc >> 4)) * np.float32(0.25)
            qh = np.int32(b[66 + ib])
            for l in range(4):
                dl = db0 if l < 2 else db1
                g = grid[np.int32(b[2 + 4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300)]
                s = sign[b[34 + 4 * ib + l]]
                o = out[32 * ib + 8 * l:32 * ib + 8 * l + 8]
                for j in range(8):
                    o[j] = dl * g[j] * s[j]
