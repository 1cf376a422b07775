"""Predicates of the tensor-info and data-section rules (shape, type, offsets, bounds, overlap, padding)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Callable, Iterator

import numpy as np

from ..format.reader import MAX_DIMS, MAX_NAME_BYTES, align_offset  # ggml needs room for a NUL too (TI-NAME-64)
from ..format.spec import tensor_type_by_id
from .catalog import Hit, first_of_each, hits_at, rule
from .walk import Context, TensorInfo

__all__ = ["MAX_NAME_BYTES", "UNKNOWN_TYPE_RULE", "ZERO_DIMENSION_RULE"]

# the rules the file model names when a tensor cannot be decoded: its type's layout is unknown (removed or not a
# ggml type); its shape, with a zero dimension, is too large for numpy all the same
UNKNOWN_TYPE_RULE = "TI-TYPE"
ZERO_DIMENSION_RULE = "TI-DIM-ZERO"

# Types added to ggml after the ggml_type enum of gguf.md (the rule TI-TYPE-NEW names them; spec/tensor_types has
# no field for it yet)


@dataclass
class TensorTable:
    """The tensor infos of a file as columns, once per file, so that each rule over every tensor is a few array
    operations and looks at a tensor in Python only when it has found something there."""

    name_len: np.ndarray  # bytes of each name
    n_dims: np.ndarray
    dims: np.ndarray  # uint64, one row per tensor, padded with 1 past its dimensions
    has_dim: np.ndarray  # bool, where ``dims`` holds a dimension
    type: np.ndarray  # int64
    current: np.ndarray  # bool: the type is a current ggml type
    block: np.ndarray  # the current type's block size (1 elsewhere)
    type_size: np.ndarray  # the current type's bytes per block (0 elsewhere)
    new: np.ndarray  # bool: a current type that gguf.md's ggml_type enum does not list
    data_offset: np.ndarray  # uint64
    nbytes: np.ndarray  # uint64, 0 where undefined (see ``sized``; the layout is derived before any rule runs)
    sized: np.ndarray  # bool: the byte size is defined

    def ends(self) -> np.ndarray | None:
        """Where each tensor's data ends in the data section (int64; an undefined size counts as 0), or None when
        an offset or a size is too large for int64 sums (the rules then look at each tensor in Python)."""
        if len(self.nbytes) == 0:
            return None
        if int(self.data_offset.max()) >= 2**62 or int(self.nbytes.max()) >= 2**62:
            return None
        return self.data_offset.astype(np.int64) + self.nbytes.astype(np.int64)

    def exact_ends(self) -> np.ndarray:
        """:meth:`ends`, or where an offset or a size is too large for int64 sums, the same sums as Python ints in
        an object array (element-wise in C loops, exact whatever the values)."""
        ends = self.ends()
        return ends if ends is not None else self.data_offset.astype(object) + self.nbytes.astype(object)


def tensor_table(ctx: Context) -> TensorTable:
    """:class:`TensorTable` of ``ctx.tensors`` (computed once per file)."""

    def build(c: Context) -> TensorTable:
        tensors = c.tensors
        n = len(tensors)
        dims_list = list(map(attrgetter("dims"), tensors))
        lens = np.fromiter(map(len, dims_list), dtype=np.int64, count=n)
        width = max(1, int(lens.max()) if n else 0)
        has_dim = np.arange(width) < lens[:, None]
        dims = np.ones((n, width), dtype=np.uint64)
        dims[has_dim] = np.fromiter(chain.from_iterable(dims_list), dtype=np.uint64, count=int(lens.sum()))
        types = np.fromiter(map(attrgetter("type"), tensors), dtype=np.int64, count=n)
        by_id = tensor_type_by_id()
        size = max(by_id) + 2  # the last slot: every id past the table
        current, block = np.zeros(size, dtype=bool), np.ones(size, dtype=np.int64)
        new, type_size = np.zeros(size, dtype=bool), np.zeros(size, dtype=np.int64)
        for tid, st in by_id.items():
            if st.is_current:
                current[tid], block[tid], type_size[tid] = True, st.block_size, st.type_size
                new[tid] = st.extra.get("in_gguf_md", True) is False
        slot = np.where((types >= 0) & (types < size - 1), types, size - 1)
        sizes = np.array(list(map(attrgetter("nbytes"), tensors)) + [None], dtype=object)[:n]  # never 2-D
        sized = sizes != None  # noqa: E711 - element-wise on an object array
        sizes[~sized] = 0
        return TensorTable(
            np.fromiter(map(len, map(attrgetter("name_bytes"), tensors)), dtype=np.int64, count=n),
            np.fromiter(map(attrgetter("n_dims"), tensors), dtype=np.int64, count=n),
            dims,
            has_dim,
            types,
            current[slot],
            block[slot],
            type_size[slot],
            new[slot],
            np.fromiter(map(attrgetter("data_offset"), tensors), dtype=np.uint64, count=n),
            sizes.astype(np.uint64),
            sized.astype(bool),
        )

    if not ctx.tensors:  # a vocabulary-only file: one empty table for all of them
        global _EMPTY
        if _EMPTY is None:
            _EMPTY = build(ctx)
        return _EMPTY
    return ctx.derived("tensor_table", build)


_EMPTY: TensorTable | None = None


def _each(ctx: Context, mask: np.ndarray, make: Callable[[TensorInfo], Hit]) -> Iterator[Hit]:
    """``make(tensor)`` for the tensors where ``mask`` is set, in file order: the first ones one by one, the rest
    as one repeat hit (:func:`~.catalog.hits_at`), so a rule that every tensor breaks costs no Python per tensor."""
    tensors = ctx.tensors
    return hits_at(ctx.cache, np.flatnonzero(mask), lambda i: make(tensors[i]))


def _cells(ctx: Context, mask: np.ndarray, make: Callable[[TensorInfo, int], Hit]) -> Iterator[Hit]:
    """``make(tensor, axis)`` for each set cell of ``mask`` (a tensor-by-axis mask like ``TensorTable.dims``), in
    file order, as :func:`_each` does for tensors."""
    tensors, width = ctx.tensors, mask.shape[1] if mask.ndim == 2 else 1
    return hits_at(ctx.cache, np.flatnonzero(mask), lambda c: make(tensors[c // width], c % width))


def _name_hit(t: TensorInfo, **params) -> Hit:
    return Hit(t.offset, f"{t.path}.name", name=t.name, index=t.index, **params)


@rule("TI-NAME-LEN")
def _name_len(ctx: Context) -> Iterator[Hit]:
    return _each(ctx, tensor_table(ctx).name_len > MAX_NAME_BYTES, lambda t: _name_hit(t, length=len(t.name_bytes)))


@rule("TI-NAME-64")
def _name_64(ctx: Context) -> Iterator[Hit]:
    return _each(ctx, tensor_table(ctx).name_len == MAX_NAME_BYTES, _name_hit)


@rule("TI-NAME-EMPTY")
def _name_empty(ctx: Context) -> Iterator[Hit]:
    return _each(ctx, tensor_table(ctx).name_len == 0, _name_hit)


@rule("TI-NAME-DUP")
def _name_dup(ctx: Context) -> Iterator[Hit]:
    firsts = first_of_each(list(map(attrgetter("name_bytes"), ctx.tensors)))
    return _each(ctx, firsts != np.arange(len(firsts)), _name_hit)


@rule("TI-NDIMS")
def _ndims(ctx: Context) -> Iterator[Hit]:
    return _each(
        ctx,
        tensor_table(ctx).n_dims > MAX_DIMS,
        lambda t: Hit(t.at("n_dimensions"), f"{t.path}.n_dimensions", name=t.name, value=t.n_dims, expected=MAX_DIMS),
    )


@rule("TI-NDIMS-ZERO")
def _ndims_zero(ctx: Context) -> Iterator[Hit]:
    return _each(
        ctx,
        tensor_table(ctx).n_dims == 0,
        lambda t: Hit(t.at("n_dimensions"), f"{t.path}.n_dimensions", name=t.name),
    )


def _dims_hit(ctx: Context, t: TensorInfo, axis: int | None = None, **params) -> Hit:
    if axis is not None:
        return Hit(t.at(f"dimensions[{axis}]"), f"{t.path}.dimensions[{axis}]", name=t.name, axis=axis, **params)
    return Hit(t.at("dimensions"), f"{t.path}.dimensions", name=t.name, **params)


@rule("TI-DIM-RANGE")
def _dim_range(ctx: Context) -> Iterator[Hit]:
    table = tensor_table(ctx)
    return _cells(
        ctx, table.has_dim & (table.dims >= np.uint64(2**63)), lambda t, a: _dims_hit(ctx, t, a, value=t.dims[a])
    )


@rule(ZERO_DIMENSION_RULE)
def _dim_zero(ctx: Context) -> Iterator[Hit]:
    table = tensor_table(ctx)
    return _cells(ctx, table.has_dim & (table.dims == 0), lambda t, a: _dims_hit(ctx, t, a))


def _exact_counts(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """(indices, element counts) of the tensors that may have 2^40 elements or more (:func:`_many_elements`), the
    counts as Python ints in an object array (None where undefined), gathered in C loops."""
    where = np.flatnonzero(_many_elements(ctx))
    picked = list(map(ctx.tensors.__getitem__, where.tolist()))
    return where, np.array(list(map(attrgetter("nelem"), picked)) + [None], dtype=object)[:-1]


@rule("TI-NELEM-OVERFLOW")
def _nelem(ctx: Context) -> Iterator[Hit]:
    where, nelem = _exact_counts(ctx)
    defined = nelem != None  # noqa: E711 - element-wise on an object array
    over = np.zeros(len(where), dtype=bool)
    over[defined] = (nelem[defined] >= 2**63).astype(bool)
    return _each(ctx, _spread(ctx, where[over]), lambda t: _dims_hit(ctx, t, shape=list(t.dims)))


@rule("TI-NBYTES-OVERFLOW")
def _nbytes(ctx: Context) -> Iterator[Hit]:
    table = tensor_table(ctx)
    where, nelem = _exact_counts(ctx)
    fits = (nelem != None) & table.current[where]  # noqa: E711 - element-wise on an object array
    fits[fits] = (nelem[fits] < 2**63).astype(bool)
    at, counts = where[fits], nelem[fits]
    nbytes = -(-counts // table.block[at].astype(object)) * table.type_size[at].astype(object)
    padded = -(-nbytes // ctx.alignment) * ctx.alignment
    over = ((nbytes >= 2**64) | (padded >= 2**64)).astype(bool)

    def make(t: TensorInfo) -> Hit:
        return _dims_hit(ctx, t, shape=list(t.dims), type=t.spec.name)  # type: ignore[union-attr]  # current

    return _each(ctx, _spread(ctx, at[over]), make)


def _spread(ctx: Context, where: np.ndarray) -> np.ndarray:
    """A mask over the tensors, set at ``where``."""
    mask = np.zeros(len(ctx.tensors), dtype=bool)
    mask[where] = True
    return mask


_FEW = 2.0**40  # fewer elements than this (estimated in float64): neither the count nor the bytes reach 2^63


def _many_elements(ctx: Context) -> np.ndarray:
    """Where a tensor may have 2^40 elements or more (a dimension of 2^63 or more makes the count undefined)."""
    dims = tensor_table(ctx).dims
    return (np.prod(dims.astype(np.float64), axis=1) >= _FEW) | (dims >= np.uint64(2**63)).any(axis=1)


def _type_hit(t: TensorInfo, **params) -> Hit:
    return Hit(t.type_offset, f"{t.path}.type", name=t.name, **params)


@rule(UNKNOWN_TYPE_RULE)
def _type(ctx: Context) -> Iterator[Hit]:
    return _each(ctx, ~tensor_table(ctx).current, lambda t: _type_hit(t, value=t.type))


@rule("TI-TYPE-NEW")
def _type_new(ctx: Context) -> Iterator[Hit]:
    return _each(ctx, tensor_table(ctx).new, lambda t: _type_hit(t, type=t.spec.name))  # type: ignore[union-attr]


@rule("TI-BLOCK")
def _block(ctx: Context) -> Iterator[Hit]:
    table = tensor_table(ctx)
    ne0s = table.dims[:, 0]
    odd = table.current & (ne0s < np.uint64(2**63)) & (ne0s % table.block.astype(np.uint64) != 0)

    def make(t: TensorInfo) -> Hit:
        st = t.spec
        assert st is not None  # a current type
        ne0 = t.dims[0] if t.dims else 1
        return _dims_hit(ctx, t, 0 if t.dims else None, value=ne0, type=st.name, block_size=st.block_size)

    return _each(ctx, odd, make)


def _offset_hit(t: TensorInfo, **params) -> Hit:
    return Hit(t.at("offset"), f"{t.path}.offset", name=t.name, **params)


@rule("TI-OFFSET-ALIGN")
def _offset_align(ctx: Context) -> Iterator[Hit]:
    if not ctx.kv_complete:
        return
    yield from _each(
        ctx,
        tensor_table(ctx).data_offset % np.uint64(ctx.alignment) != 0,
        lambda t: _offset_hit(t, value=t.data_offset, alignment=ctx.alignment),
    )


# -- data section ------------------------------------------------------------------------------------------------
@rule("DATA-START")
def _data_start(ctx: Context) -> Iterator[Hit]:
    if ctx.head_complete and ctx.tensors and ctx.data_start is None:
        expected = align_offset(ctx.head_end, ctx.alignment)
        yield Hit(ctx.size, "tensor_data", file_size=ctx.size, expected=expected)


def _available(ctx: Context) -> int:
    return ctx.size - ctx.data_start


def _all_in_bounds(ctx: Context) -> bool:
    """True when every tensor's size is defined and its data lies inside the data section."""
    table = tensor_table(ctx)
    ends = table.exact_ends()
    return bool(table.sized.all()) and (not len(ends) or ends.max() <= _available(ctx))


