"""Properties every codec shares, for every current tensor type: sizes follow the spec, big-endian blocks decode
to the same values as little-endian ones, encoding to big-endian is encoding then swapping, and the importance
matrix is required, used or ignored as the spec says."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct import codecs
from gguf_construct.format import spec

from codec_golden import assert_same

CURRENT = [t for t in spec.tensor_types() if t.is_current]


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
    assert codecs.quantize(t.id, x, imatrix=imatrix, byte_order="big") == codecs.swap_blocks(
        t.id, little, "little", "big"
    )


def test_imatrix_facts_match_ggml():
    """ggml_quantize_requires_imatrix names exactly these three; the spec agrees."""
    assert {t.name for t in CURRENT if t.imatrix == "required"} == {"IQ2_XXS", "IQ2_XS", "IQ1_S"}


@pytest.mark.parametrize("t", CURRENT, ids=lambda t: t.name)
def test_imatrix_treatment_follows_spec(t):
    """required: no encoding without one; used: it changes the result and follows the column (rows quantize
    independently); ignored: the result is the same with and without."""
    rng = np.random.default_rng(1)
    cols = 3 * max(256, t.block_size)
    x = rng.standard_t(3, size=(3, cols)).astype(np.float32)
    if t.kind == "integer":
        x = np.clip(np.round(x * 10), -100, 100).astype(np.int32)
    imatrix = rng.uniform(0.01, 2, cols).astype(np.float32)
    with_imatrix = codecs.quantize(t.id, x, imatrix=imatrix)
    if t.imatrix == "required":
        with pytest.raises(ValueError, match="importance matrix"):
            codecs.quantize(t.id, x)
    elif t.imatrix == "ignored":
        assert with_imatrix == codecs.quantize(t.id, x)
    else:
        assert t.imatrix == "used"
        assert with_imatrix != codecs.quantize(t.id, x)
    assert with_imatrix == b"".join(codecs.quantize(t.id, row, imatrix=imatrix) for row in x)


@pytest.mark.parametrize("t", CURRENT, ids=lambda t: t.name)
def test_decode_into_a_given_output(t):
    """decode_blocks(out=...) fills and returns the caller's array with exactly the values of a plain decode, for
    decoders that write into it and for those decoded chunk by chunk and copied."""
    rng = np.random.default_rng(7)
    n_blocks = 3000 if t.block_size > 1 else 300_000  # more than one internal chunk
    raw = rng.integers(0, 256, n_blocks * t.type_size, dtype=np.uint8).tobytes()
    with np.errstate(all="ignore"):
        want = codecs.decode_blocks(t.id, raw)
        out = np.full((n_blocks, t.block_size), 7, dtype=want.dtype)
        got = codecs.decode_blocks(t.id, raw, out=out)
    assert got is out
    assert_same(out.reshape(-1), want.reshape(-1), t.name)
    with pytest.raises(ValueError):
        codecs.decode_blocks(t.id, raw, out=np.empty((n_blocks + 1, t.block_size), dtype=want.dtype))
