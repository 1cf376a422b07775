"""Markdown reference documentation generated from ``spec/``.

``gguf-construct docs [--out docs/] [--check]`` renders one page per part of the specification (file layout,
metadata values, tensor types, lookup tables, metadata keys, file types, naming convention, conformance rules,
errata) plus an index page.  Generated text sits between splice markers::

    <!-- BEGIN GENERATED: tensor-types-summary -->
    ...
    <!-- END GENERATED -->

Regenerating replaces only what is inside the markers, so hand-written prose around them survives.  A page that
does not exist yet is created from a short default template.  Every spec entry (type, field, key, rule, ...) is
defined by exactly one HTML anchor (``<a id="...">``, see :func:`anchor`); every other mention is a link to it.
Output is deterministic: spec order or sorted order, no timestamps.
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from . import spec as _spec

__all__ = ["Page", "PAGES", "anchor", "definitions", "render_all", "splice", "write_docs", "check_docs",
           "default_out_dir", "add_cli"]

BEGIN = "<!-- BEGIN GENERATED: {name} -->"
END = "<!-- END GENERATED -->"
_BLOCK_RE = re.compile(r"<!-- BEGIN GENERATED: ([A-Za-z0-9_.-]+) -->\n(.*?)<!-- END GENERATED -->", re.S)


# ----------------------------------------------------------------------------------------------------------------
# anchors and the spec model
# ----------------------------------------------------------------------------------------------------------------


def anchor(kind: str, *parts: Any) -> str:
    """The HTML anchor id that defines one spec entry, e.g. ``anchor("tt", "Q4_0") == "tt-q4_0"``.

    Kinds: ``prim`` primitive, ``alias`` version alias, ``version``, ``vt`` value type, ``struct`` / ``field``
    container structure and its fields, ``tt`` / ``ttf`` tensor type and its block fields, ``table`` lookup table,
    ``keysec`` / ``key`` key registry section and key, ``arch`` documented architecture, ``ftype`` file type,
    ``naming`` naming component, ``rulegroup`` / ``rule`` conformance rules, ``erratum``.
    """
    text = "-".join([kind, *(str(p) for p in parts)]).lower().replace("{", "").replace("}", "")
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9._-]+", "-", text)).strip("-")


@dataclass
class SpecData:
    """Everything the pages render, read from spec/ (optional files are None when absent)."""

    gguf: dict
    tensor_types: tuple
    tables: list[dict]
    keys: dict
    naming: dict
    file_types: dict
    rules: dict | None
    errata: dict | None


def _optional(relative: str) -> Any:
    path = _spec.spec_dir() / relative
    return _spec.load_yaml(relative) if path.is_file() else None


def _table_meta(path: Path) -> dict:
    """A lookup table's description without its values (parsing thousands of values would be slow)."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^values:", text, re.M)
    raw = _spec.yaml.load(text[:m.start()] if m else text, Loader=_spec._Loader) or {}
    return {k: v for k, v in raw.items() if k != "values"}


def load_spec() -> SpecData:
    """Read the specification files the documentation is generated from."""
    tables = [_table_meta(path) for path in sorted((_spec.spec_dir() / "tables").glob("*.yaml"))]
    return SpecData(
        gguf=_spec.load_yaml("gguf.yaml"), tensor_types=_spec.tensor_types(), tables=tables,
        keys=_spec.load_yaml("keys.yaml"), naming=_spec.load_yaml("naming.yaml"),
        file_types=_spec.load_yaml("file_types.yaml"), rules=_optional("rules.yaml"), errata=_optional("errata.yaml"))


# Which page defines which structures of gguf.yaml.
_STRUCT_PAGE = {"gguf_string": "values.md", "gguf_array": "values.md"}


def definitions(data: SpecData) -> dict[str, str]:
    """Every definition anchor the pages contain, mapped to the page (file name) that defines it."""
    out: dict[str, str] = {}
    g = data.gguf
    for p in g["primitives"]:
        out[anchor("prim", p["id"])] = "format.md"
    for name in g["aliases"]:
        out[anchor("alias", name)] = "format.md"
    for v in g["versions"]:
        out[anchor("version", v["version"])] = "format.md"
    for vt in g["value_types"]:
        out[anchor("vt", vt["name"])] = "values.md"
    for sname, sdef in g["types"].items():
        page = _STRUCT_PAGE.get(sname, "format.md")
        out[anchor("struct", sname)] = page
        for f in sdef["seq"]:
            out[anchor("field", sname, f["id"])] = page
    for t in data.tensor_types:
        out[anchor("tt", t.name)] = "tensor-types.md"
        for f in t.fields:
            out[anchor("ttf", t.name, f.id)] = "tensor-types.md"
    for t in data.tables:
        out[anchor("table", t["name"])] = "tables.md"
    for s in data.keys["sections"]:
        out[anchor("keysec", s["id"])] = "keys.md"
    for k in data.keys["keys"]:
        out[anchor("key", k["key"])] = "keys.md"
    for a in data.keys["architectures"]:
        out[anchor("arch", a["id"])] = "keys.md"
    for ft in data.file_types["file_types"]:
        out[anchor("ftype", ft["name"])] = "file-types.md"
    for c in data.naming["components"]:
        out[anchor("naming", c["id"])] = "naming.md"
    if data.rules:
        for grp in data.rules["groups"]:
            out[anchor("rulegroup", grp["prefix"])] = "rules.md"
        for r in data.rules["rules"]:
            out[anchor("rule", r["id"])] = "rules.md"
    if data.errata:
        for e in data.errata["errata"]:
            out[anchor("erratum", e["id"])] = "errata.md"
    return out


# ----------------------------------------------------------------------------------------------------------------
# Markdown helpers
# ----------------------------------------------------------------------------------------------------------------


