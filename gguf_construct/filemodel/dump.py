"""Describing a GGUF file for people (text) and programs (JSON)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ..format import structs
from ..base.gcpause import without_gc
from ..base.text import printable
from ..format.constructs import BufferStream
from ..format.enums import GGUFValueType
from ..format.structs import value_kind
from .gguffile import GGUFFile
from .modelinfo import TENSOR_FIELDS, tensor_type_names, model_info, render_model_lines, render_model_markdown
from ..format.lazystring import CHUNK_BYTES, PREVIEW_CHARS, LazyString
from ..format.values import GGUFValue

__all__ = [
    "file_summary",
    "value_to_json",
    "render_text",
    "render_markdown",
    "raw_value",
    "text_of_json",
    "kv_offsets",
    "iter_text",
    "iter_markdown",
    "raw_value_pieces",
]

SUMMARY_ITEMS = 8
_TEXT_CHUNK = CHUNK_BYTES // 4  # bytes of a long value quoted at a time (repr makes a character up to 4)
LONG_STRING = PREVIEW_CHARS  # characters of a STRING value kept without --full / full=True (the rest: "truncated")


_TYPE_NAME = {vt: vt.name for vt in GGUFValueType}  # an enum's .name is a property: looked up once per type
_INTEGER_TYPES = frozenset(vt for vt in GGUFValueType if value_kind(vt) == "integer")
_EXACT_ITEMS = frozenset(vt for vt in GGUFValueType if value_kind(vt) in ("integer", "bool"))  # tolist() is JSON
_LINES_PER_PIECE = 4096  # lines of plain keys joined into one piece of text (one write, not one per key)


def _scalar_json(vtype: GGUFValueType, value: Any) -> Any:
    if value_kind(vtype) == "float":
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, np.generic):
        return value.item()
    return value


def value_to_json(value: GGUFValue, *, full: bool = True) -> dict:
    """A typed value as JSON data: ``{"type", "value"}``; arrays add ``"item_type"`` and ``"length"``.

    Floats that JSON cannot hold are the strings "nan", "inf", "-inf".  Without ``full``, arrays longer than
    8 elements keep only their first 8 items and say ``"truncated": true``, and a STRING longer than
    :data:`LONG_STRING` characters keeps its first :data:`LONG_STRING`, with ``"length"`` (its characters) and
    ``"truncated": true``.  With ``full``, a long value read from a file stays a
    :class:`~gguf_construct.format.lazystring.LazyString` (``"value"``): write such data with
    :func:`~gguf_construct.base.jsonout.write_json_stream`, which streams it, or ``json.dumps(...,
    default=str)``, which holds all of it.
    """
    if value.type != GGUFValueType.ARRAY:
        if not full and value.type == GGUFValueType.STRING and len(value.value) > LONG_STRING:
            return {"type": "STRING", "length": len(value.value), "value": value.value[:LONG_STRING], "truncated": True}
        return {"type": _TYPE_NAME[value.type], "value": _scalar_json(value.type, value.value)}
    items = value.value
    n = len(items)
    shown = items if full or n <= SUMMARY_ITEMS else items[:SUMMARY_ITEMS]
    if value.item_type == GGUFValueType.ARRAY:
        data = [value_to_json(v, full=full) for v in shown]
    elif isinstance(shown, np.ndarray):
        data = [_scalar_json(value.item_type, v) for v in shown.tolist()]
    else:
        data = list(shown)
    out = {"type": "ARRAY", "item_type": value.item_type.name, "length": n, "value": data}
    if len(shown) < n:
        out["truncated"] = True
    return out


def _metadata_json(gguf: GGUFFile, full: bool) -> list[dict]:
    """``dict(key=k, **value_to_json(v, full=full))`` of every key in file order; an integer and a short string
    (the common values, millions in a hostile file) are made here without the general path's calls."""
    out: list[dict] = []
    append = out.append
    names, integers, string, array = _TYPE_NAME, _INTEGER_TYPES, GGUFValueType.STRING, GGUFValueType.ARRAY
    exact = _EXACT_ITEMS
    for k, v in gguf.metadata.typed_items():
        vtype, x = v.type, v.value
        if vtype in integers and type(x) is int:
            append({"key": k, "type": names[vtype], "value": x})
        elif vtype is string and type(x) is str and (full or len(x) <= LONG_STRING):
            append({"key": k, "type": "STRING", "value": x})
        elif vtype is array and v.item_type in exact and type(x) is np.ndarray and (full or len(x) <= SUMMARY_ITEMS):
            # a whole array of integers or bools: its items as Python numbers are their JSON
            append({"key": k, "type": "ARRAY", "item_type": names[v.item_type], "length": len(x), "value": x.tolist()})
        else:
            append(dict(key=k, **value_to_json(v, full=full)))
    return out


