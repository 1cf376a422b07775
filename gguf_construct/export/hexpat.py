"""The ImHex pattern (``exports/gguf.hexpat``) generated from ``spec/``.

Same coverage as the Kaitai description as far as ImHex's pattern language allows:

* the byte order is detected with the spec's rule (the version word read little-endian, its low bits masked, at
  the one place it has in every family) and the whole file pattern is placed ``be`` or ``le``;
* numbers are ImHex's types of their kind and width as the generated families read them
  (:func:`~gguf_construct.format.fieldlayout.common_scalar`); the version-dependent widths (the spec's aliases) are
  ``if``s on the version;
* the value types are a ``match`` with one case per value type, arrays of arrays recursing;
* ALIGNMENT is taken from ``general.alignment`` while the metadata is placed; tensor data are placed at the data
  section start plus their offsets, sized by the spec's ``tensor_bytes`` with the block and type sizes of
  ``spec/tensor_types``.

Limits of the pattern language: strings are shown as ``char`` arrays (ImHex decodes them byte by byte, not as
UTF-8), and binary16/bfloat16 block fields are not decoded (the tensor data are raw bytes).
"""

from __future__ import annotations

import re

from ..format import spec as _spec
from ..format import structs
from ..format.fieldlayout import Scalar, alias_cases, common_field, common_scalar

__all__ = ["render_hexpat"]

# a scalar's kind -> the letter of ImHex's integers of that kind; its floats by width (others are held as their bits)
_IMHEX_INTEGER = {"u": "u", "i": "s"}
_IMHEX_FLOAT = {4: "float", 8: "double"}


def _comment(text: str) -> str:
    return " ".join(str(text).split())


def _imhex(s: Scalar) -> str:
    """ImHex's type (``u32``, ``s8``, ``float`` ...) reading ``s``; a float of a width ImHex lacks as its bits."""
    if s.kind == "f" and s.width in _IMHEX_FLOAT:
        return _IMHEX_FLOAT[s.width]
    return ("u" if s.kind == "f" else _IMHEX_INTEGER[s.kind]) + str(8 * s.width)


def _type(name: str) -> str:
    if name in _spec.primitives():
        return _imhex(common_scalar(name))
    return name if name.startswith("gguf_") or name in ("ggml_type",) else f"gguf_{name}"


def _declare(type_name: str, member: str, suffix: str = "") -> list[str]:
    """Lines declaring ``member`` of a primitive, alias or compound type (aliases switch on the version)."""
    if type_name in structs.container_spec()["aliases"]:
        cases = alias_cases(type_name)
        fixed = [k for k in cases if k != "_"]
        out = []
        for i, v in enumerate(fixed):
            out.append(f"{'if' if i == 0 else 'else if'} (gguf_version == {v}) {_imhex(cases[v])} {member}{suffix};")
        out.append(f"else {_imhex(cases['_'])} {member}{suffix};")
        return out
    return [f"{_type(type_name)} {member}{suffix};"]


def _value_match(selector: str, member: str, suffix: str = "") -> list[str]:
    out = [f"match ({selector}) {{"]
    for vt in structs.container_spec()["value_types"]:
        target = vt.get("encoding") or vt["type"]
        out.append(f"    (gguf_value_type::{vt['name']}): {_type(target)} {member}{suffix};")
    out.append('    (_): std::error("unknown value type");')
    out.append("}")
    return out


def _struct(name: str, tdef: dict) -> list[str]:
    out = [f"// {_comment(tdef['doc'])}", f"struct {_type(name)} {{"]
    body: list[str] = []
    for f in tdef["seq"]:
        suffix = f"[{f['repeat']}]" if "repeat" in f else ""
        if f.get("since", 1) > 1:  # a field new in a later version
            lines = _declare(f["type"], f["id"], suffix)
            body += [f"if (gguf_version >= {f['since']}) {{", *("    " + line for line in lines), "}"]
            continue
        if "contents" in f:
            body.append(f'char {f["id"]}[{len(f["contents"])}];  // "{f["contents"]}"')
        elif "switch_on" in f:
            body += _value_match(f["switch_on"], f["id"], suffix)
        elif "size" in f:
            body.append(f"char {f['id']}[{f['size']}];  // {f['encoding']}")
        else:
            t = (
                "ggml_type"
                if f.get("enum") == "ggml_types"
                else ("gguf_value_type" if f.get("enum") == "value_types" else f["type"])
            )
            body += _declare(t, f["id"], suffix)
        if isinstance(f.get("valid"), list):  # any-of; ranges and string sizes are not asserted here
            allowed = " || ".join(f"{f['id']} == {v}" for v in f["valid"])
            body.append(f'std::assert({allowed}, "{f["id"]} not in {f["valid"]}");')
    if name == "metadata_kv":
        alignment = structs.container_spec()["layout"]["alignment"]
        body.append(f'if (key.data == "{alignment["key"]}" && value_type == gguf_value_type::{alignment["type"]})')
        body.append("    gguf_alignment = value;")
    out += ["    " + line for line in body]
    out.append("};")
    return out


def _field_type(type_name: str, field_id: str) -> str:
    """ImHex's type of a (primitive) field of a spec type."""
    return _type(structs.field_spec(type_name, field_id)["type"])


