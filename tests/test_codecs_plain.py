"""Plain element types (F32, F16, BF16, F64, I8, I16, I32, I64): exactness against ggml and properties.

F32, F16 and BF16 are checked against ggml's own conversions (``ggml_fp32_to_fp16_row``,
``ggml_fp32_to_bf16_row_ref``, ``ggml_fp16_to_fp32_row``, ``ggml_bf16_to_fp32_row``) in
``../shared/golden`` (skipped when absent) and in the committed ``tests/golden/{00_f32,01_f16,30_bf16}.npz``
(6 rows x 256 values including NaN, +-inf, +-3e38, values beyond the fp16 range, subnormals, and 64 raw
random elements), produced with a ctypes wrapper around libggml-base 0.25.3.  ggml has no codec for F64 and the
integer types; those are checked by properties only.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gguf_construct import codecs

FLOAT_GOLDEN = {0: "f32", 1: "f16", 30: "bf16"}
INTS = {"I8": np.int8, "I16": np.int16, "I32": np.int32, "I64": np.int64}
ALL = ["F32", "F16", "BF16", "F64", *INTS]


def _same_bits(a, b) -> bool:
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    ua = a.view(f"u{a.itemsize}")
    ub = b.view(f"u{b.itemsize}")
    return bool(np.all((ua == ub) | (np.isnan(a) & np.isnan(b))))


# ------------------------------------------------------------------------------------- F16 / BF16 exhaustive


def test_f16_all_patterns():
    """Every binary16 pattern widens exactly (sNaN quieted) and narrows back to itself (NaNs to sign|0x7E00)."""
    h = np.arange(65536, dtype=np.uint16)
    y = codecs.dequantize("F16", h.tobytes())
    expected = h.view(np.float16).astype(np.float32)
    nan = np.isnan(expected)
    assert np.array_equal(y[~nan].view(np.uint32), expected[~nan].view(np.uint32))
    assert np.all(np.isnan(y[nan])) and np.all(y[nan].view(np.uint32) & 0x00400000)  # quiet
    back = np.frombuffer(codecs.quantize("F16", y), np.uint16)
    assert np.array_equal(back[~nan], h[~nan])
    assert np.array_equal(back[nan], (h[nan] & 0x8000) | 0x7E00)


def test_bf16_all_patterns():
    h = np.arange(65536, dtype=np.uint16)
    y = codecs.dequantize("BF16", h.tobytes())
    assert np.array_equal(y.view(np.uint32), h.astype(np.uint32) << 16)
    back = np.frombuffer(codecs.quantize("BF16", y), np.uint16)
    nan = np.isnan(y)
    assert np.array_equal(back[~nan], h[~nan])
    assert np.array_equal(back[nan], h[nan] | 0x40)  # NaNs are forced quiet


def test_fp16_rounding_cases():
    f = np.array(
        [
            65504.0,
            65519.99,
            65520.0,
            1e9,
            -1e9,
            2.0**-24,
            2.0**-25,
            2.0**-25 * 1.0001,
            1.0 + 2.0**-11,
            1.0 + 3 * 2.0**-11,
            -0.0,
        ],
        np.float32,
    )
    h = np.frombuffer(codecs.quantize("F16", f), np.uint16)
    assert h.tolist() == [0x7BFF, 0x7BFF, 0x7C00, 0x7C00, 0xFC00, 0x0001, 0x0000, 0x0001, 0x3C00, 0x3C02, 0x8000]


def _numpy_fp16_with_ggml_nans(f: np.ndarray) -> np.ndarray:
    """An independent reference for ``GGML_FP32_TO_FP16``: numpy's own (scalar, round-to-nearest-even)
    float16 cast, with NaNs replaced by ``sign | 0x7E00`` as ggml writes them."""
    with np.errstate(over="ignore", invalid="ignore"):
        h = f.astype(np.float16).view(np.uint16)
    nan = np.isnan(f)
    h[nan] = ((f.view(np.uint32)[nan] >> 16) & 0x8000) | 0x7E00
    return h


def test_fp16_narrowing_every_boundary():
    """Every float32 with each of the 2**19 sign/exponent/upper-mantissa prefixes, with the low 13 bits just
    below, at and above the rounding tie (and at 0 and all ones), plus every tie point of the subnormal range
    and a random sample: the chunked integer conversion equals the reference on all of them."""
    top = np.arange(1 << 19, dtype=np.uint32) << np.uint32(13)
    low = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF], np.uint32)
    sub = np.arange(1 << 12, dtype=np.float32) * np.float32(2.0**-25)  # multiples of half a subnormal step
    sub_bits = sub.view(np.uint32)
    near = np.concatenate([sub_bits, sub_bits + 1, sub_bits - 1, sub_bits | np.uint32(0x80000000)])
    rand = np.random.default_rng(7).integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)
    u = np.concatenate([(top[:, None] | low).reshape(-1), near, rand])
    f = u.view(np.float32)
    expected = _numpy_fp16_with_ggml_nans(f)
    got = np.frombuffer(codecs.quantize("F16", f), np.uint16)
    assert np.array_equal(got, expected)
    for part in np.array_split(np.arange(f.size), 400):  # short arrays take numpy's cast plus the NaN fix-up
        assert np.array_equal(np.frombuffer(codecs.quantize("F16", f[part]), np.uint16), expected[part])


def test_bf16_rounding_cases():
    u = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF, 0xFF800000, 0x7F800001, 0xFFC00001], np.uint32)
    h = np.frombuffer(codecs.quantize("BF16", u.view(np.float32)), np.uint16)
    assert h.tolist() == [0x3F80, 0x3F82, 0x3F81, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0]


# ------------------------------------------------------------------------------------------------ properties

_f32 = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 3), st.integers(1, 40)),
    elements=st.floats(width=32, allow_nan=True, allow_infinity=True),
)


@given(x=_f32)
def test_f32_f64_exact(x):
    assert _same_bits(codecs.dequantize("F32", codecs.quantize("F32", x)), x.reshape(-1))
    y = codecs.dequantize("F64", codecs.quantize("F64", x))
    assert y.dtype == np.float64
    assert _same_bits(y.astype(np.float32), x.reshape(-1))


@given(x=_f32)
def test_f16_bf16_roundtrip_bound(x):
    flat = x.reshape(-1)
    finite = np.isfinite(flat) & (np.abs(flat) < 65504)
    y = codecs.dequantize("F16", codecs.quantize("F16", x))
    assert np.all(np.abs(y[finite] - flat[finite]) <= np.maximum(np.abs(flat[finite]) * 2.0**-11, 2.0**-25))
    assert np.array_equal(np.isnan(y), np.isnan(flat))
    z = codecs.dequantize("BF16", codecs.quantize("BF16", x))
    fin = np.isfinite(flat) & (np.abs(flat) < 3.3e38)
    err = np.abs(z[fin].astype(np.float64) - flat[fin])
    assert np.all(err <= np.maximum(np.abs(flat[fin]) * 2.0**-8, 2.0**-133))
    assert np.array_equal(np.isnan(z), np.isnan(flat))


@pytest.mark.parametrize("name", ["F32", "F16", "BF16", "F64", *INTS])
@given(data=st.binary(min_size=0, max_size=64))
def test_big_endian_same_values(name, data):
    size = codecs.type_spec(name).type_size
    raw = data[: len(data) // size * size]
    little = codecs.dequantize(name, raw)
    big = codecs.dequantize(name, codecs.swap_blocks(name, raw, "little", "big"), byte_order="big")
    assert _same_bits(big, little) if little.dtype.kind == "f" else np.array_equal(big, little)


@pytest.mark.parametrize("name", list(INTS))
@given(data=st.data())
def test_integer_roundtrip(name, data):
    dt = INTS[name]
    info = np.iinfo(dt)
    x = data.draw(
        hnp.arrays(
            dt, st.tuples(st.integers(1, 3), st.integers(1, 20)), elements=st.integers(int(info.min), int(info.max))
        )
    )
    raw = codecs.quantize(name, x)
    assert raw == x.astype(np.dtype(dt).newbyteorder("<")).tobytes()
    y = codecs.dequantize(name, raw)
    assert y.dtype == dt and np.array_equal(y, x.reshape(-1))
    big = codecs.quantize(name, x, byte_order="big")
    assert np.array_equal(codecs.dequantize(name, big, byte_order="big"), y)
    # integer-valued floats in range encode the same way
    if info.bits <= 16:
        assert codecs.quantize(name, x.astype(np.float32)) == raw


@pytest.mark.parametrize("name", list(INTS))
def test_integer_rejects_lossy_input(name):
    info = np.iinfo(INTS[name])
    for bad in ([0.5], [np.nan], [np.inf], [float(info.max) * 4.0]):
        with pytest.raises(ValueError):
            codecs.quantize(name, np.array([bad], np.float64))
    with pytest.raises(ValueError):
        codecs.quantize(name, np.array([[int(info.min) - 1]], np.int64 if info.bits < 64 else object))
