"""K-quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and Q8_K (256-weight super-blocks).

Decoding follows ggml's ``dequantize_row_q{2..6}_K`` / ``dequantize_row_q8_K``; encoding follows
``ggml_quantize_chunk`` -> ``quantize_q{2..6}_K``: without importance weights the ``quantize_row_*_ref`` path,
with them the ``quantize_row_*_impl`` path (Q8_K has only ``quantize_row_q8_K_ref``, which ignores them).
Every float step is done in float32 in ggml's order of operations, with ggml's ``nearest_int`` and fp16
conversions, so the bytes and values are identical to ggml's.

Layout used internally by the encoders: the weights of N sub-blocks of n values are held as an ``(n, N)``
array (element index first).  Each C loop over the n elements of a sub-block then becomes n vector operations
over all sub-blocks at once -- in particular float accumulations keep ggml's strict left-to-right order -- and
the searches over candidate scales (``make_qx_quants``, ``make_q3_quants``, ``make_qkx2_quants``,
``make_qkx3_quants``, ``make_qp_quants``) loop in Python only over their small candidate axis.
"""

from __future__ import annotations

import numpy as np

from . import block_dtype
from ._common import QK_K
from ._common import fp16_to_fp32 as _f16_to_f32
from ._common import fp32_to_fp16 as _f32_to_f16
from ._common import nearest_int as _nearest_int
from ._common import DECODE_CHUNK_VALUES, block_bytes, byte_runs, decode_chunks, output_array, scale_groups, spread_runs

__all__ = [
    "decode_q2_k",
    "encode_q2_k",
    "decode_q3_k",
    "encode_q3_k",
    "decode_q4_k",
    "encode_q4_k",
    "decode_q5_k",
    "encode_q5_k",
    "decode_q6_k",
    "encode_q6_k",
    "decode_q8_k",
    "encode_q8_k",
]

_F32 = np.float32
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_EPS = np.float32(1e-15)  # GROUP_MAX_EPS
_TENTH = np.float32(0.1)

# Blocks handled per vectorized pass: bounds the temporaries and keeps them cache friendly.
_DEC_CHUNK = 2048
_ENC_CHUNK = 512

# --------------------------------------------------------------------------------------------------------------
# scalar helpers with ggml semantics
# --------------------------------------------------------------------------------------------------------------


def _seq_sum(a: np.ndarray, from_zero: bool = True) -> np.ndarray:
    """Sum over axis 0 strictly in order, as ``s = 0; for (i...) s += a[i]`` (or ``s = a[0]; for (i = 1...)``)."""
    s = a[0] + _ZERO if from_zero else a[0].copy()
    for i in range(1, a.shape[0]):
        s += a[i]
    return s


def _first_abs_max(x: np.ndarray, axis: int):
    """``amax = 0, max = 0; for v: if (fabsf(v) > amax) { amax = fabsf(v); max = v; }`` reduced over ``axis``."""
    ax = np.abs(x)
    ax[np.isnan(ax)] = -_ONE
    idx = np.expand_dims(np.argmax(ax, axis=axis), axis)
    amax = np.take_along_axis(ax, idx, axis=axis).squeeze(axis)
    mx = np.take_along_axis(x, idx, axis=axis).squeeze(axis)
    pos = amax > _ZERO
    return np.where(pos, amax, _ZERO), np.where(pos, mx, _ZERO)


def _max_positive(x: np.ndarray, axis: int) -> np.ndarray:
    """``m = 0; for v: if (v > m) m = v;`` reduced over ``axis`` (NaNs never win)."""
    return np.where(x > _ZERO, x, _ZERO).max(axis=axis)


def _as_int8(v: np.ndarray) -> np.ndarray:
    """C conversion of an int to ``int8_t`` (keep the low byte)."""
    return v.astype(np.int8)


# --------------------------------------------------------------------------------------------------------------
# the quantization searches of ggml-quants.c, vectorized over sub-blocks; arrays are (n, N)
# --------------------------------------------------------------------------------------------------------------


def _make_qx_quants(x: np.ndarray, nmax: int, w: np.ndarray):
    """``make_qx_quants(n, nmax, x, L, rmse_type=1, qw)`` with weights ``w`` (``qw`` or ``x*x``).

    Returns ``(scale (N,), L (n, N) int32 in [0, 2*nmax))``.
    """
    amax, mx = _first_abs_max(x, 0)
    zero = amax < _EPS
    fnmax = _F32(nmax)
    wx = w * x
    best_l = None
    scale = best = None
    for i_s in [0] + [k for k in range(-9, 10) if k]:
        if i_s == 0:
            iscale = -fnmax / mx
        else:
            iscale = -(fnmax + _TENTH * _F32(i_s)) / mx
        l = _nearest_int(iscale * x)
        np.clip(l, -nmax, nmax - 1, out=l)
        lf = l.astype(np.float32)
        sumlx = _seq_sum(wx * lf)
        suml2 = _seq_sum((w * lf) * lf)
        if best_l is None:
            best_l = l
            scale = np.where(suml2 != _ZERO, sumlx / suml2, _ZERO)
            best = scale * sumlx
        else:
            upd = (suml2 > _ZERO) & (sumlx * sumlx > best * suml2)
            if upd.any():
                best_l = np.where(upd, l, best_l)
                scale = np.where(upd, sumlx / suml2, scale)
                best = np.where(upd, scale * sumlx, best)
    best_l += nmax
    if zero.any():
        best_l[:, zero] = 0
        scale = np.where(zero, _ZERO, scale)
    return scale, best_l


