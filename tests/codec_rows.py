"""Test data for codec round trips: rows of float32 values and an error-bound check."""

import numpy as np
from hypothesis import strategies as st

from gguf_construct import codecs

KINDS = ("normal", "heavy", "offset", "sparse", "negative", "uniform")


@st.composite
def rows(
    draw, block: int = 256, *, kinds=KINDS, max_rows: int = 3, max_blocks_per_row: int = 2, scale_range=(1.0, 1000.0)
):
    """A few rows of float32 values whose blocks have max |x| within ``scale_range``, and an importance matrix."""
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(kinds))
    n_rows = draw(st.integers(1, max_rows))
    cols = 256 * draw(st.integers(1, max_blocks_per_row))
    scale = draw(st.floats(*scale_range))
    rng = np.random.default_rng(seed)
    shape = (n_rows, cols)
    if kind == "normal":
        x = rng.normal(size=shape)
    elif kind == "heavy":
        x = rng.standard_t(1.5, size=shape)
    elif kind == "offset":
        x = rng.uniform(-1, 1, shape) + rng.uniform(-4, 4)
    elif kind == "sparse":
        x = np.where(rng.random(shape) < 0.8, 0.0, rng.normal(size=shape))
        x[:, ::block] = 1.0
    elif kind == "negative":
        x = -rng.exponential(size=shape)
    else:
        x = rng.uniform(-1, 1, shape)
    blocks = x.reshape(-1, block)
    blocks /= np.abs(blocks).max(axis=1, keepdims=True)
    return (x * scale).astype(np.float32), rng.uniform(0.1, 10.0, cols).astype(np.float32)


def assert_error_bound(name: str, x: np.ndarray, imatrix, max_err: float, rms_err: float) -> None:
    """decode(encode(x, imatrix)) stays within max_err (largest) / rms_err (RMS) of each block's max |x|."""
    bs = codecs.type_spec(name).block_size
    y = codecs.dequantize(name, codecs.quantize(name, x, imatrix=imatrix)).reshape(-1, bs)
    xb = x.reshape(-1, bs).astype(np.float64)
    err = np.abs(y - xb)
    amax = np.abs(xb).max(axis=1)
    assert np.all(err.max(axis=1) <= max_err * amax), (name, imatrix is not None, (err.max(axis=1) / amax).max())
    rms = np.sqrt((err**2).mean(axis=1))
    assert np.all(rms <= rms_err * amax), (name, imatrix is not None, (rms / amax).max())
