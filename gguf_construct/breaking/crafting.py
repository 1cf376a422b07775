"""Crafted invalid files: start from a valid file, apply one named breakage, get bytes and the rules expected
to fire.  Used by the checker's tests (one crafted file per rule) and reusable by a fuzzer to make labelled
inputs.

Example::

    from gguf_construct.breaking import crafting
    c = crafting.craft("bool-not-0-or-1")          # from the built-in carrier file
    c.data, c.rules                                # bytes, frozenset({"KV-BOOL"})
    c = crafting.craft("duplicate-key", base=my_valid_bytes)

The breakages of this module and of :mod:`.crafting_security` are registered in :data:`BREAKAGES`; the raw file
model they edit (:class:`RawFile`), the carrier and the registry live below both, in :mod:`.crafted`.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import replace
from typing import Iterable

import numpy as np

from ..format import structs
from ..format.reader import align_offset
from ..rulebook.walk import ALIGNMENT_KEY
from .crafted import (
    BREAKAGES,
    CARRIER_NAME,
    VT,
    Breakage,
    Crafted,
    RawFile,
    RawKV,
    RawTensor,
    breakages_for,
    carrier,
    craft,
    encode_value,
)
from .crafted import breakage as _breakage
from .rawfile import Str
from .crafted import struct_order as _le
from .crafted import tensor_nbytes as _nbytes
from ..format import keynames

__all__ = [
    "RawKV",
    "RawTensor",
    "RawFile",
    "Breakage",
    "Crafted",
    "BREAKAGES",
    "craft",
    "carrier",
    "encode_value",
    "breakages_for",
]


# header
@_breakage("truncated-header", "HDR-TRUNC")
def _(raw):
    """The file ends inside the header."""
    raw.truncate = 10


@_breakage("bad-magic", "HDR-MAGIC")
def _(raw):
    """The magic is GGUG."""
    raw.magic = b"GGUG"


@_breakage("legacy-magic", "HDR-MAGIC", "HDR-MAGIC-LEGACY")
def _(raw):
    """The file starts with the GGJT magic of the pre-GGUF format."""
    raw.magic = b"tjgg"


@_breakage("unknown-version", "HDR-VERSION")
def _(raw):
    """Version 4."""
    raw.version_word = 4


@_breakage("big-endian", "HDR-ENDIAN")
def _(raw):
    """A valid big-endian v3 file."""
    return carrier(3, "big")


@_breakage("big-endian-v2", "HDR-BE-PRE-V3", "HDR-ENDIAN", "HDR-VER-LEGACY")
def _(raw):
    """A big-endian v2 file."""
    return carrier(2, "big")


@_breakage("version-1", "HDR-V1-UNSUPPORTED", "HDR-VER-LEGACY")
def _(raw):
    """A valid v1 file."""
    return carrier(1)


@_breakage("version-2", "HDR-VER-LEGACY")
def _(raw):
    """A valid v2 file."""
    return carrier(2)


@_breakage("kv-count-huge", "HDR-COUNT")
def _(raw):
    """metadata_kv_count = 2^40."""
    raw.n_kv = 2**40


@_breakage("tensor-count-huge", "HDR-COUNT")
def _(raw):
    """tensor_count = 2^63 + 5."""
    raw.n_tensors = 2**63 + 5


# KV pairs
@_breakage("kv-truncated", "KV-TRUNC")
def _(raw):
    """A file without tensors that ends two bytes into the last KV value (a UINT32)."""
    raw.tensors, raw.data = [], b""
    raw.remove(keynames.GENERAL_QUANTIZATION_VERSION).set(keynames.GENERAL_QUANTIZATION_VERSION, "UINT32", 2)
    raw.truncate = len(raw.to_bytes()) - 2


@_breakage("empty-key", "KV-KEY-EMPTY", carrier_only=False)
def _(raw):
    """A KV pair with an empty key."""
    raw.set("", "UINT8", 1)


def _add_key_breakage(name: str, rule: str, key: str, doc: str) -> None:
    """A breakage that adds one UINT8 key ``key`` breaking the key-naming rule ``rule``."""

    def add(raw):
        raw.set(key, "UINT8", 1)

    add.__doc__ = doc
    _breakage(name, rule, carrier_only=False)(add)


for _name, _rule, _key, _doc in [
    ("key-too-long", "KV-KEY-LEN", "test." + "a" * 65535, "A key of 65540 bytes."),
    ("key-not-ascii", "KV-KEY-ASCII", "test.caf\u00e9", "A key with an e-acute (valid UTF-8, not ASCII)."),
    ("key-upper-case", "KV-KEY-CHARSET", "test.Upper", "A key segment with upper case."),
    ("key-empty-segment", "KV-KEY-SEGMENT", "test..x", "A key with two dots in a row."),
    ("key-hyphen", "KV-KEY-HYPHEN", "test.a-b", "A key with a hyphen."),
    ("key-flat", "KV-KEY-FLAT", "flatkey", "A key without a dot."),
]:
    _add_key_breakage(_name, _rule, _key, _doc)


@_breakage("duplicate-key", "KV-KEY-DUP")
def _(raw):
    """general.name twice."""
    raw.kvs.append(copy.deepcopy(raw.kvs[raw.index(keynames.GENERAL_NAME)]))


@_breakage("bad-value-type", "KV-TYPE", carrier_only=False)
def _(raw):
    """A KV pair of value type 13, appended last (nothing after it can be located)."""
    raw.set_raw("test.bad_type", 13, b"\0" * 4)


@_breakage("v1-uint64", "KV-TYPE-V1", "HDR-V1-UNSUPPORTED", "HDR-VER-LEGACY")
def _(raw):
    """A v1 file with a UINT64 value."""
    return carrier(1).set("test.big", "UINT64", 7)


@_breakage("bool-not-0-or-1", "KV-BOOL")
def _(raw):
    """tokenizer.ggml.add_bos_token holds the byte 2."""
    raw.set_raw(keynames.TOKENIZER_GGML_ADD_BOS_TOKEN, "BOOL", b"\x02")


@_breakage("bool-array-not-0-or-1", "KV-BOOL", carrier_only=False)
def _(raw):
    """A BOOL array whose third element is 0xFF."""
    raw.set("test.flags", "ARRAY", [1, 0, 255], item_type="BOOL")


@_breakage("non-standard-general-key", "KV-NAMESPACE", carrier_only=False)
def _(raw):
    """general.custom_thing: in a standard namespace, but not a standard key."""
    raw.set("general.custom_thing", "STRING", "x")


# strings
@_breakage("string-past-eof", "STR-EOF")
def _(raw):
    """general.name declares 2^40 bytes."""
    fam = structs.family(raw.version, raw.byte_order)
    raw.set_raw(keynames.GENERAL_NAME, "STRING", fam.build("gguf_string", {"len": 2**40, "data": b"Tiny"})[0])


@_breakage("tensor-name-past-eof", "STR-EOF")
def _(raw):
    """The last tensor's name declares 2^40 bytes."""
    raw.tensors[-1].name = Str(raw.tensors[-1].name, 2**40)


