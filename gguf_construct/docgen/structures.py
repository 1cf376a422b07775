"""Sizes and offsets of the container structures per GGUF version, for the format and values pages."""

from __future__ import annotations

from .context import Ctx
from .markdown import anchor, code, esc, heading, join_nonempty, table

__all__ = ["STRUCT_PAGE", "struct_anchors", "version_groups", "resolve_alias", "group_label", "field_size", "struct_layout",
           "struct_section", "fixed_size"]

# Which page defines which structures of gguf.yaml (the others: format.md).
STRUCT_PAGE = {"gguf_string": "values.md", "gguf_array": "values.md"}


def struct_anchors(g: dict, page: str):
    """The anchors of the structures (and their fields) that ``page`` defines."""
    for sname, sdef in g["types"].items():
        if STRUCT_PAGE.get(sname, "format.md") == page:
            yield anchor("struct", sname)
            yield from (anchor("field", sname, f["id"]) for f in sdef["seq"])


def version_groups(g: dict) -> list[tuple[int, ...]]:
    """Versions grouped by identical alias widths, e.g. [(1,), (2, 3)]."""
    groups: dict[tuple, list[int]] = {}
    for v in g["meta"]["versions"]:
        key = tuple(resolve_alias(g, name, v) for name in g["aliases"])
        groups.setdefault(key, []).append(v)
    return [tuple(vs) for vs in groups.values()]


def resolve_alias(g: dict, name: str, version: int) -> str:
    cases = g["aliases"][name]["cases"]
    return cases.get(version, cases["_"])


def group_label(vs: tuple[int, ...]) -> str:
    return ", ".join(f"v{v}" for v in vs)


class _Offset:
    """A byte offset made of a constant and symbolic terms; None terms mean unknown (variable)."""

    def __init__(self) -> None:
        self.const = 0
        self.terms: list[str] | None = []

    def show(self) -> str:
        if self.terms is None:
            return "variable"
        return " + ".join([str(self.const)] + self.terms) if self.terms else str(self.const)

    def add(self, const: int, terms: list[str] | None) -> None:
        self.const += const
        if self.terms is None or terms is None:
            self.terms = None
        else:
            self.terms = self.terms + terms


def field_size(g: dict, f: dict, version: int) -> tuple[int, list[str] | None]:
    """Size of a structure field in one version as (constant bytes, symbolic terms or None = variable)."""
    prims = {p["id"]: p["size"] for p in g["primitives"]}
    if "contents" in f:
        return len(str(f["contents"]).encode()), []
    if "switch_on" in f:
        return 0, None
    if "size" in f:
        return 0, [f["size"]]
    tname = f["type"]
    if tname in g["aliases"]:
        tname = resolve_alias(g, tname, version)
    if tname in prims:
        size = prims[tname]
        if "repeat" in f:
            return 0, [f"{size} × {f['repeat']}"]
        return size, []
    if tname == "gguf_string" and "repeat" not in f:
        strlen = prims[resolve_alias(g, "strlen_t", version)]
        return strlen, [f"{f['id']}.len"]
    if tname in g["types"] and "repeat" not in f:
        total = 0
        for sub in g["types"][tname]["seq"]:
            const, terms = field_size(g, sub, version)
            if terms != []:
                return 0, None
            total += const
        return total, []
    return 0, None


def _show_size(const: int, terms: list[str] | None) -> str:
    if terms is None:
        return "variable"
    if not terms:
        return str(const)
    return " + ".join(([str(const)] if const else []) + terms)


def struct_layout(g: dict, sname: str, version: int) -> list[tuple[dict, str, str, int | None, int | None]]:
    """(field, offset, size, fixed offset or None, fixed size or None) for each field of a structure."""
    off = _Offset()
    out = []
    for f in g["types"][sname]["seq"]:
        const, terms = field_size(g, f, version)
        fixed_off = off.const if off.terms == [] else None
        fixed_size = const if terms == [] else None
        out.append((f, off.show(), _show_size(const, terms), fixed_off, fixed_size))
        off.add(const, terms)
    return out


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
    g = ctx.data.gguf
    sdef = g["types"][sname]
    groups = version_groups(g)
    out = [heading(level, anchor("struct", sname), code(sname)), ctx.prose(sdef["doc"]) + "\n"]
    if sdef.get("doc_ref"):
        out.append(f"Source: {esc(sdef['doc_ref'])}.\n")
    header = ["field", "type"]
    for vs in groups:
        header += [f"offset ({group_label(vs)})", f"size ({group_label(vs)})"]
    header.append("meaning")
    layouts = [struct_layout(g, sname, vs[0]) for vs in groups]
    rows = []
    for i, f in enumerate(sdef["seq"]):
        row = [f'<a id="{anchor("field", sname, f["id"])}"></a>{code(f["id"])}', _field_type(ctx, f)]
        for lay in layouts:
            row += [lay[i][1], lay[i][2]]
        extra = []
        if f.get("c_name"):
            extra.append(f"C: {code(f['c_name'])}.")
        if f.get("valid"):
            extra.append("Valid: " + ", ".join(code(v) for v in f["valid"]) + ".")
        row.append(join_nonempty([ctx.prose(f.get("doc", ""))] + extra))
        rows.append(row)
    out.append(table(header, rows))
    return "\n".join(out)



def fixed_size(g: dict, sname: str, version: int) -> int:
    total = 0
    for f in g["types"][sname]["seq"]:
        const, terms = field_size(g, f, version)
        if terms != []:
            raise ValueError(f"{sname} is not of fixed size")
        total += const
    return total
