"""Judging a long byte string a bounded chunk at a time: UTF-8 validity, NUL bytes, character counts, decoding.

Each function takes an iterable of byte chunks (any split: a multi-byte UTF-8 sequence may be cut between two
chunks) and holds at most one chunk and the few bytes of a sequence cut at its end.  A chunk of ASCII bytes is
judged by ``bytes.isascii`` (memory speed) without being decoded.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator

__all__ = ["first_invalid_utf8", "first_nul", "count_chars", "decode_chunks"]


def first_invalid_utf8(chunks: Iterable[bytes]) -> int | None:
    """The byte offset of the first sequence that is not valid UTF-8 in the chunks joined (a sequence cut by the
    end counts as invalid where it starts), or None when they are valid UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    pos = 0  # bytes of the chunks before this one
    for chunk in chunks:
        pending = len(decoder.getstate()[0])
        if not pending and chunk.isascii():
            pos += len(chunk)
            continue
        try:
            decoder.decode(chunk, False)
        except UnicodeDecodeError as exc:  # exc.start counts from the pending bytes, which come first
            return pos - pending + exc.start
        pos += len(chunk)
    pending = len(decoder.getstate()[0])
    try:
        decoder.decode(b"", True)
    except UnicodeDecodeError as exc:
        return pos - pending + exc.start
    return None


def first_nul(chunks: Iterable[bytes]) -> int | None:
    """The byte offset of the first zero byte in the chunks joined, or None."""
    pos = 0
    for chunk in chunks:
        at = chunk.find(b"\x00")
        if at >= 0:
            return pos + at
        pos += len(chunk)
    return None


def decode_chunks(chunks: Iterable[bytes]) -> Iterator[str]:
    """The chunks decoded as UTF-8 with ``surrogateescape`` (bytes that are not UTF-8 survive), one ``str`` per
    chunk: joined, exactly the decode of the joined bytes."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    for chunk in chunks:
        if not decoder.getstate()[0] and chunk.isascii():
            yield chunk.decode("ascii")
            continue
        text = decoder.decode(chunk, False)
        if text:
            yield text
    tail = decoder.decode(b"", True)
    if tail:
        yield tail


def count_chars(chunks: Iterable[bytes]) -> int:
    """How many characters the chunks joined decode to (UTF-8 with ``surrogateescape``)."""
    return sum(map(len, decode_chunks(chunks)))