def _make_q3_quants(x: np.ndarray):
    """``make_q3_quants(n, nmax=4, x, L, do_rmse=true)``; returns ``(scale (N,), L (n, N) int32 in [0, 8))``."""
    nmax = 4
    n = x.shape[0]
    amax, mx = _first_abs_max(x, 0)
    zero = amax < _EPS
    iscale = _F32(-nmax) / mx
    L = _nearest_int(iscale * x)
    np.clip(L, -nmax, nmax - 1, out=L)
    w = x * x
    wx = w * x
    Lf = L.astype(np.float32)
    sumlx = _seq_sum(wx * Lf)
    suml2 = _seq_sum((w * Lf) * Lf)
    for _itry in range(5):
        changed = False
        for i in range(n):
            wi, wxi, xi = w[i], wx[i], x[i]
            li = Lf[i]
            slx = sumlx - wxi * li
            sl2 = suml2 - (wi * li) * li
            new_l = _nearest_int((xi * sl2) / slx)
            np.clip(new_l, -nmax, nmax - 1, out=new_l)
            nlf = new_l.astype(np.float32)
            slx = slx + wxi * nlf
            sl2n = sl2 + (wi * nlf) * nlf
            acc = (
                ((sumlx - wxi * li) > _ZERO)
                & (new_l != L[i])
                & (sl2n > _ZERO)
                & ((slx * slx) * suml2 > (sumlx * sumlx) * sl2n)
            )
            if acc.any():
                changed = True
                L[i] = np.where(acc, new_l, L[i])
                Lf[i] = np.where(acc, nlf, li)
                sumlx = np.where(acc, slx, sumlx)
                suml2 = np.where(acc, sl2n, suml2)
        if not changed:  # a round without change repeats identically, so stopping early changes nothing
            break
    L += nmax
    scale = np.where(suml2 > _ZERO, sumlx / suml2, _ZERO)
    if zero.any():
        L[:, zero] = 0
        scale = np.where(zero, _ZERO, scale)
    return scale, L


def _make_qkx_quants(
    x: np.ndarray, w: np.ndarray, nmax: int, rmin: float, rdelta: float, nstep: int, use_mad: bool, v3: bool
):
    """``make_qkx2_quants`` (``v3=False``) / ``make_qkx3_quants`` with explicit weights.

    Returns ``(scale (N,), the_min (N,), L (n, N) int32 in [0, nmax])``.
    """
    n = x.shape[0]
    mn = x[0].copy()
    mx = x[0].copy()
    for i in range(1, n):
        xi = x[i]
        np.copyto(mn, xi, where=xi < mn)
        np.copyto(mx, xi, where=xi > mx)
    sum_w = _seq_sum(w, from_zero=False)
    sum_x = _seq_sum(w * x, from_zero=False)
    mn[mn > _ZERO] = _ZERO
    degenerate = (mx <= mn) if v3 else (mx == mn)
    fnmax = _F32(nmax)
    tmp = np.empty_like(x)
    wl = np.empty_like(x)
    lf = np.empty_like(x)

    def quantize(iscale, xm):
        np.multiply(xm, iscale, out=tmp)
        l = _nearest_int(tmp)
        np.clip(l, 0, nmax, out=l)
        np.copyto(lf, l, casting="unsafe")
        return l

    def err(scale, m):
        np.multiply(lf, scale, out=tmp)
        np.add(tmp, m, out=tmp)
        np.subtract(tmp, x, out=tmp)
        if use_mad:
            np.abs(tmp, out=tmp)
        else:
            np.multiply(tmp, tmp, out=tmp)
        np.multiply(tmp, w, out=tmp)
        return _seq_sum(tmp)

    # ggml keeps using ``min`` after a better candidate replaced it, in both ``max - min`` and ``x - min``
    the_min = mn.copy()
    xm = x - the_min
    iscale = fnmax / (mx - the_min)
    scale = _ONE / iscale
    L = quantize(iscale, xm)
    best = err(scale, the_min)
    frmin, frdelta = _F32(rmin), _F32(rdelta)
    for i_s in range(nstep + 1):
        iscale = ((frmin + frdelta * _F32(i_s)) + fnmax) / (mx - the_min)
        l = quantize(iscale, xm)
        np.multiply(w, lf, out=wl)
        sum_l = _seq_sum(wl)
        np.multiply(wl, lf, out=tmp)
        sum_l2 = _seq_sum(tmp)
        np.multiply(wl, x, out=tmp)
        sum_xl = _seq_sum(tmp)
        D = sum_w * sum_l2 - sum_l * sum_l
        this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
        pos = this_min > _ZERO
        if pos.any():
            this_min = np.where(pos, _ZERO, this_min)
            this_scale = np.where(pos, sum_xl / sum_l2, this_scale)
        cur = err(this_scale, this_min)
        upd = (D > _ZERO) & (cur < best)
        if upd.any():
            L = np.where(upd, l, L)
            best = np.where(upd, cur, best)
            scale = np.where(upd, this_scale, scale)
            the_min = np.where(upd, this_min, the_min)
            np.subtract(x, the_min, out=xm)
    if degenerate.any():
        L[:, degenerate] = 0
        scale = np.where(degenerate, _ZERO, scale)
        the_min = np.where(degenerate, mn, the_min)
    return scale, -the_min, L


