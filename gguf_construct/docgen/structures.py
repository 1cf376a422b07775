"""The container structures' tables per GGUF version, rendered from the generated families' layouts (fieldlayout)."""

from __future__ import annotations

from ..format import fieldrules, structs
from ..format.fieldlayout import TypeLayout
from .context import Ctx
from .markdown import anchor, code, esc, heading, join_nonempty, table

__all__ = ["STRUCT_PAGE", "struct_anchors", "versions_by_layout", "group_label", "struct_section"]

# Which page defines which structures of gguf.yaml (the others: format.md).
STRUCT_PAGE = {"gguf_string": "values.md", "gguf_array": "values.md"}

# How the field column says what a read that stops at the field breaks (the ``breaks`` of gguf.yaml).
_FAILURES = {
    "count": "A count needing more bytes than are left breaks {}.",
    "selector": "A selector with no case breaks {}.",
    "mismatch": "Other bytes break {}.",
    "invalid": "Another value breaks {}.",
    "nesting": "Nested deeper than a reader can follow, it breaks {}.",
}


def struct_anchors(g: dict, page: str):
    """The anchors of the structures (and their fields) that ``page`` defines."""
    for sname, sdef in g["types"].items():
        if STRUCT_PAGE.get(sname, "format.md") == page:
            yield anchor("struct", sname)
            yield from (anchor("field", sname, f["id"]) for f in sdef["seq"])


def versions_by_layout(sname: str) -> list[tuple[tuple[int, ...], TypeLayout]]:
    """The versions grouped by identical layouts of structure ``sname`` (as the generated families have it), each
    group with that layout, e.g. ``[((1,), <v1 layout>), ((2, 3), <v2 layout>)]``."""
    groups: dict[tuple, tuple[list[int], TypeLayout]] = {}
    for v in structs.versions():
        lays = [structs.family(v, bo).layout(sname) for bo in structs.BYTE_ORDERS]
        key = tuple(lay.fields for lay in lays)
        groups.setdefault(key, ([], lays[0]))[0].append(v)
    return [(tuple(vs), lay) for vs, lay in groups.values()]


def group_label(vs: tuple[int, ...]) -> str:
    """``v1`` or ``v2, v3``: the versions a column of a structure table holds."""
    return ", ".join(f"v{v}" for v in vs)


def _field_type(ctx: Ctx, f: dict) -> str:
    g = ctx.data.gguf
    if "contents" in f:
        return f"bytes {code(f['contents'])}"
    if "switch_on" in f:
        base = f"one value of the type in {code(f['switch_on'])}"
        return base + (f", × {code(f['repeat'])}" if "repeat" in f else "")
    if "size" in f:
        return f"{code(f['size'])} bytes of {esc(f.get('encoding', 'data'))}"
    tname = f["type"]
    if tname in g["aliases"]:
        t = ctx.ref("alias", tname)
    elif tname in g["types"]:
        t = ctx.ref("struct", tname)
    else:
        t = ctx.ref("prim", tname)
    if "repeat" in f:
        t += f" × {code(f['repeat'])}"
    if f.get("enum") == "value_types":
        t += f" ({ctx.link('value-types', 'value type')})"
    elif f.get("enum") == "ggml_types":
        t += f" ({ctx.link('tensor-types-summary', 'ggml type')})"
    return t


def struct_section(ctx: Ctx, sname: str, level: int = 3) -> str:
    """A structure's heading, doc and field table: type, offset and size per group of versions, meaning."""
    g = ctx.data.gguf
    sdef = g["types"][sname]
    groups = versions_by_layout(sname)
    out = [heading(level, anchor("struct", sname), code(sname)), ctx.prose(sdef["doc"]) + "\n"]
    if sdef.get("doc_ref"):
        out.append(f"Source: {esc(sdef['doc_ref'])}.\n")
    truncated = fieldrules.truncated_rule(sname)
    if truncated:
        out.append(f"A file that ends inside it breaks {ctx.ref('rule', truncated)}.\n")
    header = ["field", "type"]
    for vs, _lay in groups:
        header += [f"offset ({group_label(vs)})", f"size ({group_label(vs)})"]
    header.append("meaning")
    rows = []
    for f in sdef["seq"]:
        row = [f'<a id="{anchor("field", sname, f["id"])}"></a>{code(f["id"])}', _field_type(ctx, f)]
        for _vs, lay in groups:
            here = f["id"] in {fl.id for fl in lay.fields}  # a field new in a later version (since) is absent
            row += [str(lay[f["id"]].offset), str(lay[f["id"]].size)] if here else ["—", "—"]
        extra = []
        if f.get("since", 1) > 1:
            extra.append(
                f"Since v{f['since']}"
                + (f"; a writer without a value puts {code(f['default'])}." if "default" in f else ".")
            )
        if f.get("c_name"):
            extra.append(f"C: {code(f['c_name'])}.")
        if isinstance(f.get("valid"), list):
            extra.append("Valid: " + ", ".join(code(v) for v in f["valid"]) + ".")
        elif f.get("valid"):
            bounds = {"min": "at least {}", "max": "at most {}", "max_size": "at most {} bytes"}
            extra.append("Valid: " + ", ".join(bounds[k].format(code(v)) for k, v in f["valid"].items()) + ".")
        extra += [_FAILURES[failure].format(ctx.ref("rule", rule)) for failure, rule in f.get("breaks", {}).items()]
        row.append(join_nonempty([ctx.prose(f.get("doc", ""))] + extra))
        rows.append(row)
    out.append(table(header, rows))
    return "\n".join(out)
