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
from hypothesis import given, settings

from gguf_construct import codecs

from codec_rows import rows


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a


# --------------------------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------------------------


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
