"""The pictures of docs/ as SVG, drawn from the spec: the file layout of each GGUF version, the differences between
versions, and each tensor type's block.

Byte widths and offsets come from the generated families' layouts (:mod:`gguf_construct.format.fieldlayout`, the widths
the reader and builder use) and from the block dtype of each tensor type (the one the codecs read); the bit
packing inside a block is measured on the decoder (:mod:`.blockbits`).  :func:`pictures` returns every picture as
``{file name: SVG text}``; the docs writer puts them in ``docs/pictures/`` and ``docs --check`` compares them like
the pages.
"""

from __future__ import annotations

import functools

from .. import codecs, layers
from ..format import structs
from ..format import spec as _spec
from ..format.fieldlayout import Extent
from .blockbits import BlockBits, ItemBits, block_bits, element_label
from .svg import Svg, text_width

__all__ = [
    "pictures",
    "block_picture",
    "file_layout_picture",
    "versions_picture",
    "layers_picture",
    "block_picture_name",
    "file_layout_picture_name",
    "VERSIONS_PICTURE",
    "LAYERS_PICTURE",
    "PICTURE_DIR",
]

PICTURE_DIR = "pictures"
VERSIONS_PICTURE = "versions.svg"
LAYERS_PICTURE = "layers.svg"  # the package's layers (gguf_construct/layers.py), in the README
WIDTH = 980  # the file layout pictures
BLOCK_WIDTH = 800  # the block pictures: close to a page's text width, so that they are shown near 1:1
PAD = 10

# fills by what a run of bits drives
KIND_FILL = {"block": "#9ec5e8", "group": "#f7c58f", "one": "#a8d8a0", "scattered": "#d7b5d8", "none": "#d9d9d9"}
KIND_TEXT = {
    "block": "the whole block (a block scale)",
    "group": "a sub-block or group of adjacent weights",
    "one": "one weight",
    "scattered": "weights that are not adjacent",
    "none": "no weight (unused by decoding)",
}
FIELD_FILLS = ("#dbe9f6", "#fde3c8", "#dff0d8", "#ecdcef", "#fff2b3", "#e0e0e0")


def block_picture_name(type_name: str) -> str:
    """File name of a tensor type's block picture (relative to the pictures folder)."""
    return f"block-{type_name.lower()}.svg"


def file_layout_picture_name(version: int) -> str:
    """File name of a version's file-layout picture (relative to the pictures folder)."""
    return f"file-layout-v{version}.svg"


def _fit_widths(sizes: list[int], mins: list[float], total: float) -> list[float]:
    """Widths proportional to ``sizes`` summing to ``total``, none below its minimum."""
    fixed: dict[int, float] = {}
    while True:
        free = [i for i in range(len(sizes)) if i not in fixed]
        room = total - sum(fixed.values())
        weight = sum(sizes[i] for i in free) or 1
        widths = {i: room * sizes[i] / weight for i in free}
        short = [i for i in free if widths[i] < mins[i]]
        if not short:
            return [fixed.get(i, widths.get(i, 0.0)) for i in range(len(sizes))]
        for i in short:
            fixed[i] = mins[i]


def _kind(elements: tuple[int, ...], block_size: int) -> str:
    if not elements:
        return "none"
    if len(elements) == block_size and block_size > 1:
        return "block"
    if len(elements) == 1:
        return "one"
    return "group" if elements[-1] - elements[0] + 1 == len(elements) else "scattered"


def _shown_items(items: list[ItemBits]) -> list[ItemBits | None]:
    """All items of a short field; the first three and the last of a long one (None marks the gap)."""
    if len(items) <= 16:
        return list(items)
    return items[:3] + [None] + items[-1:]


def _prim_label(prim: str) -> str:
    p = _spec.primitives()[prim]
    names = {"f2": "f16", "f4": "f32", "f8": "f64", "bf2": "bf16"}
    if prim in names:
        return names[prim]
    return f"{'i' if prim.startswith('i') else 'u'}{8 * p.size}"


