"""The page keys.md: the metadata key registry and the documented architectures."""

from __future__ import annotations

from typing import Any

from ...format import keynames
from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, esc, heading, intro, table


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
    return [
        f'<a id="{anchor("key", k["key"])}"></a>{code(k["key"])}',
        typ,
        "<br>".join(req) or "—",
        "<br>".join(d for d in desc if d),
    ]


def _sec_key_registry(ctx: Ctx) -> str:
    meta = ctx.data.keys["meta"]
    ph = table(
        ["placeholder", "stands for"],
        [[code("{" + n + "}"), ctx.prose(d)] for n, d in meta.get("placeholders", {}).items()],
    )
    counts = {}
    for k in ctx.data.keys["keys"]:
        counts[k["section"]] = counts.get(k["section"], 0) + 1
    toc = "\n".join(
        f"- {ctx.link(anchor('keysec', s['id']), esc(s['title']))} ({counts.get(s['id'], 0)} keys)"
        for s in ctx.data.keys["sections"]
    )
    return "\n".join(
        [
            ctx.prose(meta["doc"]) + "\n",
            f"Source: {esc(meta['doc_ref'])}.\n",
            ph,
            f"{len(ctx.data.keys['keys'])} keys in {len(ctx.data.keys['sections'])} sections:\n",
            toc + "\n",
            f"The tokenizer keys are in {ctx.link(anchor('keysec', 'tokenizer'), 'Tokenizer')}; the keys "
            f"each architecture needs are listed under {ctx.link('architectures', 'Architectures')}.\n",
        ]
    )


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
    out = [
        f"Keys every model needs: {', '.join(ctx.ref('key', k) for k in always)}. The architectures "
        "gguf.md documents add their own required keys ({arch} is replaced by the architecture name):\n"
    ]
    for a in ctx.data.keys["architectures"]:
        out.append(heading(3, anchor("arch", a["id"]), f"{code(a['id'])}: {esc(a['title'])}"))
        if a.get("doc"):
            out.append(ctx.prose(a["doc"]) + "\n")
        req = [ctx.ref("key", k["key"]) for k in keys if a["id"] in k.get("required_by", [])]
        opt = [ctx.ref("key", k["key"]) for k in keys if a["id"] in k.get("optional_for", [])]
        out.append(f"- Required: {', '.join(req) or '—'}\n- Optional: {', '.join(opt) or '—'}\n")
    return "\n".join(out)


def _sec_known_architectures(ctx: Ctx) -> str:
    from ...arch import architectures

    names = list(architectures())
    return (
        f"{len(names)} values of {ctx.ref('key', keynames.GENERAL_ARCHITECTURE)} that llama.cpp's loader knows, each "
        f"with its keys and tensors on its [architecture page]({ctx.page_link('architectures.md')}). Any other "
        "value is reported as unknown (information only).\n\n"
        + ", ".join(ctx.link(anchor("model", n), code(n)) for n in names)
        + "\n"
    )


def _defines(data: SpecData):
    yield from (anchor("keysec", s["id"]) for s in data.keys["sections"])
    yield from (anchor("key", k["key"]) for k in data.keys["keys"])
    yield from (anchor("arch", a["id"]) for a in data.keys["architectures"])


PAGE = Page(
    "keys.md",
    "Metadata keys",
    "the standardized metadata keys, per-architecture requirements, tokenizer keys",
    intro("Metadata keys", "The registry of standardized metadata keys."),
    (
        Section("key-registry", "Registry", _sec_key_registry),
        Section("key-sections", "Keys by section", _sec_key_sections),
        Section("architectures", "Architectures", _sec_architectures),
        Section("known-architectures", "Known architecture names", _sec_known_architectures),
    ),
    defines=_defines,
    count=lambda d: f"{len(d.keys['keys'])} keys, {len(d.keys['architectures'])} architectures",
)
