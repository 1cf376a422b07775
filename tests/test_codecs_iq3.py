"""IQ3_XXS and IQ3_S codecs: bit-exactness against ggml and basic properties.

Ground truth comes from ggml's own C code:

* ``../shared/golden/<id>_<name>.npz`` (project-wide reference vectors; the tests skip when absent);
* ``tests/golden/18_iq3_xxs.npz``, ``tests/golden/21_iq3_s.npz``: small cases committed with the repository
  (6 rows x 512 values: normal, heavy-tailed with an all-zero, a constant and a near-zero group, large, sparse
  with an all-zero super-block, mixed group magnitudes, a ramp; an importance matrix with zeros; random raw
  blocks including subnormal / inf / NaN scales), produced with a ctypes wrapper around libggml-base 0.25.3
  (``ggml_quantize_chunk``, ``dequantize_row_*``).  Same array names as the shared files.

``encode(decode(q)) == q`` does not hold for these formats (ggml's search re-fits scales with fudge factors), so
it is not tested.
"""

from __future__ import annotations


import numpy as np

from gguf_construct import codecs


def test_iq3_s_packs_groups_after_a_zero_group():
    """ggml's quantize_row_iq3_s_impl skips an all-zero 32-group without advancing its qs / signs pointers, so
    the next groups' grid indices and signs move forward (qh and the scales stay in place)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1, 256)).astype(np.float32)
    x[0, :32] = 0
    blk = np.frombuffer(codecs.quantize("IQ3_S", x), dtype=codecs.block_dtype("IQ3_S"))[0]
    assert blk["qh"][0] == 0 and (blk["scales"][0] & 15) == 0
    assert not blk["qs"][56:].any() and not blk["signs"][28:].any()
    assert blk["qs"][:8].any()