@_breakage("invalid-utf8", "STR-UTF8")
def _(raw):
    """general.name contains the byte 0xFF."""
    raw.set(keynames.GENERAL_NAME, "STRING", b"Ti\xffny")


@_breakage("invalid-utf8-token", "STR-UTF8")
def _(raw):
    """A vocabulary token with an overlong encoding."""
    raw.set(keynames.TOKENIZER_GGML_TOKENS, "ARRAY", [b"<unk>", b"<s>", b"</s>", b"\xc0\xaf", b"b"], item_type="STRING")


@_breakage("embedded-nul", "STR-NUL")
def _(raw):
    """general.name contains NUL."""
    raw.set(keynames.GENERAL_NAME, "STRING", b"Ti\x00ny")


@_breakage("string-over-limit", "STR-MAXLEN", carrier_only=False)
def _(raw):
    """A 1001-byte string; fires with the string limit lowered to 1000 bytes (ggml's is 1 GiB)."""
    raw.set("test.long", "STRING", "x" * 1001)
    return raw, {"limits": {"string_bytes": 1000}}


# arrays
@_breakage("empty-array-bad-type", "ARR-TYPE", carrier_only=False)
def _(raw):
    """An empty array of element type 13 (its length is known, so checking goes on after it)."""
    raw.set_raw("test.empty", "ARRAY", struct.pack(_le(raw) + "I", 13) + raw.value_bytes("ARRAY", [], "UINT8")[4:])


