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
``ggml_quantize_chunk`` aborts): the spec says ``imatrix: required`` and :func:`gguf_construct.codecs.quantize`
raises :class:`ValueError` before the encoder runs.
IQ2_S works without one (it then weights by ``sigma2/4 + x^2``).  Where ggml itself aborts (a neighbour
search with no finite error, or a final point off the grid: NaN/inf inputs, values whose squares overflow),
the encoders raise :class:`._iqgrid.GridAbort`, a :class:`ValueError`.
"""

from __future__ import annotations

import functools

import numpy as np

from ..format import spec as _spec
from ._common import QK_K
from ._common import fp16_to_fp32 as _fp16_to_fp32
from ._common import fp32_to_fp16 as _fp32_to_fp16
from ._common import nearest_int as _nearest_int
from ._common import c_row_max
from ._common import seq_sum as _seq_sum
from ._iqgrid import GridAbort, LatticeGrid, check_group_scales

_F32 = np.float32


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


def _rows64(t: np.ndarray) -> np.ndarray:
    """A (n, 8) 4-byte table viewed as (n, 4) uint64, so that np.take moves 8 bytes per element."""
    t = np.ascontiguousarray(t).view(np.uint64).reshape(-1, 4)
    t.setflags(write=False)
    return t


@functools.lru_cache(maxsize=None)
def _signed_grid(grid_name: str, grid_bits: int) -> np.ndarray:
    """Signed float32 grid vectors for every (7-bit sign index, grid index) pair, row
    ``(sign_index << grid_bits) | grid_index``, as (rows, 4) uint64 (``ksigns_iq2xs``: the 8th sign is the
    parity).  Sign bits are or-ed into the magnitudes, so y = db * row is ggml's ``db * grid * (+-1)``."""
    mag = grid_magnitudes(grid_name).astype(np.float32).view(np.uint32)
    sb = _sign_bits()[_spec.table("ksigns_iq2xs")]  # (128, 8)
    return _rows64((sb[:, None, :] | mag[None, :, :]).reshape(-1, 8))


@functools.lru_cache(maxsize=None)
def _grid_rows(grid_name: str) -> np.ndarray:
    return _rows64(grid_magnitudes(grid_name).astype(np.float32))


@functools.lru_cache(maxsize=None)
def _sign_rows() -> np.ndarray:
    return _rows64(_sign_bits())


@functools.lru_cache(maxsize=None)
def _half_plus() -> np.ndarray:
    """(256, 2) float32: (0.5f + low nibble, 0.5f + high nibble) of a scales byte."""
    b = np.arange(256)
    t = np.stack([b & 15, b >> 4], axis=1).astype(np.float32) + np.float32(0.5)
    t.setflags(write=False)
    return t


def _scale_pair(d: np.ndarray, half_plus: np.ndarray) -> np.ndarray:
    """ggml's ``d * (0.5f + s) * 0.25f`` in float32 given ``0.5f + s``; ``d`` of shape (n, 1)."""
    db = half_plus * d
    db *= _F32(0.25)
    return db


def _scale_nibbles(d: np.ndarray, sc: np.ndarray) -> np.ndarray:
    """Two 4-bit scales per byte (low nibble first) -> float32 (n, 16) ``d * (0.5f + s) * 0.25f``."""
    n = sc.shape[0]
    return _scale_pair(d, _half_plus().take(sc.reshape(-1), axis=0).reshape(n, 16))