def block_picture(type_name: str) -> str:
    """The block of a tensor type: its fields to scale, its sub-blocks, and every field's bits with the weights
    they decode into."""
    t = codecs.type_spec(type_name)
    dtype = codecs.block_dtype(t.name)
    bits: BlockBits = block_bits(t.name)
    svg = Svg(BLOCK_WIDTH, f"{t.name} block layout")
    inner = BLOCK_WIDTH - 2 * PAD
    svg.text(
        PAD,
        20,
        f"{t.name}: {t.block_size} weight{'s' if t.block_size > 1 else ''} in {t.type_size} bytes "
        f"({8 * t.type_size / t.block_size:g} bits per weight)",
        size=14,
        bold=True,
    )
    # the fields to scale
    y = 34
    labels = []
    for f in t.fields:
        typ = _prim_label(f.type) + (f" × {f.count}" if f.count > 1 else "")
        labels.append((f.id, f"{typ} · {f.size} B"))
    mins = [max(text_width(a), text_width(b, 9)) + 10 for a, b in labels]
    widths = _fit_widths([f.size for f in t.fields], mins, inner)
    x = PAD
    svg.text(PAD, y - 2, "bytes", size=9, fill="#555")
    y += 4
    for i, (f, w) in enumerate(zip(t.fields, widths)):
        offset = dtype.fields[f.id][1]
        svg.rect(
            x,
            y,
            w,
            38,
            FIELD_FILLS[i % len(FIELD_FILLS)],
            tooltip=f"{f.id}: bytes {offset}–{offset + f.size - 1}. {f.doc}",
        )
        svg.text(x + w / 2, y + 16, labels[i][0], anchor="middle", bold=True)
        svg.text(x + w / 2, y + 30, labels[i][1], size=9, anchor="middle")
        svg.line(x, y + 38, x, y + 44, stroke="#333")
        svg.text(x + 1, y + 54, str(offset), size=9)
        x += w
    svg.line(x, y + 38, x, y + 44, stroke="#333")
    svg.text(x, y + 54, str(t.type_size), size=9, anchor="end")
    y += 66
    # the sub-blocks
    if bits.sub_blocks:
        n = len(bits.sub_blocks)
        size = bits.sub_blocks[0][1] - bits.sub_blocks[0][0] + 1
        svg.text(PAD, y + 10, f"weights: {n} sub-blocks (s0 … s{n - 1}) of {size}", size=9, fill="#555")
        y += 14
        w = inner / n
        long_labels = all(text_width(f"s{j}: {a}–{b}", 9) < w - 2 for j, (a, b) in enumerate(bits.sub_blocks))
        for j, (a, b) in enumerate(bits.sub_blocks):
            svg.rect(
                PAD + j * w, y, w, 20, "#eef3f8" if j % 2 else "#dde7f1", tooltip=f"sub-block {j}: weights {a}–{b}"
            )
            label = f"s{j}: {a}–{b}" if long_labels else f"s{j}"
            if text_width(label, 9) < w - 2:
                svg.text(PAD + j * w + w / 2, y + 14, label, size=9, anchor="middle")
        y += 32
    # the bits
    svg.text(
        PAD,
        y + 10,
        "bits of each field, most significant first; a label names the weights (0 = first of "
        "the block) that those bits decode into",
        size=9,
        fill="#555",
    )
    y += 18
    sub_names = {tuple(range(a, b + 1)): f"s{j}" for j, (a, b) in enumerate(bits.sub_blocks)}
    by_field: dict[str, list[ItemBits]] = {}
    for item in bits.items:
        by_field.setdefault(item.field, []).append(item)
    for f in t.fields:
        x = PAD
        row_h = 44
        for item in _shown_items(by_field[f.id]):
            if item is None:
                if x + 30 > BLOCK_WIDTH - PAD:
                    x, y = PAD, y + row_h
                svg.text(x + 10, y + 30, "…", size=14)
                x += 30
                continue
            bit_w = 16.0 if item.bits <= 32 else 8.0
            w = bit_w * item.bits
            if x + w > BLOCK_WIDTH - PAD and x > PAD:
                x, y = PAD, y + row_h
            svg.text(x, y + 10, f"{item.name} · byte {item.offset}", size=9)
            for run in item.runs:
                rx = x + (item.bits - 1 - run.hi) * bit_w
                rw = run.width * bit_w
                label = element_label(run.elements, bits.block_size)
                if text_width(label, 9) > rw - 2 and run.elements in sub_names:
                    label = sub_names[run.elements]
                kind = _kind(run.elements, bits.block_size)
                bit_text = f"bit {run.hi}" if run.width == 1 else f"bits {run.hi}–{run.lo}"
                svg.rect(
                    rx,
                    y + 14,
                    rw,
                    22,
                    KIND_FILL[kind],
                    stroke="#444",
                    tooltip=f"{item.name} {bit_text}: weights {label}",
                )
                if text_width(label, 9) <= rw - 2:
                    svg.text(rx + rw / 2, y + 29, label, size=9, anchor="middle")
            x += w + 14
        y += row_h + 4
    # legend
    x = PAD
    for kind, fill in KIND_FILL.items():
        w = 16 + text_width(KIND_TEXT[kind], 9)
        if x + w > BLOCK_WIDTH - PAD:
            x, y = PAD, y + 18
        svg.rect(x, y + 2, 12, 12, fill, stroke="#444")
        svg.text(x + 16, y + 12, KIND_TEXT[kind], size=9)
        x += w + 18
    return svg.render()


