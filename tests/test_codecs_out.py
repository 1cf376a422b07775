"""Decoding into an existing array (``out=`` of ``codecs.dequantize`` and ``Tensor.numpy``): the same values as a
new array, on both codec paths, and a clear ValueError for an array that does not fit."""

from __future__ import annotations

import numpy as np
import pytest

from gguf_construct import GGUFFile, codecs, load

TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_K", "I16", "F64", "IQ4_NL"]


def _raw(name: str, n_blocks: int = 12) -> bytes:
    t = codecs.type_spec(name)
    rng = np.random.default_rng(t.id)
    dtype = codecs.decoded_dtype(t.id)
    if dtype != np.float32:  # F64 and the integer types: their values as stored
        return rng.integers(-1000, 1000, n_blocks * t.block_size).astype(dtype).tobytes()
    rows = rng.standard_normal((max(1, n_blocks * t.block_size // 256), 256)).astype(np.float32)
    return codecs.quantize(t.id, rows)


@pytest.mark.parametrize("path", ["default", "numpy"])
@pytest.mark.parametrize("name", TYPES)
def test_dequantize_into_out_equals_a_new_array(name, path):
    raw = _raw(name)
    with codecs.using(path) if path == "numpy" else _nothing():
        fresh = codecs.dequantize(name, raw)
        out = np.full((fresh.size // 2, 2), 7, dtype=fresh.dtype)  # any shape of the right size
        got = codecs.dequantize(name, raw, out=out)
    assert got is out
    assert np.array_equal(out.reshape(-1).view(np.uint8), fresh.view(np.uint8))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("bad", ["size", "dtype", "strided", "readonly"])
def test_dequantize_refuses_an_out_that_does_not_fit(bad):
    raw = _raw("Q4_K")
    n = codecs.dequantize("Q4_K", raw).size
    out = {
        "size": np.empty(n - 1, np.float32),
        "dtype": np.empty(n, np.float64),
        "strided": np.empty(2 * n, np.float32)[::2],
        "readonly": np.empty(n, np.float32),
    }[bad]
    if bad == "readonly":
        out.flags.writeable = False
    with pytest.raises(ValueError, match="out must"):
        codecs.dequantize("Q4_K", raw, out=out)


def test_decoded_dtype_follows_the_decoders():
    assert codecs.decoded_dtype("Q4_K") == np.float32
    assert codecs.decoded_dtype("F64") == np.float64
    assert codecs.decoded_dtype("I8") == np.int8


@pytest.mark.parametrize("name", ["Q8_0", "F16", "I32"])
def test_tensor_numpy_into_out(tmp_path, name):
    raw = _raw(name, 16)
    t = codecs.type_spec(name)
    n = len(raw) // t.type_size * t.block_size
    f = GGUFFile.new(version=3, byte_order="little")
    f.add_tensor("w", memoryview(raw), name, shape=(n // 4, 4) if n % 4 == 0 else (n,))
    path = tmp_path / "m.gguf"
    f.save(str(path))
    tensor = load(str(path)).tensors[0]
    fresh = tensor.numpy()
    out = np.empty(fresh.shape, fresh.dtype)
    assert tensor.numpy(out=out) is out
    assert np.array_equal(out.view(np.uint8), fresh.view(np.uint8))
    with pytest.raises(ValueError, match="out must"):
        tensor.numpy(out=np.empty(n + 1, fresh.dtype))
