"""Write the upstream reports of the reader bugs in fuzz/FINDINGS.md: ``python fuzz/make_reports.py`` writes
fuzz/reports/<reader>-<n>.md, one per bug, deterministically.  Each report stands alone for the reader's
maintainers: what the specification says (the rule's source text and reference, from spec/rules.yaml), what the
reader does, what it should do, the smallest file (embedded: ``base64 -d | gunzip``, so nothing of this project is
needed) and the reader's own commands to see it, with the version it was seen in.
"""

from __future__ import annotations

import base64
import gzip
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = os.path.join(ROOT, "fuzz", "findings", "readers")
OUT = os.path.join(ROOT, "fuzz", "reports")

# reader -> (name, version, where its tracker is, install, command that reads ./FILE)
READERS = {
    "gguf-py": (
        "gguf-py (`gguf` on PyPI)",
        "0.19.0",
        "https://github.com/ggml-org/llama.cpp (gguf-py/)",
        "pip install gguf==0.19.0",
        'python -c "import sys; from gguf import GGUFReader; r = GGUFReader(sys.argv[1]); '
        "print(len(r.fields), 'fields', len(r.tensors), 'tensors')\" FILE",
    ),
    "gguf-parser": (
        "gguf-parser (PyPI)",
        "0.1.1",
        "the project linked from https://pypi.org/project/gguf-parser/",
        "pip install gguf-parser==0.1.1",
        'python -c "import sys; from gguf_parser import GGUFParser; p = GGUFParser(sys.argv[1]); '
        'p.parse(); print(p.metadata, p.tensors_info)" FILE',
    ),
    "mlx": (
        "MLX (`mlx.core.load`, GGUF through its gguflib)",
        "0.32.4 (mlx-cpu wheel on Linux x86-64)",
        "https://github.com/ml-explore/mlx",
        "pip install mlx==0.32.4 mlx-cpu==0.32.4",
        "python -c \"import sys, mlx.core as mx; print(mx.load(sys.argv[1], format='gguf', "
        'return_metadata=True))" FILE',
    ),
    "huggingface-gguf": (
        "@huggingface/gguf (npm)",
        "0.4.6",
        "https://github.com/huggingface/huggingface.js",
        "npm install @huggingface/gguf@0.4.6",
        "node --input-type=module -e \"import { gguf } from '@huggingface/gguf'; "
        'console.log(await gguf(process.argv[1], { allowLocalFile: true }))" "$PWD/FILE"',
    ),
    "hyllama": (
        "hyllama (npm)",
        "0.2.2",
        "https://github.com/hyparam/hyllama",
        "npm install hyllama@0.2.2",
        "node --input-type=module -e \"import { readFileSync } from 'node:fs'; import { ggufMetadata } "
        "from 'hyllama'; const b = readFileSync(process.argv[1]); "
        'console.log(ggufMetadata(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)))" FILE',
    ),
    "node-llama-cpp": (
        "node-llama-cpp's GGUF reader (npm)",
        "3.21.1",
        "https://github.com/withcatai/node-llama-cpp",
        "npm install node-llama-cpp@3.21.1",
        "node --input-type=module -e \"import { readGgufFileInfo } from 'node-llama-cpp'; "
        'console.log(await readGgufFileInfo(process.argv[1], { readTensorInfo: true }))" '
        '"$PWD/FILE"',
    ),
    "llama.cpp": (
        "llama.cpp's model loader (`llama_model_load_from_file`)",
        "the llama.cpp vendored by llama-cpp-python 0.3.36 (libllama.so.0.5.0, libggml 0.25.3)",
        "https://github.com/ggml-org/llama.cpp",
        "pip install llama-cpp-python==0.3.36   # or any llama.cpp build of the same source",
        'python -c "import sys, llama_cpp; llama_cpp.Llama(model_path=sys.argv[1], n_gpu_layers=0, '
        "vocab_only=sys.argv[2] == 'vocab')\" FILE MODE   # exit status 134 (SIGABRT)",
    ),
}

