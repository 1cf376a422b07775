"""Compiled decoders of IQ3_XXS and IQ3_S (4-weight vectors from 3-bit grids, with signs), written as ggml's
``dequantize_row_iq3_*`` loops.  Kernels take ``x`` (n_blocks, type_size) uint8 little-endian blocks, ``y``
(n_blocks, 256) float32 and the tables :func:`tables` names: the grid as float32 rows and the sign factors
(``sign[s][j]`` is ggml's ``s & kmask_iq2xs[j] ? -1.f : 1.f``)."""

from __future__ import annotations

import numpy as np

from . import _tables
from ._jit import helper, kernel, routine
from ._scalar import nearest_int, put_fp16
from .legacy import u16, u32


def tables(name: str) -> tuple:
    """The lookup tables the decoder of ``name`` takes after ``x, y``."""
    if name == "IQ3_XXS":
        return (
            _tables.fp16(),
            _tables.grid_floats("iq3xxs_grid"),
            _tables.small("ksigns_iq2xs"),
            _tables.sign_factors(),
        )
    return (_tables.fp16(), _tables.grid_floats("iq3s_grid"), _tables.sign_factors())


@kernel
def decode_iq3_xxs(x, y, f16, grid, ksigns, sign):
    # d @0, qs[64] @2, scales_and_signs (8 words) @66
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            aux = u32(b, 66 + 4 * ib)
            db = d * (np.float32(0.5) + np.float32(aux >> 28)) * np.float32(0.5)
            for l in range(4):
                s = sign[ksigns[(aux >> (7 * l)) & 127]]
                g1 = grid[b[2 + 8 * ib + 2 * l]]
                g2 = grid[b[2 + 8 * ib + 2 * l + 1]]
                o = out[32 * ib + 8 * l : 32 * ib + 8 * l + 8]
                for j in range(4):
                    o[j] = db * g1[j] * s[j]
                    o[j + 4] = db * g2[j] * s[j + 4]


