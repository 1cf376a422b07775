"""The quantization searches of ggml-quants.c that several compiled encoders share (``make_qx_quants``,
``make_qkx2_quants`` / ``make_qkx3_quants``, ``make_qp_quants``), one block of weights at a time, in ggml's order
of float operations."""

from __future__ import annotations

import numpy as np

from ._jit import helper, routine
from ._scalar import nearest_int

_EPS = np.float32(1e-15)  # GROUP_MAX_EPS


@helper
def first_abs_max(x):
    """``amax = 0; max = 0; for v: if (fabsf(v) > amax) { amax = fabsf(v); max = v; }`` -> (amax, max)."""
    amax = np.float32(0.0)
    mx = np.float32(0.0)
    for i in range(x.shape[0]):
        ax = abs(x[i])
        if ax > amax:
            amax = ax
            mx = x[i]
    return amax, mx


@routine
def make_qx_quants(x, nmax, L, w):
    """``make_qx_quants(n, nmax, x, L, rmse_type = 1, w)`` (``w``: the weights, ``x * x`` without an imatrix)."""
    n = x.shape[0]
    amax, mx = first_abs_max(x)
    if amax < _EPS:
        for i in range(n):
            L[i] = 0
        return np.float32(0.0)
    iscale = -np.float32(nmax) / mx
    sumlx = np.float32(0.0)
    suml2 = np.float32(0.0)
    for i in range(n):
        l = min(max(nearest_int(iscale * x[i]), -nmax), nmax - 1)
        L[i] = l + nmax
        sumlx += w[i] * x[i] * np.float32(l)
        suml2 += w[i] * np.float32(l) * np.float32(l)
    scale = sumlx / suml2 if suml2 != 0 else np.float32(0.0)
    best = scale * sumlx
    for i_s in range(-9, 10):
        if i_s == 0:
            continue
        iscale = -(np.float32(nmax) + np.float32(0.1) * np.float32(i_s)) / mx
        sumlx = np.float32(0.0)
        suml2 = np.float32(0.0)
        for i in range(n):
            l = np.float32(min(max(nearest_int(iscale * x[i]), -nmax), nmax - 1))
            sumlx += w[i] * x[i] * l
            suml2 += w[i] * l * l
        if suml2 > 0 and sumlx * sumlx > best * suml2:
            for i in range(n):
                L[i] = nmax + min(max(nearest_int(iscale * x[i]), -nmax), nmax - 1)
            scale = sumlx / suml2
            best = scale * sumlx
    return scale


@helper
def _qkx_levels(x, w, mn, iscale, nmax, Lx, WL, WL2, WXL):
    """One step's levels and the terms of its sums, element by element (a loop LLVM vectorizes: the sums,
    whose order counts, are added up apart from it)."""
    for i in range(x.shape[0]):
        l = min(max(nearest_int(iscale * (x[i] - mn)), 0), nmax)
        Lx[i] = l
        wl = w[i] * np.float32(l)
        WL[i] = wl
        WL2[i] = wl * np.float32(l)
        WXL[i] = wl * x[i]


@helper
def _qkx_errors(x, w, Lx, scale, mn, use_mad, E):
    """The weighted error terms of the levels ``Lx`` with this scale and minimum (``|d|`` or ``d * d``)."""
    for i in range(x.shape[0]):
        diff = scale * np.float32(Lx[i]) + mn - x[i]
        diff = abs(diff) if use_mad else diff * diff
        E[i] = w[i] * diff


@helper
def _qkx_fit(sum_w, sum_x, sum_l, sum_l2, sum_xl):
    """(fits, scale, min) of one step from its sums: the least-squares line, its minimum clipped to 0."""
    D = sum_w * sum_l2 - sum_l * sum_l
    if not D > 0:
        return False, np.float32(0.0), np.float32(0.0)
    this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
    this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
    if this_min > 0:
        this_min = np.float32(0.0)
        this_scale = sum_xl / sum_l2
    return True, this_scale, this_min


@helper
def qkx_scratch(n):
    """(Laux, F): the scratch :func:`make_qkx_quants` takes for groups of ``n`` weights, allocated once per
    kernel call."""
    return np.empty(2 * n, dtype=np.int32), np.empty(6 * n, dtype=np.float32)