class Ctx:
    """Rendering context: the spec, its definitions and the page being rendered (for relative links)."""

    def __init__(self, data: SpecData) -> None:
        self.data = data
        self.defs = {s.name: p.file for p in PAGES for s in p.sections}
        self.defs.update(definitions(data))
        self.page = ""
        # Names that spec prose mentions and that get linked to their definition: rule IDs, literal keys and
        # tensor type names.
        terms: dict[str, str] = {}
        for t in data.tensor_types:
            terms[t.name] = anchor("tt", t.name)
        for k in data.keys["keys"]:
            if "{" not in k["key"]:
                terms[k["key"]] = anchor("key", k["key"])
        for r in (data.rules["rules"] if data.rules else []):
            terms[r["id"]] = anchor("rule", r["id"])
        self._terms = terms
        self.errata_of: dict[str, list[dict]] = {}
        kinds = {"tensor_types": "tt", "keys": "key", "rules": "rule"}
        for item in (data.errata or {}).get("errata", []):
            for field, kind in kinds.items():
                for name in (item.get("related") or {}).get(field, []):
                    self.errata_of.setdefault(anchor(kind, name), []).append(item)
        names = sorted(terms, key=len, reverse=True)
        self._term_re = re.compile(r"(?<![\w.\\-])(" + "|".join(map(re.escape, names)) + r")(?![\w-]|\.\w)")

    def link(self, target: str, text: str) -> str:
        """A Markdown link to a definition anchor, or just ``text`` when nothing defines it."""
        page = self.defs.get(target)
        if page is None:
            return text
        return f"[{text}](#{target})" if page == self.page else f"[{text}]({page}#{target})"

    def errata_note(self, kind: str, name: Any) -> str:
        """'Errata: <links>.' for the errata that name this spec entry, or ''."""
        items = self.errata_of.get(anchor(kind, name), [])
        if not items:
            return ""
        return "Errata: " + "; ".join(self.link(anchor("erratum", e["id"]), esc(e["title"])) for e in items) + "."

    def ref(self, kind: str, name: Any, text: str | None = None) -> str:
        """Link to the definition of spec entry ``name`` of the given kind, shown in code font by default."""
        return self.link(anchor(kind, name), text if text is not None else code(str(name)))

    def prose(self, text: Any) -> str:
        """Spec prose as Markdown: escaped, with rule IDs, keys and tensor type names linked to their definitions."""
        parts = re.split(r"(`[^`]*`)", esc(text))
        for i in range(0, len(parts), 2):
            parts[i] = self._term_re.sub(lambda m: self.link(self._terms[m.group(1)], m.group(1)), parts[i])
        return "".join(parts)


def esc(text: Any) -> str:
    """Escape Markdown/HTML specials in spec prose, leaving `code spans` alone; whitespace is collapsed."""
    text = " ".join(str(text).split())
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        s = parts[i].replace("\\", "\\\\").replace("*", "\\*").replace("[", "\\[").replace("]", "\\]")
        s = s.replace("<", "&lt;")
        s = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", s)
        parts[i] = s
    return "".join(parts)