def _field_bytes(fam: structs.StructFamily, f: dict) -> str:
    if "type" in f and f["type"] not in _spec.load_yaml("gguf.yaml")["types"]:
        return f"{fam.primitive_width(f['type'])} B"
    return ""


def _expanded(fam: structs.StructFamily, g: dict, sname: str) -> list[tuple[str, Extent, Extent, str]]:
    """The fields of a structure as (label, offset, size, note) with string fields split into length and bytes."""
    lay = fam.layout(sname)
    out = []
    for f in g["types"][sname]["seq"]:
        if f.get("since", 1) > fam.version:  # a field of later versions only
            continue
        fl = lay[f["id"]]
        if f.get("type") in g["types"]:
            sub = fam.layout(f["type"])
            for sf in sub.fields:
                out.append((f"{f['id']}.{sf.id}", fl.offset + sf.offset.within(f["id"]), sf.size.within(f["id"]), ""))
            continue
        note = ""
        if "contents" in f:
            note = f'"{f["contents"]}"'
        elif "switch_on" in f:
            note = f"{f['repeat']} × " if "repeat" in f else ""
            note += f"a value chosen by {f['switch_on']}"
        out.append((f["id"], fl.offset, fl.size, note))
    return out


def _size_text(e: Extent) -> str:
    return f"{e.fixed} B" if e.fixed is not None else ("by type" if e.variable else str(e).replace(" × ", "×") + " B")


def _record_row(
    svg: Svg, y: float, title: str, fields: list[tuple[str, Extent, Extent, str]]
) -> dict[str, tuple[float, float]]:
    """One structure as a row of boxes (fixed fields 14 px per byte, at least their text) under its title; returns
    each box's x range by label."""
    svg.text(PAD, y + 12, title, size=11, bold=True)
    y += 18
    x = PAD
    boxes = {}
    for i, (label, off, size, note) in enumerate(fields):
        lines = [label, note or _size_text(size), f"@ {off}"]
        w = max(max(text_width(s, 9) for s in lines[1:]), text_width(label)) + 12
        if size.fixed is not None:
            w = max(w, 14 * size.fixed)
        svg.rect(x, y, w, 48, FIELD_FILLS[i % len(FIELD_FILLS)], tooltip=f"{label}: {size} bytes at offset {off}")
        svg.text(x + w / 2, y + 15, label, anchor="middle", bold=True)
        svg.text(x + w / 2, y + 29, lines[1], size=9, anchor="middle")
        svg.text(x + w / 2, y + 42, lines[2], size=9, anchor="middle", fill="#555")
        boxes[label] = (x, x + w)
        x += w
    boxes[""] = (PAD, x)
    return boxes


