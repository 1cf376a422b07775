"""IQ2_XXS, IQ2_XS and IQ2_S: "true" 2-bit codecs built on lattice grids of 8-weight vectors.

Every 8 weights are one grid vector (magnitudes 8, 25 or 43 per weight, from ``spec/tables/iq2*_grid.yaml``)
with a sign pattern, scaled by a 4-bit sub-block scale times the fp16 super-block scale ``d``:

* IQ2_XXS: per 32 weights two 32-bit words: four 8-bit grid indices (256-entry grid), then four 7-bit sign
  indices into ``ksigns_iq2xs`` (the 8th sign is the parity) and a 4-bit scale in the top bits.
* IQ2_XS: per 8 weights a 16-bit word: 9-bit grid index (512-entry grid) and 7-bit sign index; two 4-bit
  scales per 32 weights (one per 16).
* IQ2_S: per 8 weights a 10-bit grid index (1024-entry grid; low 8 bits in ``qs``, high 2 bits in ``qh``) and
  an explicit sign byte; two 4-bit scales per 32 weights.

The encoders reproduce ggml's ``quantize_iq2_xxs`` / ``quantize_iq2_xs`` / ``quantize_iq2_s`` bit for bit,
vectorised over all sub-blocks; the grid neighbour search lives in :mod:`._iqgrid`.

ggml refuses to quantize IQ2_XXS and IQ2_XS without an importance matrix (``ggml_quantize_requires_imatrix``;
``ggml_quantize_chunk`` aborts), so their encoders raise :class:`ValueError` when ``imatrix`` is ``None``.
IQ2_S works without one (it then weights by ``sigma2/4 + x^2``).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import spec as _spec

QK_K = 256
_F32 = np.float32


# --------------------------------------------------------------------------------------------------------------
# scalar helpers matching ggml (shared ones from ._common when present)
# --------------------------------------------------------------------------------------------------------------

try:
    from ._common import fp16_to_fp32 as _fp16_to_fp32, fp32_to_fp16 as _fp32_to_fp16  # noqa: F401
    from ._common import nearest_int as _nearest_int, seq_sum as _seq_sum  # noqa: F401
except ImportError:  # pragma: no cover - only before the shared helpers exist
    def _fp16_to_fp32(h: np.ndarray) -> np.ndarray:
        """GGML_FP16_TO_FP32: exact widening; signalling NaNs come out quiet."""
        f = np.asarray(h).astype(np.float32)
        nan = np.isnan(f)
        if nan.any():
            f.view(np.uint32)[nan] |= np.uint32(0x00400000)
        return f

    def _fp32_to_fp16(f: np.ndarray) -> np.ndarray:
        """GGML_FP32_TO_FP16: round to nearest even, overflow to inf, NaN -> sign | 0x7E00 (native float16)."""
        f = np.asarray(f, dtype=np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            h = f.astype(np.float16)
        nan = np.isnan(f)
        if nan.any():
            sign = (f.view(np.uint32)[nan] >> np.uint32(16)).astype(np.uint16) & np.uint16(0x8000)
            h.view(np.uint16)[nan] = sign | np.uint16(0x7E00)
        return h

    def _nearest_int(f) -> np.ndarray:
        """ggml's nearest_int: (bits(f + 12582912.f) & 0x7fffff) - 0x400000."""
        v = np.asarray(f, dtype=np.float32) + np.float32(12582912.0)
        return (v.view(np.int32) & np.int32(0x007FFFFF)) - np.int32(0x00400000)

    def _seq_sum(terms, axis: int = -1) -> np.ndarray:
        """float32 sum strictly left to right from +0.0f, like a C accumulation loop."""
        acc = np.add.accumulate(np.asarray(terms, dtype=np.float32), axis=axis, dtype=np.float32)
        return np.take(acc, -1, axis=axis) + np.float32(0.0)


# --------------------------------------------------------------------------------------------------------------
# decode tables
# --------------------------------------------------------------------------------------------------------------


def grid_magnitudes(table_name: str) -> np.ndarray:
    """A uint64 grid table as (n, 8) uint8 magnitudes; byte j of entry i (little-endian) is weight j."""
    g = _spec.table(table_name).astype(np.uint64)
    shifts = np.arange(0, 64, 8, dtype=np.uint64)
    return ((g[:, None] >> shifts) & np.uint64(0xFF)).astype(np.uint8)


@functools.lru_cache(maxsize=None)
def _sign_bits() -> np.ndarray:
    """(256, 8) uint32: 0x80000000 where bit j of the sign byte is set (weight j negative), else 0."""
    mask = _spec.table("kmask_iq2xs").astype(np.uint32)
    s = np.arange(256, dtype=np.uint32)[:, None]
    return np.where(s & mask, np.uint32(0x80000000), np.uint32(0))


@functools.lru_cache(maxsize=None)
def _ksign_bits() -> np.ndarray:
    """(128, 8) uint32 sign bits of the 7-bit sign indices (``ksigns_iq2xs``: the 8th sign is the parity)."""
    t = np.ascontiguousarray(_sign_bits()[_spec.table("ksigns_iq2xs")])
    t.setflags(write=False)
    return t


