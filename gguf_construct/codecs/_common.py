"""Scalar conversions and helpers shared by the codecs, bit-identical to ggml's C code.

Everything here works on whole numpy arrays and keeps float32 arithmetic in float32 (no float64 temporaries).

* :func:`fp16_to_fp32` / :func:`fp32_to_fp16` -- ggml's ``GGML_FP16_TO_FP32`` / ``GGML_FP32_TO_FP16``
  (ggml-impl.h): IEEE round-to-nearest-even with overflow to infinity; every NaN becomes the quiet NaN
  ``0x7E00`` (sign kept) when narrowing, and signalling NaNs are quieted when widening.
* :func:`bf16_to_fp32` / :func:`fp32_to_bf16` -- ``ggml_compute_bf16_to_fp32`` / ``ggml_compute_fp32_to_bf16``:
  round-to-nearest-even on the bit pattern, NaNs keep their upper 16 bits with the quiet bit forced.
* :func:`nearest_int` -- ggml's ``nearest_int`` (the ``x + 12582912.f`` magic-number trick): round half to even
  for ``|x| <= 4194303``, and the same bit-level result as C for any other input.
* :func:`c_float_to_int32` -- C's ``(int)x`` truncation as compiled for x86 (``cvttss2si``): values that do not
  fit, and NaNs, give ``INT32_MIN``.  ``(int8_t)`` / ``(uint8_t)`` conversions of a float are this followed by
  keeping the low byte.
* :func:`roundf` -- C ``roundf`` (half away from zero) in float32.
* :func:`seq_sum` -- a float32 sum accumulated strictly left to right starting from ``0.0f``, as a C loop
  ``s = 0; for (...) s += t[i];`` computes it (numpy's ``sum`` is pairwise and may differ).

Decoder building blocks (pure data movement and integer bit operations, so exactness is not at stake):

* :func:`decode_chunks` -- block ranges decoding to about 64K float32 values (256 KiB) each, so that the
  temporaries of a chunk stay in L2 while the output is written once.
* :func:`block_bytes` / :func:`byte_runs` -- the raw bytes of blocks, and runs of bytes inside every block
  as single opaque items (a strided run is then gathered into a contiguous buffer with one item copy each).
* :func:`low_nibbles` / :func:`high_nibbles` -- the 4-bit halves of every byte, computed eight bytes at a
  time on ``uint64`` words (byte lanes; independent of the host byte order).
* :func:`spread_runs` -- the usual bit-plane unpacking in one go: every run of bytes copied side by side once
  per bit field, each copy shifted and masked in whole-word operations, which leaves the fields in ggml's
  output order (e.g. all low nibbles of a 32-byte run, then all its high nibbles).
* :func:`scale_groups` -- ``out = q * scale`` (and ``- offset``) with one scale per group of consecutive
  values, as long contiguous operations on repeated scales (a broadcast over short rows costs a ufunc inner
  loop call per row, which is slower than repeating the scales).
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = [
    "F32_ZERO", "FLT_MAX",
    "fp16_to_fp32", "fp32_to_fp16", "fp16_bits", "bf16_to_fp32", "fp32_to_bf16",
    "nearest_int", "c_float_to_int32", "roundf", "seq_sum", "first_abs_max", "f32",
    "DECODE_CHUNK_VALUES", "decode_chunks", "block_bytes", "byte_runs", "gather_runs", "low_nibbles",
    "high_nibbles", "spread_runs", "scale_groups",
]

F32_ZERO = np.float32(0.0)
FLT_MAX = np.float32(np.finfo(np.float32).max)
_MAGIC = np.float32(12582912.0)  # 1.5 * 2**23
_QUIET_BIT = np.uint32(0x00400000)
_ABS_MASK = np.uint32(0x7FFFFFFF)
_EXP_MASK = np.uint32(0x7F800000)


def f32(value) -> np.float32:
    """A float32 constant (avoids float64 promotion from Python floats)."""
    return np.float32(value)


def _as_half(h) -> np.ndarray:
    """View ``h`` (u2/f2 array of any byte order) as float16 values without changing bits."""
    h = np.asarray(h)
    if h.dtype.kind == "f" and h.dtype.itemsize == 2:
        return h
    if h.dtype.kind in "ui" and h.dtype.itemsize == 2:
        order = h.dtype.byteorder
        if order in ("=", "|"):
            return h.view(np.float16)
        return h.view(np.dtype(np.float16).newbyteorder(order))
    raise TypeError(f"expected a 16-bit array, got {h.dtype}")


def _fp16_to_fp32_direct(half: np.ndarray) -> np.ndarray:
    out = half.astype(np.float32)
    bits = out.view(np.uint32)
    nan = (bits & _ABS_MASK) > _EXP_MASK
    if nan.any():
        bits[nan] |= _QUIET_BIT
    return out


_FP16_TABLE: np.ndarray | None = None


def _fp16_table() -> np.ndarray:
    """All 65536 binary16 bit patterns widened as ggml does (computed, not data)."""
    global _FP16_TABLE
    if _FP16_TABLE is None:
        _FP16_TABLE = _fp16_to_fp32_direct(np.arange(65536, dtype=np.uint16).view(np.float16))
        _FP16_TABLE.setflags(write=False)
    return _FP16_TABLE


def fp16_to_fp32(h) -> np.ndarray:
    """ggml's ``GGML_FP16_TO_FP32`` on an array of binary16 values (``f2`` or ``u2`` bits, any byte order).

    Exact widening; a signalling NaN comes out quiet (ggml's bit trick multiplies the NaN, which quiets it).
    """
    half = _as_half(h)
    if half.size < 8192:
        return _fp16_to_fp32_direct(half)
    if not half.dtype.isnative:
        bits = half.view(np.dtype(np.uint16).newbyteorder(half.dtype.byteorder)).astype(np.uint16)
    else:
        bits = half.view(np.uint16)
    out = np.empty(half.shape, dtype=np.float32)
    np.take(_fp16_table(), bits, out=out, mode="clip")  # a 256 KiB table beats astype + NaN fix-up
    return out


def fp32_to_fp16(f) -> np.ndarray:
    """ggml's ``GGML_FP32_TO_FP16`` on a float32 array, returned as a native ``float16`` array.

    Round to nearest even (subnormals included), overflow to +-inf, every NaN to ``sign | 0x7E00``.
    """
    f = np.asarray(f, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = f.astype(np.float16)
    if h.size == 0 or np.max(h.view(np.uint16) & np.uint16(0x7FFF)) <= 0x7C00:  # no NaN (checked on 16 bits)
        return h
    nan = np.isnan(f)
    if nan.any():
        hb = h.view(np.uint16)
        sign = (f.view(np.uint32)[nan] >> np.uint32(16)).astype(np.uint16) & np.uint16(0x8000)
        hb[nan] = sign | np.uint16(0x7E00)
    return h


def fp16_bits(f) -> np.ndarray:
    """:func:`fp32_to_fp16` as native uint16 bit patterns."""
    return fp32_to_fp16(f).view(np.uint16)


def bf16_to_fp32(h) -> np.ndarray:
    """ggml's ``GGML_BF16_TO_FP32``: the 16 bits become the upper half of a float32 (exact, NaNs untouched)."""
    h = np.asarray(h)
    return (h.astype(np.uint32) << np.uint32(16)).view(np.float32)


def fp32_to_bf16(f) -> np.ndarray:
    """ggml's ``GGML_FP32_TO_BF16`` on a float32 array, returned as native uint16 bit patterns.

    NaN: upper 16 bits with bit 6 (the bf16 quiet bit) forced; otherwise round to nearest even on the bits
    (``(u + 0x7fff + ((u >> 16) & 1)) >> 16`` in 32-bit arithmetic, so large finite values round to inf).
    """
    u = np.asarray(f, dtype=np.float32).view(np.uint32)
    rounded = (u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
    nan = (u & _ABS_MASK) > _EXP_MASK
    if nan.any():
        rounded = np.where(nan, (u >> np.uint32(16)) | np.uint32(64), rounded)
    return rounded.astype(np.uint16)


def nearest_int(f) -> np.ndarray:
    """ggml's ``nearest_int(float)``: ``(bits(f + 12582912.f) & 0x7fffff) - 0x400000`` as int32."""
    v = np.asarray(f, dtype=np.float32) + _MAGIC
    return (v.view(np.int32) & np.int32(0x007FFFFF)) - np.int32(0x00400000)


_I32_LO = np.float32(-2147483648.0)   # -2**31, representable
_I32_HI = np.float32(2147483648.0)    # 2**31, first value that does not fit


def c_float_to_int32(f) -> np.ndarray:
    """C ``(int)f`` on x86: truncation toward zero; NaN and out-of-range values give ``INT32_MIN``."""
    f = np.asarray(f, dtype=np.float32)
    if f.size == 0:
        return f.astype(np.int32)
    with np.errstate(invalid="ignore"):
        lo, hi = np.min(f), np.max(f)  # NaN propagates: the comparisons below fail
    if lo >= _I32_LO and hi < _I32_HI:
        return f.astype(np.int32)
    with np.errstate(invalid="ignore"):
        ok = (f >= _I32_LO) & (f < _I32_HI)  # False for NaN
    return np.where(ok, f, _I32_LO).astype(np.int32)


def roundf(f) -> np.ndarray:
    """C ``roundf``: round half away from zero, in float32 (exact; no ``floor(x + 0.5)`` double rounding)."""
    f = np.asarray(f, dtype=np.float32)
    r = np.rint(f)  # half to even; differs from roundf only on exact ties
    with np.errstate(invalid="ignore"):
        tie = np.abs(f - r) == np.float32(0.5)  # f - r is exact
        if tie.any():
            r = np.where(tie, np.trunc(f) + np.copysign(np.float32(1.0), f), r).astype(np.float32)
    return r


def seq_sum(terms, axis: int = -1) -> np.ndarray:
    """Sum float32 ``terms`` along ``axis`` strictly in order, starting from ``+0.0f`` (a C accumulation loop)."""
    acc = np.add.accumulate(np.asarray(terms, dtype=np.float32), axis=axis, dtype=np.float32)
    last = np.take(acc, -1, axis=axis)
    return last + F32_ZERO  # 0 + (-0) is +0 in C; accumulate would keep a leading -0


def first_abs_max(x, axis: int = -1):
    """The ggml idiom ``amax = 0; max = 0; for v in x: if (amax < fabsf(v)) { amax = fabsf(v); max = v; }``.

    Returns ``(amax, max)`` as float32 arrays reduced over ``axis``: ``max`` is the first element of largest
    magnitude (NaNs never win), ``amax == 0`` gives ``max == +0.0``.
    """
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 2 and axis in (-1, 1) and x.size:
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(np.sum(x))  # any NaN / inf anywhere: general path
        if finite:
            mx = np.max(x, axis=1)
            mn = np.min(x, axis=1)
            neg = -mn > mx
            amax = np.where(neg, -mn, mx)
            val = np.where(neg, mn, mx)
            tie = mx == -mn  # equal magnitudes of both signs, or an all-zero row: first occurrence decides
            if tie.any():
                val[tie] = _first_abs_max_general(x[tie], -1)[1]
            return amax, val
    return _first_abs_max_general(x, axis)


def _first_abs_max_general(x: np.ndarray, axis: int):
    ax = np.abs(x)
    nan = np.isnan(ax)
    if nan.any():  # not np.fmax: numpy 2.x SIMD max/fmax mishandle signalling NaNs
        ax = np.where(nan, F32_ZERO, ax)
    amax = np.max(ax, axis=axis)
    idx = np.argmax(ax == np.expand_dims(amax, axis), axis=axis)
    mx = np.take_along_axis(x, np.expand_dims(idx, axis), axis=axis).squeeze(axis)
    mx = np.where(amax > F32_ZERO, mx, F32_ZERO)
    return amax, mx.astype(np.float32, copy=False)


# ------------------------------------------------------------------------------------ decoder building blocks

DECODE_CHUNK_VALUES = 1 << 16  # decoded float32 values per chunk (256 KiB): temporaries stay in L2
_LO4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_FOUR = np.uint64(4)


def decode_chunks(n_blocks: int, block_size: int, values: int = DECODE_CHUNK_VALUES):
    """``(start, stop)`` ranges of whole blocks decoding to about ``values`` values each."""
    step = max(1, values // block_size)
    for s in range(0, n_blocks, step):
        yield s, min(n_blocks, s + step)


def block_bytes(blocks: np.ndarray) -> np.ndarray:
    """The blocks' raw bytes as a (n_blocks, type_size) uint8 array (a view when ``blocks`` is contiguous)."""
    blocks = np.ascontiguousarray(blocks)
    return blocks.view(np.uint8).reshape(blocks.shape[0], blocks.dtype.itemsize)


def byte_runs(u8: np.ndarray, start: int, size: int, count: int = 1, step: int | None = None) -> np.ndarray:
    """``count`` runs of ``size`` bytes at ``start``, ``start + step``, ... of every row of ``u8`` (n, row_bytes),
    as an (n, count) array of ``V<size>`` items (a view).  Copying such items into a contiguous buffer gathers the
    runs with one item move each instead of a byte loop per row."""
    step = size if step is None else step
    assert start + (count - 1) * step + size <= u8.shape[1]
    first = u8[:, start:start + size].view(np.dtype(f"V{size}"))  # (n, 1)
    return np.lib.stride_tricks.as_strided(first, (u8.shape[0], count), (u8.strides[0], step), writeable=False)


def gather_runs(runs: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Copy ``runs`` (n, count) ``V<size>`` items into the start of the contiguous uint8 ``buf`` and return that part
    as a (n, count * size) uint8 array."""
    n, count = runs.shape
    size = runs.dtype.itemsize
    flat = buf.reshape(-1)[: n * count * size]
    np.copyto(flat.view(runs.dtype).reshape(n, count), runs)
    return flat.reshape(n, count * size)


def low_nibbles(words: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = byte & 0xF`` for every byte of the uint64 ``words``."""
    return np.bitwise_and(words, _LO4, out=out)


def high_nibbles(words: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out = byte >> 4`` for every byte of the uint64 ``words``."""
    np.right_shift(words, _FOUR, out=out)
    return np.bitwise_and(out, _LO4, out=out)


@functools.lru_cache(maxsize=64)
def _shift_pattern(n_blocks: int, count: int, shifts: tuple, size: int) -> np.ndarray:
    """Per uint64 word of a (n_blocks, count, len(shifts), size) byte array: the shift of its copy."""
    one = np.repeat(np.array(shifts, dtype=np.uint64), size // 8)
    out = np.tile(one, n_blocks * count)
    out.setflags(write=False)
    return out


def spread_runs(runs: np.ndarray, shifts: tuple, mask: int, buf: np.ndarray) -> np.ndarray:
    """Bit fields of byte runs in output order: for ``runs`` (n, count) ``V<size>`` items (see :func:`byte_runs`)
    returns uint8 (n, count, len(shifts), size) with ``[i, k, f, j] = (run_k[j] >> shifts[f]) & mask`` for the
    bytes j of run k of block i.  ``size`` must be a multiple of 8; ``buf`` is a scratch uint8 array at least as
    large as the result (the result lives in it)."""
    n, count = runs.shape
    size = runs.dtype.itemsize
    fields = len(shifts)
    flat = buf.reshape(-1)[: n * count * fields * size]
    items = flat.view(runs.dtype).reshape(n, count, fields)
    for f in range(fields):
        items[:, :, f] = runs  # one item move per run and field
    words = flat.view(np.uint64)
    if any(shifts):
        np.right_shift(words, _shift_pattern(n, count, tuple(shifts), size), out=words)
    np.bitwise_and(words, np.uint64(0x0101010101010101 * mask), out=words)
    return flat.reshape(n, count, fields, size)


def scale_groups(out: np.ndarray, q: np.ndarray, scales: np.ndarray, offsets: np.ndarray | None = None,
                 subtract: bool = True) -> None:
    """``out = q * s`` then ``out -= m`` (or ``+= m``) in float32, where s, m are ``scales`` / ``offsets``
    repeated over groups of ``out.size // scales.size`` consecutive values (all arrays flat, C order; ``q`` any
    integer or float dtype, converted exactly).  Each step is one rounding, in ggml's order."""
    group = out.size // scales.size
    np.multiply(q, np.repeat(scales, group), out=out, casting="unsafe")
    if offsets is not None:
        (np.subtract if subtract else np.add)(out, np.repeat(offsets, group), out=out)