@routine
def make_qkx_quants(x, w, L, Laux, F, nmax, rmin, rdelta, nstep, use_mad, v3):
    """``make_qkx2_quants`` (``v3`` False) / ``make_qkx3_quants`` with weights ``w``: returns (scale, -min).

    Scratch (:func:`qkx_scratch`): ``Laux`` 2n levels, ``F`` 6n floats.  Every step's floats are ggml's, in
    ggml's order; what is done per element apart from the sums runs vectorized, and steps run two at a time,
    so that the second's chains of additions overlap the first's.  The second step is computed with the minimum
    the first started from; when the first is taken and moves the minimum, the second is done again.  Sums of
    a step that does not take part (no second step left, or no fit) are computed over stale scratch and
    ignored."""
    n = x.shape[0]
    if Laux.shape[0] < 2 * n or F.shape[0] < 6 * n:
        raise ValueError("make_qkx_quants: Laux must hold 2n levels and F 6n floats")
    mn = x[0]
    mx = x[0]
    sum_w = w[0]
    sum_x = sum_w * x[0]
    for i in range(1, n):
        if x[i] < mn:
            mn = x[i]
        if x[i] > mx:
            mx = x[i]
        sum_w += w[i]
        sum_x += w[i] * x[i]
    if mn > 0:
        mn = np.float32(0.0)
    if (mx <= mn) if v3 else (mx == mn):
        for i in range(n):
            L[i] = 0
        return np.float32(0.0), -mn
    fnmax = np.float32(nmax)
    iscale = fnmax / (mx - mn)
    scale = np.float32(1.0) / iscale
    La, Lb = Laux[:n], Laux[n : 2 * n]
    WLa, WL2a, WXLa = F[:n], F[n : 2 * n], F[2 * n : 3 * n]
    WLb, WL2b, WXLb = F[3 * n : 4 * n], F[4 * n : 5 * n], F[5 * n : 6 * n]
    _qkx_levels(x, w, mn, iscale, nmax, L, WLa, WL2a, WXLa)  # the start: levels at nmax / (max - min)
    _qkx_errors(x, w, L, scale, mn, use_mad, WLa)
    best = np.float32(0.0)
    for i in range(n):
        best += WLa[i]
    i_s = 0
    while i_s <= nstep:
        two = i_s < nstep
        _qkx_levels(x, w, mn, (rmin + rdelta * np.float32(i_s) + fnmax) / (mx - mn), nmax, La, WLa, WL2a, WXLa)
        if two:
            _qkx_levels(x, w, mn, (rmin + rdelta * np.float32(i_s + 1) + fnmax) / (mx - mn), nmax, Lb, WLb, WL2b, WXLb)
        sla = sl2a = sxla = slb = sl2b = sxlb = np.float32(0.0)
        for i in range(n):
            sla += WLa[i]
            sl2a += WL2a[i]
            sxla += WXLa[i]
            slb += WLb[i]
            sl2b += WL2b[i]
            sxlb += WXLb[i]
        fa, scale_a, min_a = _qkx_fit(sum_w, sum_x, sla, sl2a, sxla)
        fb, scale_b, min_b = _qkx_fit(sum_w, sum_x, slb, sl2b, sxlb)
        fb = fb and two
        if fa:
            _qkx_errors(x, w, La, scale_a, min_a, use_mad, WLa)
        if fb:
            _qkx_errors(x, w, Lb, scale_b, min_b, use_mad, WLb)
        cur_a = cur_b = np.float32(0.0)
        for i in range(n):
            cur_a += WLa[i]
            cur_b += WLb[i]
        if fa and cur_a < best:
            for i in range(n):
                L[i] = La[i]
            best = cur_a
            scale = scale_a
            if min_a != mn:  # the second step started from another minimum: it runs again
                mn = min_a
                i_s += 1
                continue
        if fb and cur_b < best:
            for i in range(n):
                L[i] = Lb[i]
            best = cur_b
            scale = scale_b
            mn = min_b
        i_s += 2
    return scale, -mn


