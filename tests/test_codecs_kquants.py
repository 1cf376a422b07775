"""K-quant codecs (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K): bit-exactness against ggml and basic properties.

Ground truth comes from ggml's own C code:

* ``../shared/golden/<id>_<name>.npz`` (project-wide reference vectors; the tests skip when absent);
* ``tests/golden/<id>_<name>.npz``: small cases committed with the repository (4 rows x 512 values including a
  zero block, constant sub-blocks, tiny/huge/NaN/inf inputs, an importance matrix with zeros, and random raw
  blocks with an sNaN / -inf scale), produced with a ctypes wrapper around libggml-base 0.25.3
  (``ggml_quantize_chunk``, ``quantize_row_q8_K_ref``, ``dequantize_row_*``).  Same array names as the shared files.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from gguf_construct import codecs

from codec_rows import check_error_bound, check_zero_and_constant_rows, rows

TYPES = {10: "q2_K", 11: "q3_K", 12: "q4_K", 13: "q5_K", 14: "q6_K", 15: "q8_K"}
NAMES = [n.upper() for n in TYPES.values()]

# max |decode(encode(x)) - x| and RMS error per 256-block, relative to the block's max |x| (inputs in fp16 range)
MAX_ERR = {"Q2_K": 1.0, "Q3_K": 0.5, "Q4_K": 0.3, "Q5_K": 0.15, "Q6_K": 0.1, "Q8_K": 0.0045}
RMS_ERR = {"Q2_K": 0.25, "Q3_K": 0.15, "Q4_K": 0.06, "Q5_K": 0.03, "Q6_K": 0.02, "Q8_K": 0.003}


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a


@pytest.mark.parametrize("name", NAMES)
def test_sizes_follow_spec(name):
    t = codecs.type_spec(name)
    assert t.block_size == 256 and t.codec == "kquants"
    assert codecs.block_dtype(name).itemsize == t.type_size
    assert codecs.has_decoder(name) and codecs.has_encoder(name)
    x = np.linspace(-1, 1, 3 * 512, dtype=np.float32).reshape(3, 512)
    raw = codecs.quantize(name, x)
    assert len(raw) == 3 * 2 * t.type_size
    assert codecs.decode_blocks(name, raw).shape == (6, 256)
    assert codecs.dequantize(name, raw).shape == (3 * 512,)
    with pytest.raises(ValueError):
        codecs.dequantize(name, raw[:-1])


# --------------------------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=rows())
def test_roundtrip_error_bound(name, data):
    x, imatrix = data
    check_error_bound(name, x, imatrix, MAX_ERR[name], RMS_ERR[name])


@settings(max_examples=20, deadline=None)
@given(data=rows())
def test_q8_k_reencode_is_stable(data):
    """Q8_K re-quantizes its own output to the same quants up to the sign of the whole block (the first value
    of largest magnitude may be a +127 instead of the -127 one) and the scale to within an ulp or so."""
    x, _ = data
    dt = codecs.block_dtype("Q8_K")
    q = np.frombuffer(codecs.quantize("Q8_K", x), dtype=dt)
    y = codecs.dequantize("Q8_K", q.tobytes())
    q2 = np.frombuffer(codecs.quantize("Q8_K", y), dtype=dt)
    sign = np.where(np.sign(q2["d"]) == np.sign(q["d"]), 1, -1).astype(np.int8)
    assert np.array_equal(q2["qs"], q["qs"] * sign[:, None])
    assert np.array_equal(q2["bsums"], q["bsums"] * sign[:, None])
    assert np.array_equal(q["bsums"], q["qs"].reshape(-1, 16, 16).sum(axis=2, dtype=np.int32))
    assert np.allclose(q2["d"] * sign, q["d"], rtol=1e-6, atol=0)
    assert np.allclose(codecs.dequantize("Q8_K", q2.tobytes()), y, rtol=2e-6, atol=0)


@pytest.mark.parametrize("name", NAMES)
def test_zero_and_constant_rows(name):
    check_zero_and_constant_rows(name, MAX_ERR[name])


@pytest.mark.parametrize("name", NAMES)
def test_imatrix_is_per_column(name):
    """The importance weights follow the column, not the block index: rows quantize independently."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 768)).astype(np.float32)
    imatrix = rng.uniform(0.1, 2, 768).astype(np.float32)
    whole = codecs.quantize(name, x, imatrix=imatrix)
    parts = b"".join(codecs.quantize(name, row, imatrix=imatrix) for row in x)
    assert whole == parts
