"""IQ4_NL and IQ4_XS: 4-bit indices into the non-linear level table ``kvalues_iq4nl`` (spec/tables).

Decoding (ggml ``dequantize_row_iq4_nl`` / ``_iq4_xs``), ``kv = kvalues_iq4nl``, nibbles in Q4_0 order:

* IQ4_NL (32 weights): ``y[j] = d * kv[qs[j] & 0xF]``, ``y[j+16] = d * kv[qs[j] >> 4]``.
* IQ4_XS (256 weights = 8 sub-blocks of 32): sub-block ``ib`` has the 6-bit scale
  ``ls = ((scales_l[ib/2] >> 4*(ib%2)) & 0xF) | (((scales_h >> 2*ib) & 3) << 4)`` and
  ``dl = d * (ls - 32)``; its weights decode as in IQ4_NL with ``dl`` for ``d``.

Encoding reproduces ``quantize_iq4_nl`` / ``quantize_iq4_xs`` (both through ``quantize_row_iq4_nl_impl`` with
``ntry = 7``), with importance weights ``imatrix[j] * sqrt(sigma2 + x[j]^2)`` or, without an imatrix,
``x[j]^2``.  Every float operation is float32 in C order; the 15 candidate scales are tried in a Python loop
while all blocks are processed at once.
"""

from __future__ import annotations

import numpy as np

from ..format import spec
from . import block_dtype
from ._common import (
    DECODE_CHUNK_VALUES,
    block_bytes,
    byte_runs,
    decode_chunks,
    first_abs_max,
    fp16_to_fp32,
    fp32_to_fp16,
    nearest_int,
    output_array,
    scale_groups,
    spread_runs,
)

__all__ = ["decode_iq4_nl", "encode_iq4_nl", "decode_iq4_xs", "encode_iq4_xs", "best_index_iq4nl"]

_F32 = np.float32
_KV = spec.table("kvalues_iq4nl")
_KVF = _KV.astype(np.float32)


GROUP_MAX_EPS = _F32(1e-15)
NTRY = 7


# --------------------------------------------------------------------------------------------------------------
# decoding
# --------------------------------------------------------------------------------------------------------------


def _pair_table(values: np.ndarray) -> np.ndarray:
    """Lookup table for two consecutive 4-bit codes at once: entry :func:`_pair_index` of codes (c0, c1) is the
    float32 pair ``(values[c0], values[c1])`` as one uint64 (built through the same views, so it holds on
    either host byte order)."""
    codes = np.stack(np.meshgrid(np.arange(16), np.arange(16), indexing="ij"), axis=-1).reshape(256, 2)
    codes = codes.astype(np.uint8)
    table = np.empty(256, dtype=np.uint64)
    table[_pair_index(codes.reshape(-1)).astype(np.intp)] = values.astype(np.float32)[codes].view(np.uint64)[:, 0]
    table.setflags(write=False)
    return table


def _pair_index(codes: np.ndarray) -> np.ndarray:
    """For contiguous uint8 codes < 16 (even count), one 8-bit index per pair of consecutive codes, as uint16:
    the two codes of each 16-bit lane merged by ``(lane | lane >> 4) & 0xFF`` (four lanes per word operation)."""
    w = codes.reshape(-1).view(np.uint64) if codes.size % 8 == 0 else None
    if w is None:  # tiny inputs (the table itself): plain 16-bit lanes
        lane = codes.reshape(-1).view(np.uint16)
        return (lane | (lane >> np.uint16(4))) & np.uint16(0xFF)
    idx = np.right_shift(w, np.uint64(4))
    idx |= w
    idx &= np.uint64(0x00FF00FF00FF00FF)
    return idx.view(np.uint16)


_PAIRS = _pair_table(_KV)


