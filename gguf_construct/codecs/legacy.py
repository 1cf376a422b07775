"""The legacy 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.

Decoding follows ggml's ``dequantize_row_*`` (ggml-quants.c): ``y = d * q`` (``_0`` types, q signed) or
``y = d * q + m`` (``_1`` types, q unsigned), with q the 4-, 5- or 8-bit quant of element j.  In the 4/5-bit
types byte j of ``qs`` holds element j in its low nibble and element j+16 in its high nibble; bit j of the
32-bit ``qh`` word is the fifth bit of element j.  ggml has no dequantization for Q8_1 (it only feeds dot
products); it is decoded as ``d * q`` here, ignoring the stored sum ``s``.

Encoding follows ``ggml_quantize_chunk``:

* without importance weights: ``quantize_row_<t>_ref`` (Q4_0/Q5_0 scale from the element of largest magnitude,
  Q4_1/Q5_1 from min/max, Q8_0/Q8_1 from the absolute maximum; Q8_1 as ``quantize_row_q8_1_ref``, which
  ``ggml_quantize_chunk`` itself does not offer);
* with an imatrix: ``quantize_row_<t>_impl`` -- per-element weights ``imatrix[j] * sqrt(sigma2 + x[j]^2)``
  (``sigma2`` the row's mean square), then ``make_qx_quants`` (Q4_0, Q5_0: 18 extra candidate scales) or
  ``make_qkx3_quants`` (Q4_1, Q5_1: 37 candidate scales, scale and min refit by weighted least squares);
  Q8_0 and Q8_1 ignore the imatrix, as ggml does.

Everything is vectorised over all blocks of all rows; the only Python loops run over the fixed candidate
scales of the searches, so ties break exactly as in C.  float32 arithmetic is kept in the C order of operations
and accumulations are strictly sequential (:func:`._common.seq_sum`).
"""

from __future__ import annotations

import numpy as np

from . import block_dtype
from ._common import (
    DECODE_CHUNK_VALUES,
    FLT_MAX,
    QK,
    block_bytes,
    byte_runs,
    c_float_to_int32,
    decode_chunks,
    first_abs_max,
    fp16_to_fp32,
    fp32_to_fp16,
    nearest_int,
    output_array,
    roundf,
    scale_groups,
    seq_sum,
    spread_runs,
)

_F = np.float32
_ONE = _F(1.0)
_ZERO = _F(0.0)

# ------------------------------------------------------------------------------------------------- decoding
# Per chunk of blocks (about 256 KiB of output, so the temporaries stay in L2): the quants as one small
# (c, 32) uint8/int8 array built with integer operations on whole uint64 words, then one float32 multiply by
# the repeated block scales (int -> float conversion is exact) writing the output, and the add of ``m`` for
# the _1 types.

# byte of qh -> its 8 bits, each moved to bit 4 of its own byte (the fifth bit of 8 consecutive quants), as
# the uint64 holding those 8 bytes (derived from the block layout, not ggml data)
_QH_BYTES = (((np.arange(256)[:, None] >> np.arange(8)) & 1) << 4).astype(np.uint8).copy().view(np.uint64)[:, 0]


def _add_high_bits(q: np.ndarray, qh: np.ndarray, hb: np.ndarray) -> None:
    """q |= 16 * bit j of the 32-bit qh word, for quant j of each block (qh (c,) of any byte order)."""
    c = q.shape[0]
    qh_bytes = qh.astype("<u4").view(np.uint8).reshape(c, 4)
    np.take(_QH_BYTES, qh_bytes, out=hb[:c], mode="clip")  # 8 quants' fifth bits per lookup
    q |= hb[:c].view(np.uint8).reshape(c, QK)


