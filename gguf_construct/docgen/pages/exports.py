"""The page exports.md: using the spec elsewhere (Kaitai Struct, ImHex, libmagic, shared-mime-info)."""

from __future__ import annotations

from ... import export
from ...format import structs
from ...export.ksy import ksy_tree
from ...export.signatures import MIME_TYPE, bof_sequences
from ..context import Ctx, Page, Section
from ..markdown import code, fence, intro, table


def _sec_overview(ctx: Ctx) -> str:
    versions = ", ".join(map(str, structs.versions()))
    rows = [
        [
            f"[`exports/{export.EXPORTS['ksy'][0]}`](../exports/{export.EXPORTS['ksy'][0]})",
            "Kaitai Struct",
            f"versions {versions}, both byte orders, every value type, every tensor type",
            "compiled with kaitai-struct-compiler to Python; the parser reads every corpus and generated file as "
            "`load` does",
        ],
        [
            f"[`exports/{export.COMPILED_DIR}/{export.COMPILED_PARSER}`](../exports/{export.COMPILED_DIR}/"
            f"{export.COMPILED_PARSER})",
            "Python + `kaitaistruct`",
            "the .ksy compiled (generated artifact)",
            "as above; its .ksy digest is checked",
        ],
        [
            f"[`exports/{export.EXPORTS['hexpat'][0]}`](../exports/{export.EXPORTS['hexpat'][0]})",
            "ImHex",
            "as the .ksy, within the pattern language's limits",
            "structure only: **not run in ImHex**",
        ],
        [
            f"[`exports/{export.EXPORTS['magic'][0]}`](../exports/{export.EXPORTS['magic'][0]})",
            "libmagic (`file`)",
            "magic, version, byte order, header counts",
            "`file -m` on files of every version x byte order; non-GGUF files not matched",
        ],
        [
            f"[`exports/{export.EXPORTS['mime'][0]}`](../exports/{export.EXPORTS['mime'][0]})",
            "freedesktop shared-mime-info",
            f"{code(MIME_TYPE)}, magic and glob",
            "XML structure",
        ],
    ]
    return "\n".join(
        [
            "Every file below is generated from `spec/` by `gguf-construct export all` (one file: `gguf-construct "
            "export ksy|hexpat|magic|mime [--out FILE]`). `gguf-construct export all --check` and "
            "`tests/test_exports.py` fail when a committed export differs from what the spec generates; "
            "`gguf-construct docs` regenerates them together with these pages and `docs --check` checks them too.\n",
            table(["file", "for", "covers", "validated by"], rows),
        ]
    )


def _sec_kaitai(ctx: Ctx) -> str:
    g = ctx.data.gguf
    aliases = ", ".join(ctx.ref("alias", a) for a in g["aliases"])
    current = sum(t.is_current for t in ctx.data.tensor_types)
    word = {k: code(v["type"]) for k, v in ksy_tree()["instances"].items() if k.startswith("version_word")}
    return "\n".join(
        [
            "How the spec maps onto Kaitai Struct:\n",
            table(
                ["spec", "Kaitai Struct"],
                [
                    [
                        "byte order (detection on the version word)",
                        "calculated default endianness: `file_head` has `meta/endian: switch-on: _root.big_endian`; every "
                        "other type is nested in it and inherits it; the root reads the version word at its offset as "
                        f"{word['version_word_le']} and {word['version_word_be']}",
                    ],
                    [
                        f"version aliases ({aliases})",
                        "`type: {switch-on: _root.version, cases: ...}` with the alias's cases",
                    ],
                    [
                        f"value types ({len(g['value_types'])})",
                        "enum `value_types`; a value or array element is a `switch-on` with one case per type; "
                        f"{ctx.ref('vt', 'ARRAY')} elements recurse into `gguf_array` (nested arrays)",
                    ],
                    ["strings", "`type: str`, `encoding: UTF-8`, sized by the version's length width"],
                    [
                        f"ALIGNMENT ({ctx.ref('key', g['layout']['alignment']['key'])})",
                        "each `metadata_kv` tells whether it `is_alignment`; Kaitai has no search expression, so the root's "
                        "`alignment_search` is a `repeat-until` loop of zero-size probes over the pairs, and `alignment` is the "
                        f"value of the pair it stopped at, else {g['layout']['alignment']['default']} (a loop, not a recursion: "
                        "thousands of keys are fine)",
                    ],
                    [
                        "data section and tensor data",
                        "`data.start` is `align_offset` of the end of the tensor infos (no padding when already aligned); "
                        "each `tensor_info.data` is the slice at `data.start + offset` of `n_bytes`",
                    ],
                    [
                        f"tensor types ({len(ctx.data.tensor_types)}, {current} current)",
                        "enum `ggml_types` (doc: block size and bytes per block); `tensor_info.block_size` and `type_size` "
                        "look the type up; one type `block_<name>` per current tensor type holds a block's fields (binary16 "
                        "and bfloat16 as their 16 bits, byte arrays as byte strings), and `tensor_info.blocks` reads a "
                        "tensor's data as those blocks when accessed",
                    ],
                    ["`doc`, `doc_ref`, C names", "`doc`, `doc-ref`, `-orig-id`"],
                ],
            ),
            "It compiles (kaitai-struct-compiler 0.11) for "
            + ", ".join(export.kaitai.TARGETS)
            + "; not for "
            + "; ".join(f"{lang} ({why})" for lang, why in export.kaitai.NOT_TARGETS.items())
            + ".\n",
            "Use it with the compiler of your language, e.g. `kaitai-struct-compiler -t python exports/gguf.ksy`, or "
            "take the Python parser as committed (`pip install kaitaistruct`):\n",
            fence(
                "import sys; sys.path.insert(0, 'exports/kaitai_python')\nfrom gguf import Gguf\n"
                "k = Gguf.from_file('model.gguf')\nk.version, k.big_endian, k.alignment\n"
                "[(kv.key.data, kv.value_type) for kv in k.file_head.metadata_kv]\n"
                "t = k.file_head.tensor_infos[0]; t.name.data, t.dimensions, t.type, len(t.data)",
                "python",
            ),
            "Validation (`tests/test_exports_kaitai.py`): the .ksy is compiled with the JavaScript build of "
            "kaitai-struct-compiler (npm; `tools/ksc_compile.js` drives it from node; skipped without node) and must "
            "give the committed parser; that parser reads the corpus files of `../shared/corpus`, the smallest of them "
            "converted to every version x byte order, generated files of every version x byte order x alignment (every "
            "value type the version has, arrays of each, nested and empty arrays, non-ASCII strings, a tensor of every "
            "current tensor type, a scalar and a 4-dimensional tensor) and Hypothesis-generated files, and must see "
            "the same version, byte order, ALIGNMENT, keys, typed values, tensor infos and tensor bytes as `load`; "
            "`tensor_info.blocks` must give every field of every block as numpy does with the spec's block layout "
            "(`codecs.block_dtype`), in both byte orders. The .ksy also compiles for every target listed above, and the "
            "JavaScript parser, run by node with the npm runtime `kaitai-struct` (`tools/kaitai_js_dump.js`), sees the "
            "same structure, keys, values and tensor data in every version x byte order (64-bit integers aside: the "
            "JavaScript runtime 0.11.0 reads them as doubles, and its `readS8le`/`readS8be` misread negative values "
            "whose low 32 bits XOR 0xFFFFFFFF have the top bit set, e.g. -2^32 reads as 0).\n",
            "Not expressed: the `valid` constraints beyond the version (e.g. BOOL being 0 or 1, value types 10-12 not "
            "in v1, offsets being multiples of ALIGNMENT) and the conformance rules; the .ksy describes, the checker "
            "judges. Invalid UTF-8 in a string makes the Python parser raise, where `load` keeps the bytes.\n",
        ]
    )


