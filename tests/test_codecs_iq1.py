"""IQ1_S and IQ1_M codecs: bit-exactness against ggml and basic properties.

Ground truth comes from ggml's own C code:

* ``../shared/golden/<id>_<name>.npz`` (project-wide reference vectors; the tests skip when absent);
* ``tests/golden/19_iq1_s.npz``, ``tests/golden/29_iq1_m.npz``: small cases committed with the repository
  (6 rows x 512 values: normal, heavy-tailed with an all-zero, a constant and a near-zero group, large, sparse
  with an all-zero super-block, mixed group magnitudes, a ramp; an importance matrix with zeros; random raw
  blocks including subnormal / inf / NaN scales), produced with a ctypes wrapper around libggml-base 0.25.3
  (``ggml_quantize_chunk``, ``dequantize_row_*``).  Same array names as the shared files.  IQ1_S has no
  ``q`` / ``deq_q``: ggml requires an importance matrix for it.

``encode(decode(q)) == q`` does not hold for these formats (ggml's search re-fits scales with fudge factors), so
it is not tested.
"""

from __future__ import annotations


import numpy as np
import pytest

from gguf_construct import codecs

NAMES = ["IQ1_S", "IQ1_M"]


@pytest.mark.parametrize("name", NAMES)
def test_ties_and_constant_groups(name):
    """Equal values (ties in the sorted split search) and constant groups quantize like ggml's stable qsort:
    the result only depends on the values, and constant rows decode to one value per 16 / 32 weights."""
    x = np.full((1, 256), 0.25, dtype=np.float32)
    x[0, 128:] = -1.5
    imatrix = np.ones(256, dtype=np.float32)
    y = codecs.dequantize(name, codecs.quantize(name, x, imatrix=imatrix)).reshape(16, 16)
    assert np.all(y == y[:, :1])
    assert np.all(np.sign(y[:8]) == 1) and np.all(np.sign(y[8:]) == -1)
