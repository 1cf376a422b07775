"""Tensor-data hashes in the output format of llama.cpp's gguf-hash.

Lines are ``<algo padded to 8>  <hex digest>  <file>:<tensor>`` per tensor and ``<algo>  <hex>  <file>`` for the
whole model: the tensors' bytes in tensor-info order, without padding or metadata (so editing metadata keeps the
model hash).  Algorithms: xxh64 (seed 0; gguf-hash's default), sha1, sha256, and uuid (a UUIDv5 from the SHA-1 of
llama.cpp's namespace and the tensor data).  xxh64 uses the ``xxhash`` package when installed (extra ``[hash]``),
else the pure-Python :mod:`gguf_construct.base.xxh64`.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Iterator

from ..filemodel.gguffile import GGUFFile
from ..base.xxh64 import XXH64

__all__ = ["ALGORITHMS", "new_hasher", "hash_lines"]

ALGORITHMS = ("xxh64", "sha1", "sha256")  # gguf-hash's order of lines
# uuid.uuid5(uuid.NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp'), llama.cpp's namespace for model UUIDs
UUID_NAMESPACE = bytes.fromhex("ef001206dadc5f6da15f3359e577d4e5")
_CHUNK = 16 << 20


def new_hasher(algo: str):
    """A hashlib-style object (update, hexdigest) for ``algo``."""
    if algo == "xxh64":
        try:
            import xxhash
        except ImportError:
            return XXH64()
        return xxhash.xxh64(seed=0)
    if algo in ("sha1", "sha256"):
        return hashlib.new(algo)
    raise ValueError(f"unknown hash algorithm {algo!r}; one of {', '.join(ALGORITHMS)}")


def _uuid_from_sha1(digest: bytes) -> str:
    u = bytearray(digest[:16])
    u[6] = (u[6] & 0x0F) | 0x50  # version 5
    u[8] = (u[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = u.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _line(algo: str, digest: str, where: str) -> str:
    return f"{algo:<8}  {digest}  {where}"


def hash_lines(
    gguf: GGUFFile, name: str, algos: Iterable[str] = ("xxh64",), *, per_tensor: bool = False, uuid: bool = False
) -> Iterator[str]:
    """gguf-hash's lines for ``gguf`` (printed as ``name``): per tensor when asked, then the model hashes."""
    algos = [a for a in ALGORITHMS if a in set(algos)]
    model = {a: new_hasher(a) for a in algos}
    uuid_hash = hashlib.sha1(UUID_NAMESPACE) if uuid else None
    for t in gguf.tensors:
        per = {a: new_hasher(a) for a in algos} if per_tensor else {}
        raw = t.raw()
        for i in range(0, len(raw), _CHUNK):
            chunk = raw[i : i + _CHUNK]
            for a in algos:
                model[a].update(chunk)
                if per_tensor:
                    per[a].update(chunk)
            if uuid_hash is not None:
                uuid_hash.update(chunk)
        for a in per:
            yield _line(a, per[a].hexdigest(), f"{name}:{t.name}")
    for a in algos:
        yield _line(a, model[a].hexdigest(), name)
    if uuid_hash is not None:
        yield _line("uuid", _uuid_from_sha1(uuid_hash.digest()), name)