@_breakage("array-past-eof", "ARR-EOF", carrier_only=False)
def _(raw):
    """A UINT8 array of 2^40 elements, appended last."""
    fam = structs.family(raw.version, raw.byte_order)
    raw.set_raw("test.bomb", "ARRAY", fam.build("gguf_array", {"type": VT["UINT8"], "len": 2**40, "data": []})[0])


@_breakage("nested-array", "ARR-NESTED", carrier_only=False)
def _(raw):
    """An array of arrays of UINT8."""
    raw.set("test.nested", "ARRAY", [("UINT8", [1, 2]), ("UINT8", [])], item_type="ARRAY")


@_breakage("deep-array", "ARR-NESTED", "ARR-DEPTH", carrier_only=False)
def _(raw):
    """Arrays nested three levels deep."""
    raw.set("test.deep", "ARRAY", [("ARRAY", [("UINT8", [1])])], item_type="ARRAY")


@_breakage("too-deep-array", "ARR-TOO-DEEP", carrier_only=False)
def _(raw):
    """Arrays nested 150 levels deep: more than the checker can follow."""
    value = ("UINT8", [1])
    for _ in range(150):
        value = ("ARRAY", [value])
    raw.set("test.too_deep", "ARRAY", [value], item_type="ARRAY")


@_breakage("array-over-limit", "ARR-MAXLEN")
def _(raw):
    """A 6-element array; fires with the array limit lowered to 5 elements (ggml's is 2^30)."""
    raw.set("test.six", "ARRAY", [1, 2, 3, 4, 5, 6], item_type="UINT8")
    return raw, {"limits": {"array_elements": 5}}


# tensor infos
@_breakage("tensor-info-truncated", "TI-TRUNC")
def _(raw):
    """The file ends inside the offset of the last tensor info."""
    raw.truncate = len(raw.head()) - 3


@_breakage("tensor-name-65", "TI-NAME-LEN")
def _(raw):
    """A 65-byte tensor name."""
    raw.tensors[-1].name = b"n" * 65


@_breakage("tensor-name-64", "TI-NAME-64")
def _(raw):
    """A 64-byte tensor name (legal in gguf.md, refused by ggml)."""
    raw.tensors[-1].name = b"n" * 64


@_breakage("tensor-name-empty", "TI-NAME-EMPTY")
def _(raw):
    """An empty tensor name."""
    raw.tensors[-1].name = b""


@_breakage("tensor-name-duplicate", "TI-NAME-DUP")
def _(raw):
    """Both tensors are called token_embd.weight."""
    raw.tensors[-1].name = raw.tensors[0].name


@_breakage("five-dimensions", "TI-NDIMS")
def _(raw):
    """The F32 vector declared with five dimensions [32, 1, 1, 1, 1]."""
    raw.tensors[-1].dims = raw.tensors[-1].dims + [1, 1, 1, 1]


@_breakage("huge-n-dims", "TI-NDIMS")
def _(raw):
    """n_dimensions = 2^32 - 1 in the last tensor info (its dimensions cannot be located)."""
    raw.tensors[-1].n_dims = 2**32 - 1


@_breakage("scalar-tensor", "TI-NDIMS-ZERO")
def _(raw):
    """An extra F32 tensor with zero dimensions (one element)."""
    raw.append_tensor("scalar", "F32", [], np.ones(1, dtype=_le(raw) + "f4").tobytes())


