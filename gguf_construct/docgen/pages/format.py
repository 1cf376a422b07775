"""The page format.md: the container layout per version, byte order, structures, alignment."""

from __future__ import annotations

import struct

from ...format import structs
from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, esc, fence, heading, image, intro, table
from ..pictures import PICTURE_DIR, VERSIONS_PICTURE, file_layout_picture_name
from ..structures import STRUCT_PAGE, group_label, struct_anchors, struct_section, versions_by_layout


def _sec_overview(ctx: Ctx) -> str:
    g = ctx.data.gguf
    meta = g["meta"]
    alignment = g["layout"]["alignment"]
    facts = table(
        ["property", "value"],
        [
            ["magic", f"{code(meta['magic'])} (bytes {' '.join(f'{b:02X}' for b in meta['magic'].encode())})"],
            [
                "versions",
                ", ".join(ctx.link(anchor("version", v), str(v)) for v in structs.versions())
                + f" (current: {meta['current_version']})",
            ],
            ["byte order", f"little- or big-endian for the whole file ({ctx.link('byte-order', 'detection')})"],
            ["default alignment", f"{alignment['default']} bytes, overridden by {ctx.ref('key', alignment['key'])}"],
            ["source", esc(meta["doc_ref"])],
        ],
    )
    current = meta["current_version"]
    picture = ctx.page_link(f"{PICTURE_DIR}/{file_layout_picture_name(current)}")
    return "\n".join(
        [
            ctx.prose(meta["doc"]) + "\n",
            facts,
            f"The parts of a file, in order, and the records inside them (version {current}; every "
            f"version's picture is under {ctx.link('versions', 'Versions')}):\n",
            image(f"GGUF v{current} file layout", picture),
            f"The container structures are defined below ({ctx.link('structures', 'structures')}); "
            f"metadata values are described in [Metadata values](values.md), tensor data blocks in "
            f"[Tensor types](tensor-types.md).\n",
        ]
    )


def _sec_versions(ctx: Ctx) -> str:
    g = ctx.data.gguf
    versions = g["versions"]
    out = []
    for v in versions:
        out.append(heading(3, anchor("version", v["version"]), f"Version {v['version']} ({esc(v['status'])})"))
        out.append(ctx.prose(v["doc"]) + "\n")
        out.append(f"Source: {esc(v['doc_ref'])}.\n")
        out.append(
            image(
                f"GGUF v{v['version']} file layout",
                ctx.page_link(f"{PICTURE_DIR}/{file_layout_picture_name(v['version'])}"),
            )
        )
    vnums = [v["version"] for v in versions]
    families = {vn: structs.family(vn, "little") for vn in vnums}
    rows = [["status"] + [esc(v["status"]) for v in versions]]
    for name, a in g["aliases"].items():
        cells = []
        for vn in vnums:
            p = structs.resolve_alias(name, vn)
            cells.append(f"{ctx.ref('prim', p)} ({families[vn].primitive_width(name)} bytes)")
        rows.append([f"{ctx.ref('alias', name)}: {ctx.prose(a['doc'])}"] + cells)
    vts = g["value_types"]
    rows.append(["value types"] + [_id_ranges([vt["id"] for vt in vts if vt["since"] <= vn]) for vn in vnums])
    rows.append(
        ["value types added"]
        + [", ".join(ctx.ref("vt", vt["name"]) for vt in vts if vt["since"] == vn) or "—" for vn in vnums]
    )
    rows.append(["header size"] + [f"{families[vn].layout('header').size} bytes" for vn in vnums])
    out += [
        "#### Differences between versions\n",
        image("Differences between GGUF versions", ctx.page_link(f"{PICTURE_DIR}/{VERSIONS_PICTURE}")),
        table(["property", *(f"v{vn}" for vn in vnums)], rows),
    ]
    out.append(
        "Everything not listed (u32 version, n_dimensions, value and tensor types, u64 tensor offsets, the "
        "order of the parts) is the same in every version.\n"
    )
    return "\n".join(out)


def _id_ranges(ids: list[int]) -> str:
    ids = sorted(ids)
    spans, start = [], ids[0]
    for a, b in zip(ids, ids[1:] + [None]):
        if b != a + 1:
            spans.append(f"{start}–{a}" if a != start else f"{a}")
            start = b
    return ", ".join(spans)


