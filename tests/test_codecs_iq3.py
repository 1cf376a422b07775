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
import pytest
from hypothesis import HealthCheck, given, settings

from gguf_construct import codecs

from codec_rows import KINDS, rows
from codec_rows import assert_error_bound as check_error_bound

TYPES = {18: "iq3_xxs", 21: "iq3_s"}
NAMES = [n.upper() for n in TYPES.values()]

# max |decode(encode(x)) - x| and RMS error per 256-block, relative to the block's max |x|
MAX_ERR = {"IQ3_XXS": 1.5, "IQ3_S": 0.75}
RMS_ERR = {"IQ3_XXS": 0.25, "IQ3_S": 0.2}


@pytest.mark.parametrize("name", NAMES)
def test_sizes_follow_spec(name):
    t = codecs.type_spec(name)
    assert t.block_size == 256 and t.codec == "iq3"
    assert codecs.block_dtype(name).itemsize == t.type_size
    assert codecs.has_decoder(name) and codecs.has_encoder(name)
    x = np.linspace(-1, 1, 2 * 512, dtype=np.float32).reshape(2, 512)
    raw = codecs.quantize(name, x)
    assert len(raw) == 2 * 2 * t.type_size
    assert codecs.decode_blocks(name, raw).shape == (4, 256)
    assert codecs.dequantize(name, raw).shape == (2 * 512,)
    with pytest.raises(ValueError):
        codecs.dequantize(name, raw[:-1])


def rows_strategy(kinds=KINDS, max_blocks_per_row=2):
    """Rows whose 256-blocks have max |x| within [1e-3, 1e3], plus an importance matrix."""
    return rows(kinds=kinds, max_rows=2, max_blocks_per_row=max_blocks_per_row, scale_range=(1e-3, 1e3))


# --------------------------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=rows_strategy())
def test_roundtrip_error_bound(name, data):
    x, imatrix = data
    for imat in (None, imatrix):
        check_error_bound(name, x, imat, MAX_ERR[name], RMS_ERR[name])


@pytest.mark.parametrize("name", NAMES)
def test_zero_rows_give_zero_blocks(name):
    x = np.zeros((2, 512), dtype=np.float32)
    for imat in (None, np.ones(512, dtype=np.float32)):
        raw = codecs.quantize(name, x, imatrix=imat)
        assert raw == bytes(len(raw))
        assert np.all(codecs.dequantize(name, raw) == 0)


@pytest.mark.parametrize("name", NAMES)
def test_imatrix_is_per_column(name):
    """The importance weights follow the column, not the block index: rows quantize independently."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 768)).astype(np.float32)
    imatrix = rng.uniform(0.1, 2, 768).astype(np.float32)
    whole = codecs.quantize(name, x, imatrix=imatrix)
    parts = b"".join(codecs.quantize(name, row, imatrix=imatrix) for row in x)
    assert whole == parts


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