def file_layout_picture(version: int) -> str:
    """A GGUF file of one version: its parts in order, then the header, a metadata record, an array value and a
    tensor info field by field with widths and offsets from the family's layout."""
    fam = structs.family(version, "little")
    g = _spec.load_yaml("gguf.yaml")
    svg = Svg(WIDTH, f"GGUF v{version} file layout")
    svg.text(PAD, 20, f"GGUF version {version}: file layout", size=14, bold=True)
    head = fam.layout("header")
    align = g["layout"]["alignment"]
    parts = [
        ("header", f"{head.size} B", "#dbe9f6"),
        ("metadata_kv × metadata_kv_count", "key, type, value", "#fde3c8"),
        ("tensor_info × tensor_count", "name, shape, type, offset", "#dff0d8"),
        ("padding", f"0x00 to a multiple of ALIGNMENT ({align['default']})", "#eeeeee"),
        ("tensor data", "each tensor at data start + offset", "#ecdcef"),
    ]
    y = 34
    x = PAD
    widths = _fit_widths(
        [1] * len(parts), [max(text_width(a), text_width(b, 9)) + 14 for a, b, _ in parts], WIDTH - 2 * PAD
    )
    boxes: dict[str, tuple[float, float, float]] = {}
    for (label, sub, fill), w in zip(parts, widths):
        svg.rect(x, y, w, 40, fill, tooltip=f"{label}: {sub}", dash=label == "padding")
        svg.text(x + w / 2, y + 16, label, anchor="middle", bold=True)
        svg.text(x + w / 2, y + 31, sub, size=9, anchor="middle")
        boxes[label.split(" ")[0]] = (x, x + w, y + 40)
        x += w
    y += 40
    rows = [
        ("header", "header", "header"),
        ("one metadata_kv", "metadata_kv", "metadata_kv"),
        ("its value when value_type is ARRAY (gguf_array)", "gguf_array", "value"),
        ("one tensor_info", "tensor_info", "tensor_info"),
    ]
    for title, sname, parent in rows:
        row_top = y
        y += 12
        row = _record_row(svg, y, title, _expanded(fam, g, sname))
        px0, px1, pbottom = boxes[parent]
        x0, x1 = row[""]
        if pbottom == row_top:  # zoom lines only from the row just above, so that none crosses a row
            svg.line(px0, pbottom, x0, y + 18, dash=True)
            svg.line(px1, pbottom, x1, y + 18, dash=True)
        for label, (bx0, bx1) in row.items():
            boxes.setdefault(label, (bx0, bx1, y + 66))
        y += 18 + 48
    svg.text(
        PAD,
        y + 18,
        f"offsets (@) from the start of each record; x.len is the length field of string x; "
        f"ALIGNMENT is the key {align['key']} (default {align['default']})",
        size=9,
        fill="#555",
    )
    return svg.render()


def versions_picture() -> str:
    """What differs between the versions: the width of every version alias, the header size and the value types."""
    g = _spec.load_yaml("gguf.yaml")
    versions = structs.versions()
    fams = {v: structs.family(v, "little") for v in versions}
    svg = Svg(WIDTH, "Differences between GGUF versions")
    svg.text(PAD, 20, "What changes between GGUF versions", size=14, bold=True)
    label_w = 250
    col_w = (WIDTH - 2 * PAD - label_w) / len(versions)
    y = 36
    for j, v in enumerate(versions):
        svg.text(PAD + label_w + j * col_w + 4, y + 10, f"v{v}", bold=True)
    y += 18
    rows: list[tuple[str, list[tuple[int, str]]]] = []
    for name, alias in g["aliases"].items():
        rows.append(
            (
                f"{name}: {alias['doc'].split('(')[0].rstrip('.').lower()}",
                [(fams[v].primitive_width(name), f"{fams[v].primitive_width(name)} bytes") for v in versions],
            )
        )
    rows.append(
        (
            "header size",
            [(fams[v].layout("header").size.fixed, f"{fams[v].layout('header').size.fixed} bytes") for v in versions],
        )
    )
    for label, cells in rows:
        lines = _wrap(label, int(label_w / text_width("x", 9)) - 1)
        for k, line in enumerate(lines):
            svg.text(PAD, y + 12 + 11 * k, line, size=9)
        prev = None
        for j, (n, text) in enumerate(cells):
            cx = PAD + label_w + j * col_w + 4
            changed = prev is not None and n != prev
            svg.rect(
                cx,
                y + 2,
                5 * n,
                16,
                "#f7c58f" if changed else "#9ec5e8",
                stroke="#444",
                tooltip=f"v{versions[j]}: {text}",
            )
            svg.text(cx + 5 * n + 6, y + 14, text + ("  (changed)" if changed else ""), size=9)
            prev = n
        y += max(24, 11 * len(lines) + 6)
    vts = g["value_types"]
    svg.text(PAD, y + 12, "value types (ids)", size=9)
    for j, v in enumerate(versions):
        ids = [vt["id"] for vt in vts if vt["since"] <= v]
        added = [vt["name"] for vt in vts if vt["since"] == v and v != versions[0]]
        cx = PAD + label_w + j * col_w + 4
        svg.text(cx, y + 12, f"{len(ids)} types: {min(ids)}–{max(ids)}", size=9)
        if added:
            svg.text(cx, y + 24, "+ " + ", ".join(added), size=9, fill="#a0522d")
    y += 32
    statuses = {x["version"]: x["status"] for x in g["versions"]}
    svg.text(PAD, y + 12, "status", size=9)
    for j, v in enumerate(versions):
        svg.text(PAD + label_w + j * col_w + 4, y + 12, statuses[v], size=9)
    return svg.render()