# (reader, title, rules, what the reader does, what it should do, reproducers, the suite's cases it fails)
BUGS = [
    (
        "gguf-py",
        "GGUFReader never returns on an array whose declared length exceeds the file",
        ["ARR-EOF"],
        "`GGUFReader` loops over the declared element count (2^60 here) in `_get_field_parts` without comparing it "
        "with the bytes left in the file, and does not return (killed after 20 s).",
        "Refuse the file with a `ValueError` once the declared count cannot fit in the bytes that remain.",
        ["array-past-end.gguf"],
        "the suite's ARR-EOF cases and the `gguf-py-array-hang` advisory reproducer",
    ),
    (
        "gguf-py",
        "GGUFReader raises IndexError instead of a clear error on truncated files and impossible counts",
        ["HDR-TRUNC", "HDR-COUNT", "STR-EOF", "KV-TRUNC"],
        "Reading past the end of its memmap raises `IndexError` (`index 0 is out of bounds for axis 0 with size 0`, "
        "`tuple index out of range`) from deep inside the parser; a caller cannot tell it from a bug in its own "
        "code.",
        "Check each count and length against the bytes left and raise `ValueError` naming the field and offset.",
        ["kv-count-huge.gguf"],
        "11 cases of the suite (HDR-COUNT, STR-EOF, ARR-EOF, KV-TRUNC and five advisory reproducers)",
    ),
    (
        "gguf-py",
        "GGUFReader accepts files that break MUSTs of gguf.md",
        [
            "KV-KEY-LEN",
            "KV-KEY-CHARSET",
            "KV-KEY-EMPTY",
            "KV-BOOL",
            "STR-UTF8",
            "STR-EOF",
            "ARR-TYPE",
            "ALIGN-MULT8",
            "TI-NDIMS",
            "TI-NAME-LEN",
            "TI-OFFSET-ALIGN",
        ],
        "Each file is returned as a reader without an error: key syntax and length are not checked, a BOOL of 2 "
        "reads as true, values are never checked for UTF-8, an empty array of item type 13 is accepted, "
        "`general.alignment` = 4 is used, five dimensions and a 65-byte tensor name are accepted, a misaligned "
        "tensor offset is used as it is, and the last string of a file may declare 2^40 bytes that are not there "
        "(it reads a truncated value).",
        "Refuse each file (`ValueError`), as ggml's `gguf_init_from_file` refuses most of them.",
        [
            "key-upper-case.gguf",
            "key-empty.gguf",
            "key-65536-bytes.gguf",
            "bool-2.gguf",
            "string-invalid-utf8.gguf",
            "array-unknown-item-type.gguf",
            "alignment-4.gguf",
            "five-dimensions.gguf",
            "tensor-name-65-bytes.gguf",
            "tensor-offset-misaligned.gguf",
            "string-past-end.gguf",
        ],
        "16 cases of the suite",
    ),
    (
        "gguf-py",
        "Q8_1 tensors are sized with 40-byte blocks; ggml's block_q8_1 is 36 bytes",
        ["TI-TYPE"],
        "A valid Q8_1 tensor of two rows of 256 elements (16 blocks, 576 bytes) is refused: `cannot reshape array "
        "of size 576 into shape (2,320)`.  `GGML_QUANT_SIZES[Q8_1]` is (32, 40): 2 x float32 before the 32 int8; "
        "ggml has stored `d` and `s` as two float16 (36 bytes) since 2024-03.",
        "Size Q8_1 blocks as ggml does: 32 elements in 36 bytes.",
        ["valid-q8_1-tensor.gguf"],
        "`tensor-types/le/Q8_1.gguf`",
    ),
    (
        "gguf-parser",
        "Version 2 files are refused as unsupported",
        ["HDR-VER-LEGACY"],
        "`GGUFParseError: Unsupported version` for every version 2 file.",
        "Read version 2 (its layout is version 3's; v3 only added big-endian files), or document that only v3 is read.",
        ["valid-version-2.gguf"],
        "14 valid files of the suite (every `values/v2-le/*`)",
    ),
    (
        "gguf-parser",
        "Uncaught struct.error, MemoryError or OverflowError on truncated files and huge counts",
        ["HDR-TRUNC", "HDR-COUNT", "STR-EOF", "ARR-EOF"],
        "Truncations raise `struct.error: unpack requires a buffer of N bytes`; a count or length larger than the "
        "file makes it allocate by the declared count (`MemoryError`, `OverflowError`) before reading.",
        "Check counts and lengths against the bytes left and raise `GGUFParseError`.",
        ["header-truncated.gguf", "kv-count-huge.gguf", "string-past-end.gguf", "array-past-end.gguf"],
        "17 cases of the suite",
    ),
    (
        "gguf-parser",
        "Files that break MUSTs of gguf.md are accepted",
        ["KV-KEY-DUP", "ALIGN-ZERO", "TI-NAME-DUP", "TI-BLOCK", "TI-TYPE", "DATA-BOUNDS", "TI-NBYTES-OVERFLOW"],
        "Only the magic, the version and the value type ids are checked: duplicate keys, alignment 0, duplicate "
        "tensor names, rows that are not a block multiple, the removed type 4, tensor data past the end of the file "
        "and a 2^64-byte tensor are all accepted.",
        "Refuse each file with `GGUFParseError`.",
        [
            "key-duplicate.gguf",
            "alignment-zero.gguf",
            "tensor-name-duplicate.gguf",
            "row-not-block-multiple.gguf",
            "removed-tensor-type.gguf",
            "tensor-past-end.gguf",
            "tensor-size-overflow.gguf",
        ],
        "34 cases of the suite",
    ),
    (
        "mlx",
        "Segmentation fault on version 1 and big-endian GGUF files",
        ["HDR-ENDIAN", "HDR-VER-LEGACY"],
        "`mx.load(path, format='gguf')` kills the process with SIGSEGV: the counts and lengths are read as "
        "little-endian 64-bit whatever the version (v1 has 32-bit ones) and byte order.",
        "Refuse files it does not read (version 1, big-endian) with an exception.",
        ["valid-version-1.gguf", "valid-big-endian.gguf"],
        "every version 1 and big-endian file of the suite",
    ),
    (
        "mlx",
        "Segmentation fault when a FLOAT64 value is followed by another key",
        ["KV-TYPE-V1"],
        "A FLOAT64 value is skipped with the wrong size, and the next key is read from the wrong offset: SIGSEGV.  "
        "A FLOAT64 as the last key reads fine.",
        "Read FLOAT64 (type 12) as the 8-byte value it is.",
        ["valid-float64-then-key.gguf"],
        "`values/*/FLOAT64.gguf`, `model/mamba/retype-key.gguf`",
    ),
    (
        "mlx",
        "SIGFPE on general.alignment = 0 and on tensor type 4",
        ["ALIGN-ZERO", "TI-TYPE"],
        "Division by zero: alignment 0 is used as a divisor; type 4 (Q4_2, removed) has no block size.",
        "Refuse both files with an exception.",
        ["alignment-zero.gguf", "removed-tensor-type.gguf"],
        "`container/ALIGN-ZERO/alignment-zero.gguf`, `container/TI-TYPE/removed-tensor-type.gguf`",
    ),
    (
        "mlx",
        "Segmentation fault on a tensor count larger than the file",
        ["HDR-COUNT"],
        "The tensor count is trusted and the tensor infos are read past the end of the mapping: SIGSEGV, for a "
        "24-byte header declaring 1000 tensors, and for the suite's HDR-COUNT cases and the CVE-2024-23605 / "
        'CVE-2024-21836 reproducers.  (A KV count past the file is refused cleanly: "Metadata value extends past '
        'the end of the file".)',
        "Refuse a tensor count whose tensor infos cannot fit in the file, as for the KV count.",
        ["tensor-count-past-end.gguf"],
        "the suite's `container/HDR-COUNT/*` and two advisory reproducers",
    ),
    (
        "mlx",
        "Versions 0 and 4 are accepted",
        ["HDR-VERSION"],
        "Files of version 0 and 4 load.",
        "Refuse versions other than 1, 2, 3.",
        [],
        "`edge/HDR-VERSION/version-0.gguf`, `container/HDR-VERSION/unknown-version.gguf` of the suite",
    ),
    (
        "mlx",
        "Q8_1 and IQ1_S tensors refused with wrong block sizes",
        ["TI-TYPE"],
        '"Tensor extends past the end of the file" for valid Q8_1 and IQ1_S tensors.',
        "Size Q8_1 blocks as 36 bytes and IQ1_S blocks as 50, as ggml.",
        ["valid-q8_1-tensor.gguf"],
        "`tensor-types/le/Q8_1.gguf`, `tensor-types/le/IQ1_S.gguf`",
    ),
    (
        "mlx",
        "Tensors of types it cannot convert (TQ1_0, TQ2_0, MXFP4, NVFP4, ...) are silently left out",
        ["TI-TYPE"],
        "The file loads, and the returned dict has no entry for the tensor.",
        "Raise, naming the tensor and its type, instead of dropping it.",
        ["valid-mxfp4-tensor.gguf"],
        "six `tensor-types/le/*` files",
    ),
    (
        "mlx",
        "Quantized tensors not named *.weight get companions named by cutting seven characters",
        [],
        "`suite.q4_0`'s scales and biases are returned as `sui.scales`/`sui.biases` (seven characters are cut "
        "from any name, as if it ended in `.weight`), so two such tensors can collide.",
        "Cut `.weight` only when the name ends with it.",
        ["valid-q4_0-not-named-weight.gguf"],
        "quantized `tensor-types/le/*` files",
    ),
    (
        "mlx",
        "Files that break MUSTs of gguf.md are accepted",
        ["KV-KEY-CHARSET", "KV-BOOL", "ALIGN-MULT8", "TI-NDIMS", "TI-NAME-LEN", "TI-OFFSET-ALIGN"],
        "Key syntax, BOOL 2, alignment 4, five dimensions, 65-byte tensor names and misaligned offsets are accepted.",
        "Refuse each file with an exception.",
        [
            "key-upper-case.gguf",
            "bool-2.gguf",
            "alignment-4.gguf",
            "five-dimensions.gguf",
            "tensor-name-65-bytes.gguf",
            "tensor-offset-misaligned.gguf",
        ],
        "16 cases of the suite",
    ),
    (
        "huggingface-gguf",
        "Truncated files are accepted: bytes past the end read as zeros",
        ["HDR-TRUNC"],
        "`gguf()` returns a result for a 10-byte file (no keys, no tensors), and for a header, KV record or tensor "
        "info cut short.",
        "Throw when the file ends inside a record.",
        ["header-truncated.gguf"],
        "the suite's HDR-TRUNC, KV-TRUNC and TI-TRUNC cases",
    ),
    (
        "huggingface-gguf",
        "Key syntax, duplicate keys, BOOL values and UTF-8 are not checked",
        ["KV-KEY-DUP", "KV-KEY-EMPTY", "KV-BOOL", "STR-UTF8"],
        "Each file is accepted; a duplicate key silently replaces the first.",
        "Throw for each file.",
        ["key-duplicate.gguf", "key-empty.gguf", "bool-2.gguf", "string-invalid-utf8.gguf"],
        "the suite's key, bool and UTF-8 cases",
    ),
    (
        "huggingface-gguf",
        "Tensor infos and alignment are not checked",
        ["ALIGN-MULT8", "TI-NDIMS", "TI-NAME-DUP", "TI-OFFSET-ALIGN", "TI-BLOCK", "TI-TYPE", "DATA-BOUNDS"],
        "Alignment 4, five dimensions, duplicate names, misaligned offsets, rows not a block multiple, type 4 and "
        "tensor data past the end of the file are accepted.",
        "Throw for each file.",
        [
            "alignment-4.gguf",
            "five-dimensions.gguf",
            "tensor-name-duplicate.gguf",
            "tensor-offset-misaligned.gguf",
            "row-not-block-multiple.gguf",
            "removed-tensor-type.gguf",
            "tensor-past-end.gguf",
        ],
        "the suite's ALIGN-*, TI-* and DATA-BOUNDS cases, CVE-2026-7482's reproducer",
    ),
    (
        "hyllama",
        "Strings are decoded as Latin-1, not UTF-8",
        ["STR-UTF8"],
        "Each byte becomes one character (`String.fromCharCode` per byte): `é` (C3 A9) reads as `Ã©`.",
        "Decode strings as UTF-8 (`TextDecoder`).",
        ["valid-utf8-string.gguf"],
        "`values/v2-le/STRING.gguf`, `values/v3-le/STRING.gguf` and the nested string arrays",
    ),
    (
        "hyllama",
        "Key syntax, duplicate keys, BOOL values and UTF-8 are not checked",
        ["KV-KEY-DUP", "KV-BOOL", "STR-UTF8"],
        "Each file is accepted (the last duplicate wins).",
        "Throw for each file.",
        ["key-duplicate.gguf", "bool-2.gguf", "string-invalid-utf8.gguf"],
        "the suite's key, bool and UTF-8 cases",
    ),
    (
        "hyllama",
        "Alignment, array item types and tensor infos are not checked",
        ["ALIGN-ZERO", "ARR-TYPE", "TI-NDIMS", "TI-NBYTES-OVERFLOW", "DATA-BOUNDS"],
        "Alignment 0 and 4, an array of item type 13, five dimensions, 65-byte or duplicate names, misaligned "
        "offsets, type 4, data past the end and a 2^64-byte tensor are accepted.",
        "Throw for each file.",
        [
            "alignment-zero.gguf",
            "array-unknown-item-type.gguf",
            "five-dimensions.gguf",
            "tensor-size-overflow.gguf",
            "tensor-past-end.gguf",
        ],
        "38 cases of the suite",
    ),
    (
        "node-llama-cpp",
        "readGgufFileInfo hangs on counts larger than the file",
        ["HDR-COUNT", "ARR-EOF"],
        "It loops to the declared KV count or array length (2^40, 2^60) and does not answer within 30 s.",
        "Throw once a count cannot fit in the bytes that remain.",
        ["kv-count-huge.gguf", "array-past-end.gguf"],
        "the suite's ARR-EOF and `huge-n-dims` cases, the `gguf-py-array-hang` reproducer",
    ),
    (
        "node-llama-cpp",
        "A 10-byte file is accepted as an empty GGUF",
        ["HDR-TRUNC"],
        "`readGgufFileInfo` returns an empty result.",
        "Throw: the header is 24 bytes.",
        ["header-truncated.gguf"],
        "the suite's HDR-TRUNC cases",
    ),
    (
        "node-llama-cpp",
        "Key syntax, duplicates, BOOL values, UTF-8, item types, alignment and tensor infos are not checked",
        ["KV-KEY-DUP", "KV-BOOL", "STR-UTF8", "ARR-TYPE", "ALIGN-ZERO", "TI-NDIMS", "DATA-BOUNDS"],
        "Each file is accepted (a duplicate key: the last wins in the nested metadata object).",
        "Throw for each file.",
        [
            "key-duplicate.gguf",
            "bool-2.gguf",
            "string-invalid-utf8.gguf",
            "array-unknown-item-type.gguf",
            "alignment-zero.gguf",
            "five-dimensions.gguf",
            "tensor-past-end.gguf",
        ],
        "41 cases of the suite",
    ),
    (
        "node-llama-cpp",
        "readGgufFileInfo allocates a string's declared length before checking the file",
        ["STR-EOF", "STR-MAXLEN"],
        "For a 104-byte file whose last string declares 2^30 + 1 bytes, it allocates a buffer of that size (peak "
        "memory 1.1 GB) and then fails with `Error: Cannot create a string longer than 0x1fffffe8 characters`; a "
        'length of 2^40 fails earlier with `RangeError: The value of "size" is out of range`.  A file of a few '
        "hundred bytes with several such strings can exhaust the memory of the process that inspects it.",
        "Compare a string's length with the bytes left in the file before allocating, and throw.",
        ["string-declared-1-gib.gguf"],
        "`edge/STR-MAXLEN/string-declared-past-limit.gguf`",
    ),
    (
        "llama.cpp",
        "Model load aborts (GGML_ASSERT) on a vocabulary with two equal tokens",
        ["MODEL-VOCAB"],
        "`llama_model_load_from_file` aborts the process: `GGML_ASSERT(id_to_token.size() == token_to_id.size())` in "
        "`llama_vocab::impl::load` (src/llama-vocab.cpp:2544 in that source) when two tokens of `tokenizer.ggml.tokens` have the same "
        "text.  The file has no tensors, so it is loaded vocabulary-only (`vocab_only = true`); full models of "
        "llama, qwen2 and mamba with one token repeated abort the same way.",
        "Fail the load with an error (return NULL and log the duplicated token), as for other malformed models: "
        "a program that loads user-supplied models should not be killed by one.",
        ["llama-duplicate-token.gguf"],
        "`model/{llama,qwen2,mamba}/duplicate-token.gguf`",
    ),
    (
        "llama.cpp",
        "Model load aborts (GGML_ASSERT) when expert_used_count is set without expert_count",
        ["MODEL-HPARAM-RANGE"],
        "`llama_model_load_from_file` aborts the process: `GGML_ASSERT(n_expert_used_max <= hparams.n_expert)` in "
        "`llama_model::load_hparams` (src/llama-model.cpp:1362 in that source) for a llama model with `llama.expert_used_count` = 1 and "
        "no `llama.expert_count` (0 experts).  Each key of the file and its one tensor are needed: without any of "
        "them the load fails cleanly.",
        "Fail the load with an error naming the two keys.",
        ["llama-expert-used-without-experts.gguf"],
        "`model/MODEL-HPARAM-RANGE/model-hparam-range.gguf`",
    ),
]


