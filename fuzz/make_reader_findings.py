"""Write the minimised reproducers of the readers' disagreements with the suite (fuzz/FINDINGS.md) as a small suite
of their own: ``python fuzz/make_reader_findings.py`` writes fuzz/findings/readers/ (the files, manifest.json and
cases.tsv), deterministically.  Each file holds the least that shows one disagreement: a header, one or two
keys, at most one or two tensors.  Replay any reader on them as on the suite::

    gguf-construct suite run fuzz/findings/readers --target gguf-py
    node readers/examples/score.mjs fuzz/findings/readers spec node readers/js/hyllama.mjs
"""

from __future__ import annotations

import os
import sys

from gguf_construct.breaking.crafting import RawFile, RawKV, VT
from gguf_construct.suite.cases import Case
from gguf_construct.suite.manifest import write_suite

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "findings", "readers")


def _file(*kvs, version: int = 3, byte_order: str = "little", arch: str = "x") -> RawFile:
    raw = RawFile(version, byte_order, data=b"")  # the data section as one blob
    raw.set("general.architecture", "STRING", arch)
    for kv in kvs:
        raw.set(*kv)
    return raw


def _with_f32(raw: RawFile, name: str = "t", n: int = 8) -> RawFile:
    return raw.append_tensor(name, "F32", [n], bytes(4 * n))


def _raw_kv(raw: RawFile, key: bytes, vtype: str, payload: bytes) -> RawFile:
    raw.kvs.append(RawKV(key, VT[vtype], payload))
    return raw