def _sec_imhex(ctx: Ctx) -> str:
    return "\n".join(
        [
            "The pattern detects the byte order with the spec's rule, sets it with `std::core::set_endian` and places "
            "`gguf_file_head` at 0; version widths are `if`s on the version, values a `match` over every value type "
            "(arrays recurse), `general.alignment` sets `gguf_alignment` while the metadata is placed, and "
            "`gguf_tensor_data_of` places each tensor's bytes at the data section start plus its offset, sized from "
            "the block and type sizes.\n",
            "Limits: strings are `char` arrays (shown byte by byte, not decoded as UTF-8); binary16 and bfloat16 "
            "values inside tensor blocks are not decoded. **The pattern has not been run in ImHex** (no ImHex binary "
            "was available); `tests/test_exports.py` checks its structure only: balanced braces, every value type in "
            "the enum and in both `match`es, every tensor type with its block and type size, every spec structure, "
            "the version switch and the endianness switch.\n",
        ]
    )


def _sec_signatures(ctx: Ctx) -> str:
    return "\n".join(
        [
            "libmagic: `file -m exports/gguf.magic model.gguf` (or append the lines to `/etc/magic`) prints e.g. "
            "`GGUF (GGML Universal File), version 3, little-endian, 291 tensors, 24 key/value pairs`. The lines "
            "match each version in each byte order and read the counts with that version's widths:\n",
            fence(export.render("magic").rstrip("\n")),
            f"shared-mime-info: copy `exports/gguf-mime.xml` to `~/.local/share/mime/packages/` and run "
            f"`update-mime-database ~/.local/share/mime`. {code(MIME_TYPE)} is not a registered media type; GGUF has "
            "none, so the `x-` form is used (the libmagic lines name the same type).\n",
            "For signature registries (PRONOM/DROID internal signatures, other identifiers): every file starts with "
            "these bytes at offset 0, by version and byte order. Magika identifies by a trained model, not by "
            "signatures; files of every version x byte order for training can be written with "
            "`GGUFFile.new(version=..., byte_order=...)`.\n",
            table(
                ["version", "byte order", "bytes at offset 0 (hex)"],
                [[str(v), o, code(b.hex(" ").upper())] for v, o, b in bof_sequences()],
            ),
        ]
    )


PAGE = Page(
    "exports.md",
    "Using the spec elsewhere",
    "the spec for other tools: Kaitai Struct, ImHex, libmagic, shared-mime-info",
    intro(
        "Using the spec elsewhere",
        "Descriptions of GGUF for other tools, generated from the same `spec/`, and how each was "
        "validated. Earlier community descriptions drifted because nothing executed them: the Kaitai "
        "format gallery's GGUF submission reads only little-endian v2/v3 files, stops the tensor types "
        "at IQ1_M, decodes strings as ASCII, hardcodes an alignment of 32 and pads 32 bytes when already "
        "aligned; ImHex's `gguf.hexpat` is v3 little-endian only, lacks INT64 among its values and "
        "decodes nested arrays as doubles. The exports here are generated and checked against real "
        "files.",
    ),
    (
        Section("exports-overview", "Exports", _sec_overview),
        Section("exports-kaitai", "Kaitai Struct", _sec_kaitai),
        Section("exports-imhex", "ImHex", _sec_imhex),
        Section("exports-signatures", "File-type signatures", _sec_signatures),
    ),
    count=lambda d: f"{len(export.EXPORTS)} exports",
)