@_breakage("negative-dimension", "TI-DIM-RANGE")
def _(raw):
    """A dimension of 2^64 - 1 (-1 as ggml's int64)."""
    raw.tensors[-1].dims = [2**64 - 1]


@_breakage("zero-dimension", "TI-DIM-ZERO")
def _(raw):
    """An extra F32 tensor of shape [32, 0] (no elements, no bytes)."""
    raw.append_tensor("empty", "F32", [32, 0], b"")


@_breakage("element-count-overflow", "TI-NELEM-OVERFLOW")
def _(raw):
    """Shape [2^32, 2^32]: 2^64 elements."""
    raw.tensors[-1].dims = [2**32, 2**32]


@_breakage("byte-size-overflow", "TI-NBYTES-OVERFLOW")
def _(raw):
    """An F32 tensor of 2^62 elements: 2^64 bytes."""
    raw.tensors[-1].dims = [2**62]


@_breakage("removed-tensor-type", "TI-TYPE")
def _(raw):
    """The F32 vector declared as type 4 (Q4_2, removed)."""
    raw.tensors[-1].type = 4


@_breakage("new-tensor-type", "TI-TYPE-NEW")
def _(raw):
    """An extra NVFP4 tensor (newer than gguf.md's enum)."""
    raw.append_tensor("nv", "NVFP4", [64, 1], bytes(36))


@_breakage("row-not-block-multiple", "TI-BLOCK")
def _(raw):
    """The Q4_0 matrix as [16, 10]: 160 elements, but rows of 16."""
    raw.tensors[0].dims = [16, 10]


@_breakage("misaligned-offset", "TI-OFFSET-ALIGN")
def _(raw):
    """The F32 vector at offset 92 (alignment 32; still in bounds, no overlap)."""
    raw.tensors[-1].offset = 92


# alignment
@_breakage("alignment-uint64", "ALIGN-TYPE")
def _(raw):
    """general.alignment stored as UINT64."""
    raw.set(ALIGNMENT_KEY, "UINT64", 32)


@_breakage("alignment-zero", "ALIGN-ZERO")
def _(raw):
    """general.alignment = 0."""
    raw.set(ALIGNMENT_KEY, "UINT32", 0)


@_breakage("alignment-4", "ALIGN-MULT8")
def _(raw):
    """general.alignment = 4 (a power of two, not a multiple of 8), data laid out for it."""
    raw.set(ALIGNMENT_KEY, "UINT32", 4).relayout()


@_breakage("alignment-24", "ALIGN-POW2")
def _(raw):
    """general.alignment = 24 (a multiple of 8, not a power of two), data laid out for it."""
    raw.set(ALIGNMENT_KEY, "UINT32", 24).relayout()


@_breakage("alignment-absent", "ALIGN-DEFAULT")
def _(raw):
    """No general.alignment."""
    raw.remove(ALIGNMENT_KEY)


# data section
def _misalign_head(raw: RawFile) -> None:
    if len(raw.head()) % raw.alignment == 0:
        raw.set(keynames.GENERAL_AUTHOR, "STRING", "me")


@_breakage("cut-before-data", "DATA-START")
def _(raw):
    """The file ends in the padding before the data section."""
    _misalign_head(raw)
    raw.truncate = len(raw.head()) + 1 if raw.head_padding()[1:] else len(raw.head())


@_breakage("tensor-out-of-bounds", "DATA-BOUNDS")
def _(raw):
    """The F32 vector at offset 2^40."""
    raw.tensors[-1].offset = 2**40


@_breakage("tensors-overlap", "DATA-OVERLAP")
def _(raw):
    """Both tensors at offset 0."""
    raw.tensors[-1].offset = 0


