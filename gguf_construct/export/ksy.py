"""The Kaitai Struct description (``exports/gguf.ksy``) generated from ``spec/``.

Translation of the spec's constructs into Kaitai's:

* a primitive -> the Kaitai primitive of its kind and width as the generated families read it
  (:func:`~gguf_construct.format.fieldlayout.common_scalar`: ``i4`` -> ``s4``; ``f2``/``bf2``, which Kaitai lacks, -> an
  unsigned integer of their width holding the bits);
* an alias of the version axis (``count_t`` ...) -> ``type: {switch-on: _root.version, cases: ...}`` with the
  alias's own cases, each the primitive the families of its versions read
  (:func:`~gguf_construct.format.fieldlayout.alias_cases`);
* byte order -> calculated default endianness on the root type (``meta/endian: switch-on``), the switch being
  the spec's detection rule applied to the version word (read in both byte orders at the one place it has in
  every family, :func:`~gguf_construct.format.fieldlayout.common_field`);
* ``switch_on`` over the value types -> a switch over the ``value_types`` enum, every value type's ``encoding``
  or ``type`` a case (arrays of arrays recurse);
* ``layout`` -> the data section start (``align_offset`` of the end of the tensor infos, ALIGNMENT being
  ``general.alignment`` when present as a UINT32 else the default) and each tensor's data as a slice of the file at
  its offset, sized by the spec's ``tensor_bytes`` formula with block and type sizes from ``spec/tensor_types``;
* a tensor type's block -> its fields in order (byte strings as long as :func:`~gguf_construct.codecs.block_dtype`
  has them).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from .. import codecs
from ..format import spec as _spec
from ..format import structs
from ..format.fieldlayout import Scalar, alias_cases, common_field, common_scalar
from .signatures import MIME_TYPE

__all__ = ["ksy_tree", "render_ksy"]

# a scalar's kind (its numpy dtype's) -> the letter of Kaitai's primitives of that kind
_KAITAI_KIND = {"u": "u", "i": "s", "f": "f"}
# Kaitai has no binary16/bfloat16: they are read as unsigned integers of their width (their bits)
_HELD_AS_BITS = frozenset({"f2", "bf2"})


def _gguf() -> dict:
    return structs.container_spec()


def _enum_id(name: str) -> str:
    return name.lower()


def _doc(entry: dict, extra: str = "") -> dict:
    out: dict[str, Any] = {}
    doc = " ".join(s for s in (str(entry.get("doc", "")).strip(), extra) if s)
    if doc:
        out["doc"] = doc
    if entry.get("doc_ref"):
        out["doc-ref"] = entry["doc_ref"]
    return out


def _kaitai(s: Scalar) -> str:
    """The Kaitai primitive (``u4``, ``s8``, ``f4`` ...) reading ``s``, without byte order."""
    return ("u" if s.primitive in _HELD_AS_BITS else _KAITAI_KIND[s.kind]) + str(s.width)


def _primitive(name: str) -> str:
    return _kaitai(common_scalar(name))


def _type_ref(name: str) -> Any:
    """A spec type name (primitive, alias or compound type) as a Kaitai ``type``."""
    g = _gguf()
    if name in g["aliases"]:
        cases = {k: _kaitai(s) for k, s in alias_cases(name).items()}  # "_" is Kaitai's default too
        return {"switch-on": "_root.version", "cases": cases}
    if name in _spec.primitives():
        return _primitive(name)
    return name


def _value_cases() -> dict[str, str]:
    """One case per value type: ``value_types::<name>`` -> its encoding or compound type."""
    return {
        f"value_types::{_enum_id(vt['name'])}": _type_ref(vt.get("encoding") or vt["type"])
        for vt in _gguf()["value_types"]
    }


def _field(field: dict) -> dict:
    """One ``seq`` entry; the spec's field references (``size: len``, ``repeat: header.tensor_count``) are already
    Kaitai expressions."""
    out: dict[str, Any] = {"id": field["id"]}
    if "contents" in field:
        out["contents"] = field["contents"]
    elif "switch_on" in field:
        out["type"] = {"switch-on": field["switch_on"], "cases": _value_cases()}
    elif "size" in field:
        out["type"] = "str"
        out["size"] = field["size"]
        out["encoding"] = field["encoding"]
    else:
        out["type"] = _type_ref(field["type"])
    if "repeat" in field:
        out["repeat"] = "expr"
        out["repeat-expr"] = field["repeat"]
    if "enum" in field and "switch_on" not in field:
        out["enum"] = field["enum"]
    if field.get("since", 1) > 1:  # a field new in a later version
        out["if"] = f"_root.version >= {field['since']}"
    valid = field.get("valid")
    if isinstance(valid, list):  # any-of; ranges and string sizes are the checker's rules, said in the doc
        out["valid"] = {"any-of": list(valid)}
    if field.get("c_name"):
        out["-orig-id"] = field["c_name"]
    limit = ""
    if isinstance(valid, dict) and "max_size" in valid:
        limit = f"At most {valid['max_size']} bytes."
    elif isinstance(valid, dict) and "max" in valid:
        limit = f"At most {valid['max']}."
    out.update(_doc(field, limit))
    return out


def _block_type_id(t) -> str:
    return f"block_{_enum_id(t.name)}"


def _block_types() -> dict[str, Any]:
    """One type per current tensor type: its block, field by field (``u1`` arrays as byte strings, as long as the
    codecs' block dtype has them)."""
    out: dict[str, Any] = {}
    for t in _spec.tensor_types():
        if not t.is_current or not t.fields:
            continue
        seq = []
        block = codecs.block_dtype(t.name)
        for f in t.fields:
            field: dict[str, Any] = {"id": f.id}
            if f.type == "u1" and f.count > 1:
                field["size"] = block.fields[f.id][0].itemsize
            else:
                field["type"] = _primitive(f.type)
                if f.count > 1:
                    field.update({"repeat": "expr", "repeat-expr": f.count})
            raw = (
                f" Held as its {8 * common_scalar(f.type).width} bits ({_spec.primitives()[f.type].doc})."
                if f.type in _HELD_AS_BITS
                else ""
            )
            c_decl = f" C: {f.c_decl}." if f.c_decl else ""
            field["doc"] = (f.doc.strip() + raw + c_decl).strip()
            seq.append(field)
        out[_block_type_id(t)] = {
            "doc": f"One block of {t.name}: {t.block_size} elements in {t.type_size} bytes.",
            "doc-ref": t.doc_ref,
            "seq": seq,
        }
    return out


def _blocks_instance() -> dict[str, Any]:
    cases = {
        f"ggml_types::{_enum_id(t.name)}": _block_type_id(t) for t in _spec.tensor_types() if t.is_current and t.fields
    }
    return {
        "io": "_root._io",
        "pos": "_root.data.start + offset",
        "type": {"switch-on": "type", "cases": cases},
        "repeat": "expr",
        "repeat-expr": "type_size == 0 ? 0 : n_bytes / type_size",
        "doc": "The tensor's data as blocks of its type, field by field (read when accessed).",
    }


def _tensor_lookup(attr: str) -> str:
    """A Kaitai expression giving ``attr`` (block_size/type_size) of the tensor type ``type`` (0 if unknown)."""
    by_id = _spec.tensor_type_by_id()
    n = max(by_id) + 1
    values = ", ".join(str(getattr(by_id[i], attr)) if i in by_id else "0" for i in range(n))
    return f"type.to_i < {n} ? [{values}][type.to_i] : 0"


def _tensor_bytes_expr() -> str:
    """The spec's ``tensor_bytes`` formula with ``ne[i]`` read as 1 beyond ``n_dimensions``."""
    formula = _gguf()["layout"]["tensor_bytes"]
    body = re.sub(r"ne\[(\d+)\]", lambda m: f"(n_dimensions > {m.group(1)} ? dimensions[{m.group(1)}] : 1)", formula)
    return f"block_size == 0 ? 0 : {body}"


def _align_expr(offset: str, alignment: str) -> str:
    """The spec's ``align_offset`` formula with its two operands substituted."""
    formula = _gguf()["layout"]["align_offset"]
    return re.sub(r"\bALIGNMENT\b", alignment, re.sub(r"\boffset\b", offset, formula))


def _types() -> dict[str, Any]:
    g = _gguf()
    layout = g["layout"]
    alignment = layout["alignment"]
    out: dict[str, Any] = {}
    for name, tdef in g["types"].items():
        t: dict[str, Any] = _doc(tdef)
        t["seq"] = [_field(f) for f in tdef["seq"]]
        if name == "metadata_kv":
            vt = next(v for v in g["value_types"] if v["name"] == alignment["type"])
            t["instances"] = {
                "is_alignment": {
                    "value": f'key.data == "{alignment["key"]}" and value_type == value_types::{_enum_id(vt["name"])}',
                    "doc": "True for the key that sets ALIGNMENT (with the type it must have).",
                },
            }
        if name == "tensor_info":
            t["instances"] = {
                "block_size": {
                    "value": _tensor_lookup("block_size"),
                    "doc": "Elements per block of the tensor's type (0 for removed or unknown types).",
                },
                "type_size": {
                    "value": _tensor_lookup("type_size"),
                    "doc": "Bytes per block of the tensor's type (0 for removed or unknown types).",
                },
                "n_bytes": {
                    "value": _tensor_bytes_expr(),
                    "doc": "Size of the tensor's data: " + layout["tensor_bytes"] + ".",
                },
                "data": {
                    "io": "_root._io",
                    "pos": "_root.data.start + offset",
                    "size": "n_bytes",
                    "doc": "The tensor's data, in the file's byte order, at its offset in the data section.",
                },
                "blocks": _blocks_instance(),
            }
        out[name] = t
    out["data_section"] = {
        "doc": layout["doc"],
        "doc-ref": layout["doc_ref"],
        "params": [{"id": "head_end", "type": "u8", "doc": "Offset just after the tensor infos."}],
        "instances": {
            "start": {
                "value": _align_expr("head_end", "_root.alignment"),
                "doc": "Offset of the data section: " + str(layout["data_start"]) + ".",
            },
            "padding": {
                "pos": "head_end",
                "size": "start - head_end",
                "doc": "The padding between the tensor infos and the data section (0x00 bytes).",
            },
        },
    }
    return out


def _root_types() -> dict[str, Any]:
    """``file_head`` with every other spec type nested in it: the subtree whose byte order is calculated (Kaitai
    lets a type inherit a calculated endianness only from the type it is nested in); then ``data_section``."""
    types = _types()
    head = types.pop("file_head")
    data = types.pop("data_section")
    nested = {"meta": {"endian": {"switch-on": "_root.big_endian", "cases": {"true": "be", "false": "le"}}}}
    nested.update(head)
    nested["types"] = {**types, **_block_types()}
    probe = {
        "doc": "Looks at one metadata pair for the key that sets ALIGNMENT (reads nothing).",
        "params": [{"id": "i", "type": "u8", "doc": "Index of the pair looked at."}],
        "instances": {
            "found": {
                "value": "i < _root.file_head.metadata_kv.size and _root.file_head.metadata_kv[i].is_alignment",
                "doc": "True when pair i exists and sets ALIGNMENT.",
            }
        },
    }
    return {"file_head": nested, "data_section": data, "alignment_probe": probe}


def _enums() -> dict[str, Any]:
    g = _gguf()
    value_types = {}
    for vt in g["value_types"]:
        since = f"Since GGUF v{vt['since']}." if vt.get("since", 1) > 1 else ""
        value_types[vt["id"]] = {"id": _enum_id(vt["name"]), **_doc(vt, since), "-orig-id": vt["c_name"]}
    ggml_types = {}
    for t in _spec.tensor_types():
        sizes = (
            f"Block: {t.block_size} elements in {t.type_size} bytes." if t.block_size else "Not valid in a GGUF file."
        )
        ggml_types[t.id] = {
            "id": _enum_id(t.name),
            "doc": f"{t.doc.strip()} {sizes}",
            "doc-ref": t.doc_ref,
            "-orig-id": t.c_name,
        }
    return {"value_types": value_types, "ggml_types": ggml_types}


def ksy_tree() -> dict[str, Any]:
    """The Kaitai Struct description of GGUF as a plain tree (what ``gguf.ksy`` holds)."""
    g = _gguf()
    meta = g["meta"]
    alignment = g["layout"]["alignment"]
    word = common_field("file_head", "header.version").offset.fixed
    word_type = _primitive(structs.field_spec("header", "version")["type"])
    mask = g["byte_order"]["detection_mask"]
    align_prim = _primitive(next(v for v in g["value_types"] if v["name"] == alignment["type"])["encoding"])
    return {
        "meta": {
            "id": meta["id"],
            "title": meta["title"],
            "file-extension": meta["id"],
            "xref": {"mime": MIME_TYPE},
            "license": "MIT",
            "ks-version": "0.10",
            "encoding": "UTF-8",
        },
        "doc": (
            meta["doc"].strip() + " Generated by gguf-construct from its spec/ (`gguf-construct export ksy`);"
            " reads every GGUF version (" + ", ".join(map(str, structs.versions())) + ") in both byte orders."
        ),
        "doc-ref": meta["doc_ref"],
        "seq": [
            {"id": "file_head", "type": "file_head", "doc": g["types"]["file_head"]["doc"]},
            {"id": "data", "type": "data_section(_io.pos)", "doc": g["layout"]["doc"]},
        ],
        "instances": {
            "version_word_le": {
                "pos": word,
                "type": f"{word_type}le",
                "doc": "The version word read as little-endian.",
            },
            "version_word_be": {"pos": word, "type": f"{word_type}be", "doc": "The version word read as big-endian."},
            "big_endian": {
                "value": f"(version_word_le & {mask:#x}) == 0 and version_word_le != 0",
                "doc": g["byte_order"]["detection"].strip(),
                "doc-ref": g["byte_order"]["doc_ref"],
            },
            "version": {
                "value": "big_endian ? version_word_be : version_word_le",
                "doc": "The format version, in the file's byte order.",
            },
            "alignment_search": {
                "pos": 0,
                "type": "alignment_probe(_index)",
                "repeat": "until",
                "repeat-until": "_.found or _index + 1 >= file_head.metadata_kv.size",
                "doc": "The metadata pairs looked at in order until the one that sets ALIGNMENT (a loop: Kaitai has "
                "no search expression).",
            },
            "alignment": {
                "value": (
                    f"alignment_search.last.found ? file_head.metadata_kv[alignment_search.last.i].value"
                    f".as<{align_prim}> : {alignment['default']}"
                ),
                "doc": alignment["doc"].strip(),
            },
        },
        "types": _root_types(),
        "enums": _enums(),
    }


def render_ksy() -> str:
    """The text of ``gguf.ksy``: the tree as YAML, keys in Kaitai's customary order."""
    header = "# Generated from spec/ by `gguf-construct export ksy`; do not edit.\n"
    return header + yaml.safe_dump(ksy_tree(), sort_keys=False, allow_unicode=True, width=110)