@functools.lru_cache(maxsize=None)
def _grid_f32(grid_name: str) -> np.ndarray:
    t = np.ascontiguousarray(grid_magnitudes(grid_name).astype(np.float32))
    t.setflags(write=False)
    return t


def _scale_pair(d: np.ndarray, nibbles: np.ndarray) -> np.ndarray:
    """ggml's ``d * (0.5f + s) * 0.25f`` in float32, ``d`` of shape (n, 1)."""
    db = nibbles.astype(np.float32)
    db += _F32(0.5)
    db *= d
    db *= _F32(0.25)
    return db


# --------------------------------------------------------------------------------------------------------------
# decoders (chunked so that the temporaries stay in cache; the output is written once)
# --------------------------------------------------------------------------------------------------------------

_CHUNK = 1024  # blocks per step: 1 MiB of float32 output


def _decode_chunked(blocks: np.ndarray, step) -> np.ndarray:
    nb = blocks.shape[0]
    out = np.empty((nb, QK_K), dtype=np.float32)
    for i in range(0, nb, _CHUNK):
        step(blocks[i:i + _CHUNK], out[i:i + _CHUNK])
    return out


def _nibble_scales(d: np.ndarray, sc: np.ndarray) -> np.ndarray:
    """Two 4-bit scales per byte (low nibble first) to float32 ``d * (0.5f + s) * 0.25f``, shape (n, 16)."""
    n = sc.shape[0]
    nib = np.empty((n, 8, 2), dtype=np.uint8)
    np.bitwise_and(sc, 15, out=nib[:, :, 0])
    np.right_shift(sc, 4, out=nib[:, :, 1])
    return _scale_pair(d, nib.reshape(n, 16))


def _iq2_xxs_step(blocks: np.ndarray, out: np.ndarray) -> None:
    nb = blocks.shape[0]
    d = _fp16_to_fp32(blocks["d"]).reshape(nb, 1)
    qs = blocks["qs"].astype(np.uint32, copy=False).reshape(nb, 8, 2)
    q_aux = qs[:, :, 1]
    db = _scale_pair(d, q_aux >> 28)  # (nb, 8): one scale per 32 weights
    # the low word holds four 8-bit grid indices, the high word four 7-bit sign indices (lowest bits first)
    q_grid = qs[:, :, 0]
    gi = np.empty((nb, 8, 4), dtype=np.uint8)
    si = np.empty((nb, 8, 4), dtype=np.uint8)
    for l in range(4):
        np.bitwise_and(q_grid >> (8 * l), 255, out=gi[:, :, l], casting="unsafe")
        np.bitwise_and(q_aux >> (7 * l), 127, out=si[:, :, l], casting="unsafe")
    bits = out.reshape(nb * 32, 8).view(np.uint32)
    np.take(_grid_f32("iq2xxs_grid").view(np.uint32), gi.reshape(-1), axis=0, out=bits, mode="clip")
    bits ^= _ksign_bits().take(si.reshape(-1), axis=0)
    o3 = out.reshape(nb, 8, 32)
    o3 *= db[:, :, None]


def _iq2_xs_step(blocks: np.ndarray, out: np.ndarray) -> None:
    nb = blocks.shape[0]
    d = _fp16_to_fp32(blocks["d"]).reshape(nb, 1)
    db = _nibble_scales(d, blocks["scales"])  # one scale per 16 weights
    q = blocks["qs"].reshape(-1)  # (sign_index << 9) | grid_index
    bits = out.reshape(nb * 32, 8).view(np.uint32)
    np.take(_grid_f32("iq2xs_grid").view(np.uint32), q & 511, axis=0, out=bits, mode="clip")
    bits ^= _ksign_bits().take(q >> 9, axis=0)
    o3 = out.reshape(nb, 16, 16)
    o3 *= db[:, :, None]


def _iq2_s_step(blocks: np.ndarray, out: np.ndarray) -> None:
    nb = blocks.shape[0]
    d = _fp16_to_fp32(blocks["d"]).reshape(nb, 1)
    db = _nibble_scales(d, blocks["scales"])
    qs = blocks["qs"]
    qh = blocks["qh"].astype(np.intp)
    gi = np.empty((nb, 8, 4), dtype=np.intp)
    lo = qs[:, :32].reshape(nb, 8, 4)
    for l in range(4):
        gi[:, :, l] = lo[:, :, l] | ((qh >> (2 * l)) & 3) << 8
    bits = out.reshape(nb * 32, 8).view(np.uint32)
    np.take(_grid_f32("iq2s_grid").view(np.uint32), gi.reshape(-1), axis=0, out=bits, mode="clip")
    bits ^= _sign_bits().take(qs[:, 32:].reshape(-1), axis=0)
    o3 = out.reshape(nb, 16, 16)
    o3 *= db[:, :, None]


def decode_iq2_xxs(blocks: np.ndarray) -> np.ndarray:
    return _decode_chunked(blocks, _iq2_xxs_step)


def decode_iq2_xs(blocks: np.ndarray) -> np.ndarray:
    return _decode_chunked(blocks, _iq2_xs_step)


def decode_iq2_s(blocks: np.ndarray) -> np.ndarray:
    return _decode_chunked(blocks, _iq2_s_step)
