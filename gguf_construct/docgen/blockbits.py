"""Which weights each bit of a tensor type's block decodes into, measured on the codec itself.

The block's fields and widths are the spec's (:func:`gguf_construct.codecs.block_dtype`, the dtype every codec
reads).  How the bits inside a field are packed (nibbles, 6-bit scales split over bytes, sign bits, grid
indices) is not restated anywhere: it is measured by flipping each bit of a few blocks in turn and decoding them
with the numpy reference decoder, so a picture drawn from it cannot disagree with the decoder.  Bits of one item whose weight sets
mostly overlap are drawn as one run (:func:`_runs`).  The result is
deterministic (a fixed seed) and cheap (one decode call of a few thousand blocks per type).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .. import codecs
from ..format import spec as _spec

__all__ = ["BitRun", "ItemBits", "BlockBits", "block_bits", "element_label"]

_BASES = 32  # random blocks each bit is flipped in: a bit counts as driving a weight when any of them shows it
_SEED = 29


@dataclass(frozen=True)
class BitRun:
    """Adjacent bits of one field item (``hi`` down to ``lo``, value bit numbers) that drive the same weights."""

    hi: int
    lo: int
    elements: tuple[int, ...]

    @property
    def width(self) -> int:
        """Number of bits in the run."""
        return self.hi - self.lo + 1


@dataclass(frozen=True)
class ItemBits:
    """One item of a block field (``qs[3]``): its byte offset in the block, width in bits and its bit runs from the
    most significant bit down."""

    field: str
    index: int | None
    offset: int
    bits: int
    runs: tuple[BitRun, ...]

    @property
    def name(self) -> str:
        """``qs[3]``, or the field's id for a scalar field."""
        return self.field if self.index is None else f"{self.field}[{self.index}]"


@dataclass(frozen=True)
class BlockBits:
    """The measured bit map of one block: for every field item its runs, and the sub-blocks (the largest groups of
    weights that one bit drives together, short of the whole block) when the type has them."""

    type_name: str
    block_size: int
    items: tuple[ItemBits, ...]
    sub_blocks: tuple[tuple[int, int], ...]  # (first weight, last weight), in order; () when none


def _sane_blocks(t: _spec.TensorTypeSpec, rng: np.random.Generator) -> np.ndarray:
    """Random blocks whose float fields are finite, non-zero and moderate, and whose one-byte scale codes avoid
    the codes that mean NaN: a flipped bit then shows in the output wherever it has an effect."""
    dtype = codecs.block_dtype(t.name)
    raw = rng.integers(0, 256, size=_BASES * dtype.itemsize, dtype=np.uint8)
    blocks = raw.view(dtype).copy()
    for f in t.fields:
        shape = (_BASES, f.count) if f.count > 1 else (_BASES,)
        magnitude = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        if f.type in ("f2", "f4", "f8"):
            blocks[f.id] = magnitude
        elif f.type == "bf2":
            blocks[f.id] = (magnitude.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        elif f.nan_codes:
            values = blocks[f.id]
            for code in f.nan_codes:
                values[values == code] = code ^ 0x03
            blocks[f.id] = values
    return blocks


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.floating):
        return ~((a == b) | (np.isnan(a) & np.isnan(b)))
    return a != b


def element_label(elements: tuple[int, ...], block_size: int) -> str:
    """Short text for a set of weights: ``7``, ``32–63``, ``0,7``, ``all``, ``none`` or ``5 weights``."""
    if not elements:
        return "none"
    if len(elements) == block_size and block_size > 1:
        return "all"
    if len(elements) == 1:
        return str(elements[0])
    if elements[-1] - elements[0] + 1 == len(elements):
        return f"{elements[0]}–{elements[-1]}"
    if len(elements) == 2:
        return f"{elements[0]},{elements[1]}"
    return f"{len(elements)} weights"


@functools.lru_cache(maxsize=None)
def block_bits(type_name: str) -> BlockBits:
    """Measure which weights each bit of a ``type_name`` block drives (a current type with a decoder)."""
    t = codecs.type_spec(type_name)
    dtype = codecs.block_dtype(t.name)
    size = dtype.itemsize
    nbits = size * 8
    base = _sane_blocks(t, np.random.default_rng(_SEED)).view(np.uint8).reshape(_BASES, size)
    flipped = np.repeat(base[:, None, :], nbits, axis=1)  # (bases, bit, byte)
    bit = np.arange(nbits)
    flipped[:, bit, bit // 8] ^= (1 << (bit % 8)).astype(np.uint8)
    with codecs.using("numpy"):
        y0 = codecs.decode_blocks(t.name, np.ascontiguousarray(base).tobytes())
        y1 = codecs.decode_blocks(t.name, np.ascontiguousarray(flipped).tobytes())
    y1 = y1.reshape(_BASES, nbits, t.block_size)
    drives = _changed(y1, y0[:, None, :]).any(axis=0)  # (bit, weight), bit = file bit (byte*8 + bit in byte)
    items = []
    for f in t.fields:
        offset = dtype.fields[f.id][1]
        width = _spec.primitives()[f.type].size
        for i in range(f.count):
            start = offset + i * width
            # value bit k of a little-endian item is bit k % 8 of its byte k // 8
            sets = [tuple(np.flatnonzero(drives[start * 8 + k]).tolist()) for k in range(width * 8)]
            items.append(ItemBits(f.id, i if f.count > 1 else None, start, width * 8, _runs(sets)))
    return BlockBits(t.name, t.block_size, tuple(items), _sub_blocks(items, t.block_size))


def _runs(sets: list[tuple[int, ...]]) -> tuple[BitRun, ...]:
    """Adjacent bits (from the most significant) grouped into runs: a bit joins the run before it when their
    weight sets overlap by at least half of their union.  A grid index reads as one run although flipping its
    lowest bit moves to a neighbouring grid entry that shares some coordinates; sign bits, each driving its own
    weight, stay apart."""
    runs: list[BitRun] = []
    for k in range(len(sets) - 1, -1, -1):
        cur = set(sets[k])
        if runs:
            prev = set(runs[-1].elements)
            union = prev | cur
            if prev == cur or (prev and cur and 2 * len(prev & cur) >= len(union)):
                runs[-1] = BitRun(runs[-1].hi, k, tuple(sorted(union)))
                continue
        runs.append(BitRun(k, k, sets[k]))
    return tuple(runs)


def _sub_blocks(items: list[ItemBits], block_size: int) -> tuple[tuple[int, int], ...]:
    """The contiguous weight ranges of the largest size below the whole block that bits drive, when they tile it."""
    ranges = {
        (r.elements[0], r.elements[-1])
        for item in items
        for r in item.runs
        if 1 < len(r.elements) < block_size and r.elements[-1] - r.elements[0] + 1 == len(r.elements)
    }
    if not ranges:
        return ()
    largest = max(b - a + 1 for a, b in ranges)
    tiles = sorted(r for r in ranges if r[1] - r[0] + 1 == largest)
    covered = [a for a, _b in tiles]
    if covered != list(range(0, block_size, largest)):
        return ()
    return tuple(tiles)
