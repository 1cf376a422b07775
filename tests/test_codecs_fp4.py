"""MXFP4 and NVFP4 codecs (module ``fp4``): bit-exactness against ggml and basic properties.

Ground truth is ggml's own C code:

* ``../shared/golden/<id>_<name>.npz``: the project-wide reference vectors (skipped when absent);
* ``tests/golden/39_mxfp4.npz``, ``40_nvfp4.npz``: small cases committed with the repository (6 rows x 256
  values: normal, heavy-tailed with zeros, exact grid ties, NaN/inf among tiny values, zero/tiny/huge blocks,
  signalling NaNs; random raw blocks, i.e. every E8M0 / UE4M3 scale byte is possible), made with a ctypes
  wrapper around libggml-base 0.25.3 (``ggml_quantize_chunk``, ``dequantize_row_*``).  ggml ignores the
  importance matrix for both types.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct import codecs
from gguf_construct.format import spec
from gguf_construct.codecs import fp4

NAMES = ["MXFP4", "NVFP4"]


def _grid_blocks(name, rng, n):
    """Random canonical blocks that re-encode to themselves: every scale group holds a +-6 (code 7 or 15) so the
    scale is recovered, no code 8 (-0, which re-encodes as +0), scales away from the subnormal/overflow ends."""
    blocks = np.zeros(n, dtype=codecs.block_dtype(name))
    codes = rng.choice([c for c in range(16) if c != 8], size=(n, 2 * blocks["qs"].shape[1])).astype(np.uint8)
    group = 32 if name == "MXFP4" else 16
    g = codes.reshape(n, -1, group)
    g[:, :, 0] = rng.choice([7, 15], size=g.shape[:2])
    half = group // 2
    g = g.reshape(-1, 2, half)
    blocks["qs"] = (g[:, 0, :] | (g[:, 1, :] << 4)).reshape(n, -1)
    if name == "MXFP4":
        blocks["e"] = rng.integers(10, 245, n)
    else:
        blocks["d"] = rng.choice(np.r_[1:0x78, 0x7E], (n, 4))  # what fp32_to_ue4m3 can produce
    return blocks


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_reencode_is_identity(name, seed):
    blocks = _grid_blocks(name, np.random.default_rng(seed), 16)
    y = codecs.dequantize(name, blocks.tobytes())
    assert codecs.quantize(name, y.reshape(2, -1)) == blocks.tobytes()


def test_e8m0_half():
    e = np.arange(256, dtype=np.uint8)
    got = fp4.e8m0_half(e).astype(np.float64)
    assert np.array_equal(got, np.ldexp(1.0, e.astype(np.int64) - 128))


def test_ue4m3_table_and_encoder():
    table = spec.table("ue4m3_half")
    assert table[0] == 0 and table[0x7F] == 0 and table[0x80] == 0 and table[0x7E] == 224 and table[0xFF] == 240
    assert table[1] == 2.0**-10 and table[8] == 2.0**-7  # subnormal man*2^-9, first normal 2^-6, halved
    # encoding a decoded (doubled) value gives the byte back for every byte the encoder can produce: exponent 15
    # saturates to 0x7E (448), so 0x78..0x7D never come out
    b = np.r_[1:0x78, 0x7E].astype(np.uint8)
    assert np.array_equal(fp4.fp32_to_ue4m3(table[b] * np.float32(2)), b)
    assert np.all(fp4.fp32_to_ue4m3(table[0x78:0x7E] * np.float32(2)) == 0x7E)
    x = np.array([0, -1, np.nan, np.inf, 1e9, 448, 449, 2.0**-10, 2.0**-12], dtype=np.float32)
    assert fp4.fp32_to_ue4m3(x).tolist() == [0, 0, 0, 0x7E, 0x7E, 0x7E, 0x7E, 1, 0]  # 2^-10 * 512 + 0.5 -> 1


_SPECIAL = [
    0.0,
    -0.0,
    float("nan"),
    float("inf"),
    -float("inf"),
    1e-45,
    1e-39,
    3e38,
    0.5,
    1.5,
    2.5,
    3.5,
    5.0,
    7.0,
    10.0,
    12.0,
    13.0,
]


@settings(max_examples=60, deadline=None)
@given(
    e=st.lists(st.integers(0, 255), min_size=1, max_size=4),
    q=st.lists(
        st.one_of(
            st.floats(-16, 16, width=32),
            st.sampled_from(_SPECIAL),
            st.floats(width=32, allow_nan=True, allow_infinity=True),
        ),
        min_size=32,
        max_size=32,
    ),
    nudge=st.integers(-2, 2),
)
def test_power_of_two_scales_pick_the_codes_the_error_search_picks(e, q, nudge):
    """MXFP4's midpoint rule gives the codes of the candidate-by-candidate error search (the first smallest
    error) for values on, next to and between the grid points of any scale, and for NaN, infinities, zeros."""
    d = fp4.e8m0_half(np.array(e, dtype=np.uint8))
    with np.errstate(all="ignore"):
        x = (np.array(q, dtype=np.float32)[None, :] * d[:, None]).astype(np.float32)
        for _ in range(abs(nudge)):
            x = np.nextafter(x, np.float32(np.inf if nudge > 0 else -np.inf)).astype(np.float32)
    assert np.array_equal(fp4._best_index_pow2(x, d), fp4._best_index(x, d))