def _sec_byte_order(ctx: Ctx) -> str:
    bo = ctx.data.gguf["byte_order"]
    mask = bo["detection_mask"]
    rows = []
    for v in structs.versions():
        for order in structs.BYTE_ORDERS:
            raw = struct.pack(structs.byte_order(order).format(structs.STRUCT_FORMATS["u4"]), v)
            (word,) = struct.unpack(
                structs.byte_order(structs.BYTE_ORDERS[0]).format(structs.STRUCT_FORMATS["u4"]), raw
            )
            detected = structs.detect(bytes(structs.version_word()[0]) + raw)[1]  # as a reader tells it
            rows.append(
                [str(v), order, " ".join(f"{b:02X}" for b in raw), f"0x{word:08X}", f"0x{word & mask:04X}", detected]
            )
    return "\n".join(
        [
            ctx.prose(bo["doc"]) + "\n",
            f"**Detection.** {ctx.prose(bo['detection'])}\n",
            f"The mask is 0x{mask:X}. Applied to the version word of every version in both byte orders:\n",
            table(
                ["version", "written", "bytes 4–7", "read as little-endian u32", f"& 0x{mask:X}", "detected"],
                rows,
                "rlllll",
            ),
            f"Source: {esc(bo['doc_ref'])}.\n",
        ]
    )


def _sec_structures(ctx: Ctx) -> str:
    g = ctx.data.gguf
    out = [
        ctx.prose(
            "Each structure is a sequence of fields read back to back without padding. Offsets are "
            "relative to the start of the structure; `x.len` is the value of the length field of string "
            "`x`. Widths that differ between versions come from the version aliases."
        )
        + "\n"
    ]
    for vs, lay in versions_by_layout("header"):
        pictured = ", ".join(ctx.link(anchor("version", v), f"version {v}") for v in vs)
        out.append(f"Header of {group_label(vs)}: {lay.size} bytes (pictured under {pictured}).\n")
    for sname in g["types"]:
        if STRUCT_PAGE.get(sname, "format.md") == "format.md":
            out.append(struct_section(ctx, sname))
    others = ", ".join(ctx.ref("struct", s) for s in g["types"] if STRUCT_PAGE.get(s, "format.md") != "format.md")
    out.append(f"The value structures {others} are described with the metadata values.\n")
    return "\n".join(out)


def _sec_primitives(ctx: Ctx) -> str:
    rows = [
        [
            f'<a id="{anchor("prim", p["id"])}"></a>{code(p["id"])}',
            str(p["size"]),
            code(p["numpy"]),
            ctx.prose(p["doc"]),
        ]
        for p in ctx.data.gguf["primitives"]
    ]
    return (
        "Scalar encodings used by the structures, metadata values and tensor blocks. Multi-byte values use "
        "the file's byte order.\n\n" + table(["name", "bytes", "numpy", "meaning"], rows, "lrll")
    )


def _sec_aliases(ctx: Ctx) -> str:
    g = ctx.data.gguf
    vnums = structs.versions()
    rows = []
    for name, a in g["aliases"].items():
        rows.append(
            [f'<a id="{anchor("alias", name)}"></a>{code(name)}']
            + [ctx.ref("prim", structs.resolve_alias(name, v)) for v in vnums]
            + [ctx.prose(a["doc"]), esc(a.get("doc_ref", ""))]
        )
    return "Every width that differs between versions is named once and used by name in the structures.\n\n" + table(
        ["alias", *(f"v{v}" for v in vnums), "meaning", "source"], rows
    )


def _sec_data_layout(ctx: Ctx) -> str:
    lay = ctx.data.gguf["layout"]
    al = lay["alignment"]
    return "\n".join(
        [
            ctx.prose(lay["doc"]) + "\n",
            f"**ALIGNMENT.** {ctx.prose(al['doc'])} Key: {ctx.ref('key', al['key'])} "
            f"({ctx.ref('vt', al['type'], code(al['type']))}), default {al['default']}.\n",
            "Rounding an offset up to the alignment:\n",
            fence(f"align_offset(offset) = {lay['align_offset']}"),
            f"The data section starts at {code(lay['data_start'])}. A tensor of dimensions ne[0..3] (missing "
            "dimensions are 1) occupies\n",
            fence(f"nbytes = {lay['tensor_bytes']}"),
            f"bytes, with block_size and type_size of its {ctx.link('tensor-types-summary', 'tensor type')}; ne[0] "
            "must be a multiple of block_size.\n",
            f"Source: {esc(lay['doc_ref'])}.\n",
        ]
    )


def _defines(data: SpecData):
    g = data.gguf
    yield from (anchor("prim", p["id"]) for p in g["primitives"])
    yield from (anchor("alias", name) for name in g["aliases"])
    yield from (anchor("version", v["version"]) for v in g["versions"])
    yield from struct_anchors(g, "format.md")


PAGE = Page(
    "format.md",
    "File format",
    "layout of a GGUF file per version, byte order, structures, alignment",
    intro("File format", "How a GGUF file is laid out, byte by byte, in each version and byte order."),
    (
        Section("overview", "Overview", _sec_overview),
        Section("versions", "Versions", _sec_versions),
        Section("byte-order", "Byte order", _sec_byte_order),
        Section("structures", "Structures", _sec_structures),
        Section("data-layout", "Alignment and data section", _sec_data_layout),
        Section("primitives", "Primitive types", _sec_primitives),
        Section("aliases", "Version aliases", _sec_aliases),
    ),
    defines=_defines,
    count=lambda d: f"GGUF versions {', '.join(map(str, structs.versions()))}",
)