def kv_offsets(gguf: GGUFFile) -> list[int] | None:
    """Offset of each metadata KV record in the loaded file (None for a file built in memory or edited)."""
    if gguf._buf is None or gguf.metadata.changed:
        return None
    if gguf._kv_offsets is not None:  # kept by load: no second parse of every record (and long value)
        return gguf._kv_offsets[: len(gguf.metadata)]
    fam = structs.family(gguf.version, gguf.byte_order)
    stream = BufferStream(gguf._buf)
    fam.record_parser("header")(stream)
    parse = fam.record_parser("metadata_kv")
    out = []
    for _ in range(len(gguf.metadata)):
        out.append(stream.pos)
        parse(stream)
    return out


@without_gc  # one entry per key and tensor, made in bulk (base/gcpause.py)
def file_summary(gguf: GGUFFile, *, full: bool = False, layout: bool = False) -> dict:
    """The stable JSON shape of ``dump --json``: header facts, metadata in file order, tensor table (and, for a
    file read from a URL, ``transfer``: bytes and requests fetched).

    ``layout`` adds where things are: ``file_size``, ``data_offset`` (start of the tensor data section),
    ``tensor_count`` and each key's record ``offset`` (null for files built in memory).
    """
    metadata = _metadata_json(gguf, full)
    out = {"file": gguf.path, "version": gguf.version, "byte_order": gguf.byte_order, "alignment": gguf.alignment}
    if layout:
        offsets = kv_offsets(gguf) or [None] * len(metadata)
        for entry, offset in zip(metadata, offsets):
            entry["offset"] = offset
        out.update(file_size=gguf.source_size, data_offset=gguf.data_offset, tensor_count=len(gguf.tensors))
    out["model"] = model_info(gguf)
    out["metadata"] = metadata
    type_name = tensor_type_names()
    out["tensors"] = [
        {"name": name, "type": type_name(ggml_type), "shape": list(shape), "offset": offset, "nbytes": nbytes}
        for name, shape, ggml_type, offset, nbytes in map(TENSOR_FIELDS, gguf.tensors)
    ]
    if gguf.transfer is not None:
        out["transfer"] = gguf.transfer
    return out


def _quoted_body(text: str) -> str:
    """``repr(text)`` without its quotes, as inside single quotes (a ``'`` escaped): pieces of one long value,
    quoted piece by piece, join to one single-quoted literal."""
    return repr(text + "\"'")[1:-4]


def _value_pieces(entry: dict, width: int = 0):
    """:func:`text_of_json` of ``entry`` in pieces: a long value's quoted text a chunk at a time."""
    value = entry.get("value")
    if entry["type"] == "ARRAY" or not isinstance(value, LazyString):
        yield text_of_json(entry, width)
        return
    if width:
        yield text_of_json({"type": entry["type"], "value": value.preview(width + 1)}, width)
        return
    yield "'"
    for text in value.iter_chunks(_TEXT_CHUNK):
        yield _quoted_body(text)
    yield "'"


