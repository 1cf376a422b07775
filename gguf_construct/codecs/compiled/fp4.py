"""Compiled decoders of MXFP4 and NVFP4 (E2M1 codes from the doubled ``kvalues_mxfp4`` times a halved scale),
written as ggml's ``dequantize_row_mxfp4`` / ``dequantize_row_nvfp4`` loops.  Kernels take ``x`` (n_blocks,
type_size) uint8 blocks, ``y`` (n_blocks, block_size) float32 and the tables :func:`tables` names."""

from __future__ import annotations

from . import _tables
from ._jit import kernel


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``: scale table, value table."""
    scales = _tables.e8m0_half() if name == "MXFP4" else _tables.floats("ue4m3_half")
    return (scales, _tables.floats("kvalues_mxfp4"))


@kernel
def decode_mxfp4(x, y, scales, kv):
    # e @0, qs[16] @1
    for i in range(x.shape[0]):
        d = scales[x[i, 0]]
        for j in range(16):
            q = x[i, 1 + j]
            y[i, j] = kv[q & 0xF] * d
            y[i, j + 16] = kv[q >> 4] * d


@kernel
def decode_nvfp4(x, y, scales, kv):
    # d[4] @0 (UE4M3 scale per 16 weights), qs[32] @4
    for i in range(x.shape[0]):
        for s in range(4):
            d = scales[x[i, s]]
            for j in range(8):
                q = x[i, 4 + 8 * s + j]
                y[i, 16 * s + j] = kv[q & 0xF] * d
                y[i, 16 * s + j + 8] = kv[q >> 4] * d
