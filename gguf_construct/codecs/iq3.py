"""IQ3_XXS and IQ3_S: "true" 3-bit codecs built on lattice grids of 4-weight vectors.

Every 4 weights are one grid vector of magnitudes (``spec/tables/iq3xxs_grid.yaml``, 256 entries, and
``spec/tables/iq3s_grid.yaml``, 512 entries) with a sign per weight, scaled per 32 weights:

* IQ3_XXS: 8-bit grid indices in ``qs``; per 32 weights one 32-bit word in ``scales_and_signs``: four 7-bit
  indices into ``ksigns_iq2xs`` (8 signs each, the 8th being the parity) and a 4-bit scale ``s`` in the top
  bits; ``y = d * (0.5 + s) * 0.5 * grid * sign``.
* IQ3_S: 9-bit grid indices (low 8 bits in ``qs``, the 9th in ``qh``), one explicit sign bit per weight and a
  4-bit scale ``s`` per 32 weights; ``y = d * (1 + 2 s) * grid * sign``.

The encoders reproduce ggml's ``quantize_iq3_xxs`` / ``quantize_iq3_s`` (``quantize_row_iq3_xxs_impl`` /
``quantize_row_iq3_s_impl`` with the ``iq3xs_init_impl`` grid, map and neighbour lists) bit for bit,
vectorised over all 32-weight groups; only the scale candidates are a Python loop.  Both work with or without
an importance matrix (without one, ggml weights each value by ``x^2``).  Where ggml hits a ``GGML_ASSERT``
(NaN or overflowing input leaving a point without a neighbour, or a NaN group scale) they raise
:class:`._iqgrid.GridAbort`, a ``ValueError``.
"""

from __future__ import annotations

import functools

import numpy as np

from ..format import spec as _spec
from . import block_dtype
from ._common import QK_K
from ._common import c_row_max, fp16_to_fp32, fp32_to_fp16, nearest_int, seq_sum
from ._iqgrid import check_group_scales, check_neighbour_found

_F32 = np.float32


# --------------------------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------------------------


def _grid_bytes(name: str) -> np.ndarray:
    """A uint32 grid table as (n, 4) uint8: byte j (little-endian) of entry i is the magnitude of weight j."""
    g = _spec.table(name).astype(np.uint32)
    return ((g[:, None] >> np.arange(0, 32, 8, dtype=np.uint32)) & np.uint32(0xFF)).astype(np.uint8)


@functools.lru_cache(maxsize=None)
def _signed_grid(name: str) -> np.ndarray:
    """(n_grid * 16,) uint32: entry ``16 * index + nibble`` holds the four int8 values of the grid vector with
    weight j negated where bit j of the sign nibble is set (byte j = weight j, as int8)."""
    mag = _grid_bytes(name).astype(np.int16)
    bits = (np.arange(16)[:, None] >> np.arange(4)) & 1
    signed = np.where(bits[None, :, :], -mag[:, None, :], mag[:, None, :]).astype(np.int8)  # (n, 16, 4)
    return np.ascontiguousarray(signed.reshape(-1, 4)).view(np.uint32).reshape(-1)


@functools.lru_cache(maxsize=None)
def _ksigns() -> np.ndarray:
    return _spec.table("ksigns_iq2xs").astype(np.uint8)


# --------------------------------------------------------------------------------------------------------------
# decoders
# --------------------------------------------------------------------------------------------------------------


def _scaled(signed_i8: np.ndarray, db: np.ndarray) -> np.ndarray:
    """(n, 8, 32) int8 signed grid values times the (n, 8) float32 group scales -> (n, 256) float32.

    ``db * grid * (+-1)`` in C equals ``db * (+-grid)`` exactly (the sign flip is exact)."""
    n = db.shape[0]
    out = np.empty((n, 8, 32), dtype=_F32)
    np.multiply(signed_i8, db[:, :, None], out=out)
    return out.reshape(n, QK_K)