@np.errstate(over="ignore", invalid="ignore")  # inf * 0 and NaN scales are data here, not errors
def _decode_codes(
    blocks: np.ndarray, q_offset: int, n_groups: int, scales: np.ndarray, out: np.ndarray | None
) -> np.ndarray:
    """Values of ``n_groups`` groups of 16 code bytes at ``q_offset`` per block (byte j: low nibble value j,
    high nibble value j + 16), ``y = scale * kv[code]`` with one float32 scale per group of 32 values."""
    n = blocks.shape[0]
    size = 32 * n_groups
    out = output_array(out, n, size)
    runs = byte_runs(block_bytes(blocks), q_offset, 16, n_groups)
    buf = np.empty(min(n, DECODE_CHUNK_VALUES // size) * size, dtype=np.uint8)
    scales = scales.reshape(-1)
    for s, e in decode_chunks(n, size):
        codes = spread_runs(runs[s:e], (0, 4), 0xF, buf)  # codes in output order
        o = out[s:e].reshape(-1)
        np.take(_PAIRS, _pair_index(codes), out=o.view(np.uint64), mode="clip")  # kv values, two per lookup
        scale_groups(o, o, scales[s * n_groups : e * n_groups])
    return out


def decode_iq4_nl(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _decode_codes(blocks, 2, 1, fp16_to_fp32(blocks["d"]), out)


def _xs_scales(blocks: np.ndarray) -> np.ndarray:
    """The eight 6-bit sub-block scales minus 32, (n, 8) float32."""
    n = blocks.shape[0]
    sl = blocks["scales_l"]  # (n, 4)
    lo = np.stack([sl & 0xF, sl >> 4], axis=2).reshape(n, 8).astype(np.int16)
    sh = blocks["scales_h"].astype(np.uint16)[:, None]
    hi = ((sh >> (2 * np.arange(8, dtype=np.uint16))) & 3).astype(np.int16)
    return ((lo | (hi << 4)) - np.int16(32)).astype(np.float32)


def decode_iq4_xs(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        dl = fp16_to_fp32(blocks["d"])[:, None] * _xs_scales(blocks)  # d * (ls - 32)
    return _decode_codes(blocks, 8, 8, dl, out)


# --------------------------------------------------------------------------------------------------------------
# best_index_int8 as thresholds
# --------------------------------------------------------------------------------------------------------------


def _ordered(f: float) -> int:
    b = int(np.array(f, dtype=np.float32).view(np.uint32))
    return b if b < 0x80000000 else -(b & 0x7FFFFFFF)


def _unordered(k: int) -> np.float32:
    b = k if k >= 0 else (-k) | 0x80000000
    return np.array(b, dtype=np.uint32).view(np.float32)[()]


def _thresholds(values: np.ndarray) -> np.ndarray:
    """ggml's ``best_index_int8(n, values, x)`` takes the neighbours ``lo <= x < hi`` of x in the sorted table
    and returns ``lo``'s index when ``x - lo < hi - x`` (float32 arithmetic), else ``hi``'s.  Both
    differences are monotone in x, so each gap has one float32 threshold: the smallest x in (lo, hi] that
    picks ``hi``.  Then ``best_index(x) == searchsorted(thresholds, x, side="right")`` for every float32 x,
    including the clamping ends (x <= values[0] -> 0, x >= values[-1] -> n-1) and NaN (-> n-1, as in C)."""
    v = values.astype(np.float32)
    out = []
    for k in range(1, len(v)):
        lo, hi = v[k - 1], v[k]
        a, b = _ordered(lo), _ordered(hi)  # pred(a) true, pred(b) false
        while b - a > 1:
            m = (a + b) // 2
            x = _unordered(m)
            if (x - lo) < (hi - x):
                a = m
            else:
                b = m
        out.append(_unordered(b))
    return np.array(out, dtype=np.float32)


_THR = _thresholds(_KV)


def best_index_iq4nl(x: np.ndarray) -> np.ndarray:
    """``best_index_int8(16, kvalues_iq4nl, x)`` elementwise (uint8 codes): the number of thresholds <= x
    (15 vectorised comparisons are much faster than ``np.searchsorted`` here), and 15 for NaN as in C."""
    x = np.asarray(x, dtype=np.float32)
    idx = np.zeros(x.shape, dtype=np.uint8)
    hit = np.empty(x.shape, dtype=bool)
    for t in _THR:
        np.greater_equal(x, t, out=hit)
        idx += hit
    nan = np.isnan(x)
    if nan.any():
        idx[nan] = 15
    return idx


# --------------------------------------------------------------------------------------------------------------
# encoding (quantize_row_iq4_nl_impl, vectorised over blocks; arrays are position-major: (32, n_blocks))
# --------------------------------------------------------------------------------------------------------------


def _seq_sum(a: np.ndarray) -> np.ndarray:
    """Sum over axis 0 strictly in order from +0 (C loop order), vectorised over the blocks of axis 1."""
    s = np.zeros(a.shape[1:], dtype=np.float32)
    for j in range(a.shape[0]):
        s += a[j]
    return s


def _sums(xt: np.ndarray, w: np.ndarray, idv: np.ndarray):
    """Quantize every block with 1/scale ``idv`` and return (sumqx, sumq2) = (sum w*q*x, sum w*q*q)."""
    q = np.take(_KVF, best_index_iq4nl(idv[None, :] * xt))
    wq = w * q
    return _seq_sum(wq * xt), _seq_sum(wq * q)


def _block_scales(xt: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The per-block search of quantize_row_iq4_nl_impl (ntry = 7): the best scale for each 32-block."""
    amax, mx = first_abs_max(xt, axis=0)
    active = ~(amax < GROUP_MAX_EPS)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = -mx / _KVF[0]
        sumqx, sumq2 = _sums(xt, w, _F32(1) / d)
        d = np.where(sumq2 > 0, sumqx / sumq2, _F32(0)).astype(np.float32)
        best = d * sumqx
        for itry in range(-NTRY, NTRY + 1):
            sumqx, sumq2 = _sums(xt, w, _F32(itry + int(_KV[0])) / mx)
            upd = (sumq2 > 0) & (sumqx * sumqx > best * sumq2)
            if upd.any():
                d = np.where(upd, sumqx / sumq2, d)
                best = np.where(upd, d * sumqx, best)
    return np.where(active, d, _F32(0)).astype(np.float32)


def _weights(xt: np.ndarray, sigma2: np.ndarray, imatrix: np.ndarray | None, n_rows: int) -> np.ndarray:
    """Importance of each weight (32, n_blocks): ``qw * sqrtf(sigma2 + x*x)`` or ``x*x``."""
    x2 = xt * xt
    if imatrix is None:
        return x2
    qw = np.tile(imatrix.reshape(-1, 32).T, (1, n_rows))  # (32, n_blocks), blocks in row order
    return qw * np.sqrt(sigma2[None, :] + x2)


def _pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """codes (m, 32) -> (m, 16) bytes: byte j holds codes j (low nibble) and j+16 (high)."""
    return codes[:, :16] | (codes[:, 16:] << np.uint8(4))


def encode_iq4_nl(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    n_rows = rows.shape[0]
    x = rows.reshape(-1, 32)
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype("IQ4_NL"))
    xt = np.ascontiguousarray(x.T)
    with np.errstate(over="ignore", invalid="ignore"):
        sigma2 = _seq_sum(xt * xt) * _F32(2.0 / 32)
        w = _weights(xt, sigma2, imatrix, n_rows)
    scale = _block_scales(xt, w)
    out["d"] = fp32_to_fp16(scale)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        idv = np.where(scale != 0, _F32(1) / scale, _F32(0)).astype(np.float32)
        codes = best_index_iq4nl(x * idv[:, None])
    out["qs"] = _pack_nibbles(codes)
    return out


def encode_iq4_xs(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    n_rows = rows.shape[0]
    x = rows.reshape(-1, 256)
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype("IQ4_XS"))
    with np.errstate(over="ignore", invalid="ignore"):
        sigma2 = _seq_sum(np.ascontiguousarray((x * x).T)) * _F32(2.0 / 256)  # (n,)
    xt = np.ascontiguousarray(x.reshape(n * 8, 32).T)  # (32, n*8)
    with np.errstate(over="ignore", invalid="ignore"):
        w = _weights(xt, np.repeat(sigma2, 8), imatrix, n_rows)
    scales = _block_scales(xt, w).reshape(n, 8)
    # super-block scale from the sub-block scale of largest magnitude (first one wins)
    _, max_scale = first_abs_max(scales, axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = -max_scale / _F32(32)
        out["d"] = fp32_to_fp16(d)
        idv = np.where(d != 0, _F32(1) / d, _F32(0)).astype(np.float32)
        ls = np.clip(nearest_int(idv[:, None] * scales), -32, 31)  # (n, 8)
        dl = d[:, None] * ls.astype(np.float32)
        idl = np.where(dl != 0, _F32(1) / dl, _F32(0)).astype(np.float32)
        codes = best_index_iq4nl(x.reshape(n, 8, 32) * idl[:, :, None])
    out["qs"] = _pack_nibbles(codes.reshape(n * 8, 32)).reshape(n, 128)
    u = (ls + 32).astype(np.uint16)
    lo = (u & 0xF).astype(np.uint8)
    out["scales_l"] = lo[:, 0::2] | (lo[:, 1::2] << np.uint8(4))
    hi = u >> 4
    out["scales_h"] = np.bitwise_or.reduce(hi << (2 * np.arange(8, dtype=np.uint16)), axis=1)
    return out