def _make_qp_quants(x: np.ndarray, nmax: int, w: np.ndarray):
    """``make_qp_quants(n, nmax, x, L, quant_weights)``; ``x``, ``w`` are (n, N).

    Returns ``(scale (N,), L (n, N) int32 holding the uint8_t values)``.
    """
    n = x.shape[0]
    mx = np.zeros(x.shape[1:], dtype=np.float32)
    for i in range(n):
        mx = np.where(mx > x[i], mx, x[i])  # MAX(max, x[i])
    zero = mx < _EPS
    fnmax = _F32(nmax)
    iscale = fnmax / mx
    L = _nearest_int(iscale * x) & 0xFF
    scale = _ONE / iscale
    diff = x - scale * L.astype(np.float32)
    best_mse = _seq_sum((w * diff) * diff)
    for i_s in range(-4, 5):
        if i_s == 0:
            continue
        iscale_is = (_TENTH * _F32(i_s) + fnmax) / mx
        scale_is = _ONE / iscale_is
        l = np.minimum(_nearest_int(iscale_is * x), nmax)
        diff = x - scale_is * l.astype(np.float32)
        mse = _seq_sum((w * diff) * diff)
        upd = mse < best_mse
        best_mse = np.where(upd, mse, best_mse)
        iscale = np.where(upd, iscale_is, iscale)
    l = np.minimum(_nearest_int(iscale * x), nmax)
    lf = l.astype(np.float32)
    L = l & 0xFF
    Lf = L.astype(np.float32)
    wx = w * x
    sumlx = _seq_sum(wx * lf)
    suml2 = _seq_sum((w * lf) * lf)
    for _itry in range(5):
        changed = False
        for i in range(n):
            wi, wxi, xi, li = w[i], wx[i], x[i], Lf[i]
            slx = sumlx - wxi * li
            sl2 = suml2 - (wi * li) * li
            ok = (slx > _ZERO) & (sl2 > _ZERO)
            new_l = np.minimum(_nearest_int((xi * sl2) / slx), nmax)
            nlf = new_l.astype(np.float32)
            slx = slx + wxi * nlf
            sl2 = sl2 + (wi * nlf) * nlf
            acc = ok & (new_l != L[i]) & ((slx * slx) * suml2 > (sumlx * sumlx) * sl2)
            if acc.any():
                changed = True
                newL = new_l & 0xFF
                L[i] = np.where(acc, newL, L[i])
                Lf[i] = L[i].astype(np.float32)
                sumlx = np.where(acc, slx, sumlx)
                suml2 = np.where(acc, sl2, suml2)
        if not changed:
            break
    scale = np.where(suml2 > _ZERO, sumlx / suml2, _ZERO)
    if zero.any():
        L[:, zero] = 0
        scale = np.where(zero, _ZERO, scale)
    return scale, L


# --------------------------------------------------------------------------------------------------------------
# packing helpers
# --------------------------------------------------------------------------------------------------------------


def _sub_major(x: np.ndarray, n: int) -> np.ndarray:
    """(c, 256) blocks -> (n, c * 256 // n) float32, element index first."""
    return np.ascontiguousarray(x.reshape(-1, n).T)


