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

* :func:`decode_chunks` -- block ranges decoding to about 128K float32 values (512 KiB) each, so that the
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

from ..format import spec as _spec

# the K-quant super-block size (QK_K), as spec/tensor_types declares it for Q4_K and its family
QK_K: int = next(t.block_size for t in _spec.tensor_types() if t.name == "Q4_K")
# the legacy block size (QK4_0 ... QK8_1), as spec/tensor_types declares it for Q4_0 and its family
QK: int = next(t.block_size for t in _spec.tensor_types() if t.name == "Q4_0")

__all__ = [
    "F32_ZERO",
    "FLT_MAX",
    "fp16_to_fp32",
    "fp32_to_fp16",
    "fp16_bits",
    "bf16_to_fp32",
    "fp32_to_bf16",
    "nearest_int",
    "c_float_to_int32",
    "roundf",
    "seq_sum",
    "c_row_max",
    "first_abs_max",
    "f32",
    "DECODE_CHUNK_VALUES",
    "decode_chunks",
    "output_array",
    "block_bytes",
    "byte_runs",
    "gather_runs",
    "low_nibbles",
    "high_nibbles",
    "spread_runs",
    "scale_groups",
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


_HALF_CHUNK = 1 << 16  # values per chunk of the fp16 conversions: the temporaries stay in L2
_HALF_SCALE = np.float32(2.0**112)  # 2**(127 - 15): moves a binary16 exponent to binary32's bias
_HALF_BITS = np.int32(-0x70002000)  # 0x8FFFE000: sign, then binary16's exponent and mantissa moved up 13
_HALF_EXP = np.uint16(0x7C00)
_HALF_ABS = np.uint16(0x7FFF)


def _half_specials(bits: np.ndarray, out: np.ndarray) -> None:
    """Overwrite the infinities and NaNs among binary16 ``bits`` (native uint16, flat) in the widened float32
    ``out``: ``sign | 0x7F800000 | mantissa << 13``, with the float32 quiet bit forced on NaNs."""
    if bits.size == 0 or np.max(bits & _HALF_ABS) < _HALF_EXP:
        return
    where = (bits & _HALF_EXP) == _HALF_EXP
    b = bits[where].astype(np.uint32)
    mant = b & np.uint32(0x3FF)
    wide = ((b & np.uint32(0x8000)) << np.uint32(16)) | _EXP_MASK | (mant << np.uint32(13))
    wide[mant != 0] |= _QUIET_BIT
    out.view(np.uint32)[where] = wide


def fp16_to_fp32(h, out: np.ndarray | None = None) -> np.ndarray:
    """ggml's ``GGML_FP16_TO_FP32`` on an array of binary16 values (``f2`` or ``u2`` bits, any byte order).

    Exact widening; a signalling NaN comes out quiet (ggml's bit trick multiplies the NaN, which quiets it).
    Computed as ggml's generic code does, in whole-array integer steps: the sign-extended 16 bits shifted up
    by 13 and masked are a float32 with binary16's exponent, which one exact multiplication by 2**112 rebiases
    (subnormal halves become float32 subnormals first, so they need no special case); infinities and NaNs,
    whose exponent would come out finite, are written afterwards.  ``out``: a float32 array of the same size
    to write into.
    """
    half = _as_half(h)
    shape = half.shape
    half = half.reshape(-1)
    if half.dtype.isnative:
        bits = half.view(np.uint16)
    else:
        bits = half.view(np.dtype(np.uint16).newbyteorder(half.dtype.byteorder)).astype(np.uint16)
    signed = bits.view(np.int16)
    out = np.empty(bits.size, dtype=np.float32) if out is None else out.reshape(-1)
    wide = out.view(np.int32)
    for s in range(0, bits.size, _HALF_CHUNK):
        w = wide[s : s + _HALF_CHUNK]
        np.copyto(w, signed[s : s + _HALF_CHUNK])
        np.left_shift(w, np.int32(13), out=w)
        np.bitwise_and(w, _HALF_BITS, out=w)
        f = out[s : s + _HALF_CHUNK]
        np.multiply(f, _HALF_SCALE, out=f)
    _half_specials(bits, out)
    return out.reshape(shape)


_F32_NORMAL_HALF = np.uint32(0x38800000)  # 2**-14, the smallest normal binary16
_F32_HALF_INF = np.uint32(0x477FF000)  # 65520: rounds to binary16 infinity
_REBIAS_ROUND = np.uint32((0xFFF - (112 << 23)) & 0xFFFFFFFF)  # exponent 127 -> 15, plus the rounding bias
_POINT_FIVE = np.float32(0.5)
_POINT_FIVE_BITS = np.uint32(0x3F000000)
_SMALL_HALF = 8192


def _narrow_chunk(
    u: np.ndarray, out: np.ndarray, a: np.ndarray, t: np.ndarray, s: np.ndarray, small: np.ndarray
) -> None:
    """:func:`fp32_to_fp16` of float32 bits ``u`` into ``out`` (uint16); ``a``, ``t``, ``s`` uint32 and
    ``small`` bool scratch of the same length."""
    np.bitwise_and(u, _ABS_MASK, out=a)
    # normal range: round to nearest even at bit 13 on the bits, the carry may raise the exponent
    np.right_shift(a, np.uint32(13), out=t)
    t &= np.uint32(1)
    t += a
    t += _REBIAS_ROUND
    t >>= np.uint32(13)
    if a.min() < _F32_NORMAL_HALF:
        # subnormal range: adding 0.5f rounds |f| to a multiple of 2**-24 in the FPU (nearest even)
        np.less(a, _F32_NORMAL_HALF, out=small)
        np.add(a.view(np.float32), _POINT_FIVE, out=s.view(np.float32))
        s -= _POINT_FIVE_BITS
        np.copyto(t, s, where=small)
    if a.max() >= _F32_HALF_INF:
        big = a >= _F32_HALF_INF
        t[big] = np.where(a[big] > _EXP_MASK, np.uint32(0x7E00), np.uint32(0x7C00))
    np.right_shift(u, np.uint32(16), out=a)
    a &= np.uint32(0x8000)
    t |= a
    np.copyto(out, t, casting="unsafe")


def fp32_to_fp16(f) -> np.ndarray:
    """ggml's ``GGML_FP32_TO_FP16`` on a float32 array, returned as a native ``float16`` array.

    Round to nearest even (subnormals included), overflow to +-inf, every NaN to ``sign | 0x7E00``.
    Integer steps per chunk (numpy's own float16 cast is a scalar loop and keeps NaN payloads).
    """
    f = np.ascontiguousarray(f, dtype=np.float32)
    if f.size <= _SMALL_HALF:  # one short pass of numpy's cast beats the chunk machinery
        with np.errstate(over="ignore", invalid="ignore"):
            h = f.astype(np.float16)
        if f.size and np.isnan(np.max(f)):  # max propagates NaN
            nan = np.isnan(f)
            h.view(np.uint16)[nan] = ((f.view(np.uint32)[nan] >> np.uint32(16)) & np.uint32(0x8000)) | 0x7E00
        return h
    u = f.reshape(-1).view(np.uint32)
    out = np.empty(u.size, dtype=np.uint16)
    n = min(u.size, _HALF_CHUNK)
    a, t, s = (np.empty(n, dtype=np.uint32) for _ in range(3))
    small = np.empty(n, dtype=bool)
    with np.errstate(invalid="ignore"):  # the 0.5f addition also sees NaNs, whose result is not used
        for i in range(0, u.size, _HALF_CHUNK):
            k = min(_HALF_CHUNK, u.size - i)
            _narrow_chunk(u[i : i + k], out[i : i + k], a[:k], t[:k], s[:k], small[:k])
    return out.view(np.float16).reshape(f.shape)


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


_I32_LO = np.float32(-2147483648.0)  # -2**31, representable
_I32_HI = np.float32(2147483648.0)  # 2**31, first value that does not fit


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


def c_row_max(a: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """ggml's ``m = start; for i: m = MAX(m, a[i])`` along each row of the 2-D ``a`` (default start: the row's
    first value), with ``MAX(a, b) = a > b ? a : b``: a NaN is kept only until a later value replaces it."""
    if start is None:
        m, first = a[:, 0].copy(), 1
    else:
        m, first = start, 0
    for i in range(first, a.shape[1]):
        v = a[:, i]
        m = np.where(m > v, m, v)
    return m


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

DECODE_CHUNK_VALUES = 1 << 17  # decoded float32 values per chunk (512 KiB): temporaries stay in L2
_LO4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_FOUR = np.uint64(4)


def decode_chunks(n_blocks: int, block_size: int, values: int = DECODE_CHUNK_VALUES):
    """``(start, stop)`` ranges of whole blocks decoding to about ``values`` values each."""
    step = max(1, values // block_size)
    for s in range(0, n_blocks, step):
        yield s, min(n_blocks, s + step)


def output_array(out: np.ndarray | None, n_blocks: int, block_size: int) -> np.ndarray:
    """A decoder's float32 result: ``out`` (the caller's C-contiguous (n_blocks, block_size) array) or a new one."""
    return np.empty((n_blocks, block_size), dtype=np.float32) if out is None else out


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
    first = u8[:, start : start + size].view(np.dtype(f"V{size}"))  # (n, 1)
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


def scale_groups(
    out: np.ndarray, q: np.ndarray, scales: np.ndarray, offsets: np.ndarray | None = None, subtract: bool = True
) -> None:
    """``out = q * s`` then ``out -= m`` (or ``+= m``) in float32, where s, m are ``scales`` / ``offsets``
    repeated over groups of ``out.size // scales.size`` consecutive values (all arrays flat, C order; ``q`` any
    integer or float dtype, converted exactly).  Each step is one rounding, in ggml's order."""
    group = out.size // scales.size
    np.multiply(q, np.repeat(scales, group), out=out, casting="unsafe")
    if offsets is not None:
        (np.subtract if subtract else np.add)(out, np.repeat(offsets, group), out=out)