@_breakage("reversed-data", "DATA-ORDER")
def _(raw):
    """The data of the second tensor comes first."""
    q, f = raw.tensors
    qa, fa = raw.data[q.offset : q.offset + _nbytes(q)], raw.data[f.offset : f.offset + _nbytes(f)]
    f.offset, q.offset = 0, align_offset(len(fa), raw.alignment)
    body = fa.ljust(q.offset, b"\0") + qa
    raw.data = body.ljust(align_offset(len(body), raw.alignment), b"\0")


@_breakage("nonzero-padding", "DATA-PAD-ZERO")
def _(raw):
    """The padding before the data section is 0x01 bytes."""
    _misalign_head(raw)
    raw.head_pad = b"\x01" * len(raw.head_padding())


@_breakage("no-trailing-padding", "DATA-TRAILING-PAD")
def _(raw):
    """The Q4_0 matrix (90 bytes) is last and the file ends right after it."""
    q, f = raw.tensors
    qa, fa = raw.data[q.offset : q.offset + _nbytes(q)], raw.data[f.offset : f.offset + _nbytes(f)]
    f.offset, q.offset = 0, align_offset(len(fa), raw.alignment)
    raw.tensors = [f, q]
    raw.data = fa.ljust(q.offset, b"\0") + qa


@_breakage("trailing-bytes", "DATA-TRAILING-BYTES", carrier_only=False)
def _(raw):
    """Sixteen bytes after the padded end of the data."""
    raw.tail = b"\xaa" * 16


@_breakage("non-finite-scale", "DATA-QUANT-FINITE")
def _(raw):
    """Block 2 of the Q4_0 matrix has the scale +inf (checked with data=True)."""
    inf = np.array([np.inf], dtype=_le(raw) + "f2").tobytes()
    q = raw.tensors[0]
    pos = q.offset + 2 * 18
    raw.data = raw.data[:pos] + inf + raw.data[pos + 2 :]
    return raw, {"check_data": True}


@_breakage("nan-weight", "DATA-FLOAT-FINITE")
def _(raw):
    """Element 3 of the F32 vector is NaN (checked with data=True)."""
    nan = np.array([np.nan], dtype=_le(raw) + "f4").tobytes()
    pos = raw.tensors[-1].offset + 12
    raw.data = raw.data[:pos] + nan + raw.data[pos + 4 :]
    return raw, {"check_data": True}


# metadata schema
@_breakage("architecture-missing", "META-ARCH-MISSING")
def _(raw):
    """No general.architecture."""
    raw.remove(keynames.GENERAL_ARCHITECTURE)


@_breakage("architecture-hyphen", "META-ARCH-CHARSET")
def _(raw):
    """general.architecture = command-r (known, but not [a-z0-9]+)."""
    raw.set(keynames.GENERAL_ARCHITECTURE, "STRING", "command-r")


@_breakage("architecture-unknown", "META-ARCH-UNKNOWN")
def _(raw):
    """general.architecture = tinyarch."""
    raw.set(keynames.GENERAL_ARCHITECTURE, "STRING", "tinyarch")


@_breakage("standard-key-wrong-type", "META-KEY-TYPE")
def _(raw):
    """general.name stored as UINT32."""
    raw.set(keynames.GENERAL_NAME, "UINT32", 7)


@_breakage("undocumented-value", "META-KEY-VALUE")
def _(raw):
    """tokenizer.ggml.model = sentencepiece."""
    raw.set(keynames.TOKENIZER_GGML_MODEL, "STRING", "sentencepiece")


@_breakage("quantization-version-missing", "META-QV-MISSING")
def _(raw):
    """A Q4_0 tensor but no general.quantization_version."""
    raw.remove(keynames.GENERAL_QUANTIZATION_VERSION)


@_breakage("architecture-key-missing", "META-ARCH-KEYS")
def _(raw):
    """llama without llama.rope.dimension_count."""
    raw.remove(keynames.ARCH_ROPE_DIMENSION_COUNT.format(arch="llama"))


@_breakage("llm-placeholder", "META-LLM-PLACEHOLDER", carrier_only=False)
def _(raw):
    """llm.vocab_size written literally."""
    raw.set(keynames.ARCH_VOCAB_SIZE.format(arch="llm"), "UINT32", 5)


