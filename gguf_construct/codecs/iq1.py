"""IQ1_S and IQ1_M: ~1.5-1.75 bit codecs built on a 2048-entry grid of ternary 8-weight vectors.

Every 8 weights are one vector of values -1, 0, +1 from ``spec/tables/iq1s_grid.yaml`` (11-bit index: low 8
bits in ``qs``, high 3 bits in ``qh``), shifted by a delta of +-0.125 (``spec/tables/iq1_delta.yaml``) and
scaled:

* IQ1_S: per 32 weights a 16-bit ``qh`` word: bits 0-11 the high index bits of the four vectors, bits 12-14
  a 3-bit scale ``s``, bit 15 the delta sign; ``y = d * (2 s + 1) * (grid + delta)``.
* IQ1_M: per 8 weights a nibble of ``qh``: 3 high index bits and the delta sign; per 16 weights a 3-bit scale
  ``s`` in ``scales`` (four 16-bit words, four scales each); the fp16 super-block scale ``d`` is made of the
  top nibbles of those four words; ``y = d * (2 s + 1) * (grid + delta)``.

The encoders reproduce ggml's ``quantize_iq1_s`` / ``quantize_iq1_m`` bit for bit (exhaustive split search,
``iq2xs_init_impl`` grid map and neighbour lists, ``iq1_find_best_neighbour2``), vectorised over all groups.

ggml refuses to quantize IQ1_S without an importance matrix (``ggml_quantize_requires_imatrix``;
``ggml_quantize_chunk`` aborts), so :func:`encode_iq1_s` raises :class:`ValueError` when ``imatrix`` is
``None``.  IQ1_M works without one (it then weights each value by ``x^2``).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import spec as _spec
from . import block_dtype
from ._common import fp16_to_fp32, fp32_to_fp16, nearest_int, seq_sum

QK_K = 256
_F32 = np.float32
_FLT_MAX = np.float32(np.finfo(np.float32).max)


# --------------------------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _grid_values() -> np.ndarray:
    """(2048, 8) int8: the ternary grid, value of weight j of vector i."""
    g = _spec.table("iq1s_grid").astype(np.uint64)
    b = (g[:, None] >> np.arange(0, 64, 8, dtype=np.uint64)) & np.uint64(0xFF)
    return b.astype(np.uint8).view(np.int8)


@functools.lru_cache(maxsize=None)
def _deltas() -> tuple[np.float32, np.float32]:
    t = _spec.table("iq1_delta")
    return _F32(t[0]), _F32(t[1])


@functools.lru_cache(maxsize=None)
def _shifted_grid() -> np.ndarray:
    """(4096, 8) float32: entry ``i`` (11-bit grid index) is ``grid + delta``, entry ``2048 + i`` is
    ``grid - delta``.  ggml dequantizes both IQ1 types with IQ1S_DELTA."""
    g = _grid_values().astype(_F32)
    delta = _deltas()[0]
    return np.ascontiguousarray(np.concatenate([g + delta, g + (-delta)]))


# --------------------------------------------------------------------------------------------------------------
# decoders
# --------------------------------------------------------------------------------------------------------------


def decode_iq1_s(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d = fp16_to_fp32(blocks["d"])
    qh = blocks["qh"].astype(np.uint16)  # (n, 8)
    hi = (qh[:, :, None] >> np.array([0, 3, 6, 9], dtype=np.uint16)) & np.uint16(7)  # (n, 8, 4)
    idx = blocks["qs"].astype(np.uint16).reshape(n, 8, 4)
    idx |= hi << np.uint16(8)
    idx |= (qh >> np.uint16(15) << np.uint16(11))[:, :, None]
    out = _shifted_grid().take(idx.reshape(n, 32), axis=0).reshape(n, 8, 32)
    # dl = d * (2 s + 1)  (int converted to float)
    s = ((qh >> np.uint16(12)) & np.uint16(7)).astype(_F32)
    dl = d[:, None] * (s * _F32(2) + _F32(1))
    out *= dl[:, :, None]
    return out.reshape(n, QK_K)


def _iq1m_scale(sc: np.ndarray) -> np.ndarray:
    """The fp16 super-block scale of IQ1_M blocks from the four 16-bit scale words (n, 4), as float32."""
    u = (sc[:, 0] >> np.uint16(12)) | ((sc[:, 1] >> np.uint16(8)) & np.uint16(0x00F0))
    u |= (sc[:, 2] >> np.uint16(4)) & np.uint16(0x0F00)
    u |= sc[:, 3] & np.uint16(0xF000)
    return fp16_to_fp32(u)


def decode_iq1_m(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    sc = blocks["scales"].astype(np.uint16)  # (n, 4)
    d = _iq1m_scale(sc)
    qh = blocks["qh"]  # (n, 16): nibble g % 2 of qh[g // 2] belongs to 8-weight vector g
    nib = np.empty((n, 16, 2), dtype=np.uint16)
    nib[:, :, 0] = qh & np.uint8(15)
    nib[:, :, 1] = qh >> np.uint8(4)
    # 11-bit index from qs and the low 3 nibble bits, nibble bit 3 (the delta sign) lands on bit 11
    idx = blocks["qs"].astype(np.uint16).reshape(n, 16, 2)
    idx |= nib << np.uint16(8)
    out = _shifted_grid().take(idx.reshape(n, 32), axis=0).reshape(n, 16, 16)
    # 16 scales of 3 bits: scale of 16-weight group t is bits 3 (t % 4) .. of word t // 4
    s = (sc[:, :, None] >> np.array([0, 3, 6, 9], dtype=np.uint16)) & np.uint16(7)  # (n, 4, 4)
    dl = d[:, None] * (s.reshape(n, 16).astype(_F32) * _F32(2) + _F32(1))
    out *= dl[:, :, None]
    return out.reshape(n, QK_K)
