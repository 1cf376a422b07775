"""Predicates of the tensor-info and data-section rules (shape, type, offsets, bounds, overlap, padding)."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..format.reader import MAX_DIMS, MAX_NAME_BYTES, align_offset  # ggml needs room for a NUL too (TI-NAME-64)
from .catalog import Hit, rule
from .walk import Context, TensorInfo

__all__ = ["MAX_NAME_BYTES", "UNKNOWN_TYPE_RULE", "ZERO_DIMENSION_RULE"]

# the rules the file model names when a tensor cannot be decoded: its type's layout is unknown (removed or not a
# ggml type); its shape, with a zero dimension, is too large for numpy all the same
UNKNOWN_TYPE_RULE = "TI-TYPE"
ZERO_DIMENSION_RULE = "TI-DIM-ZERO"

# Types added to ggml after the ggml_type enum of gguf.md (the rule TI-TYPE-NEW names them; spec/tensor_types has
# no field for it yet)


def _name_hit(t: TensorInfo, **params) -> Hit:
    return Hit(t.offset, f"{t.path}.name", name=t.name, index=t.index, **params)


@rule("TI-NAME-LEN")
def _name_len(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if len(t.name_bytes) > MAX_NAME_BYTES:
            yield _name_hit(t, length=len(t.name_bytes))


@rule("TI-NAME-64")
def _name_64(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if len(t.name_bytes) == MAX_NAME_BYTES:
            yield _name_hit(t)


@rule("TI-NAME-EMPTY")
def _name_empty(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if not t.name_bytes:
            yield _name_hit(t)


@rule("TI-NAME-DUP")
def _name_dup(ctx: Context) -> Iterator[Hit]:
    seen: set[bytes] = set()
    for t in ctx.tensors:
        if t.name_bytes in seen:
            yield _name_hit(t)
        seen.add(t.name_bytes)


@rule("TI-NDIMS")
def _ndims(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if t.n_dims > MAX_DIMS:
            yield Hit(t.at("n_dimensions"), f"{t.path}.n_dimensions", name=t.name, value=t.n_dims, expected=MAX_DIMS)


@rule("TI-NDIMS-ZERO")
def _ndims_zero(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if t.n_dims == 0:
            yield Hit(t.at("n_dimensions"), f"{t.path}.n_dimensions", name=t.name)


def _dims_hit(ctx: Context, t: TensorInfo, axis: int | None = None, **params) -> Hit:
    if axis is not None:
        return Hit(t.at(f"dimensions[{axis}]"), f"{t.path}.dimensions[{axis}]", name=t.name, axis=axis, **params)
    return Hit(t.at("dimensions"), f"{t.path}.dimensions", name=t.name, **params)


@rule("TI-DIM-RANGE")
def _dim_range(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        for axis, d in enumerate(t.dims):
            if d >= 2**63:
                yield _dims_hit(ctx, t, axis, value=d)


@rule(ZERO_DIMENSION_RULE)
def _dim_zero(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        for axis, d in enumerate(t.dims):
            if d == 0:
                yield _dims_hit(ctx, t, axis)


@rule("TI-NELEM-OVERFLOW")
def _nelem(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if t.nelem is not None and t.nelem >= 2**63:
            yield _dims_hit(ctx, t, shape=list(t.dims))


@rule("TI-NBYTES-OVERFLOW")
def _nbytes(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        st = t.spec
        if t.nelem is None or t.nelem >= 2**63 or st is None or not st.is_current:
            continue
        nbytes = -(-t.nelem // st.block_size) * st.type_size
        if nbytes >= 2**64 or align_offset(nbytes, ctx.alignment) >= 2**64:
            yield _dims_hit(ctx, t, shape=list(t.dims), type=st.name)


def _type_hit(t: TensorInfo, **params) -> Hit:
    return Hit(t.type_offset, f"{t.path}.type", name=t.name, **params)


@rule(UNKNOWN_TYPE_RULE)
def _type(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if t.spec is None or not t.spec.is_current:
            yield _type_hit(t, value=t.type)


@rule("TI-TYPE-NEW")
def _type_new(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        if t.spec is not None and t.spec.is_current and t.spec.extra.get("in_gguf_md", True) is False:
            yield _type_hit(t, type=t.spec.name)


@rule("TI-BLOCK")
def _block(ctx: Context) -> Iterator[Hit]:
    for t in ctx.tensors:
        st = t.spec
        if st is None or not st.is_current:
            continue
        ne0 = t.dims[0] if t.dims else 1
        if ne0 < 2**63 and ne0 % st.block_size:
            yield _dims_hit(ctx, t, 0 if t.dims else None, value=ne0, type=st.name, block_size=st.block_size)


def _offset_hit(t: TensorInfo, **params) -> Hit:
    return Hit(t.at("offset"), f"{t.path}.offset", name=t.name, **params)


@rule("TI-OFFSET-ALIGN")
def _offset_align(ctx: Context) -> Iterator[Hit]:
    if not ctx.kv_complete:
        return
    for t in ctx.tensors:
        if t.data_offset % ctx.alignment:
            yield _offset_hit(t, value=t.data_offset, alignment=ctx.alignment)


# -- data section ------------------------------------------------------------------------------------------------
@rule("DATA-START")
def _data_start(ctx: Context) -> Iterator[Hit]:
    if ctx.head_complete and ctx.tensors and ctx.data_start is None:
        expected = align_offset(ctx.head_end, ctx.alignment)
        yield Hit(ctx.size, "tensor_data", file_size=ctx.size, expected=expected)


def _available(ctx: Context) -> int:
    return ctx.size - ctx.data_start


def _in_bounds(ctx: Context) -> list[TensorInfo]:
    avail = _available(ctx)
    return [t for t in ctx.tensor_ready() if t.data_offset + t.nbytes <= avail]


@rule("DATA-BOUNDS")
def _bounds(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    avail = _available(ctx)
    # tensors starting at or past the end: the file was cut short (a truncated download), not crafted oversize
    past_end = sum(1 for t in ctx.tensors if t.data_offset >= avail and (t.nbytes or 0) > 0)
    for t in ctx.tensors:  # a tensor of undefined size (an unknown type) still starts inside the data section
        end = t.data_offset + (t.nbytes or 0)
        if end > avail:
            yield _offset_hit(t, start=t.data_offset, end=end, available=avail, tensors_past_end=past_end)


@rule("DATA-OVERLAP")
def _overlap(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    live = sorted((t for t in ctx.tensor_ready() if t.nbytes > 0), key=lambda t: (t.data_offset, t.index))
    owner, reach = None, -1
    for t in live:
        end = t.data_offset + t.nbytes
        if owner is not None and t.data_offset < reach:
            yield _offset_hit(t, other=owner.name, start=t.data_offset, end=min(end, reach))
        if end > reach:
            owner, reach = t, end


@rule("DATA-ORDER")
def _order(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    expected = 0
    for t in ctx.tensors:
        if t.data_offset != expected:
            yield _offset_hit(t, value=t.data_offset, expected=expected)
        if t.nbytes is None:
            return
        expected = t.data_offset + align_offset(t.nbytes, ctx.alignment)


def _nonzero(ctx: Context, start: int, end: int) -> int:
    end = min(end, ctx.size)
    if end <= start:
        return 0
    return int(np.count_nonzero(np.frombuffer(ctx.buf, dtype=np.uint8, count=end - start, offset=start)))


def _padding_ranges(ctx: Context) -> list[tuple[int, int]]:
    """Absolute [start, end) ranges that should hold zero padding."""
    out = []
    if not ctx.tensors:
        return [(ctx.head_end, min(ctx.size, align_offset(ctx.head_end, ctx.alignment)))]
    out.append((ctx.head_end, ctx.data_start))
    tensors = sorted(_in_bounds(ctx), key=lambda t: t.data_offset)
    for i, t in enumerate(tensors):
        end = t.data_offset + t.nbytes
        stop = align_offset(end, ctx.alignment)
        if i + 1 < len(tensors):
            stop = min(stop, tensors[i + 1].data_offset)
        if stop > end:
            out.append((ctx.data_start + end, ctx.data_start + stop))
    return out


@rule("DATA-PAD-ZERO")
def _pad_zero(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    for start, end in _padding_ranges(ctx):
        if not ctx.readable(start, min(end, ctx.size)):
            continue  # a header-only check of a URL reads no padding inside the data section
        count = _nonzero(ctx, start, end)
        if count:
            yield Hit(start, "padding", count=count, start=start, end=min(end, ctx.size))


def _padded_end(ctx: Context) -> int | None:
    """Absolute offset where the data section ends when padded (None when some tensor size is undefined)."""
    if len(ctx.tensor_ready()) != len(ctx.tensors):
        return None
    last = max((t.data_offset + t.nbytes for t in ctx.tensors), default=0)
    return ctx.data_start + align_offset(last, ctx.alignment)


@rule("DATA-TRAILING-PAD")
def _trailing_pad(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known or not ctx.tensors:
        return
    end = _padded_end(ctx)
    if end is None or len(_in_bounds(ctx)) != len(ctx.tensors):
        return
    if end > ctx.size:
        yield Hit(ctx.size, "tensor_data", missing=end - ctx.size)


@rule("DATA-TRAILING-BYTES")
def _trailing_bytes(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    end = _padded_end(ctx) if ctx.tensors else align_offset(ctx.head_end, ctx.alignment)
    if end is not None and ctx.size > end:
        yield Hit(end, "tensor_data", count=ctx.size - end, offset=end)
