"""The mask of integer array elements outside a key's documented values (META-KEY-VALUE) equals numpy's own
membership test, whatever the values and the documented set (its fast paths: a contiguous range, a lookup table)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_construct.checker.metadata import _first_outside, _int_values

VALUES = st.integers(-5, 5000)


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(VALUES, min_size=1, max_size=40),
    allowed=st.lists(VALUES, min_size=1, max_size=8),
    dtype=st.sampled_from([np.int32, np.int64, np.uint16]),
)
def test_first_outside_is_the_first_not_in(data, allowed, dtype):
    arr = np.array([v for v in data if np.iinfo(dtype).min <= v <= np.iinfo(dtype).max] or [0], dtype=dtype)
    outside = np.flatnonzero(~np.isin(arr.astype(np.int64), np.array(allowed, dtype=np.int64)))
    values, is_range = _int_values({"values": {v: "" for v in allowed}})
    assert is_range == (set(allowed) == set(range(min(allowed), max(allowed) + 1)))
    assert _first_outside(arr, values, is_range) == (int(outside[0]) if outside.size else None)