def _enum_base(enum: str) -> str:
    """ImHex's type of the fields that hold a value of ``enum`` (the enum's underlying type)."""
    found = {
        _type(f["type"])
        for t in structs.container_spec()["types"].values()
        for f in t["seq"]
        if f.get("enum") == enum and "switch_on" not in f
    }
    if len(found) != 1:
        raise ValueError(f"the fields holding {enum} differ in type: {sorted(found)}")
    return found.pop()


def _lookup(fn: str, attr: str) -> list[str]:
    out = [f"fn {fn}(ggml_type t) {{", "    match (t) {"]
    for t in _spec.tensor_types():
        out.append(f"        (ggml_type::{t.name}): return {getattr(t, attr)};")
    out += ["        (_): return 0;", "    }", "};"]
    return out


def render_hexpat() -> str:
    """The text of ``gguf.hexpat``."""
    g = structs.container_spec()
    meta = g["meta"]
    bo = g["byte_order"]
    alignment = g["layout"]["alignment"]
    word = common_field("file_head", "header.version")
    at, width = word.offset.fixed, word.size.fixed
    version_t = _field_type("header", "version")
    alignment_t = _type(next(vt for vt in g["value_types"] if vt["name"] == alignment["type"])["encoding"])
    magic = " ".join(f"{b:02X}" for b in meta["magic"].encode("ascii"))
    lines = [
        f"#pragma description {meta['title']}, versions {', '.join(map(str, structs.versions()))}, both byte orders",
        f"#pragma magic [ {magic} ] @ 0x00",
        "// vocabularies hold hundreds of thousands of strings: above ImHex's default limits",
        "#pragma array_limit 4294967296",
        "#pragma pattern_limit 4294967296",
        "",
        "// Generated from spec/ by `gguf-construct export hexpat`; do not edit.",
        f"// {_comment(meta['doc'])}",
        f"// Source: {_comment(meta['doc_ref'])}",
        "",
        "import std.mem;",
        "import std.core;",
        "import std.io;",
        "import std.sys;",
        "",
        f"// {_comment(bo['detection'])}",
        f"{version_t} gguf_version_word = std::mem::read_unsigned({at}, {width}, std::mem::Endian::Little);",
        f"bool gguf_big_endian = (gguf_version_word & {bo['detection_mask']:#x}) == 0 && gguf_version_word != 0;",
        f"{version_t} gguf_version = gguf_big_endian"
        f" ? std::mem::read_unsigned({at}, {width}, std::mem::Endian::Big) : gguf_version_word;",
        f"// {_comment(alignment['doc'])}",
        f"{alignment_t} gguf_alignment = {alignment['default']};",
        "",
        f"enum gguf_value_type : {_enum_base('value_types')} {{",
    ]
    lines += [f"    {vt['name']} = {vt['id']},  // {_comment(vt['doc'])}" for vt in g["value_types"]]
    lines += ["};", "", f"enum ggml_type : {_enum_base('ggml_types')} {{"]
    lines += [
        f"    {t.name} = {t.id},  // block {t.block_size} elements, {t.type_size} bytes"
        if t.block_size
        else f"    {t.name} = {t.id},  // removed"
        for t in _spec.tensor_types()
    ]
    lines += ["};", ""]
    lines += _lookup("ggml_block_size", "block_size") + [""] + _lookup("ggml_type_size", "type_size") + [""]
    lines += [
        "// ne[i] of a tensor info, 1 beyond its dimensions",
        f"fn gguf_dim(ref auto info, {_field_type('tensor_info', 'n_dimensions')} i) {{",
        "    if (i < info.n_dimensions)",
        "        return info.dimensions[i];",
        "    return 1;",
        "};",
        "",
    ]
    formula = g["layout"]["tensor_bytes"]
    expr = re.sub(r"ne\[(\d+)\]", lambda m: f"gguf_dim(info, {m.group(1)})", formula)
    expr = expr.replace("block_size", "ggml_block_size(info.type)").replace("type_size", "ggml_type_size(info.type)")
    lines += [
        f"// bytes of a tensor's data: {formula}",
        "fn gguf_tensor_bytes(ref auto info) {",
        "    if (ggml_block_size(info.type) == 0)",
        "        return 0;",
        f"    return {expr};",
        "};",
        "",
        "struct gguf_array;",
        "",
    ]
    for name, tdef in g["types"].items():
        lines += _struct(name, tdef) + [""]
    align = re.sub(r"\boffset\b", "gguf_head_end", g["layout"]["align_offset"]).replace("ALIGNMENT", "gguf_alignment")
    lines += [
        "// The tensor data: each tensor's bytes at the data section start plus its offset.",
        "struct gguf_tensor_data {",
        "    u64 i = std::core::array_index();",
        "    u8 data[gguf_tensor_bytes(gguf_head.tensor_infos[i])]",
        "        @ gguf_data_start + gguf_head.tensor_infos[i].offset;",
        "};",
        "",
        "if (gguf_big_endian)",
        "    std::core::set_endian(std::mem::Endian::Big);",
        "else",
        "    std::core::set_endian(std::mem::Endian::Little);",
        f"{_type('file_head')} gguf_head @ 0x00;",
        "u64 gguf_head_end = sizeof(gguf_head);",
        f"u64 gguf_data_start = {align};",
        "gguf_tensor_data gguf_tensor_data_of[gguf_head.header.tensor_count] @ gguf_data_start;",
    ]
    return "\n".join(lines) + "\n"