@routine
def make_qp_quants(x, nmax, L, w):
    """``make_qp_quants(n, nmax, x, L, w)``; ``L`` holds the uint8_t values."""
    n = x.shape[0]
    mx = np.float32(0.0)
    for i in range(n):
        mx = mx if mx > x[i] else x[i]
    if mx < _EPS:
        for i in range(n):
            L[i] = 0
        return np.float32(0.0)
    fnmax = np.float32(nmax)
    iscale = fnmax / mx
    for i in range(n):
        L[i] = nearest_int(iscale * x[i]) & 0xFF
    scale = np.float32(1.0) / iscale
    best_mse = np.float32(0.0)
    for i in range(n):
        diff = x[i] - scale * np.float32(L[i])
        best_mse += w[i] * diff * diff
    for i_s in range(-4, 5):
        if i_s == 0:
            continue
        iscale_is = (np.float32(0.1) * np.float32(i_s) + fnmax) / mx
        scale_is = np.float32(1.0) / iscale_is
        mse = np.float32(0.0)
        for i in range(n):
            l = min(nearest_int(iscale_is * x[i]), nmax)
            diff = x[i] - scale_is * np.float32(l)
            mse += w[i] * diff * diff
        if mse < best_mse:
            best_mse = mse
            iscale = iscale_is
    sumlx = np.float32(0.0)
    suml2 = np.float32(0.0)
    for i in range(n):
        l = min(nearest_int(iscale * x[i]), nmax)
        L[i] = l & 0xFF
        sumlx += w[i] * x[i] * np.float32(l)
        suml2 += w[i] * np.float32(l) * np.float32(l)
    for _ in range(5):
        n_changed = 0
        for i in range(n):
            li = np.float32(L[i])
            slx = sumlx - w[i] * x[i] * li
            sl2 = suml2 - w[i] * li * li
            if slx > 0 and sl2 > 0:
                new_l = min(nearest_int(x[i] * sl2 / slx), nmax)
                if new_l != L[i]:
                    slx += w[i] * x[i] * np.float32(new_l)
                    sl2 += w[i] * np.float32(new_l) * np.float32(new_l)
                    if slx * slx * suml2 > sumlx * sumlx * sl2:
                        L[i] = new_l & 0xFF
                        sumlx = slx
                        suml2 = sl2
                        n_changed += 1
        if n_changed == 0:
            break
    return sumlx / suml2 if suml2 > 0 else np.float32(0.0)


@helper
def sum_squares(x):
    """``s = 0; for v: s += v * v``."""
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


@routine
def make_qx_quants_lanes(X, nmax, L, W, scale, amax, mx, iscale, sumlx, suml2, best, upd):
    """:func:`make_qx_quants` for several groups side by side: column b of ``X`` (n, N) holds group b, whose
    weights are ``W[:, b]``, quants go to ``L[:, b]`` and scale to ``scale[b]``.  Each group's sums still run
    in ggml's order; the groups are independent lanes, which LLVM vectorizes (the other arguments are (N,)
    scratch arrays)."""
    n = X.shape[0]
    N = X.shape[1]
    fnmax = np.float32(nmax)
    for b in range(N):
        amax[b] = 0
        mx[b] = 0
    for i in range(n):
        for b in range(N):
            ax = abs(X[i, b])
            if ax > amax[b]:
                amax[b] = ax
                mx[b] = X[i, b]
    for b in range(N):
        iscale[b] = -fnmax / mx[b]
        sumlx[b] = 0
        suml2[b] = 0
    for i in range(n):
        for b in range(N):
            l = min(max(nearest_int(iscale[b] * X[i, b]), -nmax), nmax - 1)
            L[i, b] = l + nmax
            lf = np.float32(l)
            sumlx[b] += W[i, b] * X[i, b] * lf
            suml2[b] += W[i, b] * lf * lf
    for b in range(N):
        scale[b] = sumlx[b] / suml2[b] if suml2[b] != 0 else np.float32(0.0)
        best[b] = scale[b] * sumlx[b]
    for i_s in range(-9, 10):
        if i_s == 0:
            continue
        for b in range(N):
            iscale[b] = -(fnmax + np.float32(0.1) * np.float32(i_s)) / mx[b]
            sumlx[b] = 0
            suml2[b] = 0
        for i in range(n):
            for b in range(N):
                lf = np.float32(min(max(nearest_int(iscale[b] * X[i, b]), -nmax), nmax - 1))
                sumlx[b] += W[i, b] * X[i, b] * lf
                suml2[b] += W[i, b] * lf * lf
        any_upd = False
        for b in range(N):
            upd[b] = suml2[b] > 0 and sumlx[b] * sumlx[b] > best[b] * suml2[b]
            if upd[b]:
                any_upd = True
                scale[b] = sumlx[b] / suml2[b]
                best[b] = scale[b] * sumlx[b]
        if any_upd:
            for i in range(n):
                for b in range(N):
                    if upd[b]:
                        L[i, b] = nmax + min(max(nearest_int(iscale[b] * X[i, b]), -nmax), nmax - 1)
    for b in range(N):
        if amax[b] < _EPS:
            scale[b] = 0
            for i in range(n):
                L[i, b] = 0