@kernel
def decode_iq3_s(x, y, f16, grid, sign):
    # d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106
    for i in range(x.shape[0]):
        b, out = x[i], y[i]
        d = f16[u16(b, 0)]
        for ib in range(8):
            sc = np.int32(b[106 + ib // 2]) >> (4 * (ib % 2))
            db = d * np.float32(1 + 2 * (sc & 0xF))
            qh = np.int32(b[66 + ib])
            for l in range(4):
                g1 = grid[np.int32(b[2 + 8 * ib + 2 * l]) | ((qh << (8 - 2 * l)) & 256)]
                g2 = grid[np.int32(b[2 + 8 * ib + 2 * l + 1]) | ((qh << (7 - 2 * l)) & 256)]
                s = sign[b[74 + 4 * ib + l]]
                o = out[32 * ib + 8 * l : 32 * ib + 8 * l + 8]
                for j in range(4):
                    o[j] = db * g1[j] * s[j]
                    o[j + 4] = db * g2[j] * s[j + 4]


# ------------------------------------------------------------------------------------------------ encoders
# quantize_row_iq3_xxs_impl / quantize_row_iq3_s_impl, group of 32 weights by group.  Kernels take ``x``
# (n_blocks, 256) float32, ``y`` (n_blocks, type_size) uint8, ``qw`` (blocks per row, 256) importance weights
# ((0, 256): none) and :func:`encode_tables` (the numpy codec's ``iq3xs_init_impl`` grid: positions, code map,
# neighbour lists).  They return 0, or where ggml would abort 1 (no grid neighbour with an error below
# FLT_MAX) or 2 (a NaN group scale); the caller raises.

ABORT_NO_NEIGHBOUR = 1
ABORT_NAN_SCALE = 2


def encode_tables(name: str) -> tuple:
    """fp16, grid positions (n, 4), the code map and neighbour lists (:func:`_tables.code_neighbour_slots`)."""
    from ..iq3 import _grid

    g = _grid("iq3xxs_grid" if name == "IQ3_XXS" else "iq3s_grid")
    slot, lists = _tables.code_neighbour_slots(g.kmap, g.nb_start, g.nb_count, g.nb_flat, len(g.kmap))
    return _tables.fp16(), np.ascontiguousarray(g.q, dtype=np.float32), slot, lists


@routine
def grid_indices(xval, waux, idv, scale, gi, on, q, slot, lists):
    """Levels ``clamp(nearest_int(0.5 * (id * xval - 1)), 0, 7)`` of the 8 vectors of a group, as grid indices
    (``gi``; ``on[k]``: on the grid); an off-grid vector takes ``iq3_find_best_neighbour`` at ``scale``.
    Returns False where ggml aborts (no neighbour with an error below FLT_MAX)."""
    flt_max = np.float32(3.4028234663852886e38)
    for k in range(8):
        code = 0
        for i in range(4):
            l = min(max(nearest_int(np.float32(0.5) * (idv * xval[4 * k + i] - np.float32(1.0))), 0), 7)
            code |= l << (3 * i)
        g = slot[code]
        on[k] = g >= 0
        if g < 0:
            start, stop = _tables.neighbour_list(g, lists)
            g = -1
            best_d2 = flt_max
            for j in range(start, stop):
                p = lists[j]
                d2 = np.float32(0.0)
                for i in range(4):
                    diff = scale * q[p, i] - xval[4 * k + i]
                    d2 += waux[4 * k + i] * diff * diff
                if d2 < best_d2:
                    best_d2 = d2
                    g = p
            if g < 0:
                return False
        gi[k] = g
    return True


@helper
def group_sums(gi, wx, weight, q):
    """(sum w*xval*q, sum w*q*q) over the 32 weights of a group, in order."""
    sumqx = np.float32(0.0)
    sumq2 = np.float32(0.0)
    for k in range(8):
        for i in range(4):
            v = q[gi[k], i]
            sumqx += wx[4 * k + i] * v
            sumq2 += weight[4 * k + i] * v * v
    return sumqx, sumq2


@routine
def search_group(
    xval, weight, gmax, n_candidates, init_on_grid, recheck_all, gi_best, waux, wx, gi, on, on_best, q, slot, lists
):
    """The scale search of one group (see the numpy codec's ``_search_groups``): fills ``gi_best`` and returns
    (scale, ok)."""
    for j in range(32):
        waux[j] = np.sqrt(weight[j])
        wx[j] = weight[j] * xval[j]
    best = np.float32(0.0)
    scale = gmax / np.float32(15.0)  # 2 * kMaxQ - 1
    for k in range(8):
        gi_best[k] = slot[0] if slot[0] >= 0 else -1  # the grid index of code 0 (ggml: kmap[0])
        on_best[k] = init_on_grid
    for i_s in range(-n_candidates, n_candidates + 1):
        idv = (np.float32(15.0) + np.float32(i_s) * np.float32(0.2)) / gmax
        this_scale = np.float32(1.0) / idv
        if not grid_indices(xval, waux, idv, this_scale, gi, on, q, slot, lists):
            return scale, False
        sumqx, sumq2 = group_sums(gi, wx, weight, q)
        if sumq2 > 0 and sumqx * sumqx > best * sumq2:
            scale = sumqx / sumq2
            best = scale * sumqx
            for k in range(8):
                gi_best[k] = gi[k]
                on_best[k] = on[k]
    all_on = True
    for k in range(8):
        all_on = all_on and on_best[k]
    if not all_on and scale > 0:
        sc = scale
        if not grid_indices(xval, waux, np.float32(1.0) / sc, sc, gi, on, q, slot, lists):
            return scale, False
        for k in range(8):
            if recheck_all or not on_best[k]:
                gi_best[k] = gi[k]
        sumqx, sumq2 = group_sums(gi_best, wx, weight, q)
        scale = sumqx / sumq2 if sumq2 > 0 else sc
    return scale, True


@routine
def block_weights(xb, q, weight):
    """``x * x``, or with importance weights ``qw * sqrtf(sigma2 + x * x)``, sigma2 = 2 * sum(x^2) / 256."""
    if q.shape[0] == 0:
        for j in range(256):
            weight[j] = xb[j] * xb[j]
        return
    s = np.float32(0.0)
    for j in range(256):
        s += xb[j] * xb[j]
    sigma2 = np.float32(2.0) * s / np.float32(256.0)
    for j in range(256):
        weight[j] = q[j] * np.sqrt(sigma2 + xb[j] * xb[j])


@kernel
def encode_iq3_xxs(x, y, qw, f16, q, slot, lists):
    # d @0, qs[64] @2, scales_and_signs (8 words) @66
    weight = np.empty(256, dtype=np.float32)
    xval = np.empty(32, dtype=np.float32)
    waux = np.empty(32, dtype=np.float32)
    wx = np.empty(32, dtype=np.float32)
    gi = np.empty(8, dtype=np.int32)
    gi_best = np.empty((8, 8), dtype=np.int32)
    on = np.empty(8, dtype=np.bool_)
    on_best = np.empty(8, dtype=np.bool_)
    scales = np.empty(8, dtype=np.float32)
    sas = np.empty(8, dtype=np.uint32)
    none = np.empty(0, dtype=np.float32)
    status = 0
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        out[:] = 0
        block_weights(xb, qw[i % qw.shape[0]] if qw.shape[0] else none, weight)
        for ib in range(8):
            xs = xb[32 * ib : 32 * ib + 32]
            w = weight[32 * ib : 32 * ib + 32]
            signs = np.uint32(0)
            for k in range(4):
                s = 0
                nflip = 0
                for j in range(8):
                    v = xs[8 * k + j]
                    if v >= 0:
                        xval[8 * k + j] = v
                    else:
                        xval[8 * k + j] = -v
                        s |= 1 << j
                        nflip += 1
                if nflip % 2:  # odd: flip the weight with the smallest w * x * x
                    imin = 0
                    for j in range(1, 8):
                        a = 8 * k + j
                        m = 8 * k + imin
                        if w[a] * xs[a] * xs[a] < w[m] * xs[m] * xs[m]:
                            imin = j
                    xval[8 * k + imin] = -xval[8 * k + imin]
                    s ^= 1 << imin
                signs |= np.uint32(s & 127) << (7 * k)
            gmax = xval[0]
            for j in range(1, 32):
                gmax = gmax if gmax > xval[j] else xval[j]
            if gmax < np.float32(1e-8):  # GROUP_MAX_EPS_IQ3_XXS
                scales[ib] = 0
                sas[ib] = 0
                for k in range(8):
                    gi_best[ib, k] = 0
                continue
            scale, ok = search_group(
                xval, w, gmax, 15, True, False, gi_best[ib], waux, wx, gi, on, on_best, q, slot, lists
            )
            if not ok:
                return ABORT_NO_NEIGHBOUR
            if scale < 0:
                scale = -scale
                signs = ~signs & np.uint32(0x0FFFFFFF)
            if not scale >= 0:
                status = ABORT_NAN_SCALE
            scales[ib] = scale
            sas[ib] = signs
        if status:
            return status
        max_scale = scales[0]
        for ib in range(1, 8):
            max_scale = max(max_scale, scales[ib])
        if not max_scale > 0:
            continue
        d = max_scale / np.float32(31.0)
        put_fp16(out, 0, d * np.float32(1.0125), f16)
        idv = np.float32(1.0) / d
        for ib in range(8):
            l = min(max(nearest_int(np.float32(0.5) * (idv * scales[ib] - np.float32(1.0))), 0), 15)
            word = sas[ib] | (np.uint32(l) << 28)
            for b in range(4):
                out[66 + 4 * ib + b] = np.uint8((word >> (8 * b)) & 0xFF)
            for k in range(8):
                out[2 + 8 * ib + k] = np.uint8(gi_best[ib, k] & 0xFF)
    return status


@kernel
def encode_iq3_s(x, y, qw, f16, q, slot, lists):
    # d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106.  ggml advances its qs / signs pointers only
    # past the groups it did not skip (max == 0): the live groups' data is packed to the front of the block.
    weight = np.empty(256, dtype=np.float32)
    xval = np.empty(32, dtype=np.float32)
    waux = np.empty(32, dtype=np.float32)
    wx = np.empty(32, dtype=np.float32)
    gi = np.empty(8, dtype=np.int32)
    gi_best = np.empty(8, dtype=np.int32)
    on = np.empty(8, dtype=np.bool_)
    on_best = np.empty(8, dtype=np.bool_)
    scales = np.empty(8, dtype=np.float32)
    sg = np.empty(4, dtype=np.uint8)
    none = np.empty(0, dtype=np.float32)
    status = 0
    for i in range(x.shape[0]):
        xb, out = x[i], y[i]
        out[:] = 0
        block_weights(xb, qw[i % qw.shape[0]] if qw.shape[0] else none, weight)
        stored = 0  # groups written so far (a zero group is skipped)
        for ib in range(8):
            xs = xb[32 * ib : 32 * ib + 32]
            w = weight[32 * ib : 32 * ib + 32]
            for k in range(4):
                s = 0
                for j in range(8):
                    v = xs[8 * k + j]
                    if v >= 0:
                        xval[8 * k + j] = v
                    else:
                        xval[8 * k + j] = -v
                        s |= 1 << j
                sg[k] = np.uint8(s)
            gmax = xval[0]
            for j in range(1, 32):
                gmax = gmax if gmax > xval[j] else xval[j]
            if gmax == 0:
                scales[ib] = 0
                continue
            scale, ok = search_group(xval, w, gmax, 9, False, True, gi_best, waux, wx, gi, on, on_best, q, slot, lists)
            if not ok:
                return ABORT_NO_NEIGHBOUR
            if scale < 0:
                scale = -scale
                for k in range(4):
                    sg[k] = ~sg[k]
            if not scale >= 0:
                status = ABORT_NAN_SCALE
            scales[ib] = scale
            qh = 0
            for k in range(8):
                out[2 + 8 * stored + k] = np.uint8(gi_best[k] & 0xFF)
                qh |= ((gi_best[k] >> 8) & 1) << k
            out[66 + ib] = np.uint8(qh)
            for k in range(4):
                out[74 + 4 * stored + k] = sg[k]
            stored += 1
        if status:
            return status
        max_scale = scales[0]
        for ib in range(1, 8):
            max_scale = max(max_scale, scales[ib])
        if not max_scale > 0:
            continue
        d = max_scale / np.float32(31.0)
        put_fp16(out, 0, d * np.float32(1.033), f16)
        idv = np.float32(1.0) / d
        for ib in range(8):
            l = min(max(nearest_int(np.float32(0.5) * (idv * scales[ib] - np.float32(1.0))), 0), 15)
            out[106 + ib // 2] |= np.uint8(l << (4 * (ib % 2)))
    return status