def _apply_scales(out: np.ndarray, db: np.ndarray) -> None:
    """out (n, 256) *= db (n, k), each scale covering 256/k consecutive weights."""
    n, k = db.shape
    o = out.reshape(n * k, QK_K // k)
    o *= db.reshape(n * k, 1)


# --------------------------------------------------------------------------------------------------------------
# decoders (chunked so that the temporaries stay in cache; the output is written once)
# --------------------------------------------------------------------------------------------------------------

_CHUNK = 1024  # blocks per step: 1 MiB of float32 output


def _decode_chunked(blocks: np.ndarray, step) -> np.ndarray:
    nb = blocks.shape[0]
    out = np.empty((nb, QK_K), dtype=np.float32)
    for i in range(0, nb, _CHUNK):
        step(blocks[i : i + _CHUNK], out[i : i + _CHUNK])
    return out


def _iq2_xxs_step(blocks: np.ndarray, out: np.ndarray) -> None:
    nb = blocks.shape[0]
    d = _fp16_to_fp32(blocks["d"]).reshape(nb, 1)
    qs = blocks["qs"].astype(np.uint32, copy=False).reshape(nb, 8, 2)
    q_grid = qs[:, :, 0]  # four 8-bit grid indices, lowest byte first
    q_aux = qs[:, :, 1]  # four 7-bit sign indices, then the 4-bit scale
    db = _scale_pair(d, (q_aux >> 28).astype(np.float32) + _F32(0.5))  # (nb, 8): one scale per 32 weights
    idx = np.empty((nb, 8, 4), dtype=np.intp)
    for l in range(4):
        idx[:, :, l] = ((q_aux >> (7 * l)) & 127) << 8 | ((q_grid >> (8 * l)) & 255)
    np.take(
        _signed_grid("iq2xxs_grid", 8), idx.reshape(-1), axis=0, out=out.view(np.uint64).reshape(-1, 4), mode="clip"
    )
    _apply_scales(out, db)


def _iq2_xs_step(blocks: np.ndarray, out: np.ndarray) -> None:
    nb = blocks.shape[0]
    d = _fp16_to_fp32(blocks["d"]).reshape(nb, 1)
    db = _scale_nibbles(d, blocks["scales"])  # one scale per 16 weights
    # each 16-bit word is (sign_index << 9) | grid_index: the signed table's row
    np.take(
        _signed_grid("iq2xs_grid", 9),
        blocks["qs"].reshape(-1),
        axis=0,
        out=out.view(np.uint64).reshape(-1, 4),
        mode="clip",
    )
    _apply_scales(out, db)


def _iq2_s_step(blocks: np.ndarray, out: np.ndarray) -> None:
    nb = blocks.shape[0]
    d = _fp16_to_fp32(blocks["d"]).reshape(nb, 1)
    db = _scale_nibbles(d, blocks["scales"])
    qs = blocks["qs"]
    qh = blocks["qh"].astype(np.intp)
    gi = np.empty((nb, 8, 4), dtype=np.intp)
    lo = qs[:, :32].reshape(nb, 8, 4)
    for l in range(4):
        gi[:, :, l] = lo[:, :, l] | ((qh >> (2 * l)) & 3) << 8
    rows = out.view(np.uint64).reshape(-1, 4)
    np.take(_grid_rows("iq2s_grid"), gi.reshape(-1), axis=0, out=rows, mode="clip")
    rows ^= _sign_rows().take(qs[:, 32:].reshape(-1), axis=0)  # explicit sign bytes
    _apply_scales(out, db)


def decode_iq2_xxs(blocks: np.ndarray) -> np.ndarray:
    return _decode_chunked(blocks, _iq2_xxs_step)


def decode_iq2_xs(blocks: np.ndarray) -> np.ndarray:
    return _decode_chunked(blocks, _iq2_xs_step)


def decode_iq2_s(blocks: np.ndarray) -> np.ndarray:
    return _decode_chunked(blocks, _iq2_s_step)


# --------------------------------------------------------------------------------------------------------------
# encoders
# --------------------------------------------------------------------------------------------------------------

_GROUP_MAX_EPS = _F32(1e-15)
_GROUP_MAX_EPS_IQ2_S = _F32(1e-8)
_K_MAX_Q = 3  # levels 0..2, positions 2l+1 = 1, 3, 5
_KMAP_SIZE = 43692  # ggml's kmap_q2xs size
_ENC_CHUNK = 256  # blocks per step (keeps the search temporaries near cache)


@functools.lru_cache(maxsize=None)
def _lattice(grid_name: str):
    """ggml's iq2xs_init_impl data for one grid (built at first use): levels from the magnitudes 8/25/43."""
    mag = grid_magnitudes(grid_name)
    levels = np.searchsorted(np.array([0x08, 0x19, 0x2B], dtype=np.uint8), mag)
    nwant = 1 if grid_name == "iq2s_grid" else 2
    return LatticeGrid(levels, bits=2, nwant=nwant, max_level=_K_MAX_Q - 1)


def _signs(xb: np.ndarray, weight: np.ndarray, parity: bool):
    """Split sub-groups of 8 into magnitudes and a sign byte (bit i set = x_i negative).

    With ``parity`` (IQ2_XXS/XS: only 7 sign bits are stored, the 8th follows from an even number of minus
    signs) an odd count flips the sign of the element with the smallest ``w*x*x`` (first one on ties), whose
    magnitude then becomes negative.  Returns ``xval`` (n, 8) float32 and ``s`` (n,) uint8.
    """
    neg = ~(xb >= 0)
    xval = np.where(neg, -xb, xb)
    s = np.packbits(neg, axis=-1, bitorder="little")[:, 0]
    if parity:
        odd = np.bitwise_count(s) & 1 if hasattr(np, "bitwise_count") else neg.sum(axis=-1) & 1
        rows = np.nonzero(odd)[0]
        if rows.size:
            xo = xb[rows]
            with np.errstate(over="ignore", invalid="ignore"):
                ax = weight[rows] * xo
                ax *= xo
            m = ax[:, 0]
            imin = np.zeros(rows.size, dtype=np.intp)
            for i in range(1, 8):
                upd = ax[:, i] < m
                m = np.where(upd, ax[:, i], m)
                imin[upd] = i
            xval[rows, imin] = -xval[rows, imin]
            s[rows] ^= np.uint8(1) << imin.astype(np.uint8)
        s &= np.uint8(127)
    return xval, s


def _sums(w: np.ndarray, xval: np.ndarray, L: np.ndarray):
    """``sumqx += w*xval*q; sumq2 += w*q*q`` with q = 2L+1, in order."""
    q = L.astype(np.float32)
    q *= _F32(2)
    q += _F32(1)
    t = w * xval
    t *= q
    sumqx = _seq_sum(t)
    t = w * q
    t *= q
    sumq2 = _seq_sum(t)
    return sumqx, sumq2


def _levels_for(grid, xval, waux, id_, scale, n_sub):
    """Levels ``clamp(nearest_int(0.5*(id*x - 1)), 0, 2)`` of (G, 8*n_sub) values, moved to the best grid
    neighbour where the code is off the grid.  Returns (L int8 (G, 8*n_sub), on_grid bool (G, n_sub))."""
    G = xval.shape[0]
    t = id_[:, None] * xval
    t -= _F32(1)
    t *= _F32(0.5)
    L = np.clip(_nearest_int(t), 0, _K_MAX_Q - 1).astype(np.int8).reshape(G, n_sub, 8)
    u = grid.code(L)
    on = grid.map[u] >= 0
    if not on.all():
        gs, ks = np.nonzero(~on)
        x8 = xval.reshape(G, n_sub, 8)[gs, ks]
        w8 = waux.reshape(G, n_sub, 8)[gs, ks]
        gi = grid.best_neighbour(u[gs, ks], x8, w8, scale[gs])
        L[gs, ks] = grid.levels[gi]
    return L.reshape(G, 8 * n_sub), on


def _grid_indices(grid, L: np.ndarray, n_sub: int) -> np.ndarray:
    """Grid indices of the final levels, as ggml looks them up: ``u = sum(L[i] << 2i)`` in uint16 (L is int8,
    so out-of-range levels can still alias a grid code) and ``kmap[u]``; ggml aborts when that is not on the
    grid (and reads out of bounds for ``u >= 43692``), so do we (:class:`GridAbort`)."""
    L8 = L.reshape(L.shape[0], n_sub, 8).astype(np.int32)
    u = L8[..., 0].copy()
    for i in range(1, 8):
        u += L8[..., i] << (2 * i)
    u &= 0xFFFF
    if (u >= _KMAP_SIZE).any():
        raise GridAbort("ggml reads out of bounds: quantized point outside its grid map")
    gi = grid.map[u]
    if (gi < 0).any():
        raise GridAbort("ggml aborts: quantized point not on the grid ('Oops: found point ... not on grid')")
    return gi


def _make_qp_quants(x: np.ndarray, w: np.ndarray, nmax: int):
    """ggml's make_qp_quants on rows of ``x``/``w`` (G, n): returns the scale (G,) float32 and the levels
    (G, n) int8 as IQ2_XXS's int8 array sees the uint8 ones.

    ``L`` is uint8 in C: a negative level (possible for a sign-flipped, negative x) wraps, and the wrapped
    value takes part in the arithmetic, as here."""
    G, n = x.shape
    fn = _F32(nmax)
    mx = c_row_max(x, np.zeros(G, dtype=np.float32))
    zero = mx < _GROUP_MAX_EPS
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iscale = fn / mx
        Lw = _nearest_int(iscale[:, None] * x) & 255
        scale = _F32(1) / iscale
        diff = x - scale[:, None] * Lw.astype(np.float32)
        t = w * diff
        t *= diff
        best_mse = _seq_sum(t)
        for is_ in range(-4, 5):
            if is_ == 0:
                continue
            iscale_is = (_F32(0.1) * _F32(is_) + fn) / mx
            scale_is = _F32(1) / iscale_is
            lv = np.minimum(nmax, _nearest_int(iscale_is[:, None] * x))
            diff = x - scale_is[:, None] * lv.astype(np.float32)
            t = w * diff
            t *= diff
            mse = _seq_sum(t)
            upd = mse < best_mse
            best_mse = np.where(upd, mse, best_mse)
            iscale = np.where(upd, iscale_is, iscale)
        lv = np.minimum(nmax, _nearest_int(iscale[:, None] * x))
        L = lv & 255
        lf = lv.astype(np.float32)
        wx = w * x
        sumlx = _seq_sum(wx * lf)
        t = w * lf
        t *= lf
        suml2 = _seq_sum(t)
        for _ in range(5):
            for i in range(n):
                wi = w[:, i]
                wxi = wx[:, i]
                Li = L[:, i].astype(np.float32)
                slx = sumlx - wxi * Li
                sl2 = suml2 - (wi * Li) * Li
                ok = (slx > 0) & (sl2 > 0)
                if not ok.any():
                    continue
                new_l = np.minimum(nmax, _nearest_int((x[:, i] * sl2) / slx))
                ch = ok & (new_l != L[:, i])
                if not ch.any():
                    continue
                nl = new_l.astype(np.float32)
                slx = slx + wxi * nl
                sl2 = sl2 + (wi * nl) * nl
                acc = ch & ((slx * slx) * suml2 > (sumlx * sumlx) * sl2)
                L[:, i] = np.where(acc, new_l & 255, L[:, i])
                sumlx = np.where(acc, slx, sumlx)
                suml2 = np.where(acc, sl2, suml2)
        scale = np.where(suml2 > 0, sumlx / suml2, _F32(0)).astype(np.float32)
    scale[zero] = 0
    L[zero] = 0
    return scale, L.astype(np.uint8).view(np.int8)


def _search_xxs(xval, weight, waux, grid):
    """Scale and levels of 32-weight groups, as quantize_row_iq2_xxs_impl (G = active groups)."""
    scale, L = _make_qp_quants(xval, weight, _K_MAX_Q + 1)
    eff_max = scale * _F32(_K_MAX_Q)
    active = ~(eff_max <= 0)
    sel = np.nonzero(active)[0]
    if sel.size:
        xv, wt, wa, sc, em = xval[sel], weight[sel], waux[sel], scale[sel], eff_max[sel]
        Ls = L[sel]  # make_qp_quants' levels stay when no candidate wins and the scale is not positive
        best = np.zeros(sel.size, dtype=np.float32)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for is_ in range(-6, 7):
                id_ = (_F32(2 * _K_MAX_Q - 1) + _F32(is_) * _F32(0.1)) / em
                this_scale = _F32(1) / id_
                Laux, _ = _levels_for(grid, xv, wa, id_, this_scale, 4)
                sumqx, sumq2 = _sums(wt, xv, Laux)
                upd = (sumq2 > 0) & (sumqx * sumqx > best * sumq2)
                sc = np.where(upd, sumqx / sumq2, sc)
                best = np.where(upd, sc * sumqx, best)
                Ls[upd] = Laux[upd]
            pos = sc > 0
            if pos.any():
                p = np.nonzero(pos)[0]
                id_ = _F32(1) / sc[p]
                Lp, _ = _levels_for(grid, xv[p], wa[p], id_, sc[p], 4)
                Ls[p] = Lp
                sumqx, sumq2 = _sums(wt[p], xv[p], Lp)
                sc[p] = np.where(sumq2 > 0, sumqx / sumq2, sc[p])
        scale[sel] = sc
        L[sel] = Ls
    # groups that skipped the search keep scale 0 (eff_max <= 0)
    scale = np.where(active, scale, _F32(0)).astype(np.float32)
    return scale, L, active


def _search_16(xval, weight, waux, gmax, grid):
    """Scale and levels of 16-weight groups, as quantize_row_iq2_xs_impl / quantize_row_iq2_s_impl."""
    G = xval.shape[0]
    L = np.zeros((G, 16), dtype=np.int8)
    on = np.ones((G, 2), dtype=bool)
    best = np.zeros(G, dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = gmax / _F32(2 * _K_MAX_Q - 1)
        for is_ in range(-9, 10):
            id_ = (_F32(2 * _K_MAX_Q - 1) + _F32(is_) * _F32(0.1)) / gmax
            this_scale = _F32(1) / id_
            Laux, on_aux = _levels_for(grid, xval, waux, id_, this_scale, 2)
            sumqx, sumq2 = _sums(weight, xval, Laux)
            upd = (sumq2 > 0) & (sumqx * sumqx > best * sumq2)
            scale = np.where(upd, sumqx / sumq2, scale)
            best = np.where(upd, scale * sumqx, best)
            L[upd] = Laux[upd]
            on[upd] = on_aux[upd]
        need = (~on).any(axis=1) & (scale > 0)
        if need.any():
            p = np.nonzero(need)[0]
            sc = scale[p]
            # only the sub-groups that were off the grid are redone, with the final scale
            gs, ks = np.nonzero(~on[p])
            id_ = _F32(1) / sc[gs]
            x8 = xval[p].reshape(-1, 2, 8)[gs, ks]
            w8 = waux[p].reshape(-1, 2, 8)[gs, ks]
            L8, _ = _levels_for(grid, x8, w8, id_, sc[gs], 1)
            Lp = L[p].reshape(-1, 2, 8)
            Lp[gs, ks] = L8
            Lp = Lp.reshape(-1, 16)
            L[p] = Lp
            sumqx, sumq2 = _sums(weight[p], xval[p], Lp)
            scale[p] = np.where(sumq2 > 0, sumqx / sumq2, sc)
    return scale.astype(np.float32, copy=False), L


def _prepare(x: np.ndarray, qw: np.ndarray | None, iq2s: bool):
    """Per-block sigma2 and the per-weight importance ``weight`` and its square root."""
    x2 = x * x
    sumx2 = _seq_sum(x2)
    if iq2s:
        sigma2 = (_F32(2) * sumx2) / _F32(QK_K)
    else:
        sigma2 = sumx2 / _F32(QK_K)
    with np.errstate(invalid="ignore", over="ignore"):
        if qw is not None:
            weight = qw * np.sqrt(sigma2[:, None] + x2)
        else:
            weight = (_F32(0.25) * sigma2)[:, None] + x2
        waux = np.sqrt(weight)
    return weight, waux


def _block_scales(scales: np.ndarray, iq2s: bool):
    """max_scale over the sub-blocks, the fp16 ``d`` and the 4-bit sub-block scales (nbl, n_sub)."""
    check_group_scales(scales)
    max_scale = c_row_max(scales, np.zeros(scales.shape[0], dtype=np.float32))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = max_scale / _F32(31)
        dh = _fp32_to_fp16(d * _F32(0.9875) if iq2s else d)
        id_ = _F32(1) / d
        t = id_[:, None] * scales
        t -= _F32(1)
        t *= _F32(0.5)
    nib = np.clip(_nearest_int(t), 0, 15).astype(np.uint8)
    return max_scale, dh, nib


def _iter_chunks(rows: np.ndarray, imatrix):
    n_rows, n_per_row = rows.shape
    bpr = n_per_row // QK_K
    x_all = rows.reshape(-1, QK_K)
    qw_blocks = None if imatrix is None else imatrix.reshape(bpr, QK_K)
    for start in range(0, x_all.shape[0], _ENC_CHUNK):
        x = x_all[start : start + _ENC_CHUNK]
        qw = None
        if qw_blocks is not None:
            qw = qw_blocks[np.arange(start, start + x.shape[0]) % bpr]
        yield start, x, qw


def encode_iq2_xxs(rows: np.ndarray, imatrix) -> np.ndarray:
    from . import block_dtype

    grid = _lattice("iq2xxs_grid")
    nbl_total = rows.size // QK_K
    out = np.zeros(nbl_total, dtype=block_dtype("IQ2_XXS"))
    for start, x, qw in _iter_chunks(rows, imatrix):
        nbl = x.shape[0]
        weight, waux = _prepare(x, qw, False)
        G = nbl * 8
        xval, s = _signs(x.reshape(G * 4, 8), weight.reshape(G * 4, 8), parity=True)
        xval = xval.reshape(G, 32)
        s = s.reshape(G, 4)
        gmax = c_row_max(xval)
        active = ~(gmax < _GROUP_MAX_EPS)
        scales = np.zeros(G, dtype=np.float32)
        q_lo = np.zeros(G, dtype=np.uint32)
        q_hi = np.zeros(G, dtype=np.uint32)
        a = np.nonzero(active)[0]
        if a.size:
            sc, L, ok = _search_xxs(xval[a], weight.reshape(G, 32)[a], waux.reshape(G, 32)[a], grid)
            sa = s[a]
            flip = sc < 0
            sc = np.where(flip, -sc, sc)
            sa = np.where(flip[:, None], ~sa & np.uint8(127), sa)
            a2 = a[ok]
            gi = _grid_indices(grid, L[ok], 4).astype(np.uint32)
            sa = sa[ok].astype(np.uint32)
            q_lo[a2] = gi[:, 0] | gi[:, 1] << 8 | gi[:, 2] << 16 | gi[:, 3] << 24
            q_hi[a2] = sa[:, 0] | sa[:, 1] << 7 | sa[:, 2] << 14 | sa[:, 3] << 21
            scales[a] = sc
        scales = scales.reshape(nbl, 8)
        max_scale, dh, nib = _block_scales(scales, False)
        q_hi |= nib.reshape(-1).astype(np.uint32) << 28
        qs = np.empty((nbl, 8, 2), dtype=np.uint32)
        qs[:, :, 0] = q_lo.reshape(nbl, 8)
        qs[:, :, 1] = q_hi.reshape(nbl, 8)
        zero = ~(max_scale != 0)
        qs[zero] = 0
        blk = out[start : start + nbl]
        blk["d"] = np.where(zero, np.float16(0), dh)
        blk["qs"] = qs.reshape(nbl, 16)
    return out


def _encode_16(rows: np.ndarray, imatrix, iq2s: bool):
    """Shared part of IQ2_XS and IQ2_S: per 16 weights a scale, two grid indices and two sign bytes."""
    grid = _lattice("iq2s_grid" if iq2s else "iq2xs_grid")
    eps = _GROUP_MAX_EPS_IQ2_S if iq2s else _GROUP_MAX_EPS
    for start, x, qw in _iter_chunks(rows, imatrix):
        nbl = x.shape[0]
        weight, waux = _prepare(x, qw, iq2s)
        G = nbl * 16
        xval, s = _signs(x.reshape(G * 2, 8), weight.reshape(G * 2, 8), parity=not iq2s)
        xval = xval.reshape(G, 16)
        s = s.reshape(G, 2)
        gmax = c_row_max(xval)
        active = ~(gmax < eps)
        scales = np.zeros(G, dtype=np.float32)
        gidx = np.zeros((G, 2), dtype=np.uint32)
        signs = np.zeros((G, 2), dtype=np.uint8)
        a = np.nonzero(active)[0]
        if a.size:
            sc, L = _search_16(xval[a], weight.reshape(G, 16)[a], waux.reshape(G, 16)[a], gmax[a], grid)
            sa = s[a]
            flip = sc < 0
            sc = np.where(flip, -sc, sc)
            inv = ~sa
            if not iq2s:
                inv &= np.uint8(127)
            signs[a] = np.where(flip[:, None], inv, sa)
            gidx[a] = _grid_indices(grid, L, 2)
            scales[a] = sc
        scales = scales.reshape(nbl, 16)
        max_scale, dh, nib = _block_scales(scales, iq2s)
        yield start, nbl, max_scale, dh, nib, gidx.reshape(nbl, 32), signs.reshape(nbl, 32)


def encode_iq2_xs(rows: np.ndarray, imatrix) -> np.ndarray:
    from . import block_dtype

    out = np.zeros(rows.size // QK_K, dtype=block_dtype("IQ2_XS"))
    for start, nbl, max_scale, dh, nib, gidx, signs in _encode_16(rows, imatrix, False):
        qs = (gidx | signs.astype(np.uint32) << 9).astype(np.uint16)
        sc = (nib[:, 0::2] | nib[:, 1::2] << 4).astype(np.uint8)
        zero = ~(max_scale != 0)
        qs[zero] = 0
        sc[zero] = 0
        blk = out[start : start + nbl]
        blk["d"] = np.where(zero, np.float16(0), dh)
        blk["qs"] = qs
        blk["scales"] = sc
    return out


def encode_iq2_s(rows: np.ndarray, imatrix) -> np.ndarray:
    from . import block_dtype

    out = np.zeros(rows.size // QK_K, dtype=block_dtype("IQ2_S"))
    for start, nbl, max_scale, dh, nib, gidx, signs in _encode_16(rows, imatrix, True):
        qs = np.empty((nbl, 64), dtype=np.uint8)
        qs[:, :32] = gidx & 255
        qs[:, 32:] = signs
        hi = (gidx >> 8).reshape(nbl, 8, 4)
        qh = (hi[:, :, 0] | hi[:, :, 1] << 2 | hi[:, :, 2] << 4 | hi[:, :, 3] << 6).astype(np.uint8)
        sc = (nib[:, 0::2] | nib[:, 1::2] << 4).astype(np.uint8)
        zero = ~(max_scale != 0)
        sc[zero] = 0  # ggml leaves d = 0 and the scales 0 but keeps qs, qh and the signs
        blk = out[start : start + nbl]
        blk["d"] = np.where(zero, np.float16(0), dh)
        blk["qs"] = qs
        blk["qh"] = qh
        blk["scales"] = sc
    return out