@_breakage("tokenizer-length-mismatch", "META-TOKENIZER-LEN")
def _(raw):
    """Four scores for five tokens."""
    raw.set(keynames.TOKENIZER_GGML_SCORES, "ARRAY", [0.0, 0.0, 0.0, -1.0], item_type="FLOAT32")


@_breakage("tokenizer-narrow-type", "META-TOKENIZER-TYPE")
def _(raw):
    """tokenizer.ggml.token_type as an array of UINT8."""
    raw.set(keynames.TOKENIZER_GGML_TOKEN_TYPE, "ARRAY", [2, 3, 3, 1, 1], item_type="UINT8")


@_breakage("token-id-out-of-range", "META-TOKEN-ID")
def _(raw):
    """tokenizer.ggml.eos_token_id = 9 with five tokens."""
    raw.set(keynames.TOKENIZER_GGML_EOS_TOKEN_ID, "UINT32", 9)


@_breakage("file-type-inconsistent", "META-FILETYPE")
def _(raw):
    """general.file_type = ALL_F32 with a Q4_0 matrix."""
    raw.set(keynames.GENERAL_FILE_TYPE, "UINT32", 0)


def _split(raw: RawFile, no: int, count: int, tensors: int, no_type: str = "UINT16") -> RawFile:
    return (
        raw.set(keynames.SPLIT_NO, no_type, no)
        .set(keynames.SPLIT_COUNT, "UINT16", count)
        .set(keynames.SPLIT_TENSORS_COUNT, "INT32", tensors)
    )


@_breakage("split-key-wrong-type", "META-SPLIT-TYPES")
def _(raw):
    """split.no stored as UINT32."""
    _split(raw, 0, 1, 2, no_type="UINT32")


@_breakage("split-no-out-of-range", "META-SPLIT-RANGE")
def _(raw):
    """split.no = 2 with split.count = 2 (split.count 0 or 1 is a whole file, whatever split.no says)."""
    _split(raw, 2, 2, 2)


@_breakage("split-keys-partial", "META-SPLIT-PARTIAL")
def _(raw):
    """split.count without split.no and split.tensors.count."""
    raw.set(keynames.SPLIT_COUNT, "UINT16", 1)


@_breakage("split-tensor-count-mismatch", "META-SPLIT-TENSORS")
def _(raw):
    """split.count = 1, split.tensors.count = 3, two tensors."""
    _split(raw, 0, 1, 3)


def _shards(
    raw: RawFile,
    *,
    second_tensors: int = 2,
    duplicate: bool = False,
    total: int = 2,
    present: Iterable[int] = (1, 2),
    first_tensors: int = 2,
    second_no: int = 1,
) -> dict:
    """Split the carrier's two tensors over two shards (the first keeps the metadata)."""
    q, f = raw.tensors
    first = raw.copy()
    first.tensors = [q]
    first.data = raw.data[: align_offset(_nbytes(q), raw.alignment)]
    _split(first, 0, total, first_tensors)
    second = raw.copy()
    keep = q if duplicate else f
    second.tensors = [replace(keep, offset=0)]
    second.data = raw.data[keep.offset : keep.offset + align_offset(_nbytes(keep), raw.alignment)]
    second.kvs = [kv for kv in raw.kvs if kv.key in (keynames.GENERAL_ARCHITECTURE.encode(), ALIGNMENT_KEY.encode())]
    _split(second, second_no, total, second_tensors)
    stem = CARRIER_NAME[:-5]
    shards = {1: first, 2: second}
    return {f"{stem}-{n:05d}-of-{total:05d}.gguf": shards[n].to_bytes() for n in present}


@_breakage("shard-missing", "META-SPLIT-MISSING")
def _(raw):
    """Shard 1 of 2 without shard 2."""
    return raw, {"files": _shards(raw, present=(1,))}


