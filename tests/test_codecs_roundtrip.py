"""decode(encode(x)) within each format's error bound, for every type whose encoder searches or rounds to a
coarse grid: one table of bounds, the importance-matrix modes taken from the spec (``imatrix: required`` types
are only run with one, ``ignored`` types only without).

The legacy types (Q4_0 .. Q8_1) have tighter, analytic bounds in test_codecs_legacy.py, Q1_0 its exact
sign-times-mean property in test_codecs_lowbit.py, and the float types exact checks in test_codecs_plain.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gguf_construct import codecs

from codec_rows import KINDS, assert_error_bound, rows

_DENSE = ("normal", "heavy", "offset", "negative", "uniform")
_WIDE = (1e-3, 1e3)


@dataclass(frozen=True)
class Bound:
    """Largest and RMS error of decode(encode(x)) per block, relative to the block's max |x|, on rows drawn with
    ``kinds`` and per-block max |x| in ``scales``; ``plain_kinds`` are the kinds checked without an importance
    matrix (default: ``kinds``)."""

    max_err: float
    rms_err: float
    examples: int = 12
    scales: tuple = (1.0, 1000.0)
    kinds: tuple = KINDS
    plain_kinds: tuple | None = None


BOUNDS = {
    "Q2_K": Bound(1.0, 0.25, 15),
    "Q3_K": Bound(0.5, 0.15, 15),
    "Q4_K": Bound(0.3, 0.06, 15),
    "Q5_K": Bound(0.15, 0.03, 15),
    "Q6_K": Bound(0.1, 0.02, 15),
    "Q8_K": Bound(0.0045, 0.003, 15),
    "IQ4_NL": Bound(0.2, 0.07),
    "IQ4_XS": Bound(0.25, 0.09),
    "MXFP4": Bound(0.3, 0.15),
    "NVFP4": Bound(0.25, 0.12),
    "TQ1_0": Bound(0.51, 0.36),
    "TQ2_0": Bound(0.51, 0.36),
    "Q2_0": Bound(0.51, 0.36),
    "IQ3_XXS": Bound(1.5, 0.25, 8, _WIDE),
    "IQ3_S": Bound(0.75, 0.2, 8, _WIDE),
    "IQ2_XXS": Bound(1.5, 0.4, 8, _WIDE),
    "IQ2_XS": Bound(1.5, 0.35, 8, _WIDE),
    "IQ2_S": Bound(1.0, 0.3, 8, _WIDE),
    # ggml's IQ1 is coarse: a skipped all-zero group decodes as -0.875 times its scale (sparse blocks are far
    # off), and IQ1_M without an imatrix (weights x^2) refits the super-block scale so that a heavy-tailed block
    # can be off by several times its max |x| -- bit for bit what ggml does, so those cases are left out
    "IQ1_S": Bound(2.5, 0.5, 8, _WIDE, _DENSE),
    "IQ1_M": Bound(2.5, 0.5, 8, _WIDE, _DENSE, _DENSE[:1] + _DENSE[2:]),
}


def imatrix_modes(name: str) -> tuple[bool, ...]:
    """Whether to run with an importance matrix: both ways, unless the spec says it is required or ignored."""
    return {"required": (True,), "ignored": (False,)}.get(codecs.type_spec(name).imatrix, (False, True))


def test_table_names_quantized_types_with_encoders():
    for name in BOUNDS:
        t = codecs.type_spec(name)
        assert t.kind == "quantized" and codecs.has_encoder(name), name


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_roundtrip_error_bound(name):
    b = BOUNDS[name]
    block = codecs.type_spec(name).block_size

    @settings(max_examples=b.examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def run(data):
        for with_imatrix in imatrix_modes(name):
            kinds = b.kinds if with_imatrix or b.plain_kinds is None else b.plain_kinds
            x, imatrix = data.draw(rows(block, kinds=kinds, max_rows=2, max_blocks_per_row=2, scale_range=b.scales))
            assert_error_bound(name, x, imatrix if with_imatrix else None, b.max_err, b.rms_err)

    run()


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_zero_and_constant_rows(name):
    """An all-zero row decodes to zeros and a constant row to within the bound of its value."""
    x = np.zeros((2, 512), dtype=np.float32)
    x[1] = 0.75
    for with_imatrix in imatrix_modes(name):
        imatrix = np.ones(512, dtype=np.float32) if with_imatrix else None
        y = codecs.dequantize(name, codecs.quantize(name, x, imatrix=imatrix)).reshape(x.shape)
        assert np.all(y[0] == 0)
        assert np.all(np.abs(y[1] - 0.75) <= 0.75 * BOUNDS[name].max_err)
