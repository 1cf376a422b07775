"""Writing JSON to stdout, shared by the command-line layers (a leaf module: imports nothing of the package)."""

from __future__ import annotations

import json
import sys
import uuid
from itertools import repeat
from json.encoder import encode_basestring, encode_basestring_ascii

__all__ = ["write_json", "write_json_stream"]


def write_json(text: str) -> None:
    """Print JSON text to stdout as UTF-8 (RFC 8259) whatever the locale; lone surrogates (strings of invalid UTF-8
    read with surrogateescape) become JSON ``\\udcXX`` escapes instead of an encoding error."""
    data = (text + "\n").encode("utf-8", "backslashreplace")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (e.g. captured): ASCII JSON is valid everywhere
        sys.stdout.write(json.dumps(json.loads(data), ensure_ascii=True, indent=1) + "\n")
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


_ESCAPED_CHARS = 1 << 16  # characters of a streamed value escaped at a time


def write_json_stream(data, *, indent: int = 1) -> None:
    """Print ``data`` as :func:`write_json` prints ``json.dumps(data, ensure_ascii=False, allow_nan=False,
    indent=indent)``, a piece at a time: a value with an ``iter_chunks()`` method (a long string read from a file)
    is written as one JSON string a chunk at a time, so neither it nor the whole text is held."""
    buffer = getattr(sys.stdout, "buffer", None)
    ascii_only = buffer is None  # a text-only stream (e.g. captured): ASCII JSON is valid everywhere
    token = uuid.uuid4().hex
    streamed: list = []

    def placeholder(obj):
        if not hasattr(obj, "iter_chunks"):
            raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")
        streamed.append(obj)
        return f"\x00{token}:{len(streamed) - 1}"

    marker = json.dumps(f"\x00{token}:", ensure_ascii=ascii_only)[:-1]  # the quote and the placeholder's start
    encoder = json.JSONEncoder(ensure_ascii=ascii_only, allow_nan=False, indent=indent, default=placeholder)

    def out(text: str) -> None:
        if buffer is None:
            sys.stdout.write(text)
        else:
            buffer.write(text.encode("utf-8", "backslashreplace"))

    sys.stdout.flush()
    for piece in _json_pieces(encoder, data, indent):
        at = piece.find(marker)
        if at < 0:
            out(piece)
            continue
        end = piece.index('"', at + len(marker))
        out(piece[:at] + '"')
        for text in streamed[int(piece[at + len(marker) : end])].iter_chunks():
            for i in range(0, len(text), _ESCAPED_CHARS):  # escaping makes a character up to 12 bytes
                out(json.dumps(text[i : i + _ESCAPED_CHARS], ensure_ascii=ascii_only)[1:-1])
        out('"' + piece[end + 1 :])
    out("\n")
    if buffer is not None:
        buffer.flush()


_PLAIN = frozenset({str, int, bool, type(None)})  # values written here exactly as json writes them
_KEYS = frozenset({str})
_NESTING = 3  # dicts and lists followed here down to this depth (the shape of a summary); deeper: json's encoder


def _json_pieces(encoder: json.JSONEncoder, data, indent: int, level: int = 0):
    """``encoder.iterencode(data)`` (``indent`` given, default separators), the same text: a dict whose values are
    strings, integers, booleans, None or lists of those (one metadata entry or tensor of a dump: millions in a
    hostile file) is written in one step instead of json's Python-level generator per value; anything else is
    json's, its lines indented."""
    kind = type(data)
    if level < _NESTING and kind in (dict, list) and data:
        pad = "\n" + " " * (indent * level)
        inner = pad + " " * indent
        if kind is list:
            for i, item in enumerate(data):
                yield ("[" if i == 0 else ",") + inner
                yield from _json_pieces(encoder, item, indent, level + 1)
            yield pad + "]"
            return
        if _KEYS.issuperset(map(type, data)):
            text = encode_basestring_ascii if encoder.ensure_ascii else encode_basestring
            values = [_flat(text, v, inner, indent) for v in data.values()]
            if None not in values:
                yield "{" + inner + ("," + inner).join(map("".join, zip(map(text, data), repeat(": "), values)))
                yield pad + "}"
                return
            for i, (k, v) in enumerate(data.items()):
                yield ("{" if i == 0 else ",") + inner + text(k) + ": "
                yield from _json_pieces(encoder, v, indent, level + 1)
            yield pad + "}"
            return
    if level == 0:
        yield from encoder.iterencode(data)
        return
    shift = "\n" + " " * (indent * level)  # a JSON string holds no raw newline: each one starts a line
    for piece in encoder.iterencode(data):
        yield piece.replace("\n", shift)


def _flat(text, value, pad: str, indent: int) -> str | None:
    """``value`` (a string, integer, boolean, None or a list of those) as json writes it at the line ``pad``
    starts; None for anything else."""
    kind = type(value)
    if kind is str:
        return text(value)
    if kind is list:
        if not value:
            return "[]"
        if not _PLAIN.issuperset(map(type, value)):
            return None
        inner = pad + " " * indent
        return "[" + inner + ("," + inner).join([_plain(text, v) for v in value]) + pad + "]"
    return _plain(text, value) if kind in _PLAIN else None


def _plain(text, value) -> str:
    if type(value) is str:
        return text(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return int.__repr__(value)
