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
``ggml_quantize_chunk`` aborts): the spec says ``imatrix: required`` and :func:`gguf_construct.codecs.quantize`
raises :class:`ValueError` before the encoder runs.  IQ1_M works without one (it then weights each value by
``x^2``).
"""

from __future__ import annotations

import functools

import numpy as np

from ..format import spec as _spec
from . import block_dtype
from ._common import QK_K
from ._common import FLT_MAX, fp16_to_fp32, fp32_to_fp16, nearest_int, seq_sum
from ._iqgrid import check_group_scales, check_neighbour_found

_F32 = np.float32


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
    """(4096,) uint64: entry ``i`` (11-bit grid index) holds the eight int8 values ``8 * (grid + delta)``, entry
    ``2048 + i`` the values ``8 * (grid - delta)`` (byte j = weight j).  ggml dequantizes both IQ1 types with
    IQ1S_DELTA; the factor 8 makes the values integers (delta = 1/8)."""
    g = _grid_values().astype(np.float64)
    delta = float(_deltas()[0])
    v = np.concatenate([g + delta, g - delta]) * 8
    assert np.all(v == np.round(v)) and np.abs(v).max() < 128
    return np.ascontiguousarray(v.astype(np.int8)).view(np.uint64).reshape(-1)


def _scaled(vals8: np.ndarray, dl: np.ndarray, group: int) -> np.ndarray:
    """``dl * (grid + delta)`` from the int8 values ``8 * (grid + delta)``: ``(dl * 0.125) * v`` is the same
    float32 product (scaling an fp16-derived scale by a power of two is exact, and so is ``v / 8``)."""
    n = dl.shape[0]
    out = np.empty((n, QK_K // group, group), dtype=_F32)
    np.multiply(vals8.reshape(out.shape), (dl * _F32(0.125))[:, :, None], out=out)
    return out.reshape(n, QK_K)


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
    vals = _shifted_grid().take(idx.reshape(-1).astype(np.intp)).view(np.int8)
    # dl = d * (2 s + 1)  (int converted to float)
    s = ((qh >> np.uint16(12)) & np.uint16(7)).astype(_F32)
    dl = d[:, None] * (s * _F32(2) + _F32(1))
    return _scaled(vals, dl, 32)


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
    vals = _shifted_grid().take(idx.reshape(-1).astype(np.intp)).view(np.int8)
    # 16 scales of 3 bits: scale of 16-weight group t is bits 3 (t % 4) .. of word t // 4
    s = (sc[:, :, None] >> np.array([0, 3, 6, 9], dtype=np.uint16)) & np.uint16(7)  # (n, 4, 4)
    dl = d[:, None] * (s.reshape(n, 16).astype(_F32) * _F32(2) + _F32(1))
    return _scaled(vals, dl, 16)


# --------------------------------------------------------------------------------------------------------------
# encoder machinery: ggml's iq2xs_init_impl(IQ1_S) grid map and neighbour lists
# --------------------------------------------------------------------------------------------------------------


class _Grid:
    """The quantizer's view of the IQ1 grid.

    * ``levels``: (2048, 8) int8, level ``l = value + 1`` (0, 1, 2) of each weight;
    * ``kmap``: (65536,) int32, grid index of the 16-bit code ``sum_j l_j << 2j``, -1 off the grid;
    * ``nb_start``, ``nb_count``, ``nb_flat``: for every code off the grid whose levels are all <= 2 (the only
      ones the quantizer looks up), its neighbour list: the grid vectors at the 3 smallest squared distances
      (positions ``2l+1``), ordered by (distance, index) as ggml's qsort does.
    """

    NWANT = 3

    def __init__(self):
        levels = _grid_values().astype(np.int32) + 1
        n = levels.shape[0]
        self.levels = levels.astype(np.int8)
        shifts = 2 * np.arange(8, dtype=np.int32)
        codes = (levels << shifts).sum(1)
        kmap = np.full(1 << 16, -1, dtype=np.int32)
        kmap[codes] = np.arange(n, dtype=np.int32)
        self.kmap = kmap
        # all codes with levels 0..2, off the grid
        digits = (np.arange(3**8)[:, None] // 3 ** np.arange(8)) % 3
        allc = (digits << shifts).sum(1)
        off_mask = kmap[allc] < 0
        off, dq = allc[off_mask], digits[off_mask]
        p = (2 * dq + 1).astype(np.float64)
        gpos = (2 * levels + 1).astype(np.float64)
        d2 = ((p * p).sum(1)[:, None] + (gpos * gpos).sum(1)[None, :] - 2 * (p @ gpos.T)).astype(np.int32)
        m = len(off)
        present = np.zeros((m, d2.max() // 4 + 1), dtype=bool)
        present[np.arange(m)[:, None], d2 // 4] = True
        thr = np.argmax(np.cumsum(present, axis=1) >= self.NWANT, axis=1) * 4
        rows, cols = np.nonzero(d2 <= thr[:, None])
        order = np.argsort((rows.astype(np.int64) << 20) + (d2[rows, cols].astype(np.int64) << 12) + cols)
        rows, cols = rows[order], cols[order]
        count = np.zeros(1 << 16, dtype=np.int32)
        count[off] = np.bincount(rows, minlength=m)
        start = np.zeros(1 << 16, dtype=np.int64)
        start[off] = np.concatenate([[0], np.cumsum(count[off])[:-1]])
        self.nb_count = count
        self.nb_start = start
        self.nb_flat = cols.astype(np.int32)


@functools.lru_cache(maxsize=None)
def _grid() -> _Grid:
    return _Grid()


def _best_neighbour2(grid: _Grid, codes, xv, wv, sc, xx) -> np.ndarray:
    """``iq1_find_best_neighbour2`` for m off-grid 8-vectors at once.

    codes (m,), xv / wv (m, 8) values and weights, sc (m,) scale, xx (m, 3) the level values (x_p or x_m).
    Minimises ``sum_j (w_j * diff_j) * diff_j`` with ``diff = sc * xx[l_j] - x_j`` accumulated in order over
    the neighbour list; the first one wins ties."""
    m = codes.shape[0]
    if m == 0:
        return np.zeros(0, dtype=np.int32)
    # per point, weight and level: the 24 possible terms
    diff = sc[:, None, None] * xx[:, None, :] - xv[:, :, None]  # (m, 8, 3)
    terms = ((wv[:, :, None] * diff) * diff).reshape(-1)
    counts = grid.nb_count[codes]
    ends = np.cumsum(counts)
    seg = ends - counts
    total = int(ends[-1])
    qi = np.repeat(np.arange(m, dtype=np.int64), counts)
    pos = np.arange(total) - np.repeat(seg, counts)
    cand = grid.nb_flat[np.repeat(grid.nb_start[codes], counts) + pos]
    lev = grid.levels[cand].astype(np.int64)  # (total, 8)
    base = qi * 24
    d2 = terms[base + lev[:, 0]]
    for j in range(1, 8):
        d2 = d2 + terms[base + (3 * j) + lev[:, j]]
    d2[np.isnan(d2)] = np.inf
    mins = np.minimum.reduceat(d2, seg)
    # where no neighbour qualifies ggml scans the whole grid, but reads the group's values at the grid index
    # (past the group: not reproducible), and asserts when that finds nothing either, as it does for NaN/inf
    check_neighbour_found(mins)
    first = np.minimum.reduceat(np.where(d2 == mins[qi], np.arange(total), total), seg)
    return cand[np.minimum(first, total - 1)]


_MARGIN = np.float32(1 - 2.0**-10)


def _sequential_pick(sumqx: np.ndarray, sumq2: np.ndarray, safe: np.ndarray):
    """ggml's exhaustive split search selection, for (g, c) float32 candidates in ggml's order::

        best = -FLT_MAX; sel = -1
        for c: if sumq2[c] > 0 && sumqx[c]*sumqx[c] > best*sumq2[c]: best = (sumqx[c]/sumq2[c])*sumqx[c]; sel = c

    Returns ``sel`` (g,) int64 (-1 when nothing qualifies).

    Exact, but fast: a candidate whose score ``sumqx^2/sumq2`` is below ``(1 - 2^-10)`` times the best score of
    the candidates before it is rejected whatever happened before (the running ``best`` never falls more than
    a few ulps per accepted candidate below the best score seen), so only the few remaining candidates are
    replayed in order.  That holds while every product stays a normal float32: ``safe`` (g,) marks groups whose
    inputs guarantee it (finite values, weight sums within [2^-40, 2^60], weighted |x| sums below 2^40; every
    ``sumq2`` is then at least 1/64 of the weight sum); the others, and groups whose best score leaves
    [2^-40, 2^60], replay every candidate.
    """
    g, c = sumqx.shape
    score = (sumqx * sumqx) / sumq2
    prev = np.empty_like(score)
    prev[:, 0] = -np.inf
    np.maximum.accumulate(score[:, :-1], axis=1, out=prev[:, 1:])
    top = np.maximum(prev[:, -1], score[:, -1])
    ok = safe & (top >= _F32(2.0**-40)) & (top <= _F32(2.0**60))
    prev *= _MARGIN
    possible = score > prev
    if not ok.all():
        possible[~ok] = True  # the replay checks sumq2 > 0 itself
    counts = possible.sum(axis=1)
    order = np.argsort(-counts, kind="stable")
    counts_sorted = counts[order]
    kmax = int(counts_sorted[0]) if g else 0
    sel = np.full(g, -1, dtype=np.int64)
    if kmax == 0:
        return sel
    rows, cols = np.nonzero(possible[order])
    starts = np.concatenate([[0], np.cumsum(counts_sorted)[:-1]])
    rank = np.arange(rows.shape[0]) - starts[rows]
    pad_c = np.zeros((kmax, g), dtype=np.int64)
    pad_c[rank, rows] = cols
    flat = order[rows] * c + cols
    pad_x = np.zeros((kmax, g), dtype=_F32)
    pad_q = np.zeros((kmax, g), dtype=_F32)
    pad_x[rank, rows] = sumqx.reshape(-1)[flat]
    pad_q[rank, rows] = sumq2.reshape(-1)[flat]
    n_active = np.searchsorted(-counts_sorted, -np.arange(kmax), side="right")  # groups with count > k
    best = np.full(g, -FLT_MAX, dtype=_F32)
    sel_sorted = np.full(g, -1, dtype=np.int64)
    for k in range(kmax):
        n = int(n_active[k])
        sx, sq = pad_x[k, :n], pad_q[k, :n]
        acc = (sq > 0) & (sx * sx > best[:n] * sq)
        if acc.any():
            a = np.flatnonzero(acc)
            best[a] = (sx[a] / sq[a]) * sx[a]
            sel_sorted[a] = pad_c[k, a]
    sel[order] = sel_sorted
    return sel


def _safe_groups(xs: np.ndarray, ws: np.ndarray) -> np.ndarray:
    """Groups for which :func:`_sequential_pick` may prune (see there), from values and weights (g, n)."""
    wx = np.abs(ws.astype(np.float64) * xs)
    sw = ws.sum(axis=1, dtype=np.float64)
    sax = wx.sum(axis=1)
    fin = np.isfinite(sax) & np.isfinite(sw)
    return fin & (sw >= 2.0**-40) & (sw <= 2.0**60) & (sax <= 2.0**40) & (ws >= 0).all(axis=1)


def _stable_sort(x: np.ndarray):
    """glibc qsort (a stable merge sort for these sizes) of the values of each row: the permutation."""
    return np.argsort(x, axis=1, kind="stable")


def _prepare(x: np.ndarray, qw: np.ndarray | None):
    """Weights of ``quantize_row_iq1_*_impl`` per super-block: x (b, 256) -> (b, 256)."""
    if qw is None:
        return x * x
    sumx2 = seq_sum(x * x)
    sigma2 = (_F32(2) * sumx2) / _F32(QK_K)
    return qw * np.sqrt(sigma2[:, None] + x * x)


def _row_chunks(rows: np.ndarray, imatrix, chunk_blocks: int):
    n_rows, n_per_row = rows.shape
    nblk = n_per_row // QK_K
    x_all = rows.reshape(-1, QK_K)
    qw_row = None if imatrix is None else imatrix.reshape(nblk, QK_K)
    total = x_all.shape[0]
    for b0 in range(0, total, chunk_blocks):
        b1 = min(total, b0 + chunk_blocks)
        qw = None if qw_row is None else qw_row[np.arange(b0, b1) % nblk]
        yield b0, x_all[b0:b1], qw


def _xx_tables(delta: np.float32):
    x_p = np.array([_F32(-1) + delta, delta, _F32(1) + delta], dtype=_F32)
    x_m = np.array([_F32(-1) - delta, -delta, _F32(1) - delta], dtype=_F32)
    return x_p, x_m


def _map_to_grid(grid: _Grid, L: np.ndarray, xb, weight, scale, xx):
    """Grid indices of the 8-weight vectors of the groups (g, n) levels ``L``; off-grid vectors take
    ``iq1_find_best_neighbour2`` at ``scale`` with level values ``xx`` (g, n/8, 3).  Returns (g, n/8) int32 and
    whether all vectors of a group were on the grid."""
    g, n = L.shape
    nv = n // 8
    codes = (L.reshape(g, nv, 8).astype(np.int32) << (2 * np.arange(8, dtype=np.int32))).sum(2)
    gi = grid.kmap[codes]
    off = gi < 0
    if off.any():
        g_off, k_off = np.nonzero(off)
        gi[g_off, k_off] = _best_neighbour2(
            grid,
            codes[g_off, k_off],
            xb.reshape(g, nv, 8)[g_off, k_off],
            weight.reshape(g, nv, 8)[g_off, k_off],
            scale[g_off],
            xx[g_off, k_off],
        )
    return gi, ~off.any(axis=1)


def _grid_q(grid: _Grid, gi: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """Level values ``xx[l]`` of the chosen grid vectors: gi (g, nv), xx (g, nv, 3) -> (g, nv * 8)."""
    lev = grid.levels[gi].astype(np.intp)  # (g, nv, 8)
    return np.take_along_axis(xx, lev, axis=2).reshape(gi.shape[0], -1)


# --------------------------------------------------------------------------------------------------------------
# IQ1_S
# --------------------------------------------------------------------------------------------------------------

_I1_S, _I2_S = np.triu_indices(33)  # ggml's (i1, i2 >= i1) split order for 32 weights
_I1_M, _I2_M = np.triu_indices(17)  # ... and for 16


def encode_iq1_s(rows: np.ndarray, imatrix: np.ndarray) -> np.ndarray:
    grid = _grid()
    x_p, x_m = _xx_tables(_deltas()[0])
    out = np.zeros(rows.size // QK_K, dtype=block_dtype("IQ1_S"))
    i1, i2 = _I1_S, _I2_S
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        for b0, x, qw in _row_chunks(rows, imatrix, 128):
            b = x.shape[0]
            weight = _prepare(x, qw).reshape(-1, 32)
            xb = x.reshape(-1, 32)
            g = xb.shape[0]
            gmax = np.abs(xb).max(axis=1)
            live = gmax >= _F32(1e-12)  # GROUP_MAX_EPS_IQ1_S
            scales = np.zeros(g, dtype=_F32)
            shifts = np.ones(g, dtype=np.int8)
            qs = np.zeros((g, 4), dtype=np.uint8)
            qh = np.zeros(g, dtype=np.uint16)
            r = np.flatnonzero(live)
            if r.size:
                xr, wr = xb[r], weight[r]
                perm = _stable_sort(xr)
                xs = np.take_along_axis(xr, perm, axis=1)
                ws = np.take_along_axis(wr, perm, axis=1)
                n = r.size
                sumx = np.zeros((n, 33), dtype=_F32)
                sumw = np.zeros((n, 33), dtype=_F32)
                np.add.accumulate(ws * xs, axis=1, out=sumx[:, 1:])
                np.add.accumulate(ws, axis=1, out=sumw[:, 1:])
                sumx[:, 1:] += _F32(0)  # C starts from +0
                sumw[:, 1:] += _F32(0)
                # (sumx[i1] - sumx[0]) * v0 + (sumx[i2] - sumx[i1]) * v1 + (sumx[32] - sumx[i2]) * v2, and
                # the same with sumw and v^2
                a, bb, cc = sumx[:, i1], sumx[:, i2] - sumx[:, i1], sumx[:, 32:33] - sumx[:, i2]
                aw, bw, cw = sumw[:, i1], sumw[:, i2] - sumw[:, i1], sumw[:, 32:33] - sumw[:, i2]
                sqx = np.empty((n, i1.size, 2), dtype=_F32)
                sq2 = np.empty((n, i1.size, 2), dtype=_F32)
                for s, v in enumerate((x_p, x_m)):
                    sqx[:, :, s] = (a * v[0] + bb * v[1]) + cc * v[2]
                    sq2[:, :, s] = ((aw * v[0]) * v[0] + (bw * v[1]) * v[1]) + (cw * v[2]) * v[2]
                sel = _sequential_pick(sqx.reshape(n, -1), sq2.reshape(n, -1), _safe_groups(xs, ws))
                ok = sel >= 0
                sel_c = np.maximum(sel, 0)
                pair, sh = sel_c // 2, sel_c % 2
                scale = sqx.reshape(n, -1)[np.arange(n), sel_c] / sq2.reshape(n, -1)[np.arange(n), sel_c]
                shift = np.where(sh == 0, 1, -1).astype(np.int8)
                j = np.arange(32)
                Ls = (j >= i1[pair][:, None]).astype(np.int8) + (j >= i2[pair][:, None])
                L = np.empty_like(Ls)
                np.put_along_axis(L, perm, Ls, axis=1)
                flip = scale < 0
                L[flip] = 2 - L[flip]
                scale = np.where(flip, -scale, scale)
                shift = np.where(flip, -shift, shift)
                xx = np.where((shift == 1)[:, None], x_p, x_m)  # (n, 3)
                xx4 = np.broadcast_to(xx[:, None, :], (n, 4, 3))
                gi, all_on = _map_to_grid(grid, L, xr, wr, scale, xx4)
                redo = ~all_on
                if redo.any():
                    q = _grid_q(grid, gi[redo], xx4[redo])
                    wq = wr[redo] * q
                    sx, s2 = seq_sum(wq * xr[redo]), seq_sum(wq * q)
                    upd = (sx > 0) & (s2 > 0)
                    scale[redo] = np.where(upd, sx / np.where(upd, s2, _F32(1)), scale[redo])
                rk = r[ok]
                qs[rk] = (gi[ok] & 255).astype(np.uint8)
                high = (gi[ok] >> 8).astype(np.uint16) << (3 * np.arange(4, dtype=np.uint16))
                qh[rk] = high.sum(1, dtype=np.uint16)
                scales[rk] = scale[ok]
                shifts[rk] = shift[ok]
            check_group_scales(scales)
            scales = scales.reshape(b, 8)
            max_scale = scales.max(axis=1)
            d = max_scale / _F32(15)
            dh = fp32_to_fp16(d * _F32(1.125))
            idv = _F32(1) / d
            l = np.clip(nearest_int(_F32(0.5) * (idv[:, None] * scales - _F32(1))), 0, 7).astype(np.uint16)
            l |= np.where(shifts.reshape(b, 8) == -1, np.uint16(8), np.uint16(0))
            keep = max_scale > 0
            qh = qh.reshape(b, 8) | np.where(keep[:, None], l << np.uint16(12), np.uint16(0))
            blk = out[b0 : b0 + b]
            blk["d"] = np.where(keep, dh, np.float16(0))
            blk["qs"] = qs.reshape(b, 32)
            blk["qh"] = qh
    return out


# --------------------------------------------------------------------------------------------------------------
# IQ1_M
# --------------------------------------------------------------------------------------------------------------

_IQ1M_MASKS = np.array([0x00, 0x80, 0x08, 0x88], dtype=np.uint8)  # delta sign bits per shift pattern


def encode_iq1_m(rows: np.ndarray, imatrix) -> np.ndarray:
    grid = _grid()
    x_p, x_m = _xx_tables(_deltas()[1])
    p2, m2 = x_p[2], x_m[2]
    cp1 = x_p[0] * x_p[0] - x_p[1] * x_p[1]
    cp2 = x_p[1] * x_p[1] - x_p[2] * x_p[2]
    cm1 = x_m[0] * x_m[0] - x_m[1] * x_m[1]
    cm2 = x_m[1] * x_m[1] - x_m[2] * x_m[2]
    xx_pm = np.stack([x_p, x_m])  # 0: x_p, 1: x_m
    out = np.zeros(rows.size // QK_K, dtype=block_dtype("IQ1_M"))
    i1, i2 = _I1_M, _I2_M
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        for b0, x, qw in _row_chunks(rows, imatrix, 256):
            b = x.shape[0]
            weight = _prepare(x, qw).reshape(-1, 16)
            xb = x.reshape(-1, 16)
            g = xb.shape[0]
            gmax = np.abs(xb).max(axis=1)
            live = gmax >= _F32(1e-7)  # GROUP_MAX_EPS_IQ1_M
            scales = np.zeros(g, dtype=_F32)
            shifts = np.zeros(g, dtype=np.int64)
            gi_all = np.zeros((g, 2), dtype=np.int32)
            r = np.flatnonzero(live)
            if r.size:
                xr, wr = xb[r], weight[r]
                n = r.size
                perm = _stable_sort(xr)
                xs = np.take_along_axis(xr, perm, axis=1)
                ws = np.take_along_axis(wr, perm, axis=1)
                half = perm >= 8  # (n, 16): sorted element j belongs to half 1
                px = np.zeros((n, 2, 17), dtype=_F32)
                pw = np.zeros((n, 2, 17), dtype=_F32)
                wx = ws * xs
                for h in range(2):
                    sel_h = half if h else ~half
                    np.add.accumulate(np.where(sel_h, wx, _F32(0)), axis=1, out=px[:, h, 1:])
                    np.add.accumulate(np.where(sel_h, ws, _F32(0)), axis=1, out=pw[:, h, 1:])
                px[:, :, 1:] += _F32(0)
                pw[:, :, 1:] += _F32(0)
                txs, tws = px[:, :, 16:17], pw[:, :, 16:17]  # (n, 2, 1)
                sx = px[:, :, i1] + px[:, :, i2]  # (n, 2, P)
                qx_p = txs * p2 - sx
                qx_m = txs * m2 - sx
                w1, w2 = pw[:, :, i1], pw[:, :, i2]
                q2_p = ((tws * p2) * p2 + w1 * cp1) + w2 * cp2
                q2_m = ((tws * m2) * m2 + w1 * cm1) + w2 * cm2
                P = i1.size
                sqx = np.empty((n, P, 4), dtype=_F32)
                sq2 = np.empty((n, P, 4), dtype=_F32)
                for k, (a0, a1) in enumerate(((qx_p, qx_p), (qx_p, qx_m), (qx_m, qx_p), (qx_m, qx_m))):
                    sqx[:, :, k] = a0[:, 0] + a1[:, 1]
                for k, (a0, a1) in enumerate(((q2_p, q2_p), (q2_p, q2_m), (q2_m, q2_p), (q2_m, q2_m))):
                    sq2[:, :, k] = a0[:, 0] + a1[:, 1]
                sel = _sequential_pick(sqx.reshape(n, -1), sq2.reshape(n, -1), _safe_groups(xs, ws))
                ok = sel >= 0
                sel_c = np.maximum(sel, 0)
                pair, best_k = sel_c // 4, sel_c % 4
                scale = sqx.reshape(n, -1)[np.arange(n), sel_c] / sq2.reshape(n, -1)[np.arange(n), sel_c]
                j = np.arange(16)
                Ls = (j >= i1[pair][:, None]).astype(np.int8) + (j >= i2[pair][:, None])
                L = np.empty_like(Ls)
                np.put_along_axis(L, perm, Ls, axis=1)
                flip = scale < 0
                L[flip] = 2 - L[flip]
                scale = np.where(flip, -scale, scale)
                best_k = np.where(flip, 3 - best_k, best_k)
                # first 8 weights: x_p for k < 2; second 8: x_p for even k
                which = np.stack([best_k >= 2, best_k % 2 == 1], axis=1).astype(np.intp)  # (n, 2)
                xx = xx_pm[which]  # (n, 2, 3)
                gi, all_on = _map_to_grid(grid, L, xr, wr, scale, xx)
                redo = ~all_on
                if redo.any():
                    q = _grid_q(grid, gi[redo], xx[redo])
                    wq = wr[redo] * q
                    sx_f, s2_f = seq_sum(wq * xr[redo]), seq_sum(wq * q)
                    upd = (sx_f > 0) & (s2_f > 0)
                    scale[redo] = np.where(upd, sx_f / np.where(upd, s2_f, _F32(1)), scale[redo])
                rk = r[ok]
                gi_all[rk] = gi[ok]
                scales[rk] = scale[ok]
                shifts[rk] = best_k[ok]
            # ---- per super-block: 3-bit scales, delta bits, then the refitted super-block scale
            check_group_scales(scales)
            scales_b = scales.reshape(b, 16)
            max_scale = scales_b.max(axis=1)
            d = max_scale / _F32(15)
            idv = _F32(1) / d
            l = np.clip(nearest_int(_F32(0.5) * (idv[:, None] * scales_b - _F32(1))), 0, 7)  # (b, 16)
            keep = max_scale > 0
            l = np.where(keep[:, None], l, 0)
            qs = (gi_all & 255).astype(np.uint8).reshape(b, 32)
            qh = ((gi_all[:, 0] >> 8) | ((gi_all[:, 1] >> 8) << 4)).astype(np.uint8).reshape(b, 16)
            qh = np.where(keep[:, None], qh | _IQ1M_MASKS[shifts.reshape(b, 16)], qh)
            sc = (l.reshape(b, 4, 4).astype(np.uint16) << (3 * np.arange(4, dtype=np.uint16))).sum(2, dtype=np.uint16)
            # sumqx_f / sumq2_f over the whole super-block with the stored indices, shifts and 3-bit scales
            which = np.stack([shifts >= 2, shifts % 2 == 1], axis=1).astype(np.intp)  # (g, 2)
            xx = xx_pm[which]  # (g, 2, 3)
            high = (qh.reshape(-1, 1).astype(np.int32) << np.array([8, 4])) & 0x700
            gidx = qs.reshape(-1, 2).astype(np.int32) | high
            q = _grid_q(grid, gidx, xx) * (_F32(2) * l.reshape(-1, 1).astype(_F32) + _F32(1))  # (g, 16)
            wq = weight * q
            sumqx_f = seq_sum((wq * xb).reshape(b, QK_K))
            sumq2_f = seq_sum((wq * q).reshape(b, QK_K))
            d = np.where(sumq2_f > 0, sumqx_f / np.where(sumq2_f > 0, sumq2_f, _F32(1)), d)
            s16 = fp32_to_fp16(d * _F32(1.1125)).view(np.uint16)
            sc[:, 0] |= (s16 & np.uint16(0x000F)) << np.uint16(12)
            sc[:, 1] |= (s16 & np.uint16(0x00F0)) << np.uint16(8)
            sc[:, 2] |= (s16 & np.uint16(0x0F00)) << np.uint16(4)
            sc[:, 3] |= s16 & np.uint16(0xF000)
            blk = out[b0 : b0 + b]
            blk["qs"] = qs
            blk["qh"] = qh
            blk["scales"] = np.where(keep[:, None], sc, 0)
    return out
