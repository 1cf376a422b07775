"""Compiled decoders of MXFP4 and NVFP4 (E2M1 codes from the doubled ``kvalues_mxfp4`` times a halved scale),
written as ggml's ``dequantize_row_mxfp4`` / ``dequantize_row_nvfp4`` loops.  Kernels take ``x`` (n_blocks,
type_size) uint8 blocks, ``y`` (n_blocks, block_size) float32 and the tables :func:`tables` names."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel
from ._scalar import c_int


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


# ------------------------------------------------------------------------------------------------ encoders
# quantize_row_mxfp4_ref / quantize_row_nvfp4_ref (importance weights are ignored).  Kernels take ``x``
# (n_blocks, block_size) float32, ``y`` (n_blocks, type_size) uint8, ``qw`` (unused) and :func:`encode_tables`.


def encode_tables(name: str) -> tuple:
    """The lookup tables the encoder of ``name`` takes after ``x, y, qw``: scale table, value table."""
    return tables(name)


@helper
def best_index_mxfp4(v, e, kv):
    """ggml's ``best_index_mxfp4``: the first code minimising ``fabsf(kv[i] * e - v)``."""
    best = 0
    best_err = abs(kv[0] * e - v)
    for i in range(1, 16):
        err = abs(kv[i] * e - v)
        if err < best_err:
            best = i
            best_err = err
    return best


@helper
def abs_max(x):
    """``amax = 0; for v: if (amax < fabsf(v)) amax = fabsf(v);`` (NaNs never win)."""
    amax = np.float32(0.0)
    for j in range(x.shape[0]):
        if amax < abs(x[j]):
            amax = abs(x[j])
    return amax


@helper
def fp32_to_ue4m3(x):
    """``ggml_fp32_to_ue4m3`` (see :func:`gguf_construct.codecs.fp4.fp32_to_ue4m3`)."""
    if not x > 0:
        return 0
    x = min(x, np.float32(448.0))
    bits = np.int64(np.float32(x).view(np.uint32))
    ue_exp = ((bits >> 23) & 0xFF) - 127 + 7
    if ue_exp <= 0:
        sub = c_int(x * np.float32(512.0) + np.float32(0.5))
        return 0 if sub < 1 else min(sub, 7)
    man = ((bits >> 20) & 7) + ((bits >> 19) & 1)
    exp = ue_exp
    if man > 7:
        man = 0
        exp += 1
    return 0x7E if exp >= 15 else (exp << 3) | man


@kernel
def encode_mxfp4(x, y, qw, scales, kv):
    # e @0, qs[16] @1
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        amax = abs_max(xb)
        e = 0
        if amax > 0:  # (uint8_t)(floorf(log2f(amax)) - 2 + 127), log2f rounded from double as in the numpy path
            lg = np.float32(np.log2(np.float64(amax)))
            e = c_int(np.float32(np.floor(lg)) - np.float32(2.0) + np.float32(127.0)) & 0xFF
        out[0] = np.uint8(e)
        d = scales[e]
        for j in range(16):
            out[1 + j] = np.uint8(best_index_mxfp4(xb[j], d, kv) | (best_index_mxfp4(xb[16 + j], d, kv) << 4))


@kernel
def encode_nvfp4(x, y, qw, scales, kv):
    # d[4] @0 (UE4M3 scale per 16 weights), qs[32] @4
    # The codes of a block are searched in one loop over its 64 weights, each with its sub-block's scale from
    # ``ds``: a loop that long vectorizes (one of 8 per sub-block did not, and ran 9x slower).
    ds = np.empty(x.shape[1], np.float32)
    codes = np.empty(x.shape[1], np.int32)
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        for s in range(4):
            ue = fp32_to_ue4m3(abs_max(xb[16 * s : 16 * s + 16]) / np.float32(6.0))
            out[s] = np.uint8(ue)
            ds[16 * s : 16 * s + 16] = scales[ue]
        for j in range(64):
            codes[j] = best_index_mxfp4(xb[j], ds[j], kv)
        for s in range(4):
            for j in range(8):
                out[4 + 8 * s + j] = np.uint8(codes[16 * s + j] | (codes[16 * s + 8 + j] << 4))