def _text_value(entry: dict, width: int = 0) -> str:
    if entry["type"] != "ARRAY":
        value = entry["value"]
        if isinstance(value, str):  # a long string is cut before repr() (which would make it up to 4x longer)
            cut = width and len(value) > width
            return repr(value[:width]) + "..." if cut else repr(value)
        return str(value)
    items = entry["value"]
    if entry["item_type"] == "ARRAY":
        inner = ", ".join(_text_value(v) if isinstance(v, dict) else repr(v) for v in items)
    else:
        inner = ", ".join(map(repr, items))
    more = ", ..." if entry.get("truncated") else ""
    return f"[{inner}{more}]"


def _type_label(entry: dict) -> str:
    return entry["type"] if entry["type"] != "ARRAY" else f"ARRAY[{entry['item_type']}]"


def _counted(entry: dict, text: str) -> str:
    if entry["type"] != "ARRAY":
        return f"{text} ({entry['length']} characters)" if "length" in entry else text
    n = entry["length"]
    return f"{text} ({n} item{'s' if n != 1 else ''})"


def text_of_json(entry: dict, width: int = 160) -> str:
    """A :func:`value_to_json` entry as one line of text (strings quoted and escaped), cut at ``width``
    characters (0: never)."""
    text = _text_value(entry, width)
    if width and len(text) > width:
        text = text[: width - 3] + "..."
    return text


def _printable_all(texts: list[str]) -> list[str]:
    """``[printable(t) for t in texts]``, checked in one pass when none needs escaping (the common case)."""
    joined = "".join(texts)  # printable() escapes single characters: none in the whole, none in any part
    if printable(joined) is joined:
        return texts
    return [printable(t) for t in texts]


def _layout_lines(summary: dict) -> list[str]:
    lines = []
    if summary.get("file_size") is not None:
        lines.append(f"file size:  {summary['file_size']} bytes")
    if summary.get("data_offset") is not None:
        lines.append(f"data at:    offset {summary['data_offset']}")
    return lines


@without_gc  # one entry per key and tensor, made in bulk (base/gcpause.py)
def render_text(summary: dict, *, full: bool = False, tensors: bool = True) -> str:
    """Human-readable dump of :func:`file_summary` output; values are cut at 160 characters unless ``full``."""
    return "".join(iter_text(summary, full=full, tensors=tensors))


def iter_text(summary: dict, *, full: bool = False, tensors: bool = True):
    """:func:`render_text` in pieces (no final newline): a long value with ``full`` a chunk at a time, so the
    whole text is never held."""
    lines = [
        f"file:       {printable(summary['file']) if summary['file'] else '<memory>'}",
        *_layout_lines(summary),
        f"version:    {summary['version']}",
        f"byte order: {summary['byte_order']}",
        f"alignment:  {summary['alignment']}",
        *(render_model_lines(summary["model"]) if summary.get("model") else ()),
        f"metadata:   {len(summary['metadata'])} keys",
    ]
    keys = _printable_all([m["key"] for m in summary["metadata"]])
    width = max(map(len, keys), default=0)
    yield "\n".join(lines)
    lines = []
    cut = 0 if full else 160
    for key, m in zip(keys, summary["metadata"]):
        # strings are repr()'d, which already escapes every non-printable character
        if isinstance(m.get("value"), LazyString):
            yield "".join(lines)
            lines = []
            yield f"\n  {key:<{width}}  {_type_label(m):<16} "
            yield from _counted_pieces(m, cut)
            continue
        value = m["value"]
        if type(value) is int:  # an integer (or a BOOL read as a number): its digits, never cut
            lines.append(f"\n  {key:<{width}}  {m['type']:<16} {value}")
        else:
            lines.append(f"\n  {key:<{width}}  {_type_label(m):<16} {_counted(m, text_of_json(m, cut))}")
        if len(lines) >= _LINES_PER_PIECE:
            yield "".join(lines)
            lines = []
    yield "".join(lines)
    lines = []
    lines.append(f"\ntensors:    {len(summary['tensors'])}")
    if tensors and summary["tensors"]:
        names = [printable(t["name"]) for t in summary["tensors"]]
        nw = max(map(len, names))
        lines.append(f"  {'name':<{nw}}  {'type':<8} {'shape':<24} {'offset':>14} {'bytes':>14}")
        for name, t in zip(names, summary["tensors"]):
            lines.append(f"  {name:<{nw}}  {t['type']:<8} {str(t['shape']):<24} {t['offset']:>14} {t['nbytes']:>14}")
    yield "\n".join(lines)


