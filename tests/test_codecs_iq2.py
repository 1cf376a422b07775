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

TYPES = {16: "iq2_xxs", 17: "iq2_xs", 22: "iq2_s"}
NAMES = [n.upper() for n in TYPES.values()]
NEEDS_IMATRIX = {"IQ2_XXS", "IQ2_XS"}

# RMS of decode(encode(x)) - x per 256-block relative to the block's RMS, for Gaussian data
RMS_ERR = {"IQ2_XXS": 0.6, "IQ2_XS": 0.5, "IQ2_S": 0.45}


@pytest.mark.parametrize("name", NAMES)
def test_sizes_agree_with_spec(name):
    t = codecs.type_spec(name)
    assert (t.block_size, t.type_size) == (256, {"IQ2_XXS": 66, "IQ2_XS": 74, "IQ2_S": 82}[name])
    assert codecs.block_dtype(name).itemsize == t.type_size
    assert codecs.block_dtype(name, "big").itemsize == t.type_size
    assert codecs.has_decoder(name) and codecs.has_encoder(name)
    x = np.random.default_rng(1).standard_normal((3, 512)).astype(np.float32)
    q = codecs.quantize(name, x, imatrix=np.ones(512, np.float32))
    assert len(q) == 3 * 2 * t.type_size
    assert codecs.dequantize(name, q).shape == (3 * 512,)


@pytest.mark.parametrize("name", sorted(NEEDS_IMATRIX))
def test_imatrix_required(name):
    # ggml_quantize_requires_imatrix: ggml_quantize_chunk asserts instead of quantizing
    with pytest.raises(ValueError, match="importance matrix"):
        codecs.quantize(name, np.ones((1, 256), np.float32))


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
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([1e-3, 1.0, 30.0, 1e3]),
       use_imatrix=st.booleans())
def test_roundtrip_error_bound(name, seed, scale, use_imatrix):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((2, 256)) * scale).astype(np.float32)
    imatrix = rng.uniform(0.1, 2.0, 256).astype(np.float32) if use_imatrix or name in NEEDS_IMATRIX else None
    y = codecs.dequantize(name, codecs.quantize(name, x, imatrix=imatrix)).reshape(x.shape)
    assert np.isfinite(y).all()
    rms = np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1))
    err = np.sqrt(np.mean((y.astype(np.float64) - x) ** 2, axis=1))
    assert (err <= RMS_ERR[name] * rms).all(), (err / rms)
    assert (np.abs(y).max(axis=1) <= 2.0 * np.abs(x).max(axis=1)).all()


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
            assert grid.neighbours[r, :grid.counts[r]].tolist() == want
