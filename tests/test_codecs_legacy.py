"""Legacy block codecs (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1): bit-exactness against ggml and basic properties.

Ground truth comes from ggml's own C code:

* ``../shared/golden/<id>_<name>.npz`` (project-wide reference vectors; those tests skip when absent);
* ``tests/golden/<id>_<name>.npz``: small cases committed with the repository (6 rows x 256 values: normal rows,
  per-block scales from 1e-8 to 1e4, a zero / constant / negative-zero block and exact ties, tiny and subnormal
  inputs, values beyond the fp16 range, NaN / +-inf / +-3e38, an importance matrix with zeros, and 64 random raw
  blocks whose first scales are sNaN, -inf, inf, subnormal, -0, qNaN), produced with a ctypes wrapper around
  libggml-base 0.25.3 (``ggml_quantize_chunk``, ``quantize_row_q8_1_ref``, ``dequantize_row_*``).
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct import codecs

from codec_golden import assert_same as _assert_same

TYPES = {2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 9: "q8_1"}
NAMES = [n.upper() for n in TYPES.values()]
# ------------------------------------------------------------------------------------------------ spec sizes


# ------------------------------------------------------------------------------------------------ properties

# rows of 1-4 blocks; each block's first element is +-1 before the per-block scale 10^e, so the fp16 scales
# stay normal and the bounds below hold
_blocks = st.integers(1, 4).flatmap(
    lambda nb: st.tuples(
        st.lists(st.floats(-1, 1, width=32, allow_subnormal=False), min_size=32 * nb, max_size=32 * nb),
        st.lists(st.floats(-2, 2), min_size=nb, max_size=nb),
        st.lists(st.sampled_from([-1.0, 1.0]), min_size=nb, max_size=nb),
    )
)


def _rows(data) -> np.ndarray:
    vals, exps, signs = data
    b = np.array(vals, np.float32).reshape(-1, 32)
    b[:, 0] = signs
    x = b * (10.0 ** np.array(exps, np.float32))[:, None]
    return x.reshape(1, -1).astype(np.float32)


def _bound(name: str, x: np.ndarray) -> np.ndarray:
    """Per-block bound on |decode(encode(x)) - x| for the reference quantizers (with fp16 scale rounding)."""
    b = x.reshape(-1, 32)
    amax = np.abs(b).max(axis=1)
    if name == "Q4_0":
        return amax / 8 * 1.01  # the positive end clamps at 7 steps: up to one step
    if name == "Q5_0":
        return amax / 16 * 1.01
    if name in ("Q8_0", "Q8_1"):
        return amax / 127 * 0.51 + amax * 2**-10
    steps = 15 if name == "Q4_1" else 31
    return (b.max(axis=1) - b.min(axis=1)) / steps * 0.51 + amax * 2**-9


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30)
@given(data=_blocks)
def test_roundtrip_error_bound(name, data):
    x = _rows(data)
    y = codecs.dequantize(name, codecs.quantize(name, x)).reshape(x.shape)
    err = np.abs(y - x).reshape(-1, 32).max(axis=1)
    assert np.all(err <= _bound(name, x) + 1e-30)


@pytest.mark.parametrize("name", ["Q4_0", "Q4_1", "Q5_0", "Q5_1"])
@settings(max_examples=20)
@given(data=_blocks, seed=st.integers(0, 2**32 - 1))
def test_imatrix_roundtrip_is_close(name, data, seed):
    """The importance-weighted search never does much worse than a plain grid of its own scale."""
    x = _rows(data)
    im = np.random.default_rng(seed).random(x.shape[1]).astype(np.float32) + np.float32(0.01)
    y = codecs.dequantize(name, codecs.quantize(name, x, imatrix=im)).reshape(x.shape)
    b = x.reshape(-1, 32)
    span = (b.max(axis=1) - np.minimum(b.min(axis=1), 0)) if name.endswith("_1") else 2 * np.abs(b).max(axis=1)
    assert np.all(np.abs(y - x).reshape(-1, 32).max(axis=1) <= span * 0.2 + 1e-30)


@pytest.mark.parametrize("name", ["Q4_0", "Q5_0", "Q8_0", "Q8_1"])
@settings(max_examples=30)
@given(data=_blocks)
def test_requantize_is_identity(name, data):
    """For the symmetric formats, encode(decode(q)) == q (the max-magnitude element lands on the grid end)."""
    x = _rows(data)
    q = codecs.quantize(name, x)
    y = codecs.dequantize(name, q).reshape(x.shape)
    again = codecs.quantize(name, y)
    if name == "Q8_1":  # s = fp16(d * sum(q)) uses the unrounded float32 d, which requantizing cannot recover
        dt = codecs.block_dtype(name)
        a, b = np.frombuffer(again, dt), np.frombuffer(q, dt)
        assert np.array_equal(a["d"], b["d"]) and np.array_equal(a["qs"], b["qs"])
    else:
        assert again == q


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30)
@given(raw=st.binary(min_size=36 * 4, max_size=36 * 4))
def test_big_endian_same_values(name, raw):
    size = codecs.type_spec(name).type_size
    raw = raw[: size * 4]
    little = codecs.dequantize(name, raw)
    big = codecs.dequantize(name, codecs.swap_blocks(name, raw, "little", "big"), byte_order="big")
    _assert_same(big, little, "big-endian decode")


@pytest.mark.parametrize("name", NAMES)
def test_big_endian_encode(name):
    x = np.random.default_rng(1).standard_normal((2, 128)).astype(np.float32)
    little = codecs.quantize(name, x)
    big = codecs.quantize(name, x, byte_order="big")
    assert big == codecs.swap_blocks(name, little, "little", "big")
    if name in ("Q5_0", "Q5_1"):  # the qh word really is swapped
        assert big != little


def test_q8_1_sum_field():
    x = np.random.default_rng(2).standard_normal((1, 64)).astype(np.float32)
    b = np.frombuffer(codecs.quantize("Q8_1", x), codecs.block_dtype("Q8_1"))
    d = b["d"].astype(np.float32)
    s = (b["qs"].astype(np.int32).sum(axis=1).astype(np.float32) * d).astype(np.float16)
    assert np.array_equal(b["s"], s)


def test_q5_qh_bit_order():
    """Bit j of the little-endian qh word is the fifth bit of element j."""
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = -1.0  # largest magnitude, negative: d = 1/16, q = 0
    x[0, 3] = 0.5  # q = 24 -> fifth bit set
    x[0, 20] = 0.25  # q = 20 -> fifth bit set
    b = np.frombuffer(codecs.quantize("Q5_0", x), codecs.block_dtype("Q5_0"))
    qh = int(b["qh"][0])
    assert (qh >> 3) & 1 and (qh >> 20) & 1 and not qh & 1
    assert codecs.dequantize("Q5_0", b.tobytes())[[0, 3, 20]].tolist() == [-1.0, 0.5, 0.25]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n_blocks", [1, 3, 2049])
def test_encode_leaves_input_untouched(name, n_blocks):
    """The chunked encoders work in place on copies: a one-block row (whose transpose is a view) included."""
    x = np.random.default_rng(n_blocks).standard_normal((1, 32 * n_blocks)).astype(np.float32)
    x[0, 7] = np.float32(np.nan) if n_blocks == 3 else x[0, 7]
    before = x.copy()
    codecs.quantize(name, x)
    assert np.array_equal(x.view(np.uint32), before.view(np.uint32))
