"""Q1_0, Q2_0 (module ``lowbit``) and TQ1_0, TQ2_0 (module ``ternary``) codecs: bit-exactness against ggml
and basic properties.

Ground truth is ggml's own C code:

* ``../shared/golden/<id>_<name>.npz``: the project-wide reference vectors (skipped when absent);
* ``tests/golden/{34_tq1_0,35_tq2_0,41_q1_0,42_q2_0}.npz``: small cases committed with the repository (6 rows x
  256 values: normal, heavy-tailed with zeros, exact ties, NaN/inf among tiny values -- including a NaN as the
  last value of a block, which ggml's ternary MAX() idiom lets through --, zero/tiny/huge blocks, signalling
  NaNs; random raw blocks, some with NaN/inf/subnormal fp16 scales), made with a ctypes wrapper around
  libggml-base 0.25.3 (``ggml_quantize_chunk``, ``dequantize_row_*``).  ggml ignores the importance matrix for
  all four types.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct import codecs

from codec_rows import rows as _rows

NAMES = ["TQ1_0", "TQ2_0", "Q1_0", "Q2_0"]


@settings(max_examples=15, deadline=None)
@given(data=_rows(128))
def test_q1_0_is_sign_times_mean_abs(data):
    x, _ = data
    y = codecs.dequantize("Q1_0", codecs.quantize("Q1_0", x)).reshape(-1, 128)
    xb = x.reshape(-1, 128)
    d = np.abs(xb).astype(np.float64).mean(axis=1).astype(np.float16).astype(np.float32)
    assert np.allclose(np.abs(y), d[:, None], rtol=2e-3, atol=0)
    assert np.array_equal(y >= 0, xb >= 0)


def _codes_blocks(name, rng, n):
    """Random blocks that re-encode to themselves: codes -1/0/+1 only (never +2), at least one nonzero per block,
    positive normal fp16 scales."""
    t = codecs.type_spec(name)
    trits = rng.integers(-1, 2, (n, t.block_size)).astype(np.float32)
    trits[:, rng.integers(0, t.block_size)] = rng.choice([-1.0, 1.0])
    d = np.exp(rng.uniform(-8, 8, (n, 1))).astype(np.float16).astype(np.float32)
    return codecs.quantize(name, (trits * d).reshape(1, -1))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_reencode_is_identity(name, seed):
    rng = np.random.default_rng(seed)
    if name == "Q1_0":
        blocks = np.zeros(8, dtype=codecs.block_dtype(name))
        blocks["d"] = np.exp(rng.uniform(-8, 8, 8)).astype(np.float16)
        blocks["qs"] = rng.integers(0, 256, blocks["qs"].shape)
        q = blocks.tobytes()
    else:
        q = _codes_blocks(name, rng, 8)
    y = codecs.dequantize(name, q)
    assert codecs.quantize(name, y.reshape(1, -1)) == q


def test_tq1_0_trit_packing():
    """Each qs byte packs five trits as ceil(q * 256 / 243); all 243 values decode back to their digits."""
    trits = np.array([[(v // 3 ** (4 - k)) % 3 for k in range(5)] for v in range(243)]) - 1  # (243, 5)
    x = np.zeros((243, 256), dtype=np.float32)
    x[:, 0:160:32] = trits  # weights 0, 32, 64, 96, 128 -> byte 0, digits most significant first
    x[:, 255] = 1.0  # fixes the scale at 1
    q = np.frombuffer(codecs.quantize("TQ1_0", x), dtype=codecs.block_dtype("TQ1_0"))
    v = np.arange(243)
    assert np.array_equal(q["qs"][:, 0], (v * 256 + 242) // 243)
    y = codecs.dequantize("TQ1_0", q.tobytes()).reshape(243, 256)
    assert np.array_equal(y, x)


def test_ternary_nan_resets_the_running_max():
    """ggml's amax = MAX(amax, fabsf(v)) takes fabsf(v) whenever amax is NaN: the scale is the largest magnitude
    after the last NaN (and NaN when the block ends with one)."""
    x = np.zeros((2, 256), dtype=np.float32)
    x[:, 3] = 100.0
    x[:, 10] = np.nan
    x[:, 20] = 2.0
    x[1, 255] = np.nan
    for name in ("TQ1_0", "TQ2_0"):
        q = np.frombuffer(codecs.quantize(name, x), dtype=codecs.block_dtype(name))
        assert q["d"][0] == 2.0
        assert np.isnan(q["d"][1])