def _block_major(a: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`_sub_major` for any dtype: (n, c * 256 // n) -> (c, 256 // n, n)."""
    return a.T.reshape(-1, QK_K // n, n)


def _block_sum_x2(x: np.ndarray) -> np.ndarray:
    """``sumx2 = 0; for (j < 256) sumx2 += x[j]*x[j];`` per block of (c, 256)."""
    xx = x * x
    return _seq_sum(np.ascontiguousarray(xx.T))


def _pack_2bit(L: np.ndarray) -> np.ndarray:
    """(c, 256) ints in [0, 3] -> (c, 64) bytes: ``qs[32*n + l] = L[128n+l] | L[128n+l+32] << 2 | ...``."""
    q = L.reshape(-1, 2, 4, 32).astype(np.uint8)
    return (q[:, :, 0] | (q[:, :, 1] << 2) | (q[:, :, 2] << 4) | (q[:, :, 3] << 6)).reshape(-1, 64)


def _pack_k4_scales(ls: np.ndarray, lm: np.ndarray) -> np.ndarray:
    """Eight 6-bit scales and mins (c, 8) -> the 12 ``scales`` bytes of Q4_K/Q5_K (inverse of get_scale_min_k4)."""
    ls = ls.astype(np.int32)
    lm = lm.astype(np.int32)
    s = np.zeros((ls.shape[0], 12), dtype=np.int32)
    s[:, 0:4] = ls[:, 0:4] | (((ls[:, 4:8] >> 4) << 6) & 0xFF)
    s[:, 4:8] = lm[:, 0:4] | (((lm[:, 4:8] >> 4) << 6) & 0xFF)
    s[:, 8:12] = (ls[:, 4:8] & 0xF) | ((lm[:, 4:8] & 0xF) << 4)
    return (s & 0xFF).astype(np.uint8)


def _unpack_k4_scales(s: np.ndarray):
    """get_scale_min_k4 for j = 0..7: (c, 12) bytes -> (sc, m), each (c, 8) uint8."""
    sc = np.empty((s.shape[0], 8), dtype=np.uint8)
    m = np.empty((s.shape[0], 8), dtype=np.uint8)
    sc[:, 0:4] = s[:, 0:4] & 63
    m[:, 0:4] = s[:, 4:8] & 63
    sc[:, 4:8] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:8] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, m


def _pack_q3_scales(l: np.ndarray) -> np.ndarray:
    """Sixteen 6-bit values (c, 16) -> the 12 ``scales`` bytes of Q3_K."""
    l = l.astype(np.int32)
    s = np.zeros((l.shape[0], 12), dtype=np.int32)
    s[:, 0:8] = (l[:, 0:8] & 0xF) | ((l[:, 8:16] & 0xF) << 4)
    hi = l >> 4
    for g in range(4):
        s[:, 8:12] |= hi[:, 4 * g : 4 * g + 4] << (2 * g)
    return (s & 0xFF).astype(np.uint8)


def _unpack_q3_scales(s: np.ndarray) -> np.ndarray:
    """(c, 12) bytes -> (c, 16) int8 scales in [-32, 31]."""
    low = np.concatenate([s[:, 0:8] & 0xF, s[:, 0:8] >> 4], axis=1)
    hi = (s[:, None, 8:12] >> np.array([0, 2, 4, 6], dtype=np.uint8)[None, :, None]) & 3  # (c, 4 groups, 4)
    return (low | (hi.reshape(-1, 16) << 4)).astype(np.int8) - np.int8(32)


def _q3_scale_bytes(blocks: np.ndarray) -> np.ndarray:
    """The 12 scale bytes of Q3_K blocks as ggml's memory holds them (fields are 3 x uint32)."""
    return np.ascontiguousarray(blocks["scales"], dtype="<u4").view(np.uint8).reshape(-1, 12)


def _rows_to_blocks(rows: np.ndarray, imatrix):
    x = np.ascontiguousarray(rows, dtype=np.float32).reshape(-1, QK_K)
    qw = None
    if imatrix is not None:
        qw = np.ascontiguousarray(imatrix, dtype=np.float32).reshape(-1, QK_K)
    return x, qw


def _chunks(nb: int, size: int = _ENC_CHUNK):
    for start in range(0, nb, size):
        yield start, min(nb, start + size)


def _block_weights(qw: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Importance weights of blocks start..stop of the flattened rows (the imatrix repeats every row)."""
    nbr = qw.shape[0]
    if nbr == 1:
        return np.broadcast_to(qw, (stop - start, QK_K))
    return qw[np.arange(start, stop) % nbr]


# --------------------------------------------------------------------------------------------------------------
# Q2_K
# --------------------------------------------------------------------------------------------------------------


def _encode_q2_k_blocks(x: np.ndarray, qw) -> np.ndarray:
    c = x.shape[0]
    out = np.zeros(c, dtype=block_dtype("Q2_K"))
    X = _sub_major(x, 16)
    with np.errstate(all="ignore"):
        if qw is None:
            W = np.abs(X)
            scales, mins, L = _make_qkx_quants(X, W, 3, -0.5, 0.1, 15, True, False)
            scales = scales.reshape(c, 16)
            mins = mins.reshape(c, 16)
            max_scale = _max_positive(scales, 1)
            max_min = _max_positive(mins, 1)
            has_s = max_scale > _ZERO
            has_m = max_min > _ZERO
            ls = _nearest_int((_F32(15) / max_scale)[:, None] * scales)
            lm = _nearest_int((_F32(15) / max_min)[:, None] * mins)
            byte = np.where(has_s[:, None], ls & 0xFF, 0) | np.where(has_m[:, None], (lm << 4) & 0xFF, 0)
            d16 = _f32_to_f16(np.where(has_s, max_scale / _F32(15), _ZERO))
            m16 = _f32_to_f16(np.where(has_m, max_min / _F32(15), _ZERO))
        else:
            sigma2 = _block_sum_x2(x) / _F32(QK_K)
            s2 = np.repeat(sigma2, 16)
            W = _sub_major(qw, 16) * np.sqrt(s2 + X * X)
            sw = _seq_sum(W).reshape(c, 16)
            scales, mins, L = _make_qkx_quants(X, W, 3, -0.9, 0.05, 36, False, True)
            dm, Ls = _make_qp_quants(scales.reshape(c, 16).T, 15, sw.T)
            mm, Lm = _make_qp_quants(mins.reshape(c, 16).T, 15, sw.T)
            byte = (Ls.T | (Lm.T << 4)) & 0xFF
            d16 = _f32_to_f16(dm)
            m16 = _f32_to_f16(mm)
        byte = byte.astype(np.uint8)
        d = _f16_to_f32(d16)[:, None] * (byte & 0xF).astype(np.float32)
        dm = _f16_to_f32(m16)[:, None] * (byte >> 4).astype(np.float32)
        xb = x.reshape(c, 16, 16)
        lq = _nearest_int((xb + dm[:, :, None]) / d[:, :, None])
        np.clip(lq, 0, 3, out=lq)
        L = np.where((d != _ZERO)[:, :, None], lq, _block_major(L, 16))
    out["scales"] = byte
    out["qs"] = _pack_2bit(L)
    out["d"] = d16
    out["dmin"] = m16
    return out


def _encode_chunked(name: str, rows: np.ndarray, imatrix, encode_blocks) -> np.ndarray:
    """Blocks of ``name`` for ``rows``: ``encode_blocks(x, qw)`` on chunks of ``_ENC_CHUNK`` super-blocks
    (``qw`` the chunk's importance weights, or None without an imatrix)."""
    x, qw = _rows_to_blocks(rows, imatrix)
    out = np.empty(x.shape[0], dtype=block_dtype(name))
    for a, b in _chunks(x.shape[0]):
        out[a:b] = encode_blocks(x[a:b], None if qw is None else _block_weights(qw, a, b))
    return out


def encode_q2_k(rows: np.ndarray, imatrix) -> np.ndarray:
    return _encode_chunked("Q2_K", rows, imatrix, _encode_q2_k_blocks)


# --------------------------------------------------------------------------------------------------------------
# Q3_K
# --------------------------------------------------------------------------------------------------------------


def _q3_finish(out, x, scale_bytes, d16, L):
    """Requantize with the stored scales and pack hmask/qs (shared tail of the ref and impl paths)."""
    c = x.shape[0]
    sc = _unpack_q3_scales(scale_bytes)
    d = _f16_to_f32(d16)[:, None] * sc.astype(np.float32)
    lq = _nearest_int(x.reshape(c, 16, 16) / d[:, :, None])
    np.clip(lq, -4, 3, out=lq)
    lq += 4
    L = np.where((d != _ZERO)[:, :, None], lq, _block_major(L, 16)).reshape(c, 256)
    hbit = L > 3
    L = L - 4 * hbit
    hm = hbit.reshape(c, 8, 32).astype(np.uint8) << np.arange(8, dtype=np.uint8)[None, :, None]
    out["hmask"] = np.bitwise_or.reduce(hm, axis=1)
    out["qs"] = _pack_2bit(L)
    out["scales"] = np.ascontiguousarray(scale_bytes).view("<u4").reshape(c, 3)
    out["d"] = d16


def _encode_q3_k_blocks(x: np.ndarray, qw) -> np.ndarray:
    c = x.shape[0]
    out = np.zeros(c, dtype=block_dtype("Q3_K"))
    X = _sub_major(x, 16)
    with np.errstate(all="ignore"):
        if qw is None:
            scales, L = _make_q3_quants(X)
            scales = scales.reshape(c, 16)
            _, max_scale = _first_abs_max(scales, 1)
            nz = max_scale != _ZERO
            iscale = _F32(-32) / max_scale
            l = _as_int8(_nearest_int(iscale[:, None] * scales)).astype(np.int32)
            np.clip(l, -32, 31, out=l)
            l += 32
            l[~nz] = 0
            sb = _pack_q3_scales(l)
            d16 = _f32_to_f16(np.where(nz, _ONE / iscale, _ZERO))
        else:
            sigma2 = (_F32(2) * _block_sum_x2(x)) / _F32(QK_K)
            s2 = np.repeat(sigma2, 16)
            W = _sub_major(qw, 16) * np.sqrt(s2 + X * X)
            sw = _seq_sum(W)
            scales, L = _make_qx_quants(X, 4, W)
            d_block, Ls = _make_qx_quants(
                np.ascontiguousarray(scales.reshape(c, 16).T), 32, np.ascontiguousarray(sw.reshape(c, 16).T)
            )
            sb = _pack_q3_scales(Ls.T)
            d16 = _f32_to_f16(d_block)
        _q3_finish(out, x, sb, d16, L)
    return out


def encode_q3_k(rows: np.ndarray, imatrix) -> np.ndarray:
    return _encode_chunked("Q3_K", rows, imatrix, _encode_q3_k_blocks)


# --------------------------------------------------------------------------------------------------------------
# Q4_K and Q5_K
# --------------------------------------------------------------------------------------------------------------


def _encode_k45_blocks(x: np.ndarray, qw, nmax: int, type_name: str) -> np.ndarray:
    c = x.shape[0]
    out = np.zeros(c, dtype=block_dtype(type_name))
    X = _sub_major(x, 32)
    with np.errstate(all="ignore"):
        if qw is None:
            av_x = np.sqrt(_seq_sum(X * X) / _F32(32))
            W = av_x + np.abs(X)
            if nmax == 15:
                scales, mins, L = _make_qkx_quants(X, W, 15, -1.0, 0.1, 20, False, False)
            else:
                scales, mins, L = _make_qkx_quants(X, W, 31, -0.5, 0.1, 15, False, False)
            scales = scales.reshape(c, 8)
            mins = mins.reshape(c, 8)
            max_scale = _max_positive(scales, 1)
            max_min = _max_positive(mins, 1)
            inv_scale = np.where(max_scale > _ZERO, _F32(63) / max_scale, _ZERO)
            inv_min = np.where(max_min > _ZERO, _F32(63) / max_min, _ZERO)
            ls = np.minimum(_nearest_int(inv_scale[:, None] * scales) & 0xFF, 63)
            lm = np.minimum(_nearest_int(inv_min[:, None] * mins) & 0xFF, 63)
            d16 = _f32_to_f16(max_scale / _F32(63))
            m16 = _f32_to_f16(max_min / _F32(63))
        else:
            sigma2 = (_F32(2) * _block_sum_x2(x)) / _F32(QK_K)
            s2 = np.repeat(sigma2, 8)
            W = _sub_major(qw, 32) * np.sqrt(s2 + X * X)
            sw = np.ascontiguousarray(_seq_sum(W).reshape(c, 8).T)
            scales, mins, L = _make_qkx_quants(X, W, nmax, -0.9, 0.05, 36, False, True)
            d_block, Ls = _make_qp_quants(np.ascontiguousarray(scales.reshape(c, 8).T), 63, sw)
            m_block, Lm = _make_qp_quants(np.ascontiguousarray(mins.reshape(c, 8).T), 63, sw)
            ls, lm = Ls.T, Lm.T
            if nmax == 31:
                ls = np.minimum(ls, 63)
                lm = np.minimum(lm, 63)
            d16 = _f32_to_f16(d_block)
            m16 = _f32_to_f16(m_block)
        sbytes = _pack_k4_scales(ls, lm)
        sc, m = _unpack_k4_scales(sbytes)
        d = _f16_to_f32(d16)[:, None] * sc.astype(np.float32)
        dm = _f16_to_f32(m16)[:, None] * m.astype(np.float32)
        lq = _nearest_int((x.reshape(c, 8, 32) + dm[:, :, None]) / d[:, :, None])
        np.clip(lq, 0, nmax, out=lq)
        L = np.where((d != _ZERO)[:, :, None], lq, _block_major(L, 32)).astype(np.uint8)
    out["d"] = d16
    out["dmin"] = m16
    out["scales"] = sbytes
    L = L.reshape(c, 4, 2, 32)
    if nmax == 15:
        out["qs"] = (L[:, :, 0] | (L[:, :, 1] << 4)).reshape(c, 128)
    else:
        hi = (L >> 4).reshape(c, 8, 32) << np.arange(8, dtype=np.uint8)[None, :, None]
        out["qh"] = np.bitwise_or.reduce(hi, axis=1)
        L = L & 0xF
        out["qs"] = (L[:, :, 0] | (L[:, :, 1] << 4)).reshape(c, 128)
    return out


def encode_q4_k(rows: np.ndarray, imatrix) -> np.ndarray:
    return _encode_chunked("Q4_K", rows, imatrix, lambda x, qw: _encode_k45_blocks(x, qw, 15, "Q4_K"))


def encode_q5_k(rows: np.ndarray, imatrix) -> np.ndarray:
    return _encode_chunked("Q5_K", rows, imatrix, lambda x, qw: _encode_k45_blocks(x, qw, 31, "Q5_K"))


# --------------------------------------------------------------------------------------------------------------
# Q6_K
# --------------------------------------------------------------------------------------------------------------


def _encode_q6_k_blocks(x: np.ndarray, qw) -> np.ndarray:
    c = x.shape[0]
    out = np.zeros(c, dtype=block_dtype("Q6_K"))
    X = _sub_major(x, 16)
    with np.errstate(all="ignore"):
        W = X * X if qw is None else _sub_major(qw, 16)
        scales, L = _make_qx_quants(X, 32, W)
        scales = scales.reshape(c, 16)
        max_abs, max_scale = _first_abs_max(scales, 1)
        zero = max_abs < _EPS
        iscale = _F32(-128) / max_scale
        d16 = _f32_to_f16(np.where(zero, _ZERO, _ONE / iscale))
        sc = _as_int8(np.minimum(_nearest_int(iscale[:, None] * scales), 127))
        sc[zero] = 0
        d = _f16_to_f32(d16)[:, None] * sc.astype(np.float32)
        lq = _nearest_int(x.reshape(c, 16, 16) / d[:, :, None])
        np.clip(lq, -32, 31, out=lq)
        lq += 32
        L = np.where((d != _ZERO)[:, :, None], lq, _block_major(L, 16)).astype(np.uint8)
        L[zero] = 0
    L = L.reshape(c, 2, 4, 32)
    lo = L & 0xF
    ql = np.concatenate([lo[:, :, 0] | (lo[:, :, 2] << 4), lo[:, :, 1] | (lo[:, :, 3] << 4)], axis=2)
    hi = (L >> 4) << np.array([0, 2, 4, 6], dtype=np.uint8)[None, None, :, None]
    out["ql"] = ql.reshape(c, 128)
    out["qh"] = np.bitwise_or.reduce(hi, axis=2).reshape(c, 64)
    out["scales"] = sc
    out["d"] = d16
    return out


def encode_q6_k(rows: np.ndarray, imatrix) -> np.ndarray:
    return _encode_chunked("Q6_K", rows, imatrix, _encode_q6_k_blocks)


# --------------------------------------------------------------------------------------------------------------
# Q8_K
# --------------------------------------------------------------------------------------------------------------


def encode_q8_k(rows: np.ndarray, imatrix) -> np.ndarray:
    """``quantize_row_q8_K_ref`` (ggml has no importance-weighted Q8_K quantization; ``imatrix`` is ignored)."""
    x, _ = _rows_to_blocks(rows, None)
    nb = x.shape[0]
    out = np.zeros(nb, dtype=block_dtype("Q8_K"))
    for a, b in _chunks(nb):
        xb = x[a:b]
        with np.errstate(all="ignore"):
            amax, mx = _first_abs_max(xb, 1)
            zero = amax == _ZERO
            iscale = _F32(-127) / mx
            qs = _as_int8(np.minimum(_nearest_int(iscale[:, None] * xb), 127))
            qs[zero] = 0
            d = np.where(zero, _ZERO, _ONE / iscale)
        blk = out[a:b]
        blk["qs"] = qs
        blk["bsums"] = qs.reshape(-1, 16, 16).sum(axis=2, dtype=np.int32).astype(np.int16)
        blk["d"] = d
        out[a:b] = blk
    return out


# --------------------------------------------------------------------------------------------------------------
# decoders
#
# Per-block parameters (fp16 scales, unpacked 4/6-bit sub-block scales) are computed for all blocks at once;
# the weights are then produced chunk by chunk (about 512 KiB of output, so the temporaries stay in L2): the
# quants in output order from whole-word bit operations, then ``y = dl * q`` (and ``y -= ml``) as long
# contiguous float32 operations on repeated sub-block scales.
# Single-byte fields are read from a uint8 view of the blocks (byte order is irrelevant for them); multi-byte
# fields through the structured dtype, so big-endian blocks decode to the same values.
# --------------------------------------------------------------------------------------------------------------

_U4 = np.dtype("<u4")


def _words(u8: np.ndarray, start: int, count: int) -> np.ndarray:
    """``count`` little-endian uint32 words from bytes ``start..`` of each block (as ggml's memcpy reads them
    on a little-endian host), as a (count, n_blocks) array."""
    w = np.ascontiguousarray(u8[:, start : start + 4 * count]).view(_U4)
    return np.ascontiguousarray(w.T).astype(np.uint32)


def _bytes_of_words(*words: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_words`: (n_blocks,) uint32 arrays -> (n_blocks, 4 * len(words)) uint8."""
    out = np.empty((words[0].shape[0], len(words)), dtype=_U4)
    for i, w in enumerate(words):
        out[:, i] = w
    return out.view(np.uint8)


def _k4_scale_mins(u8: np.ndarray, start: int):
    """get_scale_min_k4 for all 8 sub-blocks of every block: (sc, m) as (n_blocks, 8) uint8."""
    w0, w1, w2 = _words(u8, start, 3)
    lo6 = np.uint32(0x3F3F3F3F)
    lo4 = np.uint32(0x0F0F0F0F)
    b45 = np.uint32(0x30303030)
    sc = _bytes_of_words(w0 & lo6, (w2 & lo4) | ((w0 >> np.uint32(2)) & b45))
    m = _bytes_of_words(w1 & lo6, ((w2 >> np.uint32(4)) & lo4) | ((w1 >> np.uint32(2)) & b45))
    return sc, m


def _q3_scales_from_words(w0, w1, w2) -> np.ndarray:
    """Q3_K: the sixteen 6-bit scales (minus 32) of every block from its three scale words, (n_blocks, 16) int8."""
    lo4 = np.uint32(0x0F0F0F0F)
    hi2 = np.uint32(0x03030303)
    four, two, six = np.uint32(4), np.uint32(2), np.uint32(6)
    a0 = (w0 & lo4) | ((w2 & hi2) << four)
    a1 = (w1 & lo4) | (((w2 >> two) & hi2) << four)
    a2 = ((w0 >> four) & lo4) | (((w2 >> four) & hi2) << four)
    a3 = ((w1 >> four) & lo4) | (((w2 >> six) & hi2) << four)
    return _bytes_of_words(a0, a1, a2, a3).view(np.int8) - np.int8(32)


def _scaled(d: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``d[i] * q[i, j]`` in float32 (q integer), (n_blocks, k)."""
    return np.multiply(q, d[:, None], dtype=np.float32)


def _shl(q: np.ndarray, k: int) -> np.ndarray:
    """``q <<= k`` on a contiguous uint8 array whose bytes do not overflow, eight bytes per word operation."""
    w = q.reshape(-1).view(np.uint64)
    np.left_shift(w, np.uint64(k), out=w)
    return q


class _Chunks:
    """Chunked decoding of super-blocks: the raw bytes, the output, scratch buffers for the bit fields of one
    chunk (about 512 KiB of output) and the chunk ranges."""

    def __init__(self, blocks: np.ndarray, n_buffers: int, out: np.ndarray | None):
        self.n = blocks.shape[0]
        self.u8 = block_bytes(blocks)
        self.out = output_array(out, self.n, QK_K)
        step = min(self.n, DECODE_CHUNK_VALUES // QK_K)
        self.bufs = [np.empty(step * QK_K, dtype=np.uint8) for _ in range(n_buffers)]

    def runs(self, start: int, size: int, count: int = 1, step: int | None = None) -> np.ndarray:
        return byte_runs(self.u8, start, size, count, step)

    def __iter__(self):
        return decode_chunks(self.n, QK_K)


# Every decoder below unpacks the quants of a chunk in ggml's output order with :func:`spread_runs` (copies of
# byte runs, shifted and masked per word), then writes ``y = dl * q (- ml)`` with one scale per sub-block.


def decode_q2_k(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``y = d * (scales[s] & 0xF) * q - dmin * (scales[s] >> 4)`` with 2-bit ``q`` and 16 sub-blocks ``s``."""
    ch = _Chunks(blocks, 1, out)
    with np.errstate(all="ignore"):
        sc = ch.u8[:, 0:16]
        dl = _scaled(_f16_to_f32(blocks["d"]), sc & np.uint8(0xF))
        ml = _scaled(_f16_to_f32(blocks["dmin"]), sc >> np.uint8(4))
        qs = ch.runs(16, 32, 2)  # the two halves of 128 values
        for a, b in ch:
            q = spread_runs(qs[a:b], (0, 2, 4, 6), 3, ch.bufs[0])
            scale_groups(ch.out[a:b].reshape(-1), q.reshape(-1), dl[a:b].reshape(-1), ml[a:b].reshape(-1))
    return ch.out


def decode_q3_k(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``y = d * (sc[s] - 32) * (q - 4 * !hbit)`` with 2-bit ``q``, a high bit from ``hmask``, 6-bit ``sc``."""
    ch = _Chunks(blocks, 2, out)
    with np.errstate(all="ignore"):
        w = blocks["scales"].astype(np.uint32)
        sc = _q3_scales_from_words(w[:, 0], w[:, 1], w[:, 2])
        dl = _scaled(_f16_to_f32(blocks["d"]), sc)
        qs = ch.runs(32, 32, 2)
        hmask = ch.runs(0, 32)
        for a, b in ch:
            q = spread_runs(qs[a:b], (0, 2, 4, 6), 3, ch.bufs[0])
            h = spread_runs(hmask[a:b], tuple(range(8)), 1, ch.bufs[1])  # bit 4n+j for shift j of half n
            q |= _shl(h, 2).reshape(q.shape)
            qi = q.view(np.int8)
            qi -= np.int8(4)
            scale_groups(ch.out[a:b].reshape(-1), qi.reshape(-1), dl[a:b].reshape(-1))
    return ch.out


def decode_q4_k(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``y = d * sc[s] * q - dmin * m[s]`` with 4-bit ``q``, 8 sub-blocks of 32 with 6-bit ``sc``/``m``."""
    ch = _Chunks(blocks, 1, out)
    with np.errstate(all="ignore"):
        sc, m = _k4_scale_mins(ch.u8, 4)
        dl = _scaled(_f16_to_f32(blocks["d"]), sc)
        ml = _scaled(_f16_to_f32(blocks["dmin"]), m)
        qs = ch.runs(16, 32, 4)
        for a, b in ch:
            q = spread_runs(qs[a:b], (0, 4), 0xF, ch.bufs[0])  # sub-block 2g: low nibbles of run g; 2g+1: high
            scale_groups(ch.out[a:b].reshape(-1), q.reshape(-1), dl[a:b].reshape(-1), ml[a:b].reshape(-1))
    return ch.out


def decode_q5_k(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``y = d * sc[s] * (q + 16 * hbit) - dmin * m[s]`` with 4-bit ``q`` and the fifth bit from ``qh``."""
    ch = _Chunks(blocks, 2, out)
    with np.errstate(all="ignore"):
        sc, m = _k4_scale_mins(ch.u8, 4)
        dl = _scaled(_f16_to_f32(blocks["d"]), sc)
        ml = _scaled(_f16_to_f32(blocks["dmin"]), m)
        qs = ch.runs(48, 32, 4)
        qh = ch.runs(16, 32)
        for a, b in ch:
            q = spread_runs(qs[a:b], (0, 4), 0xF, ch.bufs[0])
            h = spread_runs(qh[a:b], tuple(range(8)), 1, ch.bufs[1])  # bit s of qh for sub-block s
            q |= _shl(h, 4).reshape(q.shape)
            scale_groups(ch.out[a:b].reshape(-1), q.reshape(-1), dl[a:b].reshape(-1), ml[a:b].reshape(-1))
    return ch.out


def decode_q6_k(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``y = d * scales[s] * (q - 32)`` with 6-bit ``q`` (4 bits from ``ql``, 2 from ``qh``), 16 sub-blocks."""
    ch = _Chunks(blocks, 2, out)
    with np.errstate(all="ignore"):
        dl = _scaled(_f16_to_f32(blocks["d"]), ch.u8[:, 192:208].view(np.int8))
        ql = ch.runs(0, 64, 2)  # per half of 128 values: ql[0:32], ql[32:64] low nibbles, then high nibbles
        qh = ch.runs(128, 32, 2)
        for a, b in ch:
            q = spread_runs(ql[a:b], (0, 4), 0xF, ch.bufs[0])
            h = spread_runs(qh[a:b], (0, 2, 4, 6), 3, ch.bufs[1])
            q |= _shl(h, 4).reshape(q.shape)
            qi = q.view(np.int8)
            qi -= np.int8(32)
            scale_groups(ch.out[a:b].reshape(-1), qi.reshape(-1), dl[a:b].reshape(-1))
    return ch.out


def decode_q8_k(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``y = d * qs`` (fp32 ``d``, int8 ``qs``)."""
    nb = blocks.shape[0]
    u8 = block_bytes(blocks)
    out = output_array(out, nb, QK_K)
    with np.errstate(all="ignore"):
        d = blocks["d"].astype(np.float32).reshape(-1, 1)
        for a, b in _chunks(nb, _DEC_CHUNK):
            y = out[a:b]
            np.copyto(y, u8[a:b, 4:260].view(np.int8), casting="unsafe")
            y *= d[a:b]
    return out
