"""Lookup tables in the shapes the kernels index, built once from spec/tables and the numpy reference codecs.

No value is restated here: grids are the spec's packed words split into bytes, and the float tables (fp16
widening, E8M0 and UE4M3 scales) are the numpy codecs' own conversions evaluated at every input.
"""

from __future__ import annotations

import functools

import numpy as np

from ...format import spec
from .._common import fp16_to_fp32
from ._jit import helper


def _bytes(name: str, width: int, dtype) -> np.ndarray:
    """Table ``name`` of packed little-endian words as an (entries, width) array of its bytes."""
    words = spec.table(name)
    return np.ascontiguousarray(words.astype(words.dtype.newbyteorder("<"))).view(dtype).reshape(-1, width)


@functools.lru_cache(maxsize=None)
def fp16() -> np.ndarray:
    """float32[65536]: ``GGML_FP16_TO_FP32`` of every binary16 bit pattern (ggml's own table)."""
    return fp16_to_fp32(np.arange(1 << 16, dtype=np.uint16))


@functools.lru_cache(maxsize=None)
def grid(name: str) -> np.ndarray:
    """An IQ grid as (entries, values per vector): uint8 magnitudes, int8 for ``iq1s_grid``."""
    words = spec.table(name)
    width = words.dtype.itemsize
    return _bytes(name, width, np.int8 if name == "iq1s_grid" else np.uint8)


@functools.lru_cache(maxsize=None)
def small(name: str) -> np.ndarray:
    """A short spec table (signs, masks, value tables) as a contiguous array of its own dtype."""
    return np.ascontiguousarray(spec.table(name))


@functools.lru_cache(maxsize=None)
def floats(name: str) -> np.ndarray:
    """A spec value table as float32 (its integers are exact in float32, as C's int-to-float conversion)."""
    return np.ascontiguousarray(spec.table(name), dtype=np.float32)


@functools.lru_cache(maxsize=None)
def e8m0_half() -> np.ndarray:
    """float32[256]: ``GGML_E8M0_TO_FP32_HALF`` of every exponent byte."""
    from ..fp4 import e8m0_half as convert

    return np.ascontiguousarray(convert(np.arange(256)), dtype=np.float32)


@functools.lru_cache(maxsize=None)
def grid_floats(name: str) -> np.ndarray:
    """:func:`grid` as float32 (the C code converts each grid byte to float before multiplying)."""
    return np.ascontiguousarray(grid(name), dtype=np.float32)


@functools.lru_cache(maxsize=None)
def sign_factors() -> np.ndarray:
    """float32 (256, 8): row ``s`` holds ggml's ``(s & kmask_iq2xs[j] ? -1.f : 1.f)`` for j < 8.  Multiplying
    by a factor loaded from memory keeps C's semantics for NaN (LLVM would turn ``v * -1.f`` into ``-v``)."""
    kmask = small("kmask_iq2xs")
    hit = (np.arange(256)[:, None] & kmask[None, :]) != 0
    return np.where(hit, np.float32(-1.0), np.float32(1.0)).astype(np.float32)


def neighbour_slots(
    kmap: np.ndarray, list_of_code: np.ndarray, starts: np.ndarray, counts: np.ndarray, flat: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """An IQ grid's code map and neighbour lists packed for one lookup per code: ``(slot, lists)``.

    ``slot[code]`` (the first ``size`` codes) is the grid index ``kmap[code]`` of an on-grid code and ``-1 - o``
    for an off-grid one, whose list is ``lists[o]`` (its length) followed by that many grid indices (int16).
    Codes without a list point at ``lists[0]``, an empty list.  The input is the numpy codec's form: list
    ``list_of_code[code]`` (-1: none) is ``flat[starts[r]:starts[r] + counts[r]]``.  A fifth of the bytes of the
    numpy form, so the encoders' scale searches keep their tables in the cache.
    """
    if flat.size and int(flat.max()) > np.iinfo(np.int16).max:
        raise ValueError("grid indices beyond int16")
    counts = np.asarray(counts, dtype=np.int64)
    offsets = 1 + np.concatenate(([0], np.cumsum(counts + 1)[:-1]))
    lists = np.zeros(1 + int((counts + 1).sum()), dtype=np.int16)
    lists[offsets] = counts
    within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    lists[np.repeat(offsets + 1, counts) + within] = flat[
        np.repeat(np.asarray(starts, dtype=np.int64), counts) + within
    ]
    rows = np.asarray(list_of_code[:size])
    slot = np.full(size, -1, dtype=np.int32)
    slot[rows >= 0] = -1 - offsets[rows[rows >= 0]]
    on = kmap[:size] >= 0
    slot[on] = kmap[:size][on]
    return slot, lists


@helper
def neighbour_list(slot, lists):
    """``(start, stop)`` in ``lists`` of the neighbour list of an off-grid code whose slot (< 0) is ``slot``
    (the layout :func:`neighbour_slots` builds)."""
    o = -1 - slot
    return o + 1, o + 1 + lists[o]


def code_neighbour_slots(
    kmap: np.ndarray, starts: np.ndarray, counts: np.ndarray, flat: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`neighbour_slots` of lists kept per code: code c's list is ``flat[starts[c]:starts[c] + counts[c]]``
    (``counts[c] == 0``: none)."""
    has_list = counts > 0
    list_of_code = np.where(has_list, np.cumsum(has_list) - 1, -1)
    return neighbour_slots(kmap, list_of_code, starts[has_list], counts[has_list], flat, size)