def code(text: Any) -> str:
    """Inline code that survives backticks in the text."""
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(header: Iterable[str], rows: Iterable[Iterable[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; cells are Markdown already (``|`` is escaped here)."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |"]
    spec = list(align) if align else ["l"] * len(header)
    lines.append("|" + "|".join({"l": "---", "r": "---:", "c": ":---:"}[a] for a in spec) + "|")
    for row in rows:
        cells = [str(c).replace("\n", "<br>").replace("|", "\\|") for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def heading(level: int, target: str | None, text: str) -> str:
    """A heading, optionally carrying the definition anchor ``target``."""
    mark = f'<a id="{target}"></a>' if target else ""
    return f"{'#' * level} {mark}{text}\n"


def mermaid_label(text: str) -> str:
    """Text for a quoted Mermaid node label."""
    return text.replace('"', "#quot;")


def mermaid(lines: Iterable[str]) -> str:
    """A fenced Mermaid diagram."""
    return "```mermaid\n" + "\n".join(lines) + "\n```\n"


def fence(text: str, lang: str = "text") -> str:
    """A fenced code block."""
    return f"```{lang}\n{text}\n```\n"


def _num(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _bytes_range(offset: int, size: int) -> str:
    return f"byte {offset}" if size == 1 else f"bytes {offset}–{offset + size - 1}"


def _join(parts: Iterable[str], sep: str = " ") -> str:
    return sep.join(p for p in parts if p)


# ----------------------------------------------------------------------------------------------------------------
# container structures: sizes and offsets per version
# ----------------------------------------------------------------------------------------------------------------


def _version_groups(g: dict) -> list[tuple[int, ...]]:
    """Versions grouped by identical alias widths, e.g. [(1,), (2, 3)]."""
    groups: dict[tuple, list[int]] = {}
    for v in g["meta"]["versions"]:
        key = tuple(_resolve_alias(g, name, v) for name in g["aliases"])
        groups.setdefault(key, []).append(v)
    return [tuple(vs) for vs in groups.values()]


def _resolve_alias(g: dict, name: str, version: int) -> str:
    cases = g["aliases"][name]["cases"]
    return cases.get(version, cases["_"])


def _group_label(vs: tuple[int, ...]) -> str:
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


def _field_size(g: dict, f: dict, version: int) -> tuple[int, list[str] | None]:
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
        tname = _resolve_alias(g, tname, version)
    if tname in prims:
        size = prims[tname]
        if "repeat" in f:
            return 0, [f"{size} × {f['repeat']}"]
        return size, []
    if tname == "gguf_string" and "repeat" not in f:
        strlen = prims[_resolve_alias(g, "strlen_t", version)]
        return strlen, [f"{f['id']}.len"]
    if tname in g["types"] and "repeat" not in f:
        total = 0
        for sub in g["types"][tname]["seq"]:
            const, terms = _field_size(g, sub, version)
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


def _struct_layout(g: dict, sname: str, version: int) -> list[tuple[dict, str, str, int | None, int | None]]:
    """(field, offset, size, fixed offset or None, fixed size or None) for each field of a structure."""
    off = _Offset()
    out = []
    for f in g["types"][sname]["seq"]:
        const, terms = _field_size(g, f, version)
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


def _struct_section(ctx: Ctx, sname: str, level: int = 3) -> str:
    g = ctx.data.gguf
    sdef = g["types"][sname]
    groups = _version_groups(g)
    out = [heading(level, anchor("struct", sname), code(sname)), ctx.prose(sdef["doc"]) + "\n"]
    if sdef.get("doc_ref"):
        out.append(f"Source: {esc(sdef['doc_ref'])}.\n")
    header = ["field", "type"]
    for vs in groups:
        header += [f"offset ({_group_label(vs)})", f"size ({_group_label(vs)})"]
    header.append("meaning")
    layouts = [_struct_layout(g, sname, vs[0]) for vs in groups]
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
        row.append(_join([ctx.prose(f.get("doc", ""))] + extra))
        rows.append(row)
    out.append(table(header, rows))
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------------------------
# pages
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """One generated block of a page: its marker name, heading and renderer."""

    name: str
    title: str
    render: Callable[[Ctx], str]


@dataclass(frozen=True)
class Page:
    """One Markdown file of docs/: its title, index summary, default prose and generated sections."""

    file: str
    title: str
    summary: str
    intro: str
    sections: tuple[Section, ...]


# --- format.md ----------------------------------------------------------------------------------------------------


def _sec_overview(ctx: Ctx) -> str:
    g = ctx.data.gguf
    meta = g["meta"]
    seq = g["types"]["file_head"]["seq"]
    labels = {"header": "header", "metadata_kv": "metadata_kv", "tensor_infos": "tensor_info"}
    lines = ["flowchart TB"]
    nodes = []
    for f in seq:
        sname = f["type"]
        fields = " · ".join(x["id"] for x in g["types"][sname]["seq"])
        count = f" × {f['repeat'].split('.')[-1]}" if "repeat" in f else ""
        nodes.append((f["id"], mermaid_label(f"{labels.get(f['id'], f['id'])}{count}<br/>{fields}")))
    nodes.append(("padding", "padding: 0x00 up to a multiple of ALIGNMENT"))
    nodes.append(("data", "data section: each tensor's data at data_start + offset,<br/>"
                          "offsets multiples of ALIGNMENT"))
    for nid, label in nodes:
        lines.append(f'    {nid}["{label}"]')
    lines.append("    " + " --> ".join(nid for nid, _ in nodes))
    facts = table(["property", "value"], [
        ["magic", f"{code(meta['magic'])} (bytes {' '.join(f'{b:02X}' for b in meta['magic'].encode())})"],
        ["versions", ", ".join(ctx.link(anchor("version", v), str(v)) for v in meta["versions"])
         + f" (current: {meta['current_version']})"],
        ["byte order", f"little- or big-endian for the whole file ({ctx.link('byte-order', 'detection')})"],
        ["default alignment",
         f"{meta['default_alignment']} bytes, overridden by {ctx.ref('key', meta['alignment_key'])}"],
        ["source", esc(meta["doc_ref"])],
    ])
    return "\n".join([ctx.prose(meta["doc"]) + "\n", facts, "The parts of a file, in order:\n", mermaid(lines),
                      f"The container structures are defined below ({ctx.link('structures', 'structures')}); "
                      f"metadata values are described in [Metadata values](values.md), tensor data blocks in "
                      f"[Tensor types](tensor-types.md).\n"])


def _sec_versions(ctx: Ctx) -> str:
    g = ctx.data.gguf
    versions = g["versions"]
    out = []
    for v in versions:
        out.append(heading(3, anchor("version", v["version"]), f"Version {v['version']} ({esc(v['status'])})"))
        out.append(ctx.prose(v["doc"]) + "\n")
        out.append(f"Source: {esc(v['doc_ref'])}.\n")
    prims = {p["id"]: p["size"] for p in g["primitives"]}
    vnums = [v["version"] for v in versions]
    rows = [["status"] + [esc(v["status"]) for v in versions]]
    for name, a in g["aliases"].items():
        cells = []
        for vn in vnums:
            p = _resolve_alias(g, name, vn)
            cells.append(f"{ctx.ref('prim', p)} ({prims[p]} bytes)")
        rows.append([f"{ctx.ref('alias', name)}: {ctx.prose(a['doc'])}"] + cells)
    vts = g["value_types"]
    rows.append(["value types"] + [_id_ranges([vt["id"] for vt in vts if vt["since"] <= vn]) for vn in vnums])
    rows.append(["value types added"] + [
        ", ".join(ctx.ref("vt", vt["name"]) for vt in vts if vt["since"] == vn) or "—" for vn in vnums])
    rows.append(["header size"] + [f"{_fixed_size(g, 'header', vn)} bytes" for vn in vnums])
    out += ["#### Differences between versions\n", table(["", *(f"v{vn}" for vn in vnums)], rows)]
    out.append("Everything not listed (u32 version, n_dimensions, value and tensor types, u64 tensor offsets, the "
               "order of the parts) is the same in every version.\n")
    return "\n".join(out)


def _id_ranges(ids: list[int]) -> str:
    ids = sorted(ids)
    spans, start = [], ids[0]
    for a, b in zip(ids, ids[1:] + [None]):
        if b != a + 1:
            spans.append(f"{start}–{a}" if a != start else f"{a}")
            start = b
    return ", ".join(spans)


def _fixed_size(g: dict, sname: str, version: int) -> int:
    total = 0
    for f in g["types"][sname]["seq"]:
        const, terms = _field_size(g, f, version)
        if terms != []:
            raise ValueError(f"{sname} is not of fixed size")
        total += const
    return total


def _sec_byte_order(ctx: Ctx) -> str:
    bo = ctx.data.gguf["byte_order"]
    mask = bo["detection_mask"]
    rows = []
    for v in ctx.data.gguf["meta"]["versions"]:
        for order, fmt in (("little", "<I"), ("big", ">I")):
            raw = struct.pack(fmt, v)
            word = struct.unpack("<I", raw)[0]
            detected = "big" if word & mask == 0 else "little"
            rows.append([str(v), order, " ".join(f"{b:02X}" for b in raw), f"0x{word:08X}", f"0x{word & mask:04X}",
                         detected])
    return "\n".join([
        ctx.prose(bo["doc"]) + "\n",
        f"**Detection.** {ctx.prose(bo['detection'])}\n",
        f"The mask is 0x{mask:X}. Applied to the version word of every version in both byte orders:\n",
        table(["version", "written", "bytes 4–7", "read as little-endian u32", f"& 0x{mask:X}", "detected"], rows,
              "rlllll"),
        f"Source: {esc(bo['doc_ref'])}.\n"])


def _sec_structures(ctx: Ctx) -> str:
    g = ctx.data.gguf
    out = [ctx.prose("Each structure is a sequence of fields read back to back without padding. Offsets are "
                     "relative to the start of the structure; `x.len` is the value of the length field of string "
                     "`x`. Widths that differ between versions come from the version aliases.") + "\n"]
    hdr = g["types"]["header"]["seq"]
    for vs in _version_groups(g):
        out.append(f"Header of {_group_label(vs)} ({_fixed_size(g, 'header', vs[0])} bytes):\n")
        lines = ["flowchart LR"]
        for i, (f, _o, _s, fo, fs) in enumerate(_struct_layout(g, "header", vs[0])):
            lines.append(f'    h{i}["{mermaid_label(f["id"])}<br/>{_bytes_range(fo, fs)}"]')
        lines.append("    " + " --- ".join(f"h{i}" for i in range(len(hdr))))
        out.append(mermaid(lines))
    for sname in g["types"]:
        if _STRUCT_PAGE.get(sname, "format.md") == "format.md":
            out.append(_struct_section(ctx, sname))
    others = ", ".join(ctx.ref("struct", s) for s in g["types"] if _STRUCT_PAGE.get(s, "format.md") != "format.md")
    out.append(f"The value structures {others} are described with the metadata values.\n")
    return "\n".join(out)


def _sec_primitives(ctx: Ctx) -> str:
    rows = [[f'<a id="{anchor("prim", p["id"])}"></a>{code(p["id"])}', str(p["size"]), code(p["numpy"]),
             ctx.prose(p["doc"])] for p in ctx.data.gguf["primitives"]]
    return ("Scalar encodings used by the structures, metadata values and tensor blocks. Multi-byte values use "
            "the file's byte order.\n\n" + table(["name", "bytes", "numpy", "meaning"], rows, "lrll"))


def _sec_aliases(ctx: Ctx) -> str:
    g = ctx.data.gguf
    vnums = g["meta"]["versions"]
    rows = []
    for name, a in g["aliases"].items():
        rows.append([f'<a id="{anchor("alias", name)}"></a>{code(name)}']
                    + [ctx.ref("prim", _resolve_alias(g, name, v)) for v in vnums]
                    + [ctx.prose(a["doc"]), esc(a.get("doc_ref", ""))])
    return ("Every width that differs between versions is named once and used by name in the structures.\n\n"
            + table(["alias", *(f"v{v}" for v in vnums), "meaning", "source"], rows))


def _sec_data_layout(ctx: Ctx) -> str:
    lay = ctx.data.gguf["layout"]
    al = lay["alignment"]
    return "\n".join([
        ctx.prose(lay["doc"]) + "\n",
        f"**ALIGNMENT.** {ctx.prose(al['doc'])} Key: {ctx.ref('key', al['key'])} "
        f"({ctx.ref('vt', al['type'], code(al['type']))}), default {al['default']}.\n",
        "Rounding an offset up to the alignment:\n", fence(f"align_offset(offset) = {lay['align_offset']}"),
        f"The data section starts at {code(lay['data_start'])}. A tensor of dimensions ne[0..3] (missing "
        "dimensions are 1) occupies\n", fence(f"nbytes = {lay['tensor_bytes']}"),
        f"bytes, with block_size and type_size of its {ctx.link('tensor-types-summary', 'tensor type')}; ne[0] "
        "must be a multiple of block_size.\n",
        f"Source: {esc(lay['doc_ref'])}.\n"])


# --- values.md ----------------------------------------------------------------------------------------------------


def _sec_value_types(ctx: Ctx) -> str:
    g = ctx.data.gguf
    prims = {p["id"]: p["size"] for p in g["primitives"]}
    rows = []
    for vt in g["value_types"]:
        if "encoding" in vt:
            enc, size = ctx.ref("prim", vt["encoding"]), str(prims[vt["encoding"]])
        else:
            enc, size = ctx.ref("struct", vt["type"]), "variable"
        doc = ctx.prose(vt["doc"])
        if vt.get("valid"):
            doc += " Valid bytes: " + ", ".join(code(v) for v in vt["valid"]) + "."
        rows.append([str(vt["id"]), f'<a id="{anchor("vt", vt["name"])}"></a>{code(vt["name"])}',
                     code(vt["c_name"]), enc, size, ctx.link(anchor("version", vt["since"]), f"v{vt['since']}"), doc])
    return ("Every metadata value is preceded by its type, a u32 from this table (the key/value record is "
            f"{ctx.ref('struct', 'metadata_kv')}). Scalars are encoded in the file's byte order.\n\n"
            + table(["id", "name", "C name", "encoding", "bytes", "since", "meaning"], rows, "rllllll"))


def _sec_strings(ctx: Ctx) -> str:
    return _struct_section(ctx, "gguf_string", 3)


def _sec_arrays(ctx: Ctx) -> str:
    out = [_struct_section(ctx, "gguf_array", 3)]
    arr = next(vt for vt in ctx.data.gguf["value_types"] if vt["name"] == "ARRAY")
    nest = [f"**Nesting.** {ctx.prose(arr['doc'])}"]
    refs = [ctx.ref("rule", r, r) for r in ("ARR-NESTED", "ARR-DEPTH") if anchor("rule", r) in ctx.defs]
    if refs:
        nest.append("Rules: " + ", ".join(refs) + ".")
    if anchor("erratum", "nested-arrays") in ctx.defs:
        nest.append(f"See also the {ctx.link(anchor('erratum', 'nested-arrays'), 'erratum')}.")
    out.append(" ".join(nest) + "\n")
    return "\n".join(out)


# --- tensor-types.md ----------------------------------------------------------------------------------------------


def _sec_tt_summary(ctx: Ctx) -> str:
    rows = []
    for t in ctx.data.tensor_types:
        name = ctx.ref("tt", t.name, code(t.name)) if t.is_current else \
            f'<a id="{anchor("tt", t.name)}"></a>{code(t.name)}'
        bpw = _num(t.bits_per_weight) if t.block_size else "—"
        rows.append([str(t.id), name, str(t.block_size or "—"), str(t.type_size or "—"), bpw, t.status, t.kind,
                     code(t.codec) if t.codec else "—",
                     "" if t.is_current else ctx.prose(t.doc)])
    cur = sum(t.is_current for t in ctx.data.tensor_types)
    return (f"{len(ctx.data.tensor_types)} ggml types, {cur} of them current. A tensor's data is a sequence of "
            "blocks; each block encodes block size consecutive elements of a row in bytes per block bytes, so bits "
            "per weight = 8 × bytes per block / block size. Removed ids must not appear in a file.\n\n"
            + table(["id", "name", "block size", "bytes per block", "bits per weight", "status", "kind", "codec",
                     "note"], rows, "rlrrrllll"))


_IMATRIX = {"required": "required (ggml will not quantize without one)", "used": "used when given",
            "ignored": "ignored"}


def _sec_tt_blocks(ctx: Ctx) -> str:
    uses: dict[str, list[str]] = {}
    for tab, types in _table_users(ctx.data).items():
        for name in types:
            uses.setdefault(name, []).append(tab)
    out = []
    for t in ctx.data.tensor_types:
        if not t.is_current:
            continue
        out.append(heading(3, anchor("tt", t.name), f"{t.name} (id {t.id})"))
        facts = [f"block size {t.block_size}", f"{t.type_size} bytes per block",
                 f"{_num(t.bits_per_weight)} bits per weight", t.kind, f"C {code(t.c_name)}"]
        if t.extra.get("c_struct"):
            facts.append(f"struct {code(t.extra['c_struct'])}")
        if t.imatrix:
            facts.append(f"importance matrix {_IMATRIX[t.imatrix]}")
        out.append(ctx.prose(t.doc) + "\n")
        out.append(" · ".join(facts) + "\n")
        rows, off, boxes = [], 0, []
        for f in t.fields:
            size = f.size
            typ = ctx.ref("prim", f.type) + (f"[{f.count}]" if f.count > 1 else "")
            meaning = ctx.prose(f.doc)
            if f.c_decl:
                meaning += f" C: {code(f.c_decl)}."
            rows.append([f'<a id="{anchor("ttf", t.name, f.id)}"></a>{code(f.id)}', str(off), str(size), typ,
                         meaning])
            arr = f"[{f.count}]" if f.count > 1 else ""
            boxes.append(f"{f.id}: {f.type}{arr}<br/>{_bytes_range(off, size)}")
            off += size
        out.append(table(["field", "offset", "bytes", "type", "meaning"], rows, "lrrll"))
        if off != t.type_size:
            out.append(f"**Inconsistent spec:** the fields add up to {off} bytes, the type size is {t.type_size}.\n")
        if boxes:
            lines = ["flowchart LR"] + [f'    {t.name.lower()}_{i}["{mermaid_label(b)}"]'
                                        for i, b in enumerate(boxes)]
            lines.append("    " + " --- ".join(f"{t.name.lower()}_{i}" for i in range(len(boxes))))
            out.append(mermaid(lines))
        decode = t.extra.get("decode")
        if decode:
            out.append("Decoding (y = the block's output values):\n")
            out.append(fence(_decode_lines(decode)))
        if t.name in uses:
            out.append("Lookup tables: " + ", ".join(ctx.ref("table", n) for n in uses[t.name]) + ".\n")
        if not decode and t.kind != "quantized" and t.fields and t.block_size == 1:
            out.append(f"Each block is one element, stored as its {ctx.ref('prim', t.fields[0].type)} value.\n")
        elif not decode:
            out.append("_No decode formula in the spec yet._\n")
        note = ctx.errata_note("tt", t.name)
        if note:
            out.append(note + "\n")
        out.append(f"Source: {esc(t.doc_ref)}.\n")
    return "\n".join(x for x in out if x)


def _decode_lines(decode: Any) -> str:
    """A decode formula one statement per line: split at '; ' outside brackets (a list is one line per item)."""
    items = decode if isinstance(decode, list) else [decode]
    lines = []
    for item in items:
        depth, start, text = 0, 0, " ".join(str(item).split())
        for i, ch in enumerate(text):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if ch == ";" and depth == 0 and text[i + 1:i + 2] == " ":
                lines.append(text[start:i + 1])
                start = i + 2
        lines.append(text[start:])
    return "\n".join(lines)


# --- tables.md ----------------------------------------------------------------------------------------------------


def _table_users(data: SpecData) -> dict[str, list[str]]:
    """Tensor types per lookup table: named in the table's doc, or naming the table in their decode formula."""
    users: dict[str, list[str]] = {}
    for t in data.tensor_types:
        if not t.is_current:
            continue
        text = str(t.extra.get("decode", "")) + " " + t.doc
        for tab in data.tables:
            if re.search(rf"\b{re.escape(tab['name'])}\b", text) or \
                    re.search(rf"\b{re.escape(t.name)}\b", str(tab.get("doc", ""))):
                users.setdefault(tab["name"], []).append(t.name)
    return users


def _sec_tables(ctx: Ctx) -> str:
    users = _table_users(ctx.data)
    rows = []
    for tab in ctx.data.tables:
        shape = " × ".join(str(s) for s in tab.get("shape", []))
        used = ", ".join(ctx.ref("tt", n) for n in users.get(tab["name"], [])) or "—"
        rows.append([f'<a id="{anchor("table", tab["name"])}"></a>{code(tab["name"])}', code(tab["c_name"]),
                     ctx.ref("prim", tab["dtype"]), shape, used,
                     ctx.prose(tab["doc"]) + f" Source: {esc(tab.get('doc_ref', ''))}."])
    return ("Constant lookup tables of the quantization codecs. The values themselves are in "
            f"{code('spec/tables/<name>.yaml')}; entries wider than a byte are little-endian integers whose bytes "
            "hold the packed values.\n\n" + table(["table", "C name", "element", "shape", "used by", "meaning"], rows))


# --- keys.md ------------------------------------------------------------------------------------------------------


def _value_type(ctx: Ctx, spec: Any, item: str | None = None) -> str:
    if isinstance(spec, dict):
        return _value_type(ctx, spec["type"], spec.get("item_type"))
    out = ctx.ref("vt", spec)
    if item:
        out += " of " + ctx.ref("vt", item)
    return out


def _key_row(ctx: Ctx, k: dict) -> list[str]:
    typ = _value_type(ctx, k["type"], k.get("item_type"))
    if k.get("alt_types"):
        typ += "<br>also " + ", ".join(_value_type(ctx, a) for a in k["alt_types"])
    req = []
    if k.get("required"):
        req.append("**every model**")
    if k.get("required_by"):
        req.append(", ".join(ctx.ref("arch", a, a) for a in k["required_by"]))
    if k.get("optional_for"):
        req.append("optional for " + ", ".join(ctx.ref("arch", a, a) for a in k["optional_for"]))
    desc = [ctx.prose(k.get("doc", ""))]
    if k.get("values"):
        desc.append("Values: " + "; ".join(f"{code(v)}: {ctx.prose(d)}" for v, d in k["values"].items()) + ".")
    if k.get("values_from") == "file_types":
        desc.append("Values: see [file types](file-types.md).")
    if k.get("aliases"):
        desc.append("Also spelled " + ", ".join(code(a) for a in k["aliases"]) + ".")
    if k.get("errata"):
        desc.append(f"**Erratum:** {ctx.prose(k['errata'])}")
    desc.append(ctx.errata_note("key", k["key"]))
    return [f'<a id="{anchor("key", k["key"])}"></a>{code(k["key"])}', typ, "<br>".join(req) or "—",
            "<br>".join(d for d in desc if d)]


def _sec_key_registry(ctx: Ctx) -> str:
    meta = ctx.data.keys["meta"]
    ph = table(["placeholder", "stands for"],
               [[code("{" + n + "}"), ctx.prose(d)] for n, d in meta.get("placeholders", {}).items()])
    counts = {}
    for k in ctx.data.keys["keys"]:
        counts[k["section"]] = counts.get(k["section"], 0) + 1
    toc = "\n".join(f"- {ctx.link(anchor('keysec', s['id']), esc(s['title']))} ({counts.get(s['id'], 0)} keys)"
                    for s in ctx.data.keys["sections"])
    return "\n".join([ctx.prose(meta["doc"]) + "\n", f"Source: {esc(meta['doc_ref'])}.\n", ph,
                      f"{len(ctx.data.keys['keys'])} keys in {len(ctx.data.keys['sections'])} sections:\n", toc + "\n",
                      f"The tokenizer keys are in {ctx.link(anchor('keysec', 'tokenizer'), 'Tokenizer')}; the keys "
                      f"each architecture needs are listed under {ctx.link('architectures', 'Architectures')}.\n"])


def _sec_key_sections(ctx: Ctx) -> str:
    out = []
    for s in ctx.data.keys["sections"]:
        out.append(heading(3, anchor("keysec", s["id"]), esc(s["title"])))
        out.append(ctx.prose(s["doc"]) + f" Source: {esc(s.get('doc_ref', ''))}.\n")
        rows = [_key_row(ctx, k) for k in ctx.data.keys["keys"] if k["section"] == s["id"]]
        out.append(table(["key", "type", "required by", "description"], rows) if rows else "_No keys defined._\n")
    return "\n".join(out)


def _sec_architectures(ctx: Ctx) -> str:
    keys = ctx.data.keys["keys"]
    always = [k["key"] for k in keys if k.get("required")]
    out = [f"Keys every model needs: {', '.join(ctx.ref('key', k) for k in always)}. The architectures "
           "gguf.md documents add their own required keys ({arch} is replaced by the architecture name):\n"]
    for a in ctx.data.keys["architectures"]:
        out.append(heading(3, anchor("arch", a["id"]), f"{code(a['id'])}: {esc(a['title'])}"))
        if a.get("doc"):
            out.append(ctx.prose(a["doc"]) + "\n")
        req = [ctx.ref("key", k["key"]) for k in keys if a["id"] in k.get("required_by", [])]
        opt = [ctx.ref("key", k["key"]) for k in keys if a["id"] in k.get("optional_for", [])]
        out.append(f"- Required: {', '.join(req) or '—'}\n- Optional: {', '.join(opt) or '—'}\n")
    return "\n".join(out)


def _sec_known_architectures(ctx: Ctx) -> str:
    names = ctx.data.keys.get("known_architectures") or []
    return (f"{len(names)} values of {ctx.ref('key', 'general.architecture')} known to gguf-py. Any other "
            "value is reported as unknown (information only).\n\n" + ", ".join(code(n) for n in names) + "\n")


# --- file-types.md ------------------------------------------------------------------------------------------------


def _sec_file_types(ctx: Ctx) -> str:
    meta = ctx.data.file_types["meta"]
    st = table(["status", "meaning"], [[code(s), ctx.prose(d)] for s, d in meta.get("statuses", {}).items()])
    rows = []
    for ft in ctx.data.file_types["file_types"]:
        tt = ctx.ref("tt", ft["tensor_type"]) if ft.get("tensor_type") else "—"
        rows.append([str(ft["value"]), f'<a id="{anchor("ftype", ft["name"])}"></a>{code(ft["name"])}',
                     code(ft["c_name"]), ft["status"], tt, ctx.prose(ft.get("doc", ""))])
    return "\n".join([ctx.prose(meta["doc"]) + f" Key: {ctx.ref('key', meta['key'])}.\n",
                      f"Source: {esc(meta['doc_ref'])}.\n", st,
                      table(["value", "name", "C name", "status", "main tensor type", "meaning"], rows, "rlllll")])


# --- naming.md ----------------------------------------------------------------------------------------------------


def _sec_naming_overview(ctx: Ctx) -> str:
    meta = ctx.data.naming["meta"]
    order = " ".join(("[" if c["optional"] else "") + f"{c['id']}" + ("]" if c["optional"] else "")
                     for c in ctx.data.naming["components"])
    return "\n".join([ctx.prose(meta["doc"]) + "\n", f"Source: {esc(meta['doc_ref'])}.\n",
                      "Components in order (optional ones in brackets):\n", fence(order)])


def _sec_naming_components(ctx: Ctx) -> str:
    rows = []
    for c in ctx.data.naming["components"]:
        doc = ctx.prose(c["doc"])
        if c.get("values"):
            doc += " Values: " + "; ".join(f"{code(v)}: {ctx.prose(d)}" for v, d in c["values"].items()) + "."
        key = ctx.ref("key", c["metadata_key"]) if c.get("metadata_key") else "—"
        rows.append([f'<a id="{anchor("naming", c["id"])}"></a>{code(c["id"])}', "yes" if c["optional"] else "no",
                     code(c["pattern"]), key, doc])
    return table(["component", "optional", "pattern", "metadata key", "meaning"], rows)


def _sec_naming_regex(ctx: Ctx) -> str:
    rx = ctx.data.naming["regex"]
    out = [ctx.prose(rx["doc"]) + "\n", f"Python ({', '.join('re.' + f for f in rx.get('flags', []))}):\n",
           fence(rx["python"], "regex"), "JavaScript, as published:\n", fence(rx["javascript"], "regex")]
    if rx.get("errata"):
        out.append("Errata of the published convention:\n")
        out.append("\n".join(f"- {ctx.prose(e)}" for e in rx["errata"]) + "\n")
    out.append(f"Source: {esc(rx['doc_ref'])}.\n")
    return "\n".join(out)


def _sec_naming_shard(ctx: Ctx) -> str:
    sh = ctx.data.naming["shard"]
    return "\n".join([ctx.prose(sh["doc"]) + "\n", table(["property", "value"], [
        ["format", code(sh["format"])], ["regex", code(sh["regex"])], ["first number", str(sh["first_number"])],
        ["number from", code(sh["number_from"])], ["total from", code(sh["total_from"])]]),
        f"Source: {esc(sh['doc_ref'])}.\n"])


def _sec_naming_examples(ctx: Ctx) -> str:
    rows = []
    for ex in ctx.data.naming["examples"]:
        parse = ex.get("parse") or {}
        parts = "<br>".join(f"{ctx.ref('naming', k, k)} = {code(v)}" for k, v in parse.items() if v is not None)
        rules = ", ".join(ctx.ref("rule", r, r) for r in ex.get("rules", []))
        note = _join([ctx.prose(ex.get("note", "")), f"Rules: {rules}." if rules else ""])
        rows.append([code(ex["name"]), "yes" if ex["valid"] else "**no**", parts or "—", note, esc(ex["source"])])
    return ("Worked examples; \"matches\" is the result of the regex, parsed components leave out the empty "
            "ones.\n\n" + table(["file name", "matches", "components", "note", "source"], rows))


# --- rules.md -----------------------------------------------------------------------------------------------------


_NO_RULES = "_spec/rules.yaml is not present yet; the rule catalog will appear here when it is._\n"


def _sec_rules_overview(ctx: Ctx) -> str:
    r = ctx.data.rules
    if not r:
        return _NO_RULES
    meta = r["meta"]
    counts: dict[tuple[str, str], int] = {}
    for rule in r["rules"]:
        grp = rule["id"].split("-")[0]
        counts[(grp, rule["severity"])] = counts.get((grp, rule["severity"]), 0) + 1
    sevs = list(meta.get("severities", {}))
    summary = table(["group", *sevs, "total"], [
        [ctx.link(anchor("rulegroup", g["prefix"]), f"{g['prefix']}: {esc(g['title'])}")]
        + [str(counts.get((g["prefix"], s), 0)) for s in sevs]
        + [str(sum(counts.get((g["prefix"], s), 0) for s in sevs))] for g in r["groups"]], "l" + "r" * (len(sevs) + 1))
    return "\n".join([
        ctx.prose(meta["doc"]) + "\n", f"Source: {esc(meta['doc_ref'])}.\n",
        table(["severity", "meaning"], [[code(s), ctx.prose(d)] for s, d in meta.get("severities", {}).items()]),
        table(["reader verdict", "meaning"], [[code(s), ctx.prose(d)] for s, d in meta.get("verdicts", {}).items()]),
        f"{len(r['rules'])} rules (severity under the spec profile):\n", summary])


def _sec_rule_groups(ctx: Ctx) -> str:
    r = ctx.data.rules
    if not r:
        return _NO_RULES
    out = ["Columns: severity under the **spec** and **ggml** profiles; whether ggml's gguf.cpp (**C**) and "
           "gguf-py 0.19.0 (**py**) reject a file that breaks the rule.\n"]
    for g in r["groups"]:
        out.append(heading(3, anchor("rulegroup", g["prefix"]), f"{g['prefix']}: {esc(g['title'])}"))
        out.append(ctx.prose(g["doc"]) + "\n")
        rows = []
        for rule in r["rules"]:
            if rule["id"].split("-")[0] != g["prefix"]:
                continue
            prof = rule.get("profiles", {})
            desc = [f"**{esc(rule['title'])}.** {ctx.prose(rule['doc'])}"]
            if rule.get("notes"):
                desc.append(ctx.prose(rule["notes"]))
            desc.append(f"Message: {code(rule['message'])}")
            if rule.get("applies_to"):
                desc.append("Applies to: " + ", ".join(code(a) for a in rule["applies_to"]) + ".")
            if rule.get("see_also"):
                desc.append("See also " + ", ".join(ctx.ref("rule", s, s) for s in rule["see_also"]) + ".")
            desc.append(ctx.errata_note("rule", rule["id"]))
            desc = [d for d in desc if d]
            rows.append([f'<a id="{anchor("rule", rule["id"])}"></a>{code(rule["id"])}',
                         _sev(prof.get("spec", rule["severity"])), _sev(prof.get("ggml", rule["severity"])),
                         esc(rule.get("c_reader", "")), esc(rule.get("gguf_py", "")), "<br>".join(desc),
                         _join([esc(rule.get("source", "")),
                                f"({esc(rule['doc_ref'])})" if rule.get("doc_ref") else ""])])
        out.append(table(["ID", "spec", "ggml", "C", "py", "description", "source"], rows) if rows
                   else "_No rules in this group._\n")
    known = {g["prefix"] for g in r["groups"]}
    orphans = [rule["id"] for rule in r["rules"] if rule["id"].split("-")[0] not in known]
    if orphans:
        out.append("**Rules without a group:** " + ", ".join(code(o) for o in orphans) + "\n")
    return "\n".join(out)


def _sev(s: str) -> str:
    return f"**{s}**" if s == "error" else s


def _sec_rule_placeholders(ctx: Ctx) -> str:
    r = ctx.data.rules
    if not r:
        return _NO_RULES
    return ("Placeholders of the message templates (Python str.format fields):\n\n"
            + table(["placeholder", "meaning"], [[code("{" + k + "}"), ctx.prose(v)]
                                                  for k, v in r.get("placeholders", {}).items()]))


# --- errata.md ----------------------------------------------------------------------------------------------------


def _sec_errata(ctx: Ctx) -> str:
    e = ctx.data.errata
    if not e:
        return "_spec/errata.yaml is not present yet._\n"
    sources = {s["id"]: s for s in e.get("sources", [])}
    out = [ctx.prose(e["meta"]["doc"]) + "\n",
           table(["source", "what it is"], [[esc(s["title"]), ctx.prose(s["doc"])] for s in sources.values()])]
    kinds = {"tensor_types": "tt", "keys": "key", "rules": "rule"}
    for item in e["errata"]:
        out.append(heading(3, anchor("erratum", item["id"]), esc(item["title"])))
        rel = []
        for field, kind in kinds.items():
            for name in (item.get("related") or {}).get(field, []):
                rel.append(ctx.ref(kind, name, name if kind == "rule" else None))
        rows = [["claimed by", ", ".join(esc(sources[s]["title"]) if s in sources else esc(s)
                                         for s in item["sources"])],
                ["claim", ctx.prose(item["claim"])], ["actual", ctx.prose(item["actual"])]]
        if rel:
            rows.append(["in the spec", ", ".join(rel)])
        rows.append(["source", esc(item["doc_ref"])])
        out.append(table(["", ""], rows))
    return "\n".join(out)


def _sec_errata_elsewhere(ctx: Ctx) -> str:
    keys = [k for k in ctx.data.keys["keys"] if k.get("errata")]
    out = ["Errata attached to single entries of the spec:\n"]
    out.append("\n".join(f"- {ctx.ref('key', k['key'])}: {ctx.prose(k['errata'])}" for k in keys) + "\n")
    n = len(ctx.data.naming["regex"].get("errata", []))
    if n:
        out.append(f"- The naming convention: {n} errata of the published regex, see "
                   f"[Naming: regex](naming.md#naming-regex).\n")
    return "\n".join(out)


# --- README.md (index) --------------------------------------------------------------------------------------------


def _sec_index(ctx: Ctx) -> str:
    d = ctx.data
    cur = sum(t.is_current for t in d.tensor_types)
    counts = {
        "format.md": f"GGUF versions {', '.join(map(str, d.gguf['meta']['versions']))}",
        "values.md": f"{len(d.gguf['value_types'])} value types",
        "tensor-types.md": f"{len(d.tensor_types)} types, {cur} current",
        "tables.md": f"{len(d.tables)} tables",
        "keys.md": f"{len(d.keys['keys'])} keys, {len(d.keys['architectures'])} architectures",
        "file-types.md": f"{len(d.file_types['file_types'])} values",
        "naming.md": f"{len(d.naming['examples'])} examples",
        "rules.md": f"{len(d.rules['rules'])} rules" if d.rules else "not yet in the spec",
        "errata.md": f"{len(d.errata['errata'])} errata" if d.errata else "not yet in the spec",
    }
    out = []
    for page in PAGES:
        if page.file == "README.md":
            continue
        out.append(f"- [{page.title}]({page.file}) ({counts.get(page.file, '')}): {page.summary}")
        for s in page.sections:
            out.append(f"  - [{s.title}]({page.file}#{s.name})")
    return "\n".join(out) + "\n"


# --- the page list ------------------------------------------------------------------------------------------------


def _intro(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n"


PAGES: tuple[Page, ...] = (
    Page("README.md", "GGUF reference", "index",
         _intro("GGUF reference",
                "A complete description of GGUF, the model file format of ggml and llama.cpp. Every page is "
                "generated from the YAML specification in [`spec/`](../spec) that gguf-construct's reader, writer "
                "and checker execute, so the text cannot drift from the code. Regenerate with "
                "`gguf-construct docs`; `gguf-construct docs --check` fails when these files are stale."),
         (Section("contents", "Contents", _sec_index),)),
    Page("format.md", "File format", "layout of a GGUF file per version, byte order, structures, alignment",
         _intro("File format", "How a GGUF file is laid out, byte by byte, in each version and byte order."),
         (Section("overview", "Overview", _sec_overview),
          Section("versions", "Versions", _sec_versions),
          Section("byte-order", "Byte order", _sec_byte_order),
          Section("structures", "Structures", _sec_structures),
          Section("data-layout", "Alignment and data section", _sec_data_layout),
          Section("primitives", "Primitive types", _sec_primitives),
          Section("aliases", "Version aliases", _sec_aliases))),
    Page("values.md", "Metadata values", "the value types of metadata, strings and arrays",
         _intro("Metadata values", "The typed values stored in the metadata key/value section."),
         (Section("value-types", "Value types", _sec_value_types),
          Section("strings", "Strings", _sec_strings),
          Section("arrays", "Arrays", _sec_arrays))),
    Page("tensor-types.md", "Tensor types", "every ggml tensor type with its block layout and decoding",
         _intro("Tensor types", "How tensor data is encoded: the ggml types, their blocks and how to decode them."),
         (Section("tensor-types-summary", "All types", _sec_tt_summary),
          Section("block-layouts", "Block layouts", _sec_tt_blocks))),
    Page("tables.md", "Lookup tables", "constant tables used by the quantization codecs",
         _intro("Lookup tables", "Tables of constants that some tensor types decode through."),
         (Section("lookup-tables", "Tables", _sec_tables),)),
    Page("keys.md", "Metadata keys", "the standardized metadata keys, per-architecture requirements, tokenizer keys",
         _intro("Metadata keys", "The registry of standardized metadata keys."),
         (Section("key-registry", "Registry", _sec_key_registry),
          Section("key-sections", "Keys by section", _sec_key_sections),
          Section("architectures", "Architectures", _sec_architectures),
          Section("known-architectures", "Known architecture names", _sec_known_architectures))),
    Page("file-types.md", "File types", "values of general.file_type (llama_ftype)",
         _intro("File types", "The values of the optional `general.file_type` key."),
         (Section("file-types", "Values", _sec_file_types),)),
    Page("naming.md", "Naming convention", "the file naming convention, its regex and worked examples",
         _intro("Naming convention", "How GGUF files are recommended to be named."),
         (Section("naming-overview", "Overview", _sec_naming_overview),
          Section("naming-components", "Components", _sec_naming_components),
          Section("naming-regex", "Regex", _sec_naming_regex),
          Section("naming-shards", "Shards", _sec_naming_shard),
          Section("naming-examples", "Examples", _sec_naming_examples))),
    Page("rules.md", "Conformance rules", "every check of the conformance checker, with its verdicts",
         _intro("Conformance rules", "The conformance rule catalog: what makes a GGUF file invalid or suspicious."),
         (Section("rules-overview", "Overview", _sec_rules_overview),
          Section("rule-groups", "Rules", _sec_rule_groups),
          Section("rule-placeholders", "Message placeholders", _sec_rule_placeholders))),
    Page("errata.md", "Errata", "where published write-ups and ggml's C code disagree",
         _intro("Errata", "Mistakes in commonly used descriptions of GGUF, and what is actually true."),
         (Section("errata", "Errata", _sec_errata),
          Section("errata-elsewhere", "Errata of single keys", _sec_errata_elsewhere))),
)


# ----------------------------------------------------------------------------------------------------------------
# splicing, writing, checking
# ----------------------------------------------------------------------------------------------------------------


def _block(name: str, body: str) -> str:
    return f"{BEGIN.format(name=name)}\n{body}{END}"


def render_sections(page: Page, ctx: Ctx) -> dict[str, str]:
    """The generated content of each section of a page (heading included), keyed by marker name."""
    ctx.page = page.file
    out = {}
    for s in page.sections:
        body = s.render(ctx).rstrip("\n") + "\n"
        out[s.name] = body if page.file == "README.md" else f'## <a id="{s.name}"></a>{s.title}\n\n{body}'
    return out


def splice(existing: str | None, page: Page, sections: dict[str, str]) -> str:
    """Put the generated sections into a page: inside its markers, or into a new page from the default intro.

    Sections whose markers are missing from an existing page are appended at its end; markers of sections the
    generator no longer knows are left as they are (``check_docs`` reports them).
    """
    if existing is None:
        parts = [page.intro] + [_block(n, body) + "\n" for n, body in sections.items()]
        return "\n".join(parts)
    seen = set()

    def repl(m: re.Match) -> str:
        name = m.group(1)
        if name not in sections:
            return m.group(0)
        seen.add(name)
        return _block(name, sections[name])

    text = _BLOCK_RE.sub(repl, existing)
    missing = [n for n in sections if n not in seen]
    if missing:
        text = text.rstrip("\n") + "\n\n" + "\n".join(_block(n, sections[n]) + "\n" for n in missing)
    return text


def render_all(out_dir: Path | str) -> dict[Path, str]:
    """The full text every page of ``out_dir`` should have, given its current hand-written parts."""
    out_dir = Path(out_dir)
    ctx = Ctx(load_spec())
    result = {}
    for page in PAGES:
        path = out_dir / page.file
        existing = path.read_text(encoding="utf-8") if path.is_file() else None
        result[path] = splice(existing, page, render_sections(page, ctx))
    return result


def _unknown_markers(text: str, page: Page) -> list[str]:
    known = {s.name for s in page.sections}
    return [m.group(1) for m in _BLOCK_RE.finditer(text) if m.group(1) not in known]


def write_docs(out_dir: Path | str) -> list[Path]:
    """Regenerate the documentation in ``out_dir``; returns the files that changed."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    changed = []
    for path, text in render_all(out_dir).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            changed.append(path)
    return changed


def check_docs(out_dir: Path | str) -> list[str]:
    """Problems that make the checked-in docs differ from what the spec generates ([] when up to date)."""
    out_dir = Path(out_dir)
    problems = []
    pages = {p.file: p for p in PAGES}
    for path, text in render_all(out_dir).items():
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        current = path.read_text(encoding="utf-8")
        if current != text:
            problems.append(f"{path}: stale")
        for name in _unknown_markers(current, pages[path.name]):
            problems.append(f"{path}: unknown generated section {name!r}")
    return problems


def default_out_dir() -> Path:
    """docs/ next to the spec/ directory of a source checkout, else ./docs."""
    spec_dir = _spec.spec_dir()
    return spec_dir.parent / "docs" if spec_dir.name == "spec" else Path("docs")


def _cmd_docs(args: argparse.Namespace) -> int:
    if args.out is None:
        args.out = default_out_dir()
    if args.check:
        problems = check_docs(args.out)
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print("gguf-construct: docs are stale; run `gguf-construct docs` and commit the result", file=sys.stderr)
            return 1
        print(f"{args.out}: up to date")
        return 0
    changed = write_docs(args.out)
    for path in changed:
        print(f"wrote {path}")
    if not changed:
        print(f"{args.out}: up to date")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the ``docs`` sub-command on the CLI's subparsers."""
    p = subparsers.add_parser("docs", help="render the Markdown reference in docs/ from spec/")
    p.add_argument("--out", default=None,
                   help="output directory (default: docs/ beside spec/ in a source checkout, else ./docs)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 listing the files that differ from what the spec generates")
    p.set_defaults(func=_cmd_docs)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_cmd_docs(argparse.Namespace(out=sys.argv[1] if len(sys.argv) > 1 else None, check=False)))
