"""Properties every codec shares, for every current tensor type: sizes follow the spec, big-endian blocks decode
to the same values as little-endian ones, and encoding to big-endian is encoding then swapping."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct import codecs, spec

from codec_golden import assert_same

CURRENT = [t for t in spec.tensor_types() if t.is_current]
NEEDS_IMATRIX = {"IQ2_XXS", "IQ2_XS", "IQ1_S"}  # ggml refuses to quantize these without one


def sample_rows(t, rng):
    cols = max(256, t.block_size) * 2
    if t.kind == "integer":
        return rng.integers(-100, 100, size=(2, cols)).astype(np.int32), None
    return rng.normal(size=(2, cols)).astype(np.float32), rng.uniform(0.1, 2.0, cols).astype(np.float32)


@pytest.mark.parametrize("t", CURRENT, ids=lambda t: t.name)
def test_sizes_follow_spec(t):
    assert codecs.block_dtype(t.id).itemsize == t.type_size == codecs.block_dtype(t.id, "big").itemsize
    assert codecs.has_decoder(t.id) and codecs.has_encoder(t.id), f"{t.name} lacks a codec"
    assert t.extra.get("decode"), f"{t.name}: the spec gives no decode formula"
    x, imatrix = sample_rows(t, np.random.default_rng(0))
    raw = codecs.quantize(t.id, x, imatrix=imatrix)
    n_blocks = x.size // t.block_size
    assert len(raw) == n_blocks * t.type_size
    assert codecs.decode_blocks(t.id, raw).shape == (n_blocks, t.block_size)
    assert codecs.dequantize(t.id, raw).shape == (x.size,)
    for order in ("little", "big"):
        blocks = codecs.encode_blocks(t.id, x, imatrix=imatrix, byte_order=order)
        assert blocks.dtype == codecs.block_dtype(t.id, order) and blocks.shape == (n_blocks,)
        assert blocks.tobytes() == codecs.quantize(t.id, x, imatrix=imatrix, byte_order=order)
    assert codecs.dequantize(t.id, b"").shape == (0,)
    if t.type_size > 1:
        with pytest.raises(ValueError):
            codecs.dequantize(t.id, raw[:-1])


@pytest.mark.parametrize("t", CURRENT, ids=lambda t: t.name)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_blocks=st.integers(1, 24))
def test_big_endian_blocks_decode_the_same(t, seed, n_blocks):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, n_blocks * t.type_size, dtype=np.uint8).tobytes()
    swapped = codecs.swap_blocks(t.id, raw, "little", "big")
    with np.errstate(all="ignore"):
        assert_same(codecs.dequantize(t.id, swapped, byte_order="big"), codecs.dequantize(t.id, raw), t.name)
    x, imatrix = sample_rows(t, rng)
    little = codecs.quantize(t.id, x, imatrix=imatrix)
    assert codecs.quantize(t.id, x, imatrix=imatrix, byte_order="big") == codecs.swap_blocks(t.id, little, "little",
                                                                                               "big")


@pytest.mark.parametrize("name", sorted(NEEDS_IMATRIX))
def test_types_ggml_cannot_quantize_without_an_imatrix_raise(name):
    x = np.random.default_rng(0).normal(size=(1, 256)).astype(np.float32)
    with pytest.raises(ValueError):
        codecs.quantize(name, x)
