"""XXH64 (xxHash, 64-bit) in pure Python, streaming: the fallback when the ``xxhash`` package (extra ``[hash]``) is
not installed.  Correct on every input; about 20 MB/s, so install the extra for large models."""

from __future__ import annotations

import numpy as np

__all__ = ["XXH64"]

_M = (1 << 64) - 1
P1, P2, P3, P4, P5 = (
    0x9E3779B185EBCA87,
    0xC2B2AE3D27D4EB4F,
    0x165667B19E3779F9,
    0x85EBCA77C2B2AE63,
    0x27D4EB2F165667C5,
)
_STRIPE = 32


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * P2) & _M
    return (_rotl(acc, 31) * P1) & _M


class XXH64:
    """hashlib-style XXH64: ``update(data)``, ``intdigest()``, ``hexdigest()`` (big-endian hex, as xxhsum)."""

    name = "xxh64"

    def __init__(self, seed: int = 0):
        self._v = [(seed + P1 + P2) & _M, (seed + P2) & _M, seed & _M, (seed - P1) & _M]
        self._seed = seed & _M
        self._buf = b""
        self._total = 0

    def update(self, data) -> None:
        """Feed more bytes."""
        data = memoryview(data).cast("B")
        self._total += len(data)
        if self._buf:
            need = _STRIPE - len(self._buf)
            self._buf += bytes(data[:need])
            data = data[need:]
            if len(self._buf) < _STRIPE:
                return
            self._stripes(self._buf)
            self._buf = b""
        whole = len(data) - len(data) % _STRIPE
        if whole:
            self._stripes(data[:whole])
        self._buf = bytes(data[whole:])

    def _stripes(self, data) -> None:
        lanes = np.frombuffer(data, dtype="<u8").tolist()
        v1, v2, v3, v4 = self._v
        for i in range(0, len(lanes), 4):
            v1 = (_rotl((v1 + lanes[i] * P2) & _M, 31) * P1) & _M
            v2 = (_rotl((v2 + lanes[i + 1] * P2) & _M, 31) * P1) & _M
            v3 = (_rotl((v3 + lanes[i + 2] * P2) & _M, 31) * P1) & _M
            v4 = (_rotl((v4 + lanes[i + 3] * P2) & _M, 31) * P1) & _M
        self._v = [v1, v2, v3, v4]

    def intdigest(self) -> int:
        """The hash as an unsigned 64-bit integer."""
        if self._total >= _STRIPE:
            v1, v2, v3, v4 = self._v
            h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
            for v in self._v:
                h = ((h ^ _round(0, v)) * P1 + P4) & _M
        else:
            h = (self._seed + P5) & _M
        h = (h + self._total) & _M
        tail = self._buf
        i = 0
        while i + 8 <= len(tail):
            h ^= _round(0, int.from_bytes(tail[i : i + 8], "little"))
            h = (_rotl(h, 27) * P1 + P4) & _M
            i += 8
        if i + 4 <= len(tail):
            h ^= (int.from_bytes(tail[i : i + 4], "little") * P1) & _M
            h = (_rotl(h, 23) * P2 + P3) & _M
            i += 4
        for byte in tail[i:]:
            h ^= (byte * P5) & _M
            h = (_rotl(h, 11) * P1) & _M
        h ^= h >> 33
        h = (h * P2) & _M
        h ^= h >> 29
        h = (h * P3) & _M
        h ^= h >> 32
        return h

    def hexdigest(self) -> str:
        """The hash as 16 hex digits, most significant first."""
        return f"{self.intdigest():016x}"
