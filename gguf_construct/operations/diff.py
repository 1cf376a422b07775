"""Compare two GGUF files: header, metadata keys and tensors (optionally their data), exit status as ``diff``."""

from __future__ import annotations

from typing import Any

from ..base.text import printable
from ..filemodel.dump import text_of_json, value_to_json
from .. import codecs
from ..filemodel.gguffile import GGUFFile, Tensor

__all__ = ["diff_files", "render_diff"]

_CHUNK = 16 << 20  # bytes per comparison step, rounded down to whole blocks


def block_chunks(raw, block_size: int, chunk: int | None = None):
    """``raw`` as consecutive slices of whole blocks of ``block_size`` bytes, about ``chunk`` bytes each.  The one
    chunking rule of every byte comparison across byte orders: both sides are cut with the same block size, so a
    swapped block always meets the same block of the other side, however large the tensor."""
    step = max(1, (chunk or _CHUNK) // block_size) * block_size
    return (raw[i : i + step] for i in range(0, len(raw), step))


def _same_data(a: Tensor, b: Tensor, comparison: str) -> bool:
    if comparison == "values" and (a.opaque or b.opaque or int(a.ggml_type) != int(b.ggml_type)):
        comparison = "bytes"  # no layout to swap by (or different layouts): the bytes decide
    ra, rb = a.raw(), b.raw()
    if len(ra) != len(rb):
        return False
    if comparison != "values":
        return all(x == y for x, y in zip(block_chunks(ra, 1), block_chunks(rb, 1)))
    block = codecs.type_spec(int(a.ggml_type)).type_size  # one block size for both sides
    swapped = (
        codecs.swap_blocks(int(b.ggml_type), part, b.byte_order, a.byte_order) for part in block_chunks(rb, block)
    )
    return all(x == y for x, y in zip(block_chunks(ra, block), swapped))


def data_comparison(a: GGUFFile, b: GGUFFile) -> str:
    """How ``diff --data`` compares tensor data: ``bytes`` when both files have one byte order, ``values`` when
    they differ (B's blocks are swapped to A's byte order field by field as the spec declares, then compared
    byte for byte, so equal values compare equal however each file stores them)."""
    return "bytes" if a.byte_order == b.byte_order else "values"


def diff_files(a: GGUFFile, b: GGUFFile, *, data: bool = False) -> dict[str, Any]:
    """The differences of ``b`` against ``a`` as JSON data: ``header`` (field -> [a, b]), ``keys`` (added,
    removed, changed with types and values), ``tensors`` (added, removed, changed shape/type/offset, and with
    ``data`` the tensors whose data differ, compared as :func:`data_comparison` says, which ``data_compared``
    names).  Empty lists and dicts when the files agree."""
    header = {}
    for field in ("version", "byte_order", "alignment"):
        if getattr(a, field) != getattr(b, field):
            header[field] = [getattr(a, field), getattr(b, field)]
    for field, va, vb in (
        ("tensor_count", len(a.tensors), len(b.tensors)),
        ("metadata_kv_count", len(a.metadata), len(b.metadata)),
    ):
        if va != vb:
            header[field] = [va, vb]
    ka, kb = dict(a.metadata.typed_items()), dict(b.metadata.typed_items())
    keys = {
        "added": [dict(key=k, **value_to_json(kb[k], full=False)) for k in kb if k not in ka],
        "removed": [dict(key=k, **value_to_json(ka[k], full=False)) for k in ka if k not in kb],
        "changed": [
            {"key": k, "a": value_to_json(ka[k], full=False), "b": value_to_json(kb[k], full=False)}
            for k in ka
            if k in kb and ka[k] != kb[k]
        ],
    }
    ta, tb = {t.name: t for t in a.tensors}, {t.name: t for t in b.tensors}
    comparison = data_comparison(a, b) if data else None
    changed = []
    for name, t in ta.items():
        u = tb.get(name)
        if u is None:
            continue
        what = {}
        if t.shape != u.shape:
            what["shape"] = [list(t.shape), list(u.shape)]
        if int(t.ggml_type) != int(u.ggml_type):
            what["type"] = [t.type_name, u.type_name]
        if t.offset != u.offset:
            what["offset"] = [t.offset, u.offset]
        if data and not _same_data(t, u, comparison):
            what["data"] = True
        if what:
            changed.append({"name": name, **what})
    tensors = {
        "added": [_tensor_json(t) for n, t in tb.items() if n not in ta],
        "removed": [_tensor_json(t) for n, t in ta.items() if n not in tb],
        "changed": changed,
    }
    return {
        "a": a.path,
        "b": b.path,
        "data_compared": comparison or False,
        "header": header,
        "keys": keys,
        "tensors": tensors,
    }


def _tensor_json(t: Tensor) -> dict:
    return {"name": t.name, "type": t.type_name, "shape": list(t.shape), "offset": t.offset}


def differs(result: dict) -> bool:
    """True when :func:`diff_files` found any difference."""
    return bool(result["header"]) or any(result["keys"].values()) or any(result["tensors"].values())


def _typed(entry: dict) -> str:
    kind = entry["type"] if entry["type"] != "ARRAY" else f"ARRAY[{entry['item_type']}]"
    return f"{kind} {text_of_json(entry)}"


_COMPARISONS = {
    "bytes": "byte for byte",
    "values": "by value (the byte orders differ: B's blocks swapped to A's byte order, field by field)",
}


def render_diff(result: dict) -> str:
    """The differences as text: ``-`` only in A, ``+`` only in B, ``~`` changed."""
    lines = []
    for field, (va, vb) in result["header"].items():
        lines.append(f"~ header {field}: {va} -> {vb}")
    for e in result["keys"]["removed"]:
        lines.append(f"- key {printable(e['key'])}: {_typed(e)}")
    for e in result["keys"]["added"]:
        lines.append(f"+ key {printable(e['key'])}: {_typed(e)}")
    for e in result["keys"]["changed"]:
        lines.append(f"~ key {printable(e['key'])}: {_typed(e['a'])} -> {_typed(e['b'])}")
    for t in result["tensors"]["removed"]:
        lines.append(f"- tensor {printable(t['name'])}: {t['type']} {t['shape']}")
    for t in result["tensors"]["added"]:
        lines.append(f"+ tensor {printable(t['name'])}: {t['type']} {t['shape']}")
    for t in result["tensors"]["changed"]:
        parts = [f"{f} {t[f][0]} -> {t[f][1]}" for f in ("shape", "type", "offset") if f in t]
        if t.get("data"):
            parts.append("data differs")
        lines.append(f"~ tensor {printable(t['name'])}: {', '.join(parts)}")
    return "\n".join(lines)
