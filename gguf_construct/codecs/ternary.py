"""TQ1_0 and TQ2_0: ternary weights (-1, 0, +1) times one fp16 scale per 256 (BitNet b1.58 / TriLM).

Decoding (ggml ``dequantize_row_tq1_0`` / ``_tq2_0``), ``d`` the fp16 block scale:

* TQ1_0 packs five trits per byte as a base-3 fraction of 256: trit ``n`` (0 = most significant) of byte ``b``
  is ``t = (((b * 3^n) mod 256) * 3) >> 8`` and stands for ``(t - 1) * d``.  ``qs[0:32]`` give weights
  ``32n + m``, ``qs[32:48]`` weights ``160 + 16n + m``, and the four ``qh`` bytes (four trits each) weights
  ``240 + 4n + j``.
* TQ2_0 stores 2-bit codes: ``y[128c + 32l + m] = (((qs[32c + m] >> 2l) & 3) - 1) * d``.

Encoding follows ``quantize_row_tq1_0_ref`` / ``quantize_row_tq2_0_ref``; ggml ignores importance weights.
"""

from __future__ import annotations

import numpy as np

from . import block_dtype
from ._common import block_bytes, fp16_to_fp32, fp32_to_fp16, output_array, roundf
from .lowbit import byte_table, chunks, translate

__all__ = ["decode_tq1_0", "encode_tq1_0", "decode_tq2_0", "encode_tq2_0"]

_F32 = np.float32

# byte -> its base-3 digit n (0 = most significant) minus one, by ggml's multiply-and-shift extraction
_b = np.arange(256, dtype=np.int64)
_TRIT_TABLES = [byte_table(((((_b * 3**n) & 0xFF) * 3) >> 8) - 1) for n in range(5)]
_LOW2 = np.uint32(0x03030303)  # the low two bits of each byte of a 32-bit word
del _b