@_breakage("shard-tensor-total-wrong", "META-SPLIT-COUNT")
def _(raw):
    """Two shards holding two tensors, both saying split.tensors.count = 3 (llama.cpp: "corrupted model")."""
    return raw, {"files": _shards(raw, first_tensors=3, second_tensors=3)}


@_breakage("shard-counts-disagree", "META-SPLIT-AGREE")
def _(raw):
    """Two shards that disagree on split.tensors.count."""
    return raw, {"files": _shards(raw, second_tensors=3)}


@_breakage("later-shard-alone", "META-SPLIT-LATER")
def _(raw):
    """Shard 2 of 2 checked on its own (its first shard is there, but not the path checked)."""
    return raw, {"files": _shards(raw)}


@_breakage("tensor-in-two-shards", "META-SPLIT-DUP")
def _(raw):
    """token_embd.weight in both shards."""
    return raw, {"files": _shards(raw, duplicate=True)}


# file names
@_breakage("name-off-convention", "NAME-REGEX", carrier_only=False)
def _(raw):
    """The file is called tiny.gguf."""
    return raw, {"file_name": "tiny.gguf"}


@_breakage("shard-suffix-zero", "NAME-SHARD", carrier_only=False)
def _(raw):
    """A -00000-of-00001 suffix on a file without split keys."""
    return raw, {"file_name": CARRIER_NAME[:-5] + "-00000-of-00001.gguf"}


@_breakage("name-disagrees-with-metadata", "NAME-META")
def _(raw):
    """general.basename = Other, the file name says Tiny."""
    raw.set(keynames.GENERAL_BASENAME, "STRING", "Other")


# model layer (profile llama.cpp): each starts from the minimal llama model the replayed loader accepts
def _model(overrides: dict | None = None, edit=None) -> RawFile:
    from .models import minimal_model

    f = minimal_model("llama")
    for key, (value, vtype) in (overrides or {}).items():
        if value is None:
            del f.metadata[key]
        else:
            f.metadata.set(key, value, vtype)
    if edit is not None:
        edit(f)
    return RawFile.from_bytes(f.to_bytes())


def _model_case(**overrides):
    def build(raw):
        return _model(overrides), {"profile": "llama.cpp"}

    return build


def _model_edit(edit):
    def build(raw):
        return _model(edit=edit), {"profile": "llama.cpp"}

    return build


def _register(name: str, rules: tuple, doc: str, build) -> None:
    build.__doc__ = doc
    _breakage(name, *rules)(build)


def _drop_tensor(f, name="blk.0.ffn_up.weight"):
    f.tensors[:] = [t for t in f.tensors if t.name != name]


def _retype_key(f):
    f.metadata.set(keynames.ARCH_CONTEXT_LENGTH.format(arch="llama"), "64", "STRING")