def _wrap(text: str, width: int) -> list[str]:
    words, lines, cur = text.split(), [], ""
    for word in words:
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return lines + [cur] if cur else lines


def layers_picture() -> str:
    """The package's layers as :data:`gguf_construct.layers.LAYERS` declares them, the top one first: each floor's
    folders, what it holds and what a contributor adds there.  A module imports only its own folder or floors
    below it."""
    svg = Svg(WIDTH, "gguf_construct layers")
    svg.text(
        PAD, 20, "gguf_construct, floor by floor: a module imports only its own folder or a floor below it", bold=True
    )
    folder_w, y = 250.0, 34.0
    for layer in reversed(layers.LAYERS):
        lines = _wrap(layer.holds, int((WIDTH - folder_w - 3 * PAD - 40) / text_width("x", 9)))
        extra = (
            _wrap("add here: " + layer.add_here, int((WIDTH - folder_w - 3 * PAD - 40) / text_width("x", 9)))
            if layer.add_here
            else []
        )
        h = max(30.0, 12.0 * (len(lines) + len(extra)) + 10)
        svg.rect(
            PAD,
            y,
            WIDTH - 2 * PAD,
            h,
            "#f4f7fb",
            stroke="#9aa9b8",
            tooltip=f"floor {layer.number}: {', '.join(layer.folders)}",
        )
        svg.text(PAD + 8, y + 19, str(layer.number), size=14, bold=True, fill="#555")
        x = PAD + 36
        width = (folder_w - 8) / len(layer.folders)
        for i, folder in enumerate(layer.folders):
            label = folder + (".py" if folder in layers.TOP_LEVEL or folder.startswith("__") else "/")
            svg.rect(
                x + i * width,
                y + 5,
                width - 4,
                h - 10,
                FIELD_FILLS[layer.number % len(FIELD_FILLS)],
                stroke="#444",
                tooltip=f"gguf_construct/{label}",
            )
            svg.text(
                x + i * width + (width - 4) / 2,
                y + h / 2 + 4,
                label,
                size=10 if len(layer.folders) < 3 else 9,
                anchor="middle",
                bold=True,
            )
        tx = PAD + 36 + folder_w + PAD
        for k, line in enumerate(lines):
            svg.text(tx, y + 15 + 12 * k, line, size=9)
        for k, line in enumerate(extra):
            svg.text(tx, y + 15 + 12 * (len(lines) + k), line, size=9, fill="#a0522d")
        y += h + 4
    return svg.render()


@functools.lru_cache(maxsize=1)
def pictures() -> dict[str, str]:
    """Every picture of docs/, keyed by file name in the pictures folder, in a fixed order."""
    out = {file_layout_picture_name(v): file_layout_picture(v) for v in structs.versions()}
    out[VERSIONS_PICTURE] = versions_picture()
    out[LAYERS_PICTURE] = layers_picture()
    for t in _spec.tensor_types():
        if t.is_current and codecs.has_decoder(t.name):
            out[block_picture_name(t.name)] = block_picture(t.name)
    from .pages.fuzzing import plots  # drawn from the recorded campaigns (fuzz/campaigns/)

    out.update(plots())
    return out
