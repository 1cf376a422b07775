"""``--data``: look inside the tensor data, vectorized with numpy and in bounded chunks.

* DATA-QUANT-FINITE: the float scale fields of quantized blocks (every f2/f4 field of a block layout in
  spec/tensor_types, plus the one-byte E8M0/UE4M3 scales of MXFP4/NVFP4) must be finite.
* DATA-FLOAT-FINITE: F32/F16/BF16/F64 tensors should hold no NaN or infinity.
"""

from __future__ import annotations

import functools
from typing import Iterator

import numpy as np

from ..format.spec import TensorTypeSpec, byte_order
from ..rulebook.catalog import Hit, rule
from ..rulebook.walk import Context, TensorInfo

__all__ = ["scale_fields", "CHUNK_BYTES"]

CHUNK_BYTES = 32 << 20

# (mask, exponent-all-ones pattern) of the IEEE-like float encodings, by spec primitive
_NONFINITE = {
    "f2": (0x7C00, 0x7C00),
    "bf2": (0x7F80, 0x7F80),
    "f4": (0x7F800000, 0x7F800000),
    "f8": (0x7FF0000000000000, 0x7FF0000000000000),
}
_UINT = {"f2": "u2", "bf2": "u2", "f4": "u4", "f8": "u8"}


@functools.lru_cache(maxsize=None)
def scale_fields(t: TensorTypeSpec) -> tuple[tuple[int, int, str, tuple[int, ...]], ...]:
    """(byte offset in the block, element count, primitive, NaN byte codes) of each scale field of a block."""
    out = []
    pos = 0
    for f in t.fields:
        if f.type in ("f2", "f4"):
            out.append((pos, f.count, f.type, ()))
        elif f.nan_codes:  # one-byte scales (E8M0, UE4M3) declare their NaN codes in the spec
            out.append((pos, f.count, f.type, f.nan_codes))
        pos += f.size
    return tuple(out)


def _chunks(ctx: Context, t: TensorInfo, unit: int) -> Iterator[tuple[int, np.ndarray]]:
    """(index of the first unit, uint8 array of whole units) over the tensor's bytes."""
    start = ctx.data_start + t.data_offset
    n_units = t.nbytes // unit
    step = max(1, CHUNK_BYTES // unit)
    for u0 in range(0, n_units, step):
        u1 = min(n_units, u0 + step)
        a, b = start + u0 * unit, start + u1 * unit
        if ctx.remote is not None:
            ctx.remote.ensure(a, b)  # a URL's data is streamed chunk by chunk and given back after use
        yield u0, np.frombuffer(ctx.buf, dtype=np.uint8, count=b - a, offset=a)
        if ctx.remote is not None:
            ctx.remote.release(a, b)
        _progress(ctx, b - a)


def _progress(ctx: Context, nbytes: int) -> None:
    """Tell the caller's progress callback (``check(progress=...)``) that ``nbytes`` more data bytes are read."""
    report = ctx.cache.get("progress")
    if report is None:
        return
    if "progress_total" not in ctx.cache:
        ctx.cache["progress_total"] = sum(t.nbytes for kind in ("quantized", "float") for t in _targets(ctx, kind))
        ctx.cache["progress_done"] = 0
    ctx.cache["progress_done"] += nbytes
    report(ctx.cache["progress_done"], ctx.cache["progress_total"])


def _targets(ctx: Context, kind: str) -> list[TensorInfo]:
    if not ctx.data or not ctx.layout_known:
        return []
    avail = ctx.size - ctx.data_start
    return [t for t in ctx.tensor_ready() if t.spec.kind == kind and t.nbytes and t.data_offset + t.nbytes <= avail]


def _order(ctx: Context) -> str:
    return byte_order(ctx.byte_order).struct


@rule("DATA-QUANT-FINITE")
def _quant_finite(ctx: Context) -> Iterator[Hit]:
    for t in _targets(ctx, "quantized"):
        fields = scale_fields(t.spec)
        if not fields:
            continue
        size = t.spec.type_size
        first = None
        for b0, raw in _chunks(ctx, t, size):
            blocks = raw.reshape(-1, size)
            bad = np.zeros(len(blocks), dtype=bool)
            for pos, count, prim, codes in fields:
                if codes:
                    cols = blocks[:, pos : pos + count]
                    for code in codes:
                        bad |= (cols == code).any(axis=1)
                else:
                    width = 2 if prim == "f2" else 4
                    cols = np.ascontiguousarray(blocks[:, pos : pos + count * width]).view(_order(ctx) + _UINT[prim])
                    mask, pattern = _NONFINITE[prim]
                    bad |= ((cols & mask) == pattern).any(axis=1)
            if bad.any():
                first = b0 + int(np.flatnonzero(bad)[0])
                break
        if first is not None:
            yield Hit(ctx.data_start + t.data_offset + first * size, f"tensor_data[{t.name}]", name=t.name, index=first)


@rule("DATA-FLOAT-FINITE")
def _float_finite(ctx: Context) -> Iterator[Hit]:
    for t in _targets(ctx, "float"):
        prim = t.spec.fields[0].type
        width = t.spec.type_size
        mask, pattern = _NONFINITE[prim]
        count, first = 0, None
        for e0, raw in _chunks(ctx, t, width):
            bits = raw.view(_order(ctx) + _UINT[prim])
            bad = (bits & bits.dtype.type(mask)) == bits.dtype.type(pattern)
            n = int(np.count_nonzero(bad))
            if n and first is None:
                first = e0 + int(np.flatnonzero(bad)[0])
            count += n
        if count:
            yield Hit(
                ctx.data_start + t.data_offset + first * width,
                f"tensor_data[{t.name}]",
                name=t.name,
                count=count,
                index=first,
            )