def _counted_pieces(entry: dict, width: int):
    """:func:`_counted` of :func:`text_of_json` in pieces (a long value streamed)."""
    if isinstance(entry.get("value"), LazyString):
        yield from _value_pieces(entry, width)
        yield _counted(entry, "")
        return
    yield _counted(entry, text_of_json(entry, width))


def _md(text: str) -> str:
    return printable(text).replace("|", "\\|")


@without_gc  # one entry per key and tensor, made in bulk (base/gcpause.py)
def render_markdown(summary: dict, *, full: bool = False, tensors: bool = True) -> str:
    """:func:`file_summary` output as Markdown: a facts list, a key table and a tensor table."""
    return "".join(iter_markdown(summary, full=full, tensors=tensors))


def iter_markdown(summary: dict, *, full: bool = False, tensors: bool = True):
    """:func:`render_markdown` in pieces (no final newline), a long value a chunk at a time."""
    name = summary["file"] or "<memory>"
    lines = [
        f"# {_md(name)}",
        "",
        f"- version: {summary['version']}, {summary['byte_order']}-endian, alignment {summary['alignment']}",
    ]
    if summary.get("file_size") is not None:
        lines.append(f"- file size: {summary['file_size']} bytes")
    if summary.get("data_offset") is not None:
        lines.append(f"- tensor data at offset {summary['data_offset']}")
    lines.append(f"- {len(summary['metadata'])} keys, {len(summary['tensors'])} tensors")
    if summary.get("model"):
        lines += ["", "## Model", "", *render_model_markdown(summary["model"])]
    lines += ["", "| key | type | value |", "|---|---|---|"]
    yield "\n".join(lines)
    lines = []
    cut = 0 if full else 160
    for m in summary["metadata"]:
        if isinstance(m.get("value"), LazyString):
            yield "".join(lines)
            lines = []
            yield f"\n| `{_md(m['key'])}` | {_type_label(m)} | "
            yield from map(_md, _counted_pieces(m, cut))
            yield " |"
            continue
        value = m["value"]
        if type(value) is int:  # digits: nothing to escape, never cut
            lines.append(f"\n| `{_md(m['key'])}` | {m['type']} | {value} |")
        else:
            lines.append(f"\n| `{_md(m['key'])}` | {_type_label(m)} | {_md(_counted(m, text_of_json(m, cut)))} |")
        if len(lines) >= _LINES_PER_PIECE:
            yield "".join(lines)
            lines = []
    yield "".join(lines)
    lines = []
    if tensors and summary["tensors"]:
        lines += ["", "", "| tensor | type | shape | offset | bytes |", "|---|---|---|---:|---:|"]
        for t in summary["tensors"]:
            lines.append(f"| `{_md(t['name'])}` | {t['type']} | {t['shape']} | {t['offset']} | {t['nbytes']} |")
    yield "\n".join(lines)


def raw_value(value: GGUFValue) -> str:
    """One value as plain text for ``dump --key``: a string exactly as stored, a number as written, an array as
    JSON (strings in it unescaped)."""
    return "".join(raw_value_pieces(value))


def raw_value_pieces(value: GGUFValue):
    """:func:`raw_value` in pieces: a long STRING value a chunk at a time."""
    if value.type == GGUFValueType.STRING:
        if isinstance(value.value, LazyString):
            yield from value.value.iter_chunks()
        else:
            yield value.value
        return
    yield _raw_text(value)


def _raw_text(value: GGUFValue) -> str:
    if value.type == GGUFValueType.ARRAY:
        return json.dumps(value_to_json(value)["value"], ensure_ascii=False)
    if value.type == GGUFValueType.BOOL:
        return "true" if value.value is True else str(value.value).lower()
    return str(_scalar_json(value.type, value.value))
