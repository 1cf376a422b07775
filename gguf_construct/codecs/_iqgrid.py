"""Lattice-grid machinery of ggml's IQ quantizers (``iq2xs_init_impl`` / ``iq3xs_init_impl`` and
``iq2_find_best_neighbour`` / ``iq3_find_best_neighbour``), vectorised.

A grid is a list of ``dim``-dimensional points whose coordinates are small levels ``l`` (stored ``bits`` bits
per coordinate in a code ``u = sum(l_k << bits*k)``); the quantizer works with the odd positions ``2*l + 1``.
For every code that is not a grid point ggml precomputes a neighbour list: the grid points at the ``nwant``
smallest distinct squared distances, ordered by (distance, grid index).  The quantizer then picks, among the
neighbours of an off-grid code, the first one with the smallest weighted error
``sum_i w_i * (scale*q_i - x_i)**2`` (accumulated in float32 in coordinate order, strict ``<`` against
``FLT_MAX``).

ggml builds lists for every code below ``kmap_size``; only codes whose levels are all ``<= max_level`` can
be looked up by the quantizers (they clamp the levels), so only those are built here.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._common import FLT_MAX


class GridAbort(ValueError):
    """Raised where ggml's quantizer would hit a ``GGML_ASSERT`` / ``GGML_ABORT`` (e.g. NaN or inf inputs
    that leave no neighbour with a finite error, or a final point that is not on the grid)."""


def check_neighbour_found(best_errors: np.ndarray) -> None:
    """ggml's ``GGML_ASSERT(grid_index >= 0)`` after a neighbour search: a candidate is taken only while its
    error is below ``FLT_MAX`` (``d2 < best``, starting from ``FLT_MAX``), so a point whose smallest error is not
    (NaN or overflowing inputs or weights) aborts ggml, and raises here."""
    if not bool(np.all(best_errors < FLT_MAX)):
        raise GridAbort("ggml aborts: no grid neighbour with an error below FLT_MAX (GGML_ASSERT(grid_index >= 0))")


def check_group_scales(scales: np.ndarray) -> None:
    """ggml's ``GGML_ASSERT(scale >= 0)`` on the float scale of every group of a chunk (groups the quantizer
    skipped hold 0): a NaN scale -- from NaN or overflowing inputs or weights -- aborts ggml, so it raises."""
    if not bool(np.all(scales >= 0)):
        raise GridAbort("ggml aborts: a group scale is NaN (GGML_ASSERT(scale >= 0))")


class LatticeGrid:
    """One quantization grid: code -> grid index map and the neighbour lists of off-grid codes."""

    def __init__(self, levels: np.ndarray, bits: int, nwant: int, max_level: int):
        levels = np.asarray(levels)
        self.size, self.dim = levels.shape
        self.bits = bits
        self.nwant = nwant
        self.max_level = max_level
        #: (size, dim) int8 levels of every grid point
        self.levels = np.ascontiguousarray(levels, dtype=np.int8)
        #: (size, dim) float32 positions 2*l + 1 (what the error is measured with)
        self.pos = (2 * self.levels.astype(np.float32) + 1).astype(np.float32)
        shifts = bits * np.arange(self.dim)
        n_codes = 1 << (bits * self.dim)
        self.codes = (self.levels.astype(np.int64) << shifts).sum(axis=1)
        #: code -> grid index, -1 where the code is not a grid point
        self.map = np.full(n_codes, -1, dtype=np.int32)
        self.map[self.codes] = np.arange(self.size, dtype=np.int32)
        self._shifts = shifts
        self.n_levels = int(self.levels.max()) + 1
        self._qvals = (2 * np.arange(self.n_levels) + 1).astype(np.float32)
        # running sums over the first coordinates are tabulated per row (n_levels**prefix entries)
        self._prefix = 1
        while self._prefix < self.dim and self.n_levels ** (self._prefix + 1) <= 27:
            self._prefix += 1
        self._prefix_code = np.zeros(self.size, dtype=np.intp)
        for i in range(self._prefix):
            self._prefix_code = self._prefix_code * self.n_levels + self.levels[:, i]
        self._build_neighbours()

    # ---------------------------------------------------------------------------------------------------------

    def _build_neighbours(self) -> None:
        # every code reachable by the quantizers (all levels <= max_level) that is not a grid point
        pts = np.array(list(itertools.product(range(self.max_level + 1), repeat=self.dim)), dtype=np.int64)
        pts = pts[:, ::-1]  # any order will do; keep coordinate k at column k
        codes = (pts << self._shifts).sum(axis=1)
        off = self.map[codes] < 0
        pts, codes = pts[off], codes[off]
        # squared distances between positions 2l+1: |p|^2 + |g|^2 - 2 p.g, exact (small integers in float32)
        pp = (2 * pts + 1).astype(np.float32)
        gp = self.pos
        d2 = pp @ (-2 * gp.T)
        d2 += (gp * gp).sum(axis=1)[None, :]
        d2 += (pp * pp).sum(axis=1)[:, None]
        d2 = d2.astype(np.int32)
        # the nwant smallest distinct distances of every row
        thr = d2.min(axis=1)
        for _ in range(self.nwant - 1):
            bigger = np.where(d2 > thr[:, None], d2, np.iinfo(np.int32).max)
            nxt = bigger.min(axis=1)
            thr = np.where(nxt < np.iinfo(np.int32).max, nxt, thr)
        sel = d2 <= thr[:, None]
        counts = sel.sum(axis=1)
        width = int(counts.max())
        # order the selected points of each row by (distance, grid index)
        r, j = np.nonzero(sel)
        order = np.lexsort((j, d2[r, j], r))
        r, j = r[order], j[order]
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        nbr = np.full((len(pts), width), -1, dtype=np.int32)
        nbr[r, np.arange(len(r)) - starts[r]] = j
        #: code -> row of ``neighbours`` (-1 for grid points and unreachable codes)
        self.row = np.full(self.map.shape, -1, dtype=np.int32)
        self.row[codes] = np.arange(len(codes), dtype=np.int32)
        #: (n_off_grid, width) neighbour grid indices in ggml's order, padded with -1
        self.neighbours = nbr
        self.counts = counts.astype(np.int32)
        # the same lists back to back (CSR): list of row r is flat[starts[r]:starts[r] + counts[r]]
        self.flat = j.astype(np.int32)
        self.starts = starts.astype(np.intp)
        # per list entry: the prefix code and the levels of the candidate (saves a gather per use)
        self._flat_prefix = self._prefix_code[self.flat]
        self._flat_levels = [np.ascontiguousarray(self.levels[self.flat, i], dtype=np.intp) for i in range(self.dim)]

    # ---------------------------------------------------------------------------------------------------------

    def code(self, L: np.ndarray) -> np.ndarray:
        """Codes of level vectors ``L`` of shape (..., dim) (levels already clamped to 0..max_level)."""
        L = np.asarray(L, dtype=np.int32)
        u = L[..., 0].copy()
        for k in range(1, self.dim):
            u |= L[..., k] << (self.bits * k)
        return u

    def best_neighbour(self, u: np.ndarray, xval: np.ndarray, w: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """ggml's ``iq*_find_best_neighbour`` for many off-grid codes at once.

        ``u``: (n,) off-grid codes; ``xval``, ``w``: (n, dim) float32; ``scale``: (n,) float32.
        Returns the (n,) chosen grid indices.  Raises :class:`GridAbort` where ggml would abort (no neighbour
        with an error below ``FLT_MAX``).

        A candidate's error is a float32 sum, in coordinate order, of the terms ``w_i * (scale*q_i - x_i)**2``
        (computed as ggml does: ``diff = scale*q - x; w*diff*diff``), each of which depends only on the
        candidate's level at coordinate ``i``: the terms are computed once per row and level, then summed
        per candidate in ggml's order, so NaN/inf behave as in C too.
        """
        n = u.shape[0]
        if n == 0:
            return np.zeros(0, dtype=np.int32)
        rows = self.row[u]
        if (rows < 0).any():
            raise GridAbort("ggml aborts: code without a neighbour list")
        scale = np.asarray(scale, dtype=np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            diff = scale[:, None, None] * self._qvals[None, None, :] - xval[:, :, None]
            terms = w[:, :, None] * diff
            terms *= diff  # (n, dim, n_levels)
        return self._csr(rows, terms)

    def _csr(self, rows: np.ndarray, terms: np.ndarray) -> np.ndarray:
        """ggml's choice for every row: the exact errors of all candidates, back to back.

        ``terms`` (n, dim, n_levels) are the per-coordinate error terms.  The running sums over the first
        ``_prefix`` coordinates are tabulated per row for every level combination (the same float32 additions
        in the same order as ggml's loop), so each candidate costs one lookup plus one per remaining
        coordinate."""
        n = rows.shape[0]
        nl = self.n_levels
        cnt = self.counts[rows].astype(np.intp)
        ends = np.cumsum(cnt)
        first = ends - cnt
        item = np.repeat(np.arange(n, dtype=np.intp), cnt)
        k = np.repeat(self.starts[rows] - first, cnt)
        k += np.arange(int(ends[-1]), dtype=np.intp)  # positions in the flat lists
        with np.errstate(over="ignore", invalid="ignore"):
            pre = terms[:, 0, :]
            for i in range(1, self._prefix):
                pre = (pre[:, :, None] + terms[:, i, None, :]).reshape(n, -1)
            idx = item * pre.shape[1]
            idx += self._flat_prefix[k]
            d2 = pre.reshape(-1)[idx]
            item *= nl
            for i in range(self._prefix, self.dim):
                ti = np.ascontiguousarray(terms[:, i, :]).reshape(-1)
                np.add(item, self._flat_levels[i][k], out=idx)
                d2 += ti[idx]
        d2[~(d2 < FLT_MAX)] = np.inf
        mins = np.minimum.reduceat(d2, first)
        check_neighbour_found(mins)
        item //= nl
        hit = np.flatnonzero(d2 == mins[item])
        return self.flat[k[hit[np.searchsorted(hit, first)]]]

    def exact_reference(self, u, xval, w, scale) -> np.ndarray:
        """A direct transcription of ggml's loop (every candidate, every coordinate), for testing."""
        return self._exact(self.row[u], xval, w, np.asarray(scale, dtype=np.float32))

    def _exact(self, rows, xval, w, scale) -> np.ndarray:
        n = rows.shape[0]
        counts = self.counts[rows]
        out = np.empty(n, dtype=np.int32)
        # bucket by list length (powers of two) so that padding costs at most a factor 2
        lo, hi = 0, 8
        top = int(counts.max()) if n else 0
        while lo < top:
            sel = (counts > lo) & (counts <= hi)
            if sel.any():
                out[sel] = self._search(rows[sel], xval[sel], w[sel], scale[sel], int(counts[sel].max()))
            lo, hi = hi, 2 * hi
        return out

    def _search(self, rows, xval, w, scale, width) -> np.ndarray:
        n = rows.shape[0]
        cand = self.neighbours[rows, :width]  # (n, width)
        q = self.pos[np.maximum(cand, 0)]  # (n, width, dim)
        sc = scale[:, None]
        d2 = np.zeros((n, width), dtype=np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            for i in range(self.dim):
                diff = sc * q[:, :, i]
                diff -= xval[:, i : i + 1]
                t = w[:, i : i + 1] * diff
                t *= diff
                d2 += t
        # strict "d2 < best" from FLT_MAX: NaN, inf and padding never win, the first minimum does
        d2[~(d2 < FLT_MAX) | (cand < 0)] = np.inf
        best = np.argmin(d2, axis=1)
        ar = np.arange(n)
        check_neighbour_found(d2[ar, best])
        return cand[ar, best]