def reproducers() -> list[tuple[str, tuple[str, ...], str, bytes]]:
    """(file name, rules broken, what it is, bytes) of every reproducer."""
    out = []

    def add(name, rules, doc, raw):
        out.append((name, tuple(rules), doc, raw.to_bytes() if isinstance(raw, RawFile) else raw))

    # -- valid files some reader refuses or misreads ----------------------------------------------------------
    add("valid-version-2.gguf", ["HDR-VER-LEGACY"], "A valid version 2 file with one key.", _file(version=2))
    add(
        "valid-float64-then-key.gguf",
        [],
        "A FLOAT64 key followed by another key.",
        _file(("a.f64", "FLOAT64", 1.5), ("a.after", "UINT8", 7)),
    )
    add(
        "valid-nested-array.gguf",
        ["ARR-NESTED"],
        "An array of one array of INT32.",
        _file(("a.nested", "ARRAY", [("INT32", [1, 2])], "ARRAY")),
    )
    q = _file()
    q.append_tensor("layer.q4_0", "Q4_0", [32], bytes(18))
    add("valid-q4_0-not-named-weight.gguf", [], "One Q4_0 tensor named layer.q4_0 (not *.weight).", q)
    q = _file()
    q.append_tensor("m", "MXFP4", [32], bytes(17))
    add("valid-mxfp4-tensor.gguf", [], "One MXFP4 tensor (type 39).", q)
    q = _file()
    q.append_tensor("q8_1", "Q8_1", [256, 2], bytes(576))
    add(
        "valid-q8_1-tensor.gguf",
        [],
        "One Q8_1 tensor of two rows of 256 (sixteen 36-byte blocks), the last bytes of the file.",
        q,
    )
    add("valid-utf8-string.gguf", [], "A STRING value of two-byte UTF-8 (\u00e9).", _file(("a.b", "STRING", "\u00e9")))
    add(
        "valid-version-1.gguf",
        ["HDR-V1-UNSUPPORTED", "HDR-VER-LEGACY"],
        "A version 1 file with one key.",
        _file(version=1),
    )
    add("valid-big-endian.gguf", ["HDR-ENDIAN"], "A big-endian version 3 file with one key.", _file(byte_order="big"))
    # -- invalid files some reader accepts -----------------------------------------------------------------------
    add(
        "key-65536-bytes.gguf",
        ["KV-KEY-LEN"],
        "A key of 65536 bytes (gguf.md: at most 65535).",
        _file(("a." + "b" * 65534, "UINT8", 1)),
    )
    add(
        "key-upper-case.gguf",
        ["KV-KEY-CHARSET"],
        "The key A.B (gguf.md: lower_snake_case).",
        _file(("A.B", "UINT8", 1)),
    )
    add("key-empty.gguf", ["KV-KEY-EMPTY"], "An empty key.", _raw_kv(_file(), b"", "UINT8", b"\1"))
    add(
        "key-duplicate.gguf",
        ["KV-KEY-DUP"],
        "The key a.b twice.",
        _raw_kv(_file(("a.b", "UINT8", 1)), b"a.b", "UINT8", b"\2"),
    )
    add("bool-2.gguf", ["KV-BOOL"], "A BOOL of value 2 (gguf.md: 0 or 1).", _raw_kv(_file(), b"a.b", "BOOL", b"\2"))
    add(
        "string-invalid-utf8.gguf",
        ["STR-UTF8"],
        "A STRING value holding the byte 0xFF.",
        _file(("a.b", "STRING", b"\xff")),
    )
    add(
        "array-unknown-item-type.gguf",
        ["ARR-TYPE"],
        "An empty array of item type 13 (no such type).",
        _raw_kv(_file(), b"a.b", "ARRAY", (13).to_bytes(4, "little") + bytes(8)),
    )
    add(
        "alignment-4.gguf",
        ["ALIGN-MULT8"],
        "general.alignment = 4 (gguf.md: a multiple of 8), one tensor.",
        _with_f32(_file(("general.alignment", "UINT32", 4))),
    )
    add(
        "alignment-zero.gguf",
        ["ALIGN-ZERO"],
        "general.alignment = 0, one tensor.",
        _with_f32(_file(("general.alignment", "UINT32", 0))),
    )
    add(
        "five-dimensions.gguf",
        ["TI-NDIMS"],
        "A tensor of five dimensions (gguf.md: at most 4).",
        _file().append_tensor("t", "F32", [2, 1, 1, 1, 1], bytes(8)),
    )
    add(
        "tensor-name-65-bytes.gguf",
        ["TI-NAME-LEN"],
        "A tensor name of 65 bytes (gguf.md: at most 64).",
        _with_f32(_file(), "n" * 65),
    )
    dup = _with_f32(_with_f32(_file(), "t"), "u")
    dup.tensors[1].name = b"t"
    add("tensor-name-duplicate.gguf", ["TI-NAME-DUP"], "Two tensors named t.", dup)
    mis = _with_f32(_file())
    mis.tensors[0].offset = 4
    mis.data = bytes(4) + mis.data
    add("tensor-offset-misaligned.gguf", ["TI-OFFSET-ALIGN"], "A tensor at offset 4 (alignment 32).", mis)
    blk = _file()
    blk.append_tensor("q", "Q4_0", [32], bytes(18))
    blk.tensors[0].dims = [16, 2]
    add("row-not-block-multiple.gguf", ["TI-BLOCK"], "A Q4_0 tensor of shape [16, 2]: rows of 16 elements.", blk)
    gone = _with_f32(_file())
    gone.tensors[0].type = 4
    add("removed-tensor-type.gguf", ["TI-TYPE"], "A tensor of type 4 (Q4_2, removed from ggml).", gone)
    past = _with_f32(_file())
    past.data = past.data[:16]
    add("tensor-past-end.gguf", ["DATA-BOUNDS"], "A 32-byte F32 tensor of which the file holds 16 bytes.", past)
    big = _with_f32(_file())
    big.tensors[0].dims = [2**62]
    add("tensor-size-overflow.gguf", ["TI-NBYTES-OVERFLOW"], "An F32 tensor of 2^62 elements (2^64 bytes).", big)
    # -- truncations and impossible counts -----------------------------------------------------------------------
    add("header-truncated.gguf", ["HDR-TRUNC"], "The first 10 bytes of a header.", _file().to_bytes()[:10])
    hc = _file()
    hc.n_kv = 2**40
    add("kv-count-huge.gguf", ["HDR-COUNT"], "A KV count of 2^40 in a 50-byte file.", hc)
    tc = RawFile(data=b"")
    tc.n_tensors = 1000
    add(
        "tensor-count-past-end.gguf", ["HDR-COUNT"], "A header alone (24 bytes) declaring 1000 tensors and no keys.", tc
    )
    s = _file()
    full = s.to_bytes()
    add(
        "string-past-end.gguf",
        ["STR-EOF"],
        "The last string declares 2^40 bytes.",
        full[:-9] + (2**40).to_bytes(8, "little") + full[-1:],
    )
    add(
        "string-declared-1-gib.gguf",
        ["STR-EOF", "STR-MAXLEN"],
        "The last string declares 2^30 + 1 bytes (one past ggml's limit); 16 follow.",
        _raw_kv(_file(), b"a.b", "STRING", (2**30 + 1).to_bytes(8, "little") + b"x" * 16),
    )
    arr = _raw_kv(_file(), b"a.b", "ARRAY", VT["UINT8"].to_bytes(4, "little") + (2**60).to_bytes(8, "little"))
    add("array-past-end.gguf", ["ARR-EOF"], "A UINT8 array declaring 2^60 items, none present.", arr)
    # -- models llama.cpp's loader aborts on (minimised from the suite's model cases) ---------------------------
    add(
        "llama-duplicate-token.gguf",
        ["MODEL-VOCAB"],
        "A llama vocabulary of two tokens with the same text (no tensors: loaded vocabulary-only).",
        _file(
            ("tokenizer.ggml.model", "STRING", "llama"),
            ("tokenizer.ggml.tokens", "ARRAY", ["a", "a"], "STRING"),
            arch="llama",
        ),
    )
    hp = _file(
        ("llama.context_length", "UINT32", 128),
        ("llama.embedding_length", "UINT32", 32),
        ("llama.block_count", "UINT32", 1),
        ("llama.expert_used_count", "UINT32", 1),
        arch="llama",
    )
    add(
        "llama-expert-used-without-experts.gguf",
        ["MODEL-HPARAM-RANGE"],
        "A llama model whose llama.expert_used_count is 1 with no llama.expert_count (0 experts), and one F32 tensor.",
        _with_f32(hp),
    )
    return out


def write(out: str = OUT) -> dict:
    """Write the reproducers, manifest.json and cases.tsv into ``out``; returns the manifest."""
    cases = [
        Case(name, "findings", rules, doc, {name: data}, model=any(r.startswith("MODEL-") for r in rules))
        for name, rules, doc, data in reproducers()
    ]
    os.makedirs(out, exist_ok=True)
    return write_suite(out, cases)


def main() -> int:
    """Write fuzz/findings/readers/."""
    manifest = write()
    print(f"{len(manifest['cases'])} reproducers, {manifest['total_bytes']} bytes in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
