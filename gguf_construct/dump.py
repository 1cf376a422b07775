"""Describing a GGUF file for people (text) and programs (JSON)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._text import printable
from .enums import GGUFValueType
from .model import GGUFFile
from .values import GGUFValue

__all__ = ["file_summary", "value_to_json", "render_text"]

SUMMARY_ITEMS = 8


def _scalar_json(vtype: GGUFValueType, value: Any) -> Any:
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
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
    8 elements keep only their first 8 items and say ``"truncated": true``.
    """
    if value.type != GGUFValueType.ARRAY:
        return {"type": value.type.name, "value": _scalar_json(value.type, value.value)}
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


def file_summary(gguf: GGUFFile, *, full: bool = False) -> dict:
    """The stable JSON shape of ``dump --json``: header facts, metadata in file order, tensor table."""
    return {
        "file": gguf.path,
        "version": gguf.version,
        "byte_order": gguf.byte_order,
        "alignment": gguf.alignment,
        "metadata": [dict(key=k, **value_to_json(v, full=full)) for k, v in gguf.metadata.typed_items()],
        "tensors": [
            {"name": t.name, "type": t.type_name, "shape": list(t.shape), "offset": t.offset,
             "nbytes": t.nbytes}
            for t in gguf.tensors
        ],
    }


def _text_value(entry: dict) -> str:
    if entry["type"] != "ARRAY":
        return repr(entry["value"]) if isinstance(entry["value"], str) else str(entry["value"])
    inner = ", ".join(_text_value(v) if isinstance(v, dict) else repr(v) for v in entry["value"])
    more = f", ... ({entry['length']} items)" if entry.get("truncated") else ""
    return f"[{inner}{more}]"


def render_text(summary: dict) -> str:
    """Human-readable dump of :func:`file_summary` output."""
    lines = [
        f"file:       {printable(summary['file']) if summary['file'] else '<memory>'}",
        f"version:    {summary['version']}",
        f"byte order: {summary['byte_order']}",
        f"alignment:  {summary['alignment']}",
        f"metadata:   {len(summary['metadata'])} keys",
    ]
    keys = [printable(m["key"]) for m in summary["metadata"]]
    width = max(map(len, keys), default=0)
    for key, m in zip(keys, summary["metadata"]):
        vtype = m["type"] if m["type"] != "ARRAY" else f"ARRAY[{m['item_type']}]"
        text = _text_value(m)  # strings are repr()'d, which already escapes every non-printable character
        if len(text) > 160:
            text = text[:157] + "..."
        lines.append(f"  {key:<{width}}  {vtype:<16} {text}")
    lines.append(f"tensors:    {len(summary['tensors'])}")
    if summary["tensors"]:
        names = [printable(t["name"]) for t in summary["tensors"]]
        nw = max(map(len, names))
        lines.append(f"  {'name':<{nw}}  {'type':<8} {'shape':<24} {'offset':>14} {'bytes':>14}")
        for name, t in zip(names, summary["tensors"]):
            lines.append(f"  {name:<{nw}}  {t['type']:<8} {str(t['shape']):<24} {t['offset']:>14} "
                         f"{t['nbytes']:>14}")
    return "\n".join(lines)