def _halve_q(f):
    t = next(t for t in f.tensors if t.name == "blk.0.attn_q.weight")
    f.tensors[:] = [x for x in f.tensors if x is not t]
    f.add_tensor(t.name, bytes(t.nbytes // 2), "F32", shape=(t.shape[0], t.shape[1] // 2))


def _extra_tensor(f):
    f.add_tensor("blk.0.attn_qq.weight", bytes(4 * 64), "F32", shape=(64,))


def _bad_name(f):
    f.add_tensor("my_custom_head.weight", bytes(4 * 64), "F32", shape=(64,))


def _half_imatrix(raw):
    """An importance matrix with blk.0.ffn_up.weight.in_sum2 and no .counts."""
    from ..filemodel.gguffile import GGUFFile

    f = GGUFFile.new(version=3, byte_order="little")
    f.metadata.set(keynames.GENERAL_TYPE, "imatrix", "STRING")
    f.metadata.set("imatrix.datasets", ["wiki.train.raw"], "ARRAY", "STRING")
    f.metadata.set("imatrix.chunk_count", 10, "UINT32")
    f.metadata.set("imatrix.chunk_size", 512, "UINT32")
    f.add_tensor("blk.0.ffn_up.weight.in_sum2", bytes(4 * 64), "F32", shape=(64, 1))
    return RawFile.from_bytes(f.to_bytes()), {"profile": "llama.cpp"}


def _half_adapter(raw):
    """A LoRA adapter whose pair for blk.0.attn_q.weight lacks its lora_b."""
    from ..filemodel.gguffile import GGUFFile

    f = GGUFFile.new(version=3, byte_order="little")
    for key, value, vtype in (
        (keynames.GENERAL_TYPE, "adapter", "STRING"),
        (keynames.GENERAL_ARCHITECTURE, "llama", "STRING"),
        (keynames.ADAPTER_TYPE, "lora", "STRING"),
        (keynames.ADAPTER_LORA_ALPHA, 16.0, "FLOAT32"),
    ):
        f.metadata.set(key, value, vtype)
    f.add_tensor("blk.0.attn_q.weight.lora_a", bytes(4 * 64 * 8), "F32", shape=(64, 8))
    return RawFile.from_bytes(f.to_bytes()), {"profile": "llama.cpp"}


for _name, _rules, _doc, _build in (
    (
        "model-arch-unknown",
        ("MODEL-ARCH-UNKNOWN", "META-ARCH-UNKNOWN"),
        "general.architecture = tinyarch.",
        _model_case(**{keynames.GENERAL_ARCHITECTURE: ("tinyarch", "STRING")}),
    ),
    (
        "model-key-missing",
        ("MODEL-KEY-MISSING",),
        "llama without llama.embedding_length.",
        _model_case(**{keynames.ARCH_EMBEDDING_LENGTH.format(arch="llama"): (None, None)}),
    ),
    (
        "model-key-type",
        ("MODEL-KEY-TYPE", "META-KEY-TYPE"),
        "llama.context_length stored as a STRING.",
        _model_edit(_retype_key),
    ),
    (
        "model-hparam-range",
        ("MODEL-HPARAM-RANGE",),
        "llama.expert_used_count = 3 with no experts.",
        _model_case(**{keynames.ARCH_EXPERT_USED_COUNT.format(arch="llama"): (3, "UINT32")}),
    ),
    (
        "model-vocab",
        ("MODEL-VOCAB",),
        "tokenizer.ggml.model = sentencepiece, which llama.cpp does not know.",
        _model_case(**{keynames.TOKENIZER_GGML_MODEL: ("sentencepiece", "STRING")}),
    ),
    ("model-tensor-missing", ("MODEL-TENSOR-MISSING",), "blk.0.ffn_up.weight removed.", _model_edit(_drop_tensor)),
    (
        "model-tensor-shape",
        ("MODEL-TENSOR-SHAPE",),
        "blk.0.attn_q.weight with half its columns.",
        _model_edit(_halve_q),
    ),
    (
        "model-tensor-unused",
        ("MODEL-TENSOR-UNUSED",),
        "an extra tensor blk.0.attn_qq.weight.",
        _model_edit(_extra_tensor),
    ),
    (
        "model-block-count",
        ("MODEL-BLOCK-COUNT", "MODEL-TENSOR-MISSING"),
        "llama.block_count = 3 with blocks 0..1.",
        _model_case(**{keynames.ARCH_BLOCK_COUNT.format(arch="llama"): (3, "UINT32")}),
    ),
    (
        "model-tensor-name",
        ("MODEL-TENSOR-NAME",),
        "a tensor my_custom_head.weight (an info under spec).",
        lambda raw: _model(edit=_bad_name),
    ),
    (
        "model-adapter",
        ("MODEL-ADAPTER",),
        "a LoRA adapter with blk.0.attn_q.weight.lora_a and no lora_b.",
        _half_adapter,
    ),
    (
        "model-imatrix",
        ("MODEL-IMATRIX",),
        "an importance matrix whose blk.0.ffn_up.weight has sums, no counts.",
        _half_imatrix,
    ),
):
    _register(_name, _rules, _doc, _build)
from . import crafting_security  # noqa: E402,F401 - issue #16: advisory reproducers and chat templates
