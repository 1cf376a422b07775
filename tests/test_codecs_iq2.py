"""IQ2 codecs (IQ2_XXS, IQ2_XS, IQ2_S): bit-exactness against ggml and basic properties.

Ground truth comes from ggml's own C code:

* ``../shared/golden/<id>_<name>.npz`` (project-wide reference vectors; the tests skip when absent);
* ``tests/golden/<id>_<name>.npz``: small cases committed with the repository (6 rows x 256 values: normal,
  heavy-tailed, tiny, large, sparse with zero sub-blocks, constant; an importance matrix with zeros; random raw
  blocks), produced with a ctypes wrapper around libggml-base 0.25.3 (``ggml_quantize_chunk``,
  ``dequantize_row_*``).  Same array names as the shared files; ``q``/``deq_q`` only for IQ2_S, since ggml
  refuses to quantize IQ2_XXS / IQ2_XS without an importance matrix.

``encode(decode(q)) == q`` is not a property of these formats (the encoder's scale and grid search need not
land on the same point again), so it is not tested.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct import codecs

from codec_golden import assert_same as _assert_same

NAMES = ["IQ2_XXS", "IQ2_XS", "IQ2_S"]


def test_iq2_s_without_imatrix_differs_from_unit_imatrix():
    x = np.random.default_rng(2).standard_normal((2, 256)).astype(np.float32)
    assert codecs.quantize("IQ2_S", x) != codecs.quantize("IQ2_S", x, imatrix=np.ones(256, np.float32))


def test_zero_and_tiny_blocks():
    x = np.zeros((1, 512), np.float32)
    x[0, 256:] = 1e-20  # below GROUP_MAX_EPS (1e-15 / 1e-8): every sub-block is skipped
    for name in NAMES:
        q = codecs.quantize(name, x, imatrix=np.ones(512, np.float32))
        assert not np.any(codecs.dequantize(name, q))


@pytest.mark.parametrize("name", NAMES)
@given(data=st.binary(min_size=1, max_size=4 * 82), scale=st.floats(-2.0, 2.0, width=16))
def test_big_endian_decodes_the_same(name, data, scale):
    t = codecs.type_spec(name)
    n = max(1, len(data) // t.type_size)
    raw = np.resize(np.frombuffer(data, np.uint8), n * t.type_size).copy()
    blocks = raw.view(codecs.block_dtype(name))
    blocks["d"] = np.float16(scale)
    little = codecs.dequantize(name, raw.tobytes())
    big = codecs.dequantize(name, codecs.swap_blocks(name, raw.tobytes(), "little", "big"), byte_order="big")
    _assert_same(big, little, name)
    assert little.shape == (n * 256,)


def test_nan_input_aborts_like_ggml():
    # ggml's neighbour search finds no candidate with a finite error and aborts (GGML_ASSERT); we raise
    x = np.random.default_rng(3).standard_normal((1, 256)).astype(np.float32)
    x[0, 5] = np.nan
    for name in ("IQ2_XS", "IQ2_S"):
        with pytest.raises(ValueError, match="ggml"):
            codecs.quantize(name, x, imatrix=np.ones(256, np.float32))


@pytest.mark.parametrize("grid_name", ["iq2xxs_grid", "iq2xs_grid", "iq2s_grid"])
@given(seed=st.integers(0, 2**32 - 1), ties=st.booleans())
@settings(max_examples=10, deadline=None)
def test_neighbour_search_matches_direct_loop(grid_name, seed, ties):
    from gguf_construct.codecs.iq2 import _lattice

    grid = _lattice(grid_name)
    rng = np.random.default_rng(seed)
    u = rng.choice(np.nonzero(grid.row >= 0)[0], 500)
    if ties:  # small integers: many exactly equal errors, the first candidate in ggml's order must win
        x = rng.integers(0, 6, (500, 8)).astype(np.float32)
        w = rng.integers(0, 3, (500, 8)).astype(np.float32)
        sc = rng.choice([0.5, 1.0, 2.0], 500).astype(np.float32)
    else:
        x = np.abs(rng.standard_normal((500, 8))).astype(np.float32)
        w = rng.uniform(0, 2, (500, 8)).astype(np.float32)
        sc = rng.uniform(0.1, 1.0, 500).astype(np.float32)
    assert np.array_equal(grid.best_neighbour(u, x, w, sc), grid.exact_reference(u, x, w, sc))


def test_neighbour_lists_follow_ggml():
    # ggml: for an off-grid point, all grid points at the nwant smallest distinct distances, by (distance, index)
    from gguf_construct.codecs.iq2 import _lattice

    for grid_name, nwant in (("iq2xxs_grid", 2), ("iq2xs_grid", 2), ("iq2s_grid", 1)):
        grid = _lattice(grid_name)
        pos = 2 * grid.levels.astype(np.int64) + 1
        for u in np.nonzero(grid.row >= 0)[0][::97]:
            p = 2 * ((u >> (2 * np.arange(8))) & 3) + 1
            d2 = ((pos - p) ** 2).sum(axis=1)
            order = sorted(range(grid.size), key=lambda j: (d2[j], j))
            dists = sorted(set(d2.tolist()))[:nwant]
            want = [j for j in order if d2[j] in dists]
            r = grid.row[u]
            assert grid.neighbours[r, : grid.counts[r]].tolist() == want
