"""The page tensor-types.md: every ggml tensor type with its block layout and decoding."""

from __future__ import annotations

from typing import Any

from ... import codecs
from ..context import Ctx, Page, Section, SpecData
from ..markdown import anchor, code, esc, fence, heading, image, intro, num, table
from ..pictures import PICTURE_DIR, block_picture_name
from .tables import table_users


def _sec_tt_summary(ctx: Ctx) -> str:
    rows = []
    for t in ctx.data.tensor_types:
        name = (
            ctx.ref("tt", t.name, code(t.name))
            if t.is_current
            else f'<a id="{anchor("tt", t.name)}"></a>{code(t.name)}'
        )
        bpw = num(t.bits_per_weight) if t.block_size else "—"
        rows.append(
            [
                str(t.id),
                name,
                str(t.block_size or "—"),
                str(t.type_size or "—"),
                bpw,
                t.status,
                t.kind,
                code(t.codec) if t.codec else "—",
                "" if t.is_current else ctx.prose(t.doc),
            ]
        )
    cur = sum(t.is_current for t in ctx.data.tensor_types)
    return (
        f"{len(ctx.data.tensor_types)} ggml types, {cur} of them current. A tensor's data is a sequence of "
        "blocks; each block encodes block size consecutive elements of a row in bytes per block bytes, so bits "
        "per weight = 8 × bytes per block / block size. Removed ids must not appear in a file.\n\n"
        + table(
            ["id", "name", "block size", "bytes per block", "bits per weight", "status", "kind", "codec", "note"],
            rows,
            "rlrrrllll",
        )
    )


_IMATRIX = {
    "required": "required (ggml will not quantize without one)",
    "used": "used when given",
    "ignored": "ignored",
}


def _sec_tt_blocks(ctx: Ctx) -> str:
    uses: dict[str, list[str]] = {}
    for tab, types in table_users(ctx.data).items():
        for name in types:
            uses.setdefault(name, []).append(tab)
    out = [
        "Each type's picture shows its block's fields to scale (widths from the spec), its sub-blocks, and for "
        "every field the weights that each group of its bits decodes into, measured on the decoder by flipping "
        "one bit at a time (hover a box for its bits). Long fields show their first items and their last.\n"
    ]
    for t in ctx.data.tensor_types:
        if not t.is_current:
            continue
        out.append(heading(3, anchor("tt", t.name), f"{t.name} (id {t.id})"))
        facts = [
            f"block size {t.block_size}",
            f"{t.type_size} bytes per block",
            f"{num(t.bits_per_weight)} bits per weight",
            t.kind,
            f"C {code(t.c_name)}",
        ]
        if t.extra.get("c_struct"):
            facts.append(f"struct {code(t.extra['c_struct'])}")
        if t.imatrix:
            facts.append(f"importance matrix {_IMATRIX[t.imatrix]}")
        out.append(ctx.prose(t.doc) + "\n")
        out.append(" · ".join(facts) + "\n")
        rows = []
        block = codecs.block_dtype(t.name)
        for f in t.fields:
            dt, off = block.fields[f.id][:2]
            size = dt.itemsize
            typ = ctx.ref("prim", f.type) + (f"[{f.count}]" if f.count > 1 else "")
            meaning = ctx.prose(f.doc)
            if f.c_decl:
                meaning += f" C: {code(f.c_decl)}."
            rows.append([f'<a id="{anchor("ttf", t.name, f.id)}"></a>{code(f.id)}', str(off), str(size), typ, meaning])
        out.append(table(["field", "offset", "bytes", "type", "meaning"], rows, "lrrll"))
        if t.fields and codecs.has_decoder(t.name):
            out.append(image(f"{t.name} block layout", ctx.page_link(f"{PICTURE_DIR}/{block_picture_name(t.name)}")))

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
            if ch == ";" and depth == 0 and text[i + 1 : i + 2] == " ":
                lines.append(text[start : i + 1])
                start = i + 2
        lines.append(text[start:])
    return "\n".join(lines)


def _defines(data: SpecData):
    for t in data.tensor_types:
        yield anchor("tt", t.name)
        yield from (anchor("ttf", t.name, f.id) for f in t.fields)


PAGE = Page(
    "tensor-types.md",
    "Tensor types",
    "every ggml tensor type with its block layout and decoding",
    intro("Tensor types", "How tensor data is encoded: the ggml types, their blocks and how to decode them."),
    (
        Section("tensor-types-summary", "All types", _sec_tt_summary),
        Section("block-layouts", "Block layouts", _sec_tt_blocks),
    ),
    defines=_defines,
    count=lambda d: f"{len(d.tensor_types)} types, {sum(t.is_current for t in d.tensor_types)} current",
)