@np.errstate(all="ignore")  # inf * 0 and NaN scales are data here, not errors
def decode_tq1_0(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    n = blocks.shape[0]
    d = fp16_to_fp32(blocks["d"])[:, None]
    raw = block_bytes(blocks)
    out = output_array(out, n, 256)
    for s, e in chunks(n, 256):
        c = e - s
        chunk = raw[s:e].tobytes()
        v = np.empty((c, 256), dtype=np.int8)  # trits minus one, in element order
        for k, table in enumerate(_TRIT_TABLES):
            t = translate(chunk, table, (c, 54))
            # byte runs are moved as single items (V32 etc.): one strided copy each
            v[:, 32 * k : 32 * k + 32].view("V32")[:] = t[:, 0:32].view("V32")  # qs[0:32]: element 32k + m
            v[:, 160 + 16 * k : 176 + 16 * k].view("V16")[:] = t[:, 32:48].view("V16")  # qs[32:48]: 160 + 16k + m
            if k < 4:
                v[:, 240 + 4 * k : 244 + 4 * k].view("V4")[:] = t[:, 48:52].view("V4")  # qh: 240 + 4k + j
        np.multiply(v, d[s:e], out=out[s:e], dtype=np.float32, casting="unsafe")  # (float)(xi - 1) * d
    return out


@np.errstate(all="ignore")
def decode_tq2_0(blocks: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    n = blocks.shape[0]
    d = fp16_to_fp32(blocks["d"])[:, None]
    raw = block_bytes(blocks)
    out = output_array(out, n, 256)
    for s, e in chunks(n, 256):
        c = e - s
        words = np.ascontiguousarray(raw[s:e, :64]).view(np.uint32).reshape(c, 2, 8)  # 4 bytes at a time
        v = np.empty((c, 2, 4, 8), dtype=np.uint32)  # element 128h + 32l + m <- code l of qs[32h + m]
        for k in range(4):
            np.bitwise_and(words >> np.uint32(2 * k), _LOW2, out=v[:, :, k, :])  # code k of every byte
        codes = v.view(np.int8).reshape(c, 256)
        codes -= 1
        np.multiply(codes, d[s:e], out=out[s:e], dtype=np.float32, casting="unsafe")  # (float)(q - 1) * d
    return out


def _ternary_amax(x: np.ndarray) -> np.ndarray:
    """``amax = MAX(amax, fabsf(v))`` from 0 over each row of x (n, k), with the C macro's NaN behaviour:
    a NaN element makes amax NaN and the next element replaces it, so the result is the maximum over the
    elements after the last NaN (NaN when the last element is NaN)."""
    ax = np.abs(x)
    nan = np.isnan(ax)
    if not nan.any():
        return ax.max(axis=1, initial=_F32(0))
    k = x.shape[1]
    last = np.where(nan.any(axis=1), k - 1 - np.argmax(nan[:, ::-1], axis=1), -1)
    after = np.arange(k)[None, :] > last[:, None]
    amax = np.where(after, ax, _F32(0)).max(axis=1)
    amax[last == k - 1] = np.nan
    return amax


def _trits(x: np.ndarray, idv: np.ndarray) -> np.ndarray:
    """``lroundf(x * id) + 1`` reduced mod 256 as uint8 (all later uint8 arithmetic is modular).
    lroundf rounds half away from zero; NaN and out-of-range results are LONG_MIN on x86-64 (low byte 0)."""
    with np.errstate(invalid="ignore", over="ignore"):
        r = roundf(x * idv[:, None])
        if np.abs(r).max(initial=_F32(0)) < _F32(128):  # the usual case (NaN fails the test)
            low = r.astype(np.int8).view(np.uint8)
        else:
            ok = np.abs(r) < _F32(9.2233720e18)
            lr = np.where(ok, r, _F32(0)).astype(np.int64)
            lr[~ok] = np.iinfo(np.int64).min
            low = lr.astype(np.uint8)
    return low + np.uint8(1)


def _scale(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    d = _ternary_amax(x)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, _F32(1) / d, _F32(0)).astype(np.float32)  # NaN is truthy in C
    out["d"] = fp32_to_fp16(d)
    return idv


def _pack_base3(xi: np.ndarray) -> np.ndarray:
    """Horner over the last axis (most significant trit first) in uint8 arithmetic, then the ceiling
    division ``(q * 256 + 242) / 243`` that turns the base-3 number into a fraction of 256."""
    q = np.zeros(xi.shape[:-1], dtype=np.uint8)
    for i in range(xi.shape[-1]):
        q = q * np.uint8(3) + xi[..., i]
    return ((q.astype(np.uint32) * 256 + 242) // 243).astype(np.uint8)


# Chunked fast path: chunks of ENCODE_CHUNK_BLOCKS blocks (64K values) without NaN/Inf whose inverse scales are
# finite.  There |x * id| <= 1 (plus rounding), so ``lroundf(x * id) + 1`` is ``1 + (v >= 0.5) - (v <= -0.5)``
# exactly (round half away from zero), and the base-3 packing never wraps.  Other chunks: the general path.

ENCODE_CHUNK_BLOCKS = 256
_HALF = _F32(0.5)
# q -> (q * 256 + 242) / 243 for every uint8 q (only q < 243 occur)
_CEIL243 = ((np.arange(256, dtype=np.uint32) * 256 + 242) // 243).astype(np.uint8)


def _encode_chunked(name: str, x: np.ndarray, fast, slow) -> np.ndarray:
    """Blocks of ``name`` for x (n, 256): ``fast(x, out)`` per chunk (False: ``slow(x, out)`` instead)."""
    n = x.shape[0]
    out = np.zeros(n, dtype=block_dtype(name))
    for s in range(0, n, ENCODE_CHUNK_BLOCKS):
        xc = x[s : s + ENCODE_CHUNK_BLOCKS]
        oc = out[s : s + ENCODE_CHUNK_BLOCKS]
        with np.errstate(invalid="ignore", over="ignore"):
            finite = bool(np.isfinite(np.sum(xc)))
        if not (finite and fast(xc, oc)):
            slow(xc, oc)
    return out


def _fast_trits(x: np.ndarray, out: np.ndarray):
    """``lroundf(x * id) + 1`` as uint8 (0, 1, 2) for a finite chunk, the scales stored; None when some inverse
    scale is not finite."""
    ax = np.abs(x)
    d = ax.max(axis=1)
    with np.errstate(divide="ignore", over="ignore"):
        idv = np.where(d != 0, _F32(1) / d, _F32(0)).astype(np.float32)
    if not bool(np.isfinite(idv).all()):
        return None
    np.multiply(x, idv[:, None], out=ax)
    xi = np.greater_equal(ax, _HALF).view(np.uint8)
    xi += np.uint8(1)
    xi -= np.less_equal(ax, -_HALF).view(np.uint8)
    out["d"] = fp32_to_fp16(d)
    return xi


def _horner3(t: np.ndarray) -> np.ndarray:
    """Base-3 number of the trits t[..., 0, :], t[..., 1, :], ... (most significant first) in uint8."""
    q = t[..., 0, :].copy()
    for k in range(1, t.shape[-2]):
        q *= np.uint8(3)
        q += t[..., k, :]
    return q


def _fast_tq1_0(x: np.ndarray, out: np.ndarray) -> bool:
    xi = _fast_trits(x, out)
    if xi is None:
        return False
    c = x.shape[0]
    qs = np.empty((c, 52), dtype=np.uint8)
    qs[:, :32] = _horner3(xi[:, :160].reshape(c, 5, 32))  # byte m <- weights m + 32k
    qs[:, 32:48] = _horner3(xi[:, 160:240].reshape(c, 5, 16))  # byte 32+m <- weights 160 + m + 16k
    qs[:, 48:] = _horner3(xi[:, 240:].reshape(c, 4, 4)) * np.uint8(3)  # qh[j] <- 240 + j + 4k, then `q *= 3`
    np.take(_CEIL243, qs, out=qs, mode="clip")
    out["qs"] = qs[:, :48]
    out["qh"] = qs[:, 48:]
    return True


_B2 = np.uint64(2)


def _fast_tq2_0(x: np.ndarray, out: np.ndarray) -> bool:
    xi = _fast_trits(x, out)
    if xi is None:
        return False
    c = x.shape[0]
    w = xi.view(np.uint64).reshape(c, 2, 4, 4)  # (xi & 3) << 2l into byte 32h + m, eight bytes at a time
    q = w[:, :, 3] << _B2
    q |= w[:, :, 2]
    q <<= _B2
    q |= w[:, :, 1]
    q <<= _B2
    q |= w[:, :, 0]
    out["qs"] = q.view(np.uint8).reshape(c, 64)
    return True


def _slow_tq1_0(x: np.ndarray, out: np.ndarray) -> None:
    n = x.shape[0]
    idv = _scale(x, out)
    xi = _trits(x, idv)
    a = xi[:, :160].reshape(n, 5, 32).transpose(0, 2, 1)  # byte m <- weights m + 32k
    b = xi[:, 160:240].reshape(n, 5, 16).transpose(0, 2, 1)  # byte 32+m <- weights 160 + m + 16k
    out["qs"][:, :32] = _pack_base3(a)
    out["qs"][:, 32:] = _pack_base3(b)
    h = xi[:, 240:].reshape(n, 4, 4).transpose(0, 2, 1)  # qh[j] <- weights 240 + j + 4k
    h = np.concatenate([h, np.zeros((n, 4, 1), dtype=np.uint8)], axis=2)  # `q *= 3`: a fifth, zero trit
    out["qh"] = _pack_base3(h)


def _slow_tq2_0(x: np.ndarray, out: np.ndarray) -> None:
    n = x.shape[0]
    idv = _scale(x, out)
    xi = (_trits(x, idv) & np.uint8(3)).reshape(n, 2, 4, 32)  # (xi & 3) << 2l into byte 32c + m
    q = xi[:, :, 0] | (xi[:, :, 1] << 2) | (xi[:, :, 2] << 4) | (xi[:, :, 3] << 6)
    out["qs"] = q.reshape(n, 64)


def encode_tq1_0(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    return _encode_chunked("TQ1_0", rows.reshape(-1, 256), _fast_tq1_0, _slow_tq1_0)


def encode_tq2_0(rows: np.ndarray, imatrix: np.ndarray | None) -> np.ndarray:
    return _encode_chunked("TQ2_0", rows.reshape(-1, 256), _fast_tq2_0, _slow_tq2_0)
