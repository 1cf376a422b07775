"""The page values.md: metadata value types, strings and arrays."""

from __future__ import annotations

from ...format import structs
from ...format.fieldlayout import case_size
from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, intro, table
from ..structures import struct_anchors, struct_section


def _sec_value_types(ctx: Ctx) -> str:
    g = ctx.data.gguf
    rows = []
    for vt in g["value_types"]:
        enc = ctx.ref("prim", vt["encoding"]) if "encoding" in vt else ctx.ref("struct", vt["type"])
        sizes = {case_size(structs.family(v, bo), vt["id"]).fixed for v, bo in structs.each_family()}
        size = str(sizes.pop()) if len(sizes) == 1 and None not in sizes else "variable"
        doc = ctx.prose(vt["doc"])
        if vt.get("valid"):
            doc += " Valid bytes: " + ", ".join(code(v) for v in vt["valid"]) + "."
        rows.append(
            [
                str(vt["id"]),
                f'<a id="{anchor("vt", vt["name"])}"></a>{code(vt["name"])}',
                code(vt["c_name"]),
                enc,
                size,
                ctx.link(anchor("version", vt["since"]), f"v{vt['since']}"),
                doc,
            ]
        )
    return (
        "Every metadata value is preceded by its type, a u32 from this table (the key/value record is "
        f"{ctx.ref('struct', 'metadata_kv')}). Scalars are encoded in the file's byte order.\n\n"
        + table(["id", "name", "C name", "encoding", "bytes", "since", "meaning"], rows, "rllllll")
    )


def _sec_strings(ctx: Ctx) -> str:
    return struct_section(ctx, "gguf_string", 3)


def _sec_arrays(ctx: Ctx) -> str:
    out = [struct_section(ctx, "gguf_array", 3)]
    arr = next(vt for vt in ctx.data.gguf["value_types"] if vt["name"] == "ARRAY")
    nest = [f"**Nesting.** {ctx.prose(arr['doc'])}"]
    refs = [ctx.ref("rule", r, r) for r in ("ARR-NESTED", "ARR-DEPTH") if anchor("rule", r) in ctx.defs]
    if refs:
        nest.append("Rules: " + ", ".join(refs) + ".")
    if anchor("erratum", "nested-arrays") in ctx.defs:
        nest.append(f"See also the {ctx.link(anchor('erratum', 'nested-arrays'), 'erratum')}.")
    out.append(" ".join(nest) + "\n")
    return "\n".join(out)


def _defines(data: SpecData):
    yield from (anchor("vt", vt["name"]) for vt in data.gguf["value_types"])
    yield from struct_anchors(data.gguf, "values.md")


PAGE = Page(
    "values.md",
    "Metadata values",
    "the value types of metadata, strings and arrays",
    intro("Metadata values", "The typed values stored in the metadata key/value section."),
    (
        Section("value-types", "Value types", _sec_value_types),
        Section("strings", "Strings", _sec_strings),
        Section("arrays", "Arrays", _sec_arrays),
    ),
    defines=_defines,
    count=lambda d: f"{len(d.gguf['value_types'])} value types",
)
