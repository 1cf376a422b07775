"""Test data for codec round trips: rows of float32 values and an error-bound check."""

import numpy as np
from hypothesis import strategies as st

from gguf_construct import codecs


@st.composite
def rows(draw, block: int = 256):
    """A few rows of float32 values whose blocks have max |x| within [1, 1000], and an importance matrix."""
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(("normal", "heavy", "offset", "sparse", "negative", "uniform")))
    n_rows = draw(st.integers(1, 3))
    cols = 256 * draw(st.integers(1, 2))
    scale = draw(st.floats(1.0, 1000.0))
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


def check_error_bound(name: str, x: np.ndarray, imatrix: np.ndarray, max_err: float, rms_err: float) -> None:
    """decode(encode(x)) stays within max_err / rms_err of each block's max |x|, with and without imatrix."""
    bs = codecs.type_spec(name).block_size
    for imat in (None, imatrix):
        y = codecs.dequantize(name, codecs.quantize(name, x, imatrix=imat)).reshape(-1, bs)
        xb = x.reshape(-1, bs).astype(np.float64)
        err = np.abs(y - xb)
        amax = np.abs(xb).max(axis=1)
        assert np.all(err.max(axis=1) <= max_err * amax), (name, imat is not None)
        assert np.all(np.sqrt((err ** 2).mean(axis=1)) <= rms_err * amax), (name, imat is not None)