def _in_bounds(ctx: Context) -> list[TensorInfo]:
    avail = _available(ctx)
    return [t for t in ctx.tensor_ready() if t.data_offset + t.nbytes <= avail]


@rule("DATA-BOUNDS")
def _bounds(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    avail = _available(ctx)
    table = tensor_table(ctx)
    # exact ends (an undefined size, as of an unknown type, counts as 0: the tensor still starts in the section)
    exact = table.exact_ends()
    if not len(exact) or exact.max() <= avail:
        return
    # tensors starting at or past the end: the file was cut short (a truncated download), not crafted oversize
    past_end = int(np.count_nonzero((table.data_offset >= avail) & (table.nbytes > 0)))

    def make(t: TensorInfo) -> Hit:
        end = t.data_offset + (t.nbytes or 0)
        return _offset_hit(t, start=t.data_offset, end=end, available=avail, tensors_past_end=past_end)

    yield from _each(ctx, np.asarray(exact > avail, dtype=bool), make)


@rule("DATA-OVERLAP")
def _overlap(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    table = tensor_table(ctx)
    yield from _overlap_in_bulk(ctx, table, table.exact_ends())


def _overlap_in_bulk(ctx: Context, table: TensorTable, ends: np.ndarray) -> Iterator[Hit]:
    """DATA-OVERLAP's hits as the loop over the tensors in data order finds them, the reach and its owner (the
    first tensor to reach that far) found with running maxima (over Python ints where ``ends`` holds them)."""
    live = np.flatnonzero(table.sized & (table.nbytes > 0))
    order = live[np.lexsort((live, table.data_offset[live]))]  # by offset, then index
    starts, stops = table.data_offset[order].astype(ends.dtype), ends[order]
    if len(order) < 2:
        return
    reach = np.maximum.accumulate(stops)
    before = np.concatenate([[-1], reach[:-1]])  # the reach of the tensors before each
    hits = np.flatnonzero(starts < before)
    if not len(hits):
        return
    grows = np.flatnonzero(stops > np.concatenate([[-1], reach[:-1]]))  # where the reach grows: a new owner
    owner_at = grows[np.searchsorted(grows, hits, side="left") - 1]  # the last owner before each hit
    tensors = ctx.tensors

    def make(k: int) -> Hit:
        h, o = int(hits[k]), int(owner_at[k])
        t = tensors[int(order[h])]
        return _offset_hit(
            t, other=tensors[int(order[o])].name, start=t.data_offset, end=min(int(stops[h]), int(before[h]))
        )

    yield from hits_at(ctx.cache, np.arange(len(hits)), make)


@rule("DATA-ORDER")
def _order(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    table = tensor_table(ctx)
    if not len(table.sized):
        return
    # where each tensor is expected: after the padded data of the one before (up to the first undefined size);
    # over Python ints where the sums may not fit int64
    kind = np.int64 if table.ends() is not None else object
    undefined = np.flatnonzero(~table.sized)
    stop = int(undefined[0]) + 1 if len(undefined) else len(table.sized)
    offsets = table.data_offset[:stop].astype(kind)
    sizes = table.nbytes[: stop - 1].astype(kind)
    expected_at = np.concatenate([np.zeros(1, dtype=kind), offsets[:-1] + -(-sizes // ctx.alignment) * ctx.alignment])
    tensors = ctx.tensors
    yield from hits_at(
        ctx.cache,
        np.flatnonzero(np.asarray(offsets != expected_at, dtype=bool)),
        lambda i: _offset_hit(tensors[i], value=tensors[i].data_offset, expected=int(expected_at[i])),
    )


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


_GATHER = 1 << 23  # padding bytes examined in one gather (more: range by range)


def _padding_in_bulk(ctx: Context) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_padding_ranges` as two int64 arrays (starts, ends) computed from the tensor table (None before the
    layout is known)."""
    table = tensor_table(ctx)
    if ctx.data_start is None or ctx.head_end is None:
        return None
    ends = table.exact_ends()
    inside = np.flatnonzero(table.sized & np.asarray(ends <= _available(ctx), dtype=bool))
    ends = ends[inside].astype(np.int64)  # inside the file: small enough
    inside_ends = np.zeros(len(table.sized), dtype=np.int64)
    inside_ends[inside] = ends
    ends = inside_ends
    order = inside[np.argsort(table.data_offset[inside].astype(np.int64), kind="stable")]
    offsets, stops = table.data_offset[order].astype(np.int64), ends[order]
    padded = -(-stops // ctx.alignment) * ctx.alignment
    padded[:-1] = np.minimum(padded[:-1], offsets[1:])
    keep = padded > stops
    starts = np.concatenate([[ctx.head_end], stops[keep] + ctx.data_start])
    return starts, np.concatenate([[ctx.data_start], padded[keep] + ctx.data_start])


def _nonzero_in_ranges(ctx: Context, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The count of non-zero bytes in each range [starts[i], ends[i]) (cut at the file's end): gathers of at most
    :data:`_GATHER` bytes over many ranges at once, a range longer than that on its own."""
    ends = np.minimum(ends, ctx.size)
    lens = np.maximum(ends - starts, 0)
    counts = np.zeros(len(starts), dtype=np.int64)
    data = np.frombuffer(ctx.buf, dtype=np.uint8)
    some = np.flatnonzero(lens)
    long = some[lens[some] > _GATHER]
    for i in long.tolist():  # each of more than _GATHER bytes: at most the file's size / _GATHER of them
        counts[i] = np.count_nonzero(data[int(starts[i]) : int(ends[i])])
    some = some[lens[some] <= _GATHER]
    batch = np.cumsum(lens[some]) // _GATHER  # ranges of one gather: their lengths add up to about _GATHER
    cuts = np.flatnonzero(np.diff(batch)) + 1
    for group in np.split(some, cuts) if len(some) else []:
        total = int(lens[group].sum())
        first = np.cumsum(lens[group]) - lens[group]
        at = np.repeat(starts[group] - first, lens[group]) + np.arange(total)
        counts[group] = np.add.reduceat((data[at] != 0).astype(np.int64), first)
    return counts


@rule("DATA-PAD-ZERO")
def _pad_zero(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known:
        return
    ranges = _padding_in_bulk(ctx) if ctx.tensors and ctx.remote is None else None
    if ranges is not None:
        counts = _nonzero_in_ranges(ctx, *ranges)
        starts, ends = ranges
        yield from hits_at(
            ctx.cache,
            np.flatnonzero(counts),
            lambda i: Hit(
                int(starts[i]), "padding", count=int(counts[i]), start=int(starts[i]), end=min(int(ends[i]), ctx.size)
            ),
        )
        return
    for start, end in _padding_ranges(ctx):
        if not ctx.readable(start, min(end, ctx.size)):
            continue  # a header-only check of a URL reads no padding inside the data section
        count = _nonzero(ctx, start, end)
        if count:
            yield Hit(start, "padding", count=count, start=start, end=min(end, ctx.size))


def _padded_end(ctx: Context) -> int | None:
    """Absolute offset where the data section ends when padded (None when some tensor size is undefined)."""
    table = tensor_table(ctx)
    if not table.sized.all():
        return None
    ends = table.exact_ends()
    last = int(ends.max()) if len(ends) else 0
    return ctx.data_start + align_offset(last, ctx.alignment)


@rule("DATA-TRAILING-PAD")
def _trailing_pad(ctx: Context) -> Iterator[Hit]:
    if not ctx.layout_known or not ctx.tensors:
        return
    end = _padded_end(ctx)
    if end is None or not _all_in_bounds(ctx):
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
