"""The limits of 2^30 (STR-MAXLEN: a string of more than 1 GiB, ARR-MAXLEN: an array of more than 2^30 elements,
ggml's GGUF_MAX_STRING_LENGTH and GGUF_MAX_ARRAY_ELEMENTS) on both sides.

A file at or one past these limits holds at least 1 GiB, so the default suite (which aims under 50 MB) has only
:func:`.cases.declared_past_limit_cases`: short files whose last key *declares* a string of 2^30 + 1 bytes or an
array of 2^30 + 1 elements and then ends.

``suite write DIR --large`` adds the four true boundary files (:func:`large_cases`): a string of exactly 2^30
bytes and of 2^30 + 1, an array of 2^30 and of 2^30 + 1 UINT8 elements, each the carrier with one more key.
They are never held in memory: :meth:`LargeCase.write` streams the value (the array's zeros as a hole of a sparse
file where the file system has them) between a head and a tail that are built like any crafted file.  Their
manifest entries say ``"large": true``; the big key is described by its ``length`` and the ``sha256`` of its
bytes instead of a ``value``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Iterator

from ..breaking import crafting
from ..breaking.crafted import RawFile
from ..rulebook.container import LIMITS
from .cases import BIG_KEY, FILL, declared

__all__ = ["LargeCase", "large_cases"]

_CHUNK = 1 << 22


# -- the opt-in large files --------------------------------------------------------------------------------------
@dataclass
class LargeCase:
    """A boundary file too large to hold: the carrier with one more key, ``vtype`` of ``length`` bytes/elements,
    as a head, a streamed fill and a tail."""

    path: str
    rules: tuple[str, ...]
    near: tuple[str, ...]
    doc: str
    vtype: str
    length: int
    group: str = "large"
    model: bool = False
    advisories: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    def _raw(self, present: int) -> RawFile:
        raw = crafting.carrier()
        raw.set_raw(BIG_KEY[self.vtype], self.vtype, declared(raw, self.vtype, self.length, present))
        return raw

    def parts(self) -> tuple[bytes, int, bytes]:
        """``(head, n, tail)``: the file is ``head``, ``n`` fill bytes, ``tail``.  The value's last bytes (its
        length modulo the alignment) stay in the built file, so that the padding before the data section and
        every tensor offset are those of the whole file."""
        raw = self._raw(0)
        alignment = raw.alignment
        kept = self.length % alignment
        raw = self._raw(kept)
        infos = raw.copy()
        infos.n_tensors = len(raw.tensors)
        infos.tensors = []
        cut = len(infos.head()) - kept  # where the big key's value starts its kept bytes
        built = raw.to_bytes()
        return built[:cut], self.length - kept, built[cut:]

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        head, n, tail = self.parts()
        return len(head) + n + len(tail)

    def _chunks(self, n: int) -> Iterator[bytes]:
        block = FILL[self.vtype] * min(n, _CHUNK)
        while n > 0:
            yield block[: min(n, len(block))]
            n -= len(block)

    def sha256s(self) -> tuple[str, str]:
        """(SHA-256 of the whole file, SHA-256 of the big key's value bytes: a string's bytes or the array's
        elements), both from one streamed pass over the fill."""
        head, n, tail = self.parts()
        whole, value = hashlib.sha256(head), hashlib.sha256()
        for chunk in self._chunks(n):
            whole.update(chunk)
            value.update(chunk)
        whole.update(tail)
        value.update(tail[: self.length - n])  # the value's kept bytes open the tail
        return whole.hexdigest(), value.hexdigest()

    def write(self, path: str) -> None:
        """Write the file to ``path`` (an already-open temporary path) without holding it: zeros are skipped
        over (a hole where the file system supports it), other fill bytes are written a chunk at a time."""
        head, n, tail = self.parts()
        with open(path, "wb") as out:
            out.write(head)
            if FILL[self.vtype] == b"\0":
                out.seek(n, os.SEEK_CUR)
            else:
                for chunk in self._chunks(n):
                    out.write(chunk)
            out.write(tail)
            out.truncate()

    def small_twin(self) -> bytes:
        """The same file with the big value cut to its kept bytes and its length said so: every other key and
        every tensor info, offset and data byte are those of the large file (for the manifest's expected
        values)."""
        raw = crafting.carrier()
        kept = self.length % raw.alignment
        raw.set_raw(BIG_KEY[self.vtype], self.vtype, declared(raw, self.vtype, kept, kept))
        return raw.to_bytes()


def large_cases(limits: dict[str, int] | None = None) -> list[LargeCase]:
    """The four boundary files: a string of ``limit`` and ``limit + 1`` bytes, an array of ``limit`` and
    ``limit + 1`` UINT8 elements (ggml's limits, or ``limits`` lowered for tests)."""
    limits = dict(LIMITS if limits is None else limits)
    s, a = limits["string_bytes"], limits["array_elements"]
    return [
        LargeCase(
            f"large/valid/string-{s}-bytes.gguf",
            (),
            ("STR-MAXLEN",),
            f"A string of {s} bytes: the longest ggml reads (GGUF_MAX_STRING_LENGTH).",
            "STRING",
            s,
        ),
        LargeCase(
            f"large/STR-MAXLEN/string-{s + 1}-bytes.gguf",
            ("STR-MAXLEN",),
            (),
            f"A string of {s + 1} bytes: one past the longest ggml reads; gguf.md sets no limit.",
            "STRING",
            s + 1,
        ),
        LargeCase(
            f"large/valid/array-{a}-uint8.gguf",
            (),
            ("ARR-MAXLEN",),
            f"A UINT8 array of {a} elements: the most ggml reads (GGUF_MAX_ARRAY_ELEMENTS).",
            "ARRAY",
            a,
        ),
        LargeCase(
            f"large/ARR-MAXLEN/array-{a + 1}-uint8.gguf",
            ("ARR-MAXLEN",),
            (),
            f"A UINT8 array of {a + 1} elements: one past the most ggml reads; gguf.md sets no limit.",
            "ARRAY",
            a + 1,
        ),
    ]