@np.errstate(all="ignore")  # inf * 0 and NaN scales are data here, not errors
def _decode(blocks: np.ndarray, bits: int, offset: int, with_min: bool, out: np.ndarray | None) -> np.ndarray:
    n = blocks.shape[0]
    out = output_array(out, n, QK)
    d_all = fp16_to_fp32(blocks["d"])
    m_all = fp16_to_fp32(blocks["m"]) if with_min else None
    u8 = block_bytes(blocks)
    qs_at = blocks.dtype.fields["qs"][1]
    if bits == 8:
        q8 = u8[:, qs_at : qs_at + QK].view(np.int8)
    else:
        runs = byte_runs(u8, qs_at, 16)
        step = min(n, DECODE_CHUNK_VALUES // QK)
        q_buf = np.empty(step * QK, dtype=np.uint8)
        hb = np.empty((step, 4), dtype=np.uint64)
        qh_all = blocks["qh"] if bits == 5 else None
    for s, e in decode_chunks(n, QK):
        if bits == 8:  # widen the quants into the output, then scale it in place
            o = out[s:e]
            np.copyto(o, q8[s:e], casting="unsafe")
            scale_groups(o.reshape(-1), o.reshape(-1), d_all[s:e])
            continue
        q = spread_runs(runs[s:e], (0, 4), 0xF, q_buf).reshape(e - s, QK)  # low nibbles, then high
        if bits == 5:
            _add_high_bits(q, qh_all[s:e], hb)
        if offset:
            q = q.view(np.int8)
            q -= np.int8(offset)
        scale_groups(out[s:e].reshape(-1), q.reshape(-1), d_all[s:e], m_all[s:e] if with_min else None, subtract=False)
    return out


def decode_q4_0(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _decode(blocks, 4, 8, False, out)


def decode_q4_1(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _decode(blocks, 4, 0, True, out)


def decode_q5_0(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _decode(blocks, 5, 16, False, out)


def decode_q5_1(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _decode(blocks, 5, 0, True, out)


def decode_q8_0(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _decode(blocks, 8, 0, False, out)


def decode_q8_1(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Not a ggml function: ggml never dequantizes Q8_1.  ``y = d * q`` (the sum field ``s`` is ignored)."""
    return _decode(blocks, 8, 0, False, out)


# ------------------------------------------------------------------------------------------------- helpers


def _blocks_of(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    return rows.reshape(-1, QK)


def _inverse(d: np.ndarray) -> np.ndarray:
    """``d ? 1.0f/d : 0.0f`` (NaN counts as true)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(d != _ZERO, _ONE / d, _ZERO).astype(np.float32, copy=False)


def _c_int8(f: np.ndarray) -> np.ndarray:
    """``(int8_t)f`` on x86: truncate to int32 (``INT32_MIN`` for NaN / out of range), keep the low byte."""
    return c_float_to_int32(f).astype(np.int8)


def _c_int8_min(f: np.ndarray, cap: int) -> np.ndarray:
    """``(uint8_t) MIN(cap, (int8_t) f)`` as the 4/5-bit reference quantizers compute it."""
    with np.errstate(invalid="ignore"):
        lo, hi = np.min(f), np.max(f)
    if lo >= _ZERO and hi < _F(128.0):  # no wrap-around, no NaN: truncation of min(f, cap)
        return np.minimum(f, _F(cap)).astype(np.uint8)
    return np.minimum(_c_int8(f).astype(np.int32), cap).astype(np.uint8)


def _c_uint8(f: np.ndarray) -> np.ndarray:
    """``(uint8_t)f`` on x86 (via a 32-bit truncating conversion)."""
    return c_float_to_int32(f).astype(np.uint8)


def _pack_nibbles(q: np.ndarray) -> np.ndarray:
    """``qs[j] = (q[j] & 0xF) | (q[j+16] & 0xF) << 4`` for uint8 quants (n, 32)."""
    return (q[:, :16] & np.uint8(15)) | (q[:, 16:] << np.uint8(4))


def _pack_nibbles_raw(q: np.ndarray) -> np.ndarray:
    """``qs[j] = q[j] | q[j+16] << 4`` without masking the low nibble (as the 4-bit quantizers write it)."""
    return q[:, :16] | (q[:, 16:] << np.uint8(4))


def _pack_qh(q: np.ndarray) -> np.ndarray:
    """The 32-bit word whose bit j is bit 4 of quant j, for uint8 quants (n, 32)."""
    bits = (q >> np.uint8(4)) & np.uint8(1)
    packed = np.ascontiguousarray(np.packbits(bits, axis=1, bitorder="little"))
    return packed.view("<u4").reshape(-1)


def _first_equal(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The first element of each row of ``x`` equal to ``v`` (keeps the sign of zeros); ``v`` where none is."""
    eq = x == v[:, None]
    idx = np.argmax(eq, axis=1)
    picked = np.take_along_axis(x, idx[:, None], axis=1)[:, 0]
    return np.where(eq[np.arange(x.shape[0]), idx], picked, v)


def _fold_min(x: np.ndarray, init=None) -> np.ndarray:
    """``m = init (or x[0]); for v in x: if (v < m) m = v;`` per row (NaNs never win; a NaN x[0] stays)."""
    return _fold(x, init, np.min, np.inf, np.less)


def _fold_max(x: np.ndarray, init=None) -> np.ndarray:
    """``m = init (or x[0]); for v in x: if (v > m) m = v;`` per row."""
    return _fold(x, init, np.max, -np.inf, np.greater)


def _fold(x, init, reduce, sentinel, better):
    with np.errstate(invalid="ignore", over="ignore"):
        finite = x.size and np.isfinite(np.sum(x))
    if finite:  # fast path: plain reductions, then the sign of a zero result from its first occurrence
        v = reduce(x, axis=1)
        zero = v == _ZERO
        if zero.any():
            v[zero] = _first_equal(x[zero], v[zero])
        if init is None:
            return v
        return np.where(better(v, init), v, init).astype(np.float32)
    nan = np.isnan(x)
    has_nan = nan.any()
    # NaNs are replaced explicitly: numpy 2.x SIMD min/max/fmin/fmax mishandle signalling NaNs
    xs = np.where(nan, _F(sentinel), x) if has_nan else x
    v = _first_equal(x, reduce(xs, axis=1))
    if init is None:
        return np.where(nan[:, 0], x[:, 0], v) if has_nan else v
    with np.errstate(invalid="ignore"):
        return np.where(better(v, init), v, init).astype(np.float32)


def _fold_abs_max(x: np.ndarray) -> np.ndarray:
    """``amax = 0; for v in x: amax = MAX(amax, fabsf(v));`` with ``MAX(a, b) = a > b ? a : b``.

    A NaN replaces the running value and the next element replaces the NaN, so the result is the maximum
    magnitude after the last NaN (NaN when a block ends with NaN)."""
    ax = np.abs(x)
    nan = np.isnan(ax)
    if not nan.any():
        return np.max(ax, axis=1, initial=_ZERO)
    amax = np.max(np.where(nan, _ZERO, ax), axis=1)
    bad = nan.any(axis=1)
    if bad.any():
        sub = ax[bad]
        n = sub.shape[1]
        last_nan = n - 1 - np.argmax(np.isnan(sub)[:, ::-1], axis=1)
        after = np.arange(n)[None, :] > last_nan[:, None]
        fixed = np.max(np.where(after, sub, _F(-1.0)), axis=1)  # no NaN can be after the last NaN
        amax[bad] = np.where(last_nan == n - 1, _F(np.nan), fixed)
    return amax


def _finish(name: str, fields: dict) -> np.ndarray:
    n = len(next(iter(fields.values())))
    out = np.empty(n, dtype=block_dtype(name))
    for k, v in fields.items():
        out[k] = v
    return out


# ------------------------------------------------------------------------------------ reference quantizers


def _ref_q4_0(x: np.ndarray) -> np.ndarray:
    _, mx = first_abs_max(x, axis=1)
    d = mx / _F(-8.0)
    iv = _inverse(d)
    with np.errstate(invalid="ignore", over="ignore"):
        v = x * iv[:, None] + _F(8.5)
    q = _c_int8_min(v, 15)
    return _finish("Q4_0", {"d": fp32_to_fp16(d), "qs": _pack_nibbles_raw(q)})


def _ref_q4_1(x: np.ndarray, nmax: int) -> tuple:
    mn = _fold_min(x, init=FLT_MAX)
    mx = _fold_max(x, init=-FLT_MAX)
    with np.errstate(invalid="ignore", over="ignore"):
        d = (mx - mn) / _F(nmax)
        iv = _inverse(d)
        v = (x - mn[:, None]) * iv[:, None] + _F(0.5)
    return d, mn, v


def _ref_q5_0(x: np.ndarray) -> np.ndarray:
    _, mx = first_abs_max(x, axis=1)
    d = mx / _F(-16.0)
    iv = _inverse(d)
    with np.errstate(invalid="ignore", over="ignore"):
        v = x * iv[:, None] + _F(16.5)
    q = _c_int8_min(v, 31)
    return _finish("Q5_0", {"d": fp32_to_fp16(d), "qh": _pack_qh(q), "qs": _pack_nibbles(q)})


def _ref_q8(x: np.ndarray):
    amax = _fold_abs_max(x)
    d = amax / _F(127.0)
    iv = _inverse(d)
    with np.errstate(invalid="ignore", over="ignore"):
        q = _c_int8(roundf(x * iv[:, None]))
    return d, q


# ----------------------------------------------------------------------------- importance-weighted searches


def _row_weights(rows: np.ndarray, imatrix: np.ndarray) -> np.ndarray:
    """``weight[j] = qw[j] * sqrtf(sigma2 + x[j]*x[j])`` with ``sigma2 = sum(x^2) / n_per_row`` per row."""
    n_per_row = rows.shape[1]
    sq = rows * rows
    sigma2 = seq_sum(sq, axis=1) / _F(n_per_row)
    return imatrix[None, :] * np.sqrt(sigma2[:, None] + sq)


def _col_sum(t: np.ndarray) -> np.ndarray:
    """Sum over axis 0 of a (32, n) float32 array strictly in order from ``0.0f`` (fast: contiguous rows)."""
    acc = t[0] + _ZERO
    for i in range(1, t.shape[0]):
        acc += t[i]
    return acc


_NI_LIMIT = _F(4194303.0)


def _round_clip(v: np.ndarray, lo: int, hi: int, exact: bool) -> np.ndarray:
    """``MAX(lo, MIN(hi, nearest_int(v)))`` as float32.  With ``exact=False`` the caller guarantees
    ``|v| <= 4194303`` so the float form of the magic-number rounding is the same."""
    if exact:
        return np.clip(nearest_int(v), lo, hi).astype(np.float32)
    r = v + _F(12582912.0)
    r -= _F(12582912.0)
    return np.clip(r, _F(lo), _F(hi), out=r)


def _make_qx_quants(x: np.ndarray, nmax: int, w: np.ndarray):
    """ggml's ``make_qx_quants(n=32, nmax, x, L, rmse_type=1, qw=w)`` per block: returns (scale, L uint8).

    Works on the transposed (32, n_blocks) layout so the sequential sums are 31 contiguous vector adds."""
    amax, mx = first_abs_max(x, axis=1)
    live = amax >= _F(1e-15)  # GROUP_MAX_EPS
    mxs = np.where(live, mx, _ONE)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = bool(np.isfinite(np.sum(x)))
    xt = np.ascontiguousarray(x.T)
    wt = np.ascontiguousarray(w.T)
    fmax = _F(nmax)

    def trial(iscale):
        with np.errstate(invalid="ignore", over="ignore"):
            exact = not (finite and np.max(np.abs(iscale) * amax) < _NI_LIMIT)
            lf = _round_clip(iscale * xt, -nmax, nmax - 1, exact)
            wl = wt * lf
            sumlx = _col_sum(wt * xt * lf)
            suml2 = _col_sum(wl * lf)
        return lf, sumlx, suml2

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lf, sumlx, suml2 = trial(_F(-nmax) / mxs)
        scale = np.where(suml2 != _ZERO, sumlx / suml2, _ZERO).astype(np.float32)
        best = scale * sumlx
        for step in range(-9, 10):
            if step == 0:
                continue
            iscale = -(fmax + _F(0.1) * _F(step)) / mxs
            lf2, sumlx, suml2 = trial(iscale)
            upd = (suml2 > _ZERO) & (sumlx * sumlx > best * suml2)
            if upd.any():
                lf = np.where(upd[None, :], lf2, lf)
                scale = np.where(upd, sumlx / suml2, scale)
                best = np.where(upd, scale * sumlx, best)
    L = np.ascontiguousarray((lf.T + fmax).astype(np.uint8))
    L[~live] = 0
    scale = np.where(live, scale, _ZERO).astype(np.float32)
    return scale, L


def _make_qkx3_quants(x: np.ndarray, nmax: int, w: np.ndarray, rmin=-0.9, rdelta=0.05, nstep=36):
    """ggml's ``make_qkx3_quants(32, nmax, x, w, L, &the_min, Laux, rmin, rdelta, nstep, use_mad=false)``.

    Returns (scale, min, L) where ``min`` is ggml's internal (non-positive) minimum, i.e. ``-the_min``.
    Like ggml, every candidate uses the *current* min, which changes whenever a candidate wins.
    """
    mn = _fold_min(x)
    mx = _fold_max(x)
    mn = np.where(mn > _ZERO, _ZERO, mn).astype(np.float32)
    mn0 = mn
    with np.errstate(invalid="ignore", over="ignore"):
        flat = mx <= mn
        finite = bool(np.isfinite(np.sum(x)))
        amax = np.max(np.abs(x), axis=1)
    xt = np.ascontiguousarray(x.T)
    wt = np.ascontiguousarray(w.T)
    # sum_w = w[0] + w[1] + ...; sum_x = w[0]*x[0] + ... (C starts from the first term, not from 0)
    sum_w = wt[0].copy()
    wx = wt * xt
    sum_x = wx[0].copy()
    for i in range(1, QK):
        sum_w += wt[i]
        sum_x += wx[i]
    fnmax = _F(nmax)

    def levels(iscale, mn):
        exact = not (finite and np.max(np.abs(iscale) * (amax + np.abs(mn))) < _NI_LIMIT)
        return _round_clip(iscale * (xt - mn), 0, nmax, exact)

    def mad_of(scale, mn, lf):
        diff = scale * lf + mn - xt
        return _col_sum(wt * (diff * diff))

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iscale = fnmax / (mx - mn)
        scale = _ONE / iscale
        lf = levels(iscale, mn)
        best_mad = mad_of(scale, mn, lf)
        for step in range(nstep + 1):
            iscale = (_F(rmin) + _F(rdelta) * _F(step) + fnmax) / (mx - mn)
            laux = levels(iscale, mn)
            wl = wt * laux
            sum_l = _col_sum(wl)
            sum_l2 = _col_sum(wl * laux)
            sum_xl = _col_sum(wl * xt)
            D = sum_w * sum_l2 - sum_l * sum_l
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
            clamp = this_min > _ZERO
            this_min = np.where(clamp, _ZERO, this_min)
            this_scale = np.where(clamp, sum_xl / sum_l2, this_scale)
            mad = mad_of(this_scale, this_min, laux)
            upd = (D > _ZERO) & (mad < best_mad)
            if upd.any():
                lf = np.where(upd[None, :], laux, lf)
                best_mad = np.where(upd, mad, best_mad)
                scale = np.where(upd, this_scale, scale)
                mn = np.where(upd, this_min, mn)
    L = np.ascontiguousarray(lf.T.astype(np.uint8))
    L[flat] = 0
    scale = np.where(flat, _ZERO, scale).astype(np.float32)
    mn = np.where(flat, mn0, mn)
    return scale, mn.astype(np.float32), L


# ------------------------------------------------------------------------------ no-imatrix fast encoders
# The reference quantizers run per chunk of ENCODE_CHUNK_BLOCKS blocks (512 KiB of input, so the temporaries
# stay in L2).  A chunk is first transposed to (32, c): the per-block reductions then become 31 contiguous
# vector operations instead of a ufunc inner-loop call per block, and the per-block scales broadcast along
# contiguous rows.  The fast path only runs on chunks without NaN/Inf whose inverse scales are finite; there the
# C conversions need no wrap-around or NaN handling (every scaled value lies well inside the int8 range), so
# they are plain truncating casts.  Any other chunk takes the general (exact) path above.

ENCODE_CHUNK_BLOCKS = 4096
_HALF_DOWN = np.uint32(np.float32(0.49999997).view(np.uint32))  # nextafterf(0.5f, 0)
_SIGN = np.uint32(0x80000000)


def _encode_chunked(name: str, x: np.ndarray, fast, slow) -> np.ndarray:
    """Blocks of ``name`` for x (n, 32): ``fast(xt, x, out)`` per chunk (xt the transposed chunk), which returns
    False -- for any NaN or Inf in the chunk, seen in its per-block reductions -- to leave the chunk to
    ``slow(x) -> blocks``."""
    n = x.shape[0]
    out = np.empty(n, dtype=block_dtype(name))
    for s in range(0, n, ENCODE_CHUNK_BLOCKS):
        xc = x[s : s + ENCODE_CHUNK_BLOCKS]
        oc = out[s : s + ENCODE_CHUNK_BLOCKS]
        xt = xc.T.copy()  # always a copy: the fast paths work in it in place
        with np.errstate(invalid="ignore", over="ignore"):
            done = fast(xt, xc, oc)
        if not done:
            oc[...] = slow(xc)
    return out


def _all_finite(*arrays: np.ndarray) -> bool:
    """No NaN or Inf in any of the (per-block reduced) arrays: a max/min propagates NaNs and keeps infinities."""
    return all(bool(np.isfinite(a).all()) for a in arrays)


def _finite_inverse(d: np.ndarray):
    """``d ? 1.0f/d : 0.0f``, or None when some inverse is not finite (subnormal scales: general path)."""
    iv = _inverse(d)
    return iv if bool(np.isfinite(iv).all()) else None


def _signed_extreme(x: np.ndarray, mx: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """:func:`first_abs_max`'s ``max`` for finite blocks (rows of ``x``) with maxima ``mx`` and minima ``mn``: the
    element of largest magnitude, the first one when both signs reach it (resolved on the few such blocks only)."""
    neg = -mn > mx
    val = np.where(neg, mn, mx)
    tie = mx == -mn
    if tie.any():
        val[tie] = first_abs_max(x[tie], axis=1)[1]
    return val


def _fold_finite(xt: np.ndarray, x: np.ndarray, reduce) -> np.ndarray:
    """``_fold_min`` / ``_fold_max`` with the ``FLT_MAX`` start for finite blocks: the sign of a zero result
    from its first occurrence."""
    v = reduce(xt, axis=0)
    zero = v == _ZERO
    if zero.any():
        v[zero] = _first_equal(x[zero], v[zero])
    return v


def _fast_x0(name: str, nmax: int):
    """Q4_0 / Q5_0: ``q = MIN(2*nmax-1, (int8_t)(x*id + nmax + 0.5f))`` with ``d = max / -nmax``."""
    bias, cap = _F(nmax + 0.5), np.uint8(2 * nmax - 1)

    def fast(xt, x, out):
        mx, mn = xt.max(axis=0), xt.min(axis=0)
        if not _all_finite(mx, mn):
            return False
        d = _signed_extreme(x, mx, mn) / _F(-nmax)
        iv = _finite_inverse(d)
        if iv is None:
            return False
        if "qh" in out.dtype.names:  # Q5_0: in block order, where the fifth bits pack without a transposition
            v = np.multiply(x.reshape(-1), np.repeat(iv, QK))
            v += bias  # in [0, 2*nmax + 0.5]: truncation is the C conversion
            _put_qh(out, v)
            q = v.astype(np.uint8).reshape(x.shape)
            np.minimum(q, cap, out=q)
            out["qs"] = _pack_nibbles(q)
            out["d"] = fp32_to_fp16(d)
            return True
        np.multiply(xt, iv, out=xt)
        xt += bias  # in [0, 2*nmax + 0.5]: truncation is the C conversion
        q = xt.astype(np.uint8)
        np.minimum(q, cap, out=q)
        _store_nibbles(q, out, d, None)
        return True

    return fast


def _fast_x1(name: str, nmax: int):
    """Q4_1 / Q5_1: ``q = (x - min) * id + 0.5f`` truncated (capped at 15 for Q4_1), ``d = (max - min) / nmax``."""
    cap = np.uint8(15) if nmax == 15 else None

    def fast(xt, x, out):
        mn = _fold_finite(xt, x, np.min)
        mx = _fold_finite(xt, x, np.max)
        if not _all_finite(mx, mn):
            return False
        with np.errstate(over="ignore"):
            d = (mx - mn) / _F(nmax)
        iv = _finite_inverse(d)
        if iv is None or not _all_finite(d):  # max - min can overflow
            return False
        if "qh" in out.dtype.names:  # Q5_1: the fifth bits, from the same values in block order
            v = np.subtract(x.reshape(-1), np.repeat(mn, QK))
            v *= np.repeat(iv, QK)
            v += _F(0.5)
            _put_qh(out, v)
        np.subtract(xt, mn, out=xt)
        xt *= iv
        xt += _F(0.5)  # in [0.5, nmax + 0.5]
        q = xt.astype(np.uint8)
        if cap is not None:
            np.minimum(q, cap, out=q)
        _store_nibbles(q, out, d, mn)
        return True

    return fast


def _store_nibbles(qt: np.ndarray, out: np.ndarray, d: np.ndarray, m) -> None:
    """Write transposed quants qt (32, c) uint8 (< 32; qh already written for the 5-bit types) and the scales
    into the blocks ``out``."""
    lo = qt[:16] & np.uint8(15) if "qh" in out.dtype.names else qt[:16]
    qs = lo | (qt[16:] << np.uint8(4))
    out["qs"] = qs.T
    out["d"] = fp32_to_fp16(d)
    if m is not None:
        out["m"] = fp32_to_fp16(m)


_SIXTEEN = _F(16.0)


def _put_qh(out: np.ndarray, v: np.ndarray) -> None:
    """qh of the 5-bit types from the values ``v`` (flat, block order) whose truncation gives the quants:
    bit j of a block's qh is ``q_j >= 16``, i.e. ``v_j >= 16`` (packed along the contiguous axis: no transposing
    of the uint8 quants, which numpy does slowly)."""
    bits = (v >= _SIXTEEN).reshape(-1, QK)
    out["qh"] = np.packbits(bits, axis=1, bitorder="little").view("<u4").reshape(-1)


def _fast_q8(with_sum: bool):
    """Q8_0 / Q8_1: ``q = roundf(x * id)`` with ``d = amax / 127`` (Q8_1 also ``s = d * sum(q)``).

    Only the reduction uses the transposed chunk; the scaling works in block order on repeated inverse
    scales, so the int8 results convert straight into the blocks (no transposition back)."""

    def fast(xt, x, out):
        d = np.abs(xt, out=xt).max(axis=0) / _F(127.0)
        if not _all_finite(d):
            return False
        iv = _finite_inverse(d)
        if iv is None:
            return False
        y = np.multiply(x.reshape(-1), np.repeat(iv, QK)).reshape(x.shape)  # |v| <= 127 (+ rounding)
        # roundf(v) = truncf(v + copysignf(0.49999997f, v)), exact for every float (no double rounding)
        half = np.bitwise_and(y.view(np.uint32), _SIGN)
        half |= _HALF_DOWN
        y += half.view(np.float32)
        qs = out["qs"]
        np.copyto(qs, y, casting="unsafe")
        out["d"] = fp32_to_fp16(d)
        if with_sum:
            total = qs.sum(axis=1, dtype=np.int32)
            with np.errstate(over="ignore"):
                out["s"] = fp32_to_fp16(total.astype(np.float32) * d)
        return True

    return fast


_FAST = {
    "Q4_0": _fast_x0("Q4_0", 8),
    "Q5_0": _fast_x0("Q5_0", 16),
    "Q4_1": _fast_x1("Q4_1", 15),
    "Q5_1": _fast_x1("Q5_1", 31),
    "Q8_0": _fast_q8(False),
    "Q8_1": _fast_q8(True),
}


# ------------------------------------------------------------------------------------------------- encoders


def _slow_q4_0(x):
    return _ref_q4_0(x)


def _slow_q4_1(x):
    d, mn, v = _ref_q4_1(x, 15)
    return _finish("Q4_1", {"d": fp32_to_fp16(d), "m": fp32_to_fp16(mn), "qs": _pack_nibbles_raw(_c_int8_min(v, 15))})


def _slow_q5_0(x):
    return _ref_q5_0(x)


def _slow_q5_1(x):
    d, mn, v = _ref_q4_1(x, 31)
    q = _c_uint8(v)
    return _finish("Q5_1", {"d": fp32_to_fp16(d), "m": fp32_to_fp16(mn), "qh": _pack_qh(q), "qs": _pack_nibbles(q)})


def _slow_q8_0(x):
    d, q = _ref_q8(x)
    return _finish("Q8_0", {"d": fp32_to_fp16(d), "qs": q})


def _slow_q8_1(x):
    d, q = _ref_q8(x)
    total = q.astype(np.int32).sum(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        s = total.astype(np.float32) * d
    return _finish("Q8_1", {"d": fp32_to_fp16(d), "s": fp32_to_fp16(s), "qs": q})


_SLOW = {
    "Q4_0": _slow_q4_0,
    "Q4_1": _slow_q4_1,
    "Q5_0": _slow_q5_0,
    "Q5_1": _slow_q5_1,
    "Q8_0": _slow_q8_0,
    "Q8_1": _slow_q8_1,
}


def _ref_encode(name: str, rows: np.ndarray) -> np.ndarray:
    """``quantize_row_<name>_ref`` on every block: the chunked fast path, the general one where needed."""
    return _encode_chunked(name, _blocks_of(rows), _FAST[name], _SLOW[name])


def encode_q4_0(rows: np.ndarray, imatrix=None) -> np.ndarray:
    if imatrix is None:
        return _ref_encode("Q4_0", rows)
    x = _blocks_of(rows)
    w = _row_weights(rows, imatrix).reshape(-1, QK)
    d, L = _make_qx_quants(x, 8, w)
    return _finish("Q4_0", {"d": fp32_to_fp16(d), "qs": _pack_nibbles_raw(L)})


def encode_q4_1(rows: np.ndarray, imatrix=None) -> np.ndarray:
    if imatrix is None:
        return _ref_encode("Q4_1", rows)
    x = _blocks_of(rows)
    w = _row_weights(rows, imatrix).reshape(-1, QK)
    d, mn, L = _make_qkx3_quants(x, 15, w)
    return _finish("Q4_1", {"d": fp32_to_fp16(d), "m": fp32_to_fp16(mn), "qs": _pack_nibbles_raw(L)})


def encode_q5_0(rows: np.ndarray, imatrix=None) -> np.ndarray:
    if imatrix is None:
        return _ref_encode("Q5_0", rows)
    x = _blocks_of(rows)
    w = _row_weights(rows, imatrix).reshape(-1, QK)
    d, L = _make_qx_quants(x, 16, w)
    return _finish("Q5_0", {"d": fp32_to_fp16(d), "qh": _pack_qh(L), "qs": _pack_nibbles(L)})


def encode_q5_1(rows: np.ndarray, imatrix=None) -> np.ndarray:
    if imatrix is None:
        return _ref_encode("Q5_1", rows)
    x = _blocks_of(rows)
    w = _row_weights(rows, imatrix).reshape(-1, QK)
    d, mn, q = _make_qkx3_quants(x, 31, w)
    return _finish("Q5_1", {"d": fp32_to_fp16(d), "m": fp32_to_fp16(mn), "qh": _pack_qh(q), "qs": _pack_nibbles(q)})


def encode_q8_0(rows: np.ndarray, imatrix=None) -> np.ndarray:
    """``quantize_row_q8_0_ref``; ggml ignores the imatrix for Q8_0."""
    return _ref_encode("Q8_0", rows)


def encode_q8_1(rows: np.ndarray, imatrix=None) -> np.ndarray:
    """``quantize_row_q8_1_ref`` (``s = fp16(d * sum(q))``); the imatrix is ignored."""
    return _ref_encode("Q8_1", rows)