def decode_iq3_xxs(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d = fp16_to_fp32(blocks["d"])
    aux = blocks["scales_and_signs"].astype(np.uint32)  # (n, 8)
    sign_idx = (aux[:, :, None] >> np.array([0, 7, 14, 21], dtype=np.uint32)) & np.uint32(127)  # (n, 8, 4)
    sbyte = _ksigns()[sign_idx]  # (n, 8, 4): 8 signs for the two grid vectors qs[8 ib + 2 l], qs[8 ib + 2 l + 1]
    idx = blocks["qs"].astype(np.uint16).reshape(n, 8, 4, 2)
    idx <<= np.uint16(4)
    idx[..., 0] |= sbyte & np.uint8(15)
    idx[..., 1] |= sbyte >> np.uint8(4)
    vals = _signed_grid("iq3xxs_grid").take(idx.reshape(-1)).view(np.int8).reshape(n, 8, 32)
    # db = d * (0.5f + s) * 0.5f
    s = (aux >> np.uint32(28)).astype(_F32)
    db = (d[:, None] * (_F32(0.5) + s)) * _F32(0.5)
    return _scaled(vals, db)


def decode_iq3_s(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d = fp16_to_fp32(blocks["d"])
    qh = blocks["qh"]  # (n, 8): bit k of qh[ib] is the 9th bit of qs[8 ib + k]
    hi = (qh[:, :, None] >> np.arange(8, dtype=np.uint8)) & np.uint8(1)  # (n, 8, 8)
    signs = blocks["signs"]  # (n, 32): byte m covers weights 8m..8m+7 = grid vectors 2m, 2m+1
    idx = blocks["qs"].astype(np.uint16).reshape(n, 64)
    idx |= hi.reshape(n, 64).astype(np.uint16) << np.uint16(8)
    idx <<= np.uint16(4)
    idx = idx.reshape(n, 32, 2)
    idx[:, :, 0] |= signs & np.uint8(15)
    idx[:, :, 1] |= signs >> np.uint8(4)
    vals = _signed_grid("iq3s_grid").take(idx.reshape(-1)).view(np.int8).reshape(n, 8, 32)
    sc = blocks["scales"]  # (n, 4): low nibble for 32-weight group 2i, high nibble for 2i+1
    nib = np.empty((n, 4, 2), dtype=np.uint8)
    nib[:, :, 0] = sc & np.uint8(15)
    nib[:, :, 1] = sc >> np.uint8(4)
    # db = d * (1 + 2 s)  (int converted to float)
    db = d[:, None] * (nib.reshape(n, 8).astype(_F32) * _F32(2) + _F32(1))
    return _scaled(vals, db)


# --------------------------------------------------------------------------------------------------------------
# encoder machinery: ggml's iq3xs_init_impl (grid levels, code -> grid index map, neighbour lists)
# --------------------------------------------------------------------------------------------------------------

_KMAX_Q = 8  # levels 0..7 per weight, magnitude 2l+1 in the quantizer


class _Grid:
    """The quantizer's view of a grid (``iq3xs_init_impl``).

    * ``q``: (n, 4) float32 magnitudes ``2l+1`` of each grid vector (level ``l`` = rank of the table value);
    * ``kmap``: (4096,) int32, grid index of the 12-bit code ``l0 | l1 << 3 | l2 << 6 | l3 << 9``, -1 if the
      point is not on the grid;
    * ``nb_start``, ``nb_count``, ``nb_flat``: for every code off the grid, its neighbour list: the grid
      vectors at the ``nwant`` smallest squared distances, ordered by (distance, index) as ggml's qsort does.
    """

    def __init__(self, name: str, nwant: int):
        raw = _grid_bytes(name)
        values = np.unique(raw)
        assert len(values) == _KMAX_Q
        levels = np.searchsorted(values, raw).astype(np.int32)  # (n, 4)
        n = levels.shape[0]
        self.q = (2 * levels + 1).astype(_F32)
        codes = (levels << (3 * np.arange(4, dtype=np.int32))).sum(1)
        kmap = np.full(4096, -1, dtype=np.int32)
        kmap[codes] = np.arange(n, dtype=np.int32)
        self.kmap = kmap
        off = np.flatnonzero(kmap < 0)
        ql = (off[:, None] >> (3 * np.arange(4))) & 7  # (m, 4)
        diff = (2 * levels[None, :, :] + 1) - (2 * ql[:, None, :] + 1)
        d2 = (diff * diff).sum(-1)  # (m, n), multiples of 4
        # the nwant smallest distinct distances of each row
        present = np.zeros((len(off), d2.max() // 4 + 1), dtype=bool)
        present[np.arange(len(off))[:, None], d2 // 4] = True
        thr = np.argmax(np.cumsum(present, axis=1) >= nwant, axis=1) * 4
        rows, cols = np.nonzero(d2 <= thr[:, None])  # row-major: index order within a row
        order = np.argsort(rows.astype(np.int64) * 4096 + d2[rows, cols], kind="stable")
        rows, cols = rows[order], cols[order]
        count = np.zeros(4096, dtype=np.int32)
        count[off] = np.bincount(rows, minlength=len(off))
        start = np.zeros(4096, dtype=np.int64)
        start[off] = np.concatenate([[0], np.cumsum(count[off])[:-1]])
        self.nb_count = count
        self.nb_start = start
        self.nb_flat = cols.astype(np.int32)
        # padded form for the search: nb_pad (4096, K) grid indices, nb_off (4096, K, 4) term offsets
        # i * 8 + level_i of each neighbour (32 = the +inf padding term)
        kmax = int(count.max())
        rank = np.arange(rows.shape[0]) - np.repeat(start[off], count[off])
        pad = np.zeros((4096, kmax), dtype=np.int32)
        pad[off[rows], rank] = cols
        nb_off = np.full((4096, kmax, 4), 32, dtype=np.intp)
        nb_off[off[rows], rank] = np.arange(4) * 8 + levels[cols]
        self.nb_pad = pad
        self.nb_off = nb_off
        self.buckets = tuple(b for b in (4, 8, 16) if b < kmax) + (kmax,)


@functools.lru_cache(maxsize=None)
def _grid(name: str) -> _Grid:
    return _Grid(name, 2 if name == "iq3xxs_grid" else 3)


def _best_neighbour(grid: _Grid, codes: np.ndarray, xv: np.ndarray, wv: np.ndarray, sc: np.ndarray) -> np.ndarray:
    """``iq3_find_best_neighbour`` for m off-grid points at once: codes (m,), xv/wv (m, 4), sc (m,) float32.

    Returns the grid index minimising ``sum_i (w_i * diff_i) * diff_i`` (``diff = sc * q - x``, accumulated in
    order) over the code's neighbour list; the first one wins ties.  The 32 possible terms of each point
    (4 weights x 8 levels) are computed once; each neighbour then costs four lookups and three additions."""
    m = codes.shape[0]
    if m == 0:
        return np.zeros(0, dtype=np.int32)
    diff = sc[:, None, None] * _LEVEL_Q[None, None, :] - xv[:, :, None]  # (m, 4, 8)
    terms = np.empty((m, 33), dtype=_F32)
    terms[:, :32] = ((wv[:, :, None] * diff) * diff).reshape(m, 32)
    terms[:, 32] = np.inf  # padding entries
    terms = terms.reshape(-1)
    out = np.empty(m, dtype=np.int32)
    cnt = grid.nb_count[codes]
    lo = 0
    for hi in grid.buckets:  # pad each point's list to its bucket's width
        sel = np.flatnonzero((cnt > lo) & (cnt <= hi)) if lo or hi < grid.nb_pad.shape[1] else None
        lo = hi
        u = codes if sel is None else codes[sel]
        if u.size == 0:
            continue
        base = (np.arange(m) if sel is None else sel) * 33
        off = grid.nb_off[u, :hi] + base[:, None, None]  # (s, hi, 4)
        t = terms.take(off)
        d2 = ((t[..., 0] + t[..., 1]) + t[..., 2]) + t[..., 3]
        d2[np.isnan(d2)] = np.inf
        check_neighbour_found(d2.min(axis=1))
        j = np.argmin(d2, axis=1)
        res = grid.nb_pad[u, j]
        if sel is None:
            return res
        out[sel] = res
    return out


_LEVEL_Q = (2 * np.arange(_KMAX_Q) + 1).astype(_F32)


def _levels_to_codes(lev: np.ndarray) -> np.ndarray:
    """(g, 32) int levels -> (g, 8) 12-bit codes of the 4-weight vectors."""
    lev = lev.reshape(lev.shape[0], 8, 4)
    return lev[:, :, 0] | (lev[:, :, 1] << 3) | (lev[:, :, 2] << 6) | (lev[:, :, 3] << 9)


def _quantize_levels(idv: np.ndarray, xval: np.ndarray) -> np.ndarray:
    """``MAX(0, MIN(kMaxQ-1, nearest_int(0.5f*(id*xval-1))))`` with id per group: (g,) x (g, 32) -> int32."""
    l = nearest_int(_F32(0.5) * (idv[:, None] * xval - _F32(1)))
    return np.clip(l, 0, _KMAX_Q - 1)


def _grid_indices(grid: _Grid, idv, scale, xval, waux, rows=None):
    """Map ``xval`` of the selected groups to grid indices at inverse scale ``idv``; points off the grid take the
    best neighbour at ``scale``.  Returns (indices (g, 8), on_grid (g, 8))."""
    codes = _levels_to_codes(_quantize_levels(idv, xval))
    gi = grid.kmap[codes]
    off = gi < 0
    if off.any():
        g_off, k_off = np.nonzero(off)
        xv = xval.reshape(-1, 8, 4)[g_off, k_off]
        wv = waux.reshape(-1, 8, 4)[g_off, k_off]
        gi[g_off, k_off] = _best_neighbour(grid, codes[g_off, k_off], xv, wv, scale[g_off])
    return gi, ~off


def _sums(grid: _Grid, gi: np.ndarray, wx: np.ndarray, weight: np.ndarray):
    """sumqx = sum w*xval*q, sumq2 = sum w*q*q over the 32 weights, accumulated in order (float32)."""
    q = grid.q[gi].reshape(gi.shape[0], 32)
    wq = weight * q
    return seq_sum(wx * q), seq_sum(wq * q)


def _search_groups(grid: _Grid, xval, weight, gmax, n_candidates: int, init_on_grid: bool, recheck_all: bool):
    """The per-32-weight search of ``quantize_row_iq3_*_impl``: returns (scale (g,), grid indices (g, 8)).

    ``init_on_grid``: ggml's initial ``is_on_grid`` (true for IQ3_XXS, false for IQ3_S);
    ``recheck_all``: whether the second pass re-maps every vector (IQ3_S) or only the off-grid ones (IQ3_XXS).
    """
    g = xval.shape[0]
    waux = np.sqrt(weight)
    wx = weight * xval
    best = np.zeros(g, dtype=_F32)
    scale = gmax / _F32(2 * _KMAX_Q - 1)
    gi_best = np.full((g, 8), grid.kmap[0], dtype=np.int32)
    on_best = np.full((g, 8), init_on_grid)
    for is_ in range(-n_candidates, n_candidates + 1):
        idv = (_F32(2 * _KMAX_Q - 1) + _F32(is_) * _F32(0.2)) / gmax
        this_scale = _F32(1) / idv
        gi, on = _grid_indices(grid, idv, this_scale, xval, waux)
        sumqx, sumq2 = _sums(grid, gi, wx, weight)
        acc = (sumq2 > 0) & (sumqx * sumqx > best * sumq2)
        if acc.any():
            new_scale = sumqx / sumq2
            scale = np.where(acc, new_scale, scale)
            best = np.where(acc, new_scale * sumqx, best)
            gi_best[acc] = gi[acc]
            on_best[acc] = on[acc]
    redo = ~on_best.all(1) & (scale > 0)
    if redo.any():
        r = np.flatnonzero(redo)
        sc = scale[r]
        gi, _ = _grid_indices(grid, _F32(1) / sc, sc, xval[r], waux[r])
        old = gi_best[r]
        gi_best[r] = gi if recheck_all else np.where(on_best[r], old, gi)
        sumqx, sumq2 = _sums(grid, gi_best[r], wx[r], weight[r])
        scale[r] = np.where(sumq2 > 0, sumqx / np.where(sumq2 > 0, sumq2, _F32(1)), sc)
    return scale, gi_best


def _prepare(x: np.ndarray, qw: np.ndarray | None):
    """Per super-block weights of ``quantize_row_iq3_*_impl``: x (b, 256) -> weight (b, 256)."""
    if qw is None:
        return x * x
    sumx2 = seq_sum(x * x)
    sigma2 = (_F32(2) * sumx2) / _F32(QK_K)
    return qw * np.sqrt(sigma2[:, None] + x * x)


def _row_chunks(rows: np.ndarray, imatrix, chunk_blocks: int = 1024):
    """Yield (first block, x (b, 256), quant weights (b, 256) or None) over all super-blocks of ``rows``."""
    n_rows, n_per_row = rows.shape
    nblk = n_per_row // QK_K
    x_all = rows.reshape(-1, QK_K)
    qw_row = None if imatrix is None else imatrix.reshape(nblk, QK_K)
    total = x_all.shape[0]
    for b0 in range(0, total, chunk_blocks):
        b1 = min(total, b0 + chunk_blocks)
        qw = None if qw_row is None else qw_row[np.arange(b0, b1) % nblk]
        yield b0, x_all[b0:b1], qw


def _final_scales(scales: np.ndarray, fudge: np.float32):
    """Super-block scale and 4-bit group scales from the (b, 8) float group scales (ggml's last step)."""
    check_group_scales(scales)
    max_scale = scales.max(axis=1)
    d = max_scale / _F32(31)
    dh = fp32_to_fp16(d * fudge)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        idv = _F32(1) / d
        l = nearest_int(_F32(0.5) * (idv[:, None] * scales - _F32(1)))
    return max_scale, dh, np.clip(l, 0, 15).astype(np.uint32)


def _magnitudes(xb: np.ndarray):
    """ggml's ``if (x >= 0) xval = x; else { xval = -x; sign bit }``: a NaN counts as negative."""
    neg = ~(xb >= 0)
    return neg, np.where(neg, -xb, xb)


def _first_min(v: np.ndarray) -> np.ndarray:
    """Index of ``min`` along the last axis as ``imin = 0; for i: if (v[i] < v[imin]) imin = i`` (NaNs never win,
    a NaN first element is never replaced)."""
    imin = np.zeros(v.shape[:-1], dtype=np.intp)
    m = v[..., 0].copy()
    for i in range(1, v.shape[-1]):
        less = v[..., i] < m
        imin[less] = i
        m = np.where(less, v[..., i], m)
    return imin


def encode_iq3_xxs(rows: np.ndarray, imatrix) -> np.ndarray:
    grid = _grid("iq3xxs_grid")
    out = np.zeros(rows.size // QK_K, dtype=block_dtype("IQ3_XXS"))
    bit = np.uint8(1) << np.arange(8, dtype=np.uint8)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        for b0, x, qw in _row_chunks(rows, imatrix):
            b = x.shape[0]
            weight = _prepare(x, qw).reshape(-1, 32)
            xb = x.reshape(-1, 32)
            neg, xval = _magnitudes(xb)
            # odd number of negative signs in 8: flip the one with the smallest weight*x*x
            neg8 = neg.reshape(-1, 4, 8)
            odd = (neg8.sum(axis=2) & 1).astype(bool)
            imin = _first_min(((weight * xb) * xb).reshape(-1, 4, 8))
            g_i, k_i = np.nonzero(odd)
            j_i = imin[g_i, k_i]
            xv8 = xval.reshape(-1, 4, 8)
            xv8[g_i, k_i, j_i] = -xv8[g_i, k_i, j_i]
            neg8[g_i, k_i, j_i] ^= True
            signs = (neg8 * bit).sum(axis=2, dtype=np.uint32) & np.uint32(127)  # (g, 4)
            gmax = c_row_max(xval)
            live = ~(gmax < _F32(1e-8))  # GROUP_MAX_EPS_IQ3_XXS; a NaN max is searched (and aborts) as in ggml
            scales = np.zeros(xb.shape[0], dtype=_F32)
            gi = np.zeros((xb.shape[0], 8), dtype=np.int32)
            r = np.flatnonzero(live)
            if r.size:
                sc, g = _search_groups(grid, xval[r], weight[r], gmax[r], 15, True, False)
                neg_sc = sc < 0
                sc = np.where(neg_sc, -sc, sc)
                signs[r[neg_sc]] = ~signs[r[neg_sc]] & np.uint32(127)
                scales[r] = sc
                gi[r] = g
            signs[~live] = 0
            sas = signs[:, 0] | (signs[:, 1] << 7) | (signs[:, 2] << 14) | (signs[:, 3] << 21)
            max_scale, dh, l = _final_scales(scales.reshape(b, 8), _F32(1.0125))
            sas = sas.reshape(b, 8) | (l << np.uint32(28))
            keep = max_scale > 0
            blk = out[b0 : b0 + b]
            blk["d"] = np.where(keep, dh, np.float16(0))
            blk["qs"] = np.where(keep[:, None], gi.reshape(b, 64), 0).astype(np.uint8)
            blk["scales_and_signs"] = np.where(keep[:, None], sas, 0)
    return out


def encode_iq3_s(rows: np.ndarray, imatrix) -> np.ndarray:
    grid = _grid("iq3s_grid")
    out = np.zeros(rows.size // QK_K, dtype=block_dtype("IQ3_S"))
    bit = np.uint8(1) << np.arange(8, dtype=np.uint8)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        for b0, x, qw in _row_chunks(rows, imatrix):
            b = x.shape[0]
            weight = _prepare(x, qw).reshape(-1, 32)
            xb = x.reshape(-1, 32)
            neg, xval = _magnitudes(xb)
            signs = (neg.reshape(-1, 4, 8) * bit).sum(axis=2, dtype=np.uint32).astype(np.uint8)  # (g, 4)
            gmax = c_row_max(xval)
            live = gmax != 0
            scales = np.zeros(xb.shape[0], dtype=_F32)
            gi = np.zeros((xb.shape[0], 8), dtype=np.int32)
            r = np.flatnonzero(live)
            if r.size:
                sc, g = _search_groups(grid, xval[r], weight[r], gmax[r], 9, False, True)
                neg_sc = sc < 0
                sc = np.where(neg_sc, -sc, sc)
                signs[r[neg_sc]] = ~signs[r[neg_sc]]
                scales[r] = sc
                gi[r] = g
            max_scale, dh, l = _final_scales(scales.reshape(b, 8), _F32(1.033))
            keep = max_scale > 0
            # ggml advances its qs / signs pointers only past groups it did not skip (max == 0): the data of
            # the live groups is packed to the front of the block
            live_b = live.reshape(b, 8)
            slot = np.cumsum(live_b, axis=1) - 1
            qs = np.zeros((b, 8, 8), dtype=np.uint8)
            sg = np.zeros((b, 8, 4), dtype=np.uint8)
            bi, gj = np.nonzero(live_b)
            gi_b = gi.reshape(b, 8, 8)
            qs[bi, slot[bi, gj]] = (gi_b[bi, gj] & 255).astype(np.uint8)
            sg[bi, slot[bi, gj]] = signs.reshape(b, 8, 4)[bi, gj]
            qh = ((gi_b >> 8).astype(np.uint8) * bit).sum(axis=2, dtype=np.uint32).astype(np.uint8)
            qh[~live_b] = 0
            blk = out[b0 : b0 + b]
            blk["d"] = np.where(keep, dh, np.float16(0))
            blk["qs"] = qs.reshape(b, 64)  # written during the group loop, kept even when max_scale == 0
            blk["qh"] = qh
            blk["signs"] = sg.reshape(b, 32)
            blk["scales"] = np.where(keep[:, None], (l[:, 0::2] | (l[:, 1::2] << np.uint32(4))).astype(np.uint8), 0)
    return out
