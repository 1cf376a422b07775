"""The mask of integer array elements outside a key's documented values (META-KEY-VALUE) equals numpy's own
membership test, whatever the values and the documented set (its fast paths: a contiguous range, a lookup table)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct.checker.metadata import _outside

VALUES = st.integers(-5, 5000)


@settings(max_examples=200, deadline=None)
@given(data=st.lists(VALUES, min_size=1, max_size=40), allowed=st.lists(VALUES, min_size=1, max_size=8),
       dtype=st.sampled_from([np.int32, np.int64, np.uint16]))
def test_outside_is_not_in(data, allowed, dtype):
    arr = np.array([v for v in data if np.iinfo(dtype).min <= v <= np.iinfo(dtype).max] or [0], dtype=dtype)
    expected = ~np.isin(arr.astype(np.int64), np.array(allowed, dtype=np.int64))
    assert np.array_equal(_outside(arr, allowed), expected)