def _embedded(name: str) -> str:
    with open(os.path.join(FILES, name), "rb") as fh:
        data = fh.read()
    packed = base64.b64encode(gzip.compress(data, 9, mtime=0)).decode()
    lines = [packed[i : i + 100] for i in range(0, len(packed), 100)]
    return f"echo '{''.join(lines)}' | base64 -d | gunzip > {name}   # {len(data)} bytes"


def _has_tensors(name: str) -> bool:
    from gguf_construct import load

    return bool(load(os.path.join(FILES, name)).tensors)


def _rule_text(rule: str) -> str:
    from gguf_construct.rulebook.catalog import catalog

    r = catalog()[rule]
    return f"- **{rule}** ({r.title}): {r.raw.get('source', '')} -- {r.raw.get('doc_ref', '')}"


def render(reader: str, n: int, bug: tuple) -> str:
    """The text of one report."""
    _, title, rules, does, should, files, cases = bug
    name, version, tracker, install, run = READERS[reader]
    out = [
        f"# {title}",
        "",
        f"- Reader: {name} {version}",
        f"- Where to file: {tracker}",
        "- Status: ready to file, not yet filed",
        "- Found by: the gguf-construct conformance suite (`gguf-construct suite write`), which runs every reader "
        f"on the same files; here: {cases}",
        "",
        "## What the specification says",
        "",
    ]
    out += [_rule_text(r) for r in rules] or ["- gguf.md sets no rule on this; the reader's own output is wrong."]
    out += [
        "",
        "gguf.md is https://github.com/ggml-org/ggml/blob/master/docs/gguf.md; ggml/src/gguf.cpp is ggml's own reader.",
        "",
        f"## What {name} does",
        "",
        does,
        "",
        "## Expected",
        "",
        should,
        "",
        "## Reproduce",
        "",
    ]
    if files:
        out += ["```sh", install] + [_embedded(f) for f in files]
        out += [
            run.replace("FILE", f).replace("MODE", "model" if "MODE" in run and _has_tensors(f) else "vocab")
            for f in files
        ]
        out += ["```"]
    else:
        out += [
            f"The suite's files named above (`gguf-construct suite write DIR`), then `{install}` and:",
            "",
            "```sh",
            run,
            "```",
        ]
    return "\n".join(out) + "\n"


def write(out: str = OUT) -> list[str]:
    """Write every report into ``out``; returns their file names."""
    os.makedirs(out, exist_ok=True)
    names, counts = [], {}
    for bug in BUGS:
        reader = bug[0]
        counts[reader] = counts.get(reader, 0) + 1
        fname = f"{reader}-{counts[reader]}.md"
        with open(os.path.join(out, fname), "w", encoding="utf-8") as fh:
            fh.write(render(reader, counts[reader], bug))
        names.append(fname)
    return names


if __name__ == "__main__":
    print(f"{len(write())} reports in {OUT}")
    sys.exit(0)
