"""Compiled decoders of IQ2_XXS, IQ2_XS and IQ2_S (8-weight vectors from 2-bit grids, with sign bytes), written
as ggml's ``dequantize_row_iq2_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks,
``y`` (n_blocks, 256) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._iq import signed
from ._jit import kernel
from .legacy import u16, u32

_GRIDS = {"IQ2_XXS": "iq2xxs_grid", "IQ2_XS": "iq2xs_grid", "IQ2_S": "iq2s_grid"}


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``: fp16, grid, ksigns, kmask."""
    return (_tables.fp16(), _tables.grid(_GRIDS[name]), _tables.small("ksigns_iq2xs"),
            _tables.small("kmask_iq2xs"))


@kernel
def decode_iq2_xxs(x, y, f16, grid, ksigns, kmask):
    # d @0, qs (16 words) @2: per 32 weights a word of four grid indices and a word of signs and scale
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 0)]
        for ib in range(8):
            a = 2 + 8 * ib
            aux = u32(x, i, a + 4)
            db = d * (np.float32(0.5) + np.float32(aux >> 28)) * np.float32(0.25)
            for l in range(4):
                g = x[i, a + l]
                signs = ksigns[(aux >> (7 * l)) & 127]
                for j in range(8):
                    y[i, 32 * ib + 8 * l + j] = signed(db * np.float32(grid[g, j]), signs & kmask[j])


@kernel
def decode_iq2_xs(x, y, f16, grid, ksigns, kmask):
    # d @0, qs (32 u16) @2, scales[8] @66
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 0)]
        for ib in range(8):
            sc = x[i, 66 + ib]
            db0 = d * (np.float32(0.5) + np.float32(sc & 0xF)) * np.float32(0.25)
            db1 = d * (np.float32(0.5) + np.float32(sc >> 4)) * np.float32(0.25)
            for l in range(4):
                q = u16(x, i, 2 + 8 * ib + 2 * l)
                dl = db0 if l < 2 else db1
                signs = ksigns[q >> 9]
                g = q & 511
                for j in range(8):
                    y[i, 32 * ib + 8 * l + j] = signed(dl * np.float32(grid[g, j]), signs & kmask[j])


@kernel
def decode_iq2_s(x, y, f16, grid, ksigns, kmask):
    # d @0, qs[64] @2 (32 grid index bytes, then 32 sign bytes), qh[8] @66, scales[8] @74
    for i in range(x.shape[0]):
        d = f16[u16(x, i, 0)]
        for ib in range(8):
            sc = x[i, 74 + ib]
            db0 = d * (np.float32(0.5) + np.float32(sc & 0xF)) * np.float32(0.25)
            db1 = d * (np.float32(0.5) + np.float32(sc >> 4)) * np.float32(0.25)
            qh = np.int32(x[i, 66 + ib])
            for l in range(4):
                dl = db0 if l < 2 else db1
                g = np.int32(x[i, 2 + 4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300)
                signs = x[i, 34 + 4 * ib + l]
                for j in range(8):
                    y[i, 32 * ib + 8 * l + j] = signed(dl * np.float32(grid[g, j]), signs & kmask[j])
