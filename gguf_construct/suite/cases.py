"""The cases of the conformance suite: small files, each with the rules it tests, built deterministically.

Every case comes from machinery that already labels its files: the crafted breakages of
:mod:`gguf_construct.breaking.crafting` (one or more per catalog rule, the advisories' reproducers among them),
the minimal models of :mod:`gguf_construct.arch.synth` with the labelled breakages of
:mod:`gguf_construct.breaking.model_mutations`, and, written here, the other side of each limit (a key of 65535 bytes, a
63-byte tensor name, four dimensions, ...), every value type in every version and byte order, every tensor type
with values from the ggml-exact codecs, alignments and a valid split set.  A case's ``rules`` are what it was
built to break (empty for a valid file), never what a checker found in it.
"""

from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from .. import codecs
from ..format import spec as _spec
from ..format import structs
from ..breaking import crafting
from ..breaking.crafting import VT, RawFile, RawKV
from ..rulebook.container import LIMITS
from ..format import keynames

__all__ = ["Case", "all_cases", "MODEL_ARCHITECTURES", "LIMITED_BREAKAGES"]

VERSIONS = structs.versions()
BYTE_ORDERS = structs.BYTE_ORDERS
# architectures of the model cases: the common decoder families plus a state-space model and an encoder
MODEL_ARCHITECTURES = ("llama", "qwen2", "gemma2", "phi3", "falcon", "mamba", "bert")
# architectures whose labelled breakages are in the suite (every mutation kind, one seed each)
MUTATED_ARCHITECTURES = ("llama", "qwen2", "mamba")
# crafted breakages that fire only with an implementation limit lowered in the checker: their real files are
# at least 1 GiB (the suite's files at and past these limits are .large's, written by `suite write --large`)
LIMITED_BREAKAGES = ("string-over-limit", "array-over-limit")


@dataclass
class Case:
    """One case: the files to write (relative path -> bytes), the path a reader is given, what it tests."""

    path: str
    group: str
    rules: tuple[str, ...]
    doc: str
    files: dict[str, bytes]
    model: bool = False  # built as a whole model: the llama.cpp profile's verdict follows its rules
    advisories: tuple[str, ...] = ()
    split: bool = False  # one shard of a set: values are those of this file alone
    near: tuple[str, ...] = ()  # rules whose limit the case sits at without breaking them
    decoded: bool = False  # the manifest carries each tensor's decoded values
    check_data: bool = False  # its rules look at tensor data
    extra: dict = field(default_factory=dict)

    @property
    def data(self) -> bytes:
        """The bytes of the file a reader is given."""
        return self.files[self.path]


def _vt_suffix(version: int, byte_order: str) -> str:
    return f"v{version}-{structs.byte_order(byte_order).short}"


def _container_rules(version: int, byte_order: str) -> tuple[str, ...]:
    """The rules a valid file of this version and byte order breaks by being one."""
    rules = []
    order = structs.byte_order(byte_order)
    if order.name != structs.BYTE_ORDERS[0]:  # not the spec's default byte order
        rules.append("HDR-ENDIAN")
        if version < order.since:
            rules.append("HDR-BE-PRE-V3")
    status = structs.version_status(version)
    if status == "obsolete":
        rules.append("HDR-V1-UNSUPPORTED")
    if status != "current":
        rules.append("HDR-VER-LEGACY")
    return tuple(rules)


def _catalog_order() -> dict[str, int]:
    from ..rulebook.catalog import catalog

    return {rid: i for i, rid in enumerate(catalog())}


def _primary(rules, order: dict[str, int]) -> str:
    """The rule a case is filed under: the first of its rules that is an error under the spec profile, else the
    first in catalog order."""
    from ..rulebook.catalog import catalog

    cat = catalog()
    ranked = sorted(rules, key=lambda r: order.get(r, 1 << 30))
    errors = [r for r in ranked if cat[r].severity("spec") == "error"]
    return (errors or ranked or ["valid"])[0]


# -- crafted breakages ----------------------------------------------------------------------------------------------
def _advisory_reproducers() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for adv in _spec.load_yaml("advisories.yaml")["advisories"]:
        if adv.get("reproducer"):
            out.setdefault(adv["reproducer"], []).append(adv["id"])
    return out


def _vocabulary_only(data: bytes) -> bool:
    """A file whose head reads completely and declares no tensors: llama.cpp loads such a file as a vocabulary
    (vocab_only), so its llama.cpp verdict follows its rules like a model's."""
    from ..rulebook import read_head

    ctx = read_head(data)
    return bool(ctx.head_complete) and not ctx.tensors


def crafted_cases() -> Iterator[Case]:
    """One case per crafted breakage (shard sets as several files, file-name rules under their file name)."""
    order = _catalog_order()
    advisories = _advisory_reproducers()
    for name in sorted(crafting.BREAKAGES):
        if name in LIMITED_BREAKAGES:
            continue
        c = crafting.craft(name)
        rules = tuple(sorted(c.rules, key=lambda r: order.get(r, 1 << 30)))
        model = c.profile == "llama.cpp" or _vocabulary_only(c.data)
        advs = tuple(advisories.get(name, ()))
        if advs:
            folder = f"advisory/{advs[0]}"
        else:
            folder = f"{'model' if model else 'container'}/{_primary(rules, order)}"
        if c.files:
            files = {f"{folder}/{name}/{fname}": data for fname, data in sorted(c.files.items())}
            path = f"{folder}/{name}/{sorted(c.files)[0]}"
            yield Case(path, "split", rules, c.doc, files, split=True)
            continue
        if c.file_name != crafting.CARRIER_NAME:
            path = f"{folder}/{name}/{c.file_name}"
        else:
            path = f"{folder}/{name}.gguf"
        yield Case(
            path,
            "advisory" if advs else ("model" if model else "container"),
            rules,
            c.doc,
            {path: c.data},
            model=model,
            advisories=advs,
            check_data=c.check_data,
        )


# -- the other side of each limit -----------------------------------------------------------------------------------
def _carrier() -> RawFile:
    return crafting.carrier()


def _edge(name: str, rules: tuple[str, ...], doc: str, build: Callable[[RawFile], RawFile | None]):
    raw = _carrier()
    out = build(raw)
    raw = out if out is not None else raw
    return name, rules, doc, raw.to_bytes()


def _long_key(raw: RawFile, n: int) -> None:
    key = ("suite." + "k" * n)[:n]
    raw.kvs.append(RawKV(key.encode(), crafting.VT["UINT8"], raw.value_bytes("UINT8", 1)))


def _rename_vector(raw: RawFile, n: int) -> None:
    raw.tensors[-1].name = ("v" * n).encode()


def _four_dims(raw: RawFile) -> None:
    raw.tensors[-1].dims = [32, 1, 1, 1]


def _alignment(value: int) -> Callable[[RawFile], RawFile]:
    def build(raw: RawFile) -> RawFile:
        raw.set(keynames.GENERAL_ALIGNMENT, "UINT32", value)
        return raw.relayout()

    return build


def _version(word: int) -> Callable[[RawFile], None]:
    def build(raw: RawFile) -> None:
        raw.version_word = word

    return build


def _kv_count(delta: int) -> Callable[[RawFile], None]:
    def build(raw: RawFile) -> None:
        raw.n_kv = len(raw.kvs) + delta

    return build


def _tensor_count(delta: int) -> Callable[[RawFile], None]:
    def build(raw: RawFile) -> None:
        raw.n_tensors = len(raw.tensors) + delta

    return build


def _cut_data(raw: RawFile) -> None:
    last = raw.tensors[-1]
    raw.data = raw.data[: last.offset + 32 * 4 - 1]


def _exact_data(raw: RawFile) -> None:
    last = raw.tensors[-1]
    raw.data = raw.data[: last.offset + 32 * 4]


def _bools(raw: RawFile) -> None:
    raw.set("suite.false", "BOOL", 0)
    raw.set("suite.true", "BOOL", 1)


def _empty_string_value(raw: RawFile) -> None:
    raw.set("suite.empty", "STRING", "")


EDGES = (  # (name, rules broken, rules whose limit it sits at, doc, edit of the carrier)
    (
        "key-65535-bytes",
        (),
        ("KV-KEY-LEN",),
        "A key of 65535 bytes: the longest gguf.md allows.",
        lambda r: _long_key(r, 65535),
    ),
    (
        "key-65536-bytes",
        ("KV-KEY-LEN",),
        (),
        "A key of 65536 bytes: one past the longest gguf.md allows.",
        lambda r: _long_key(r, 65536),
    ),
    (
        "tensor-name-63-bytes",
        (),
        ("TI-NAME-64", "TI-NAME-LEN"),
        "A 63-byte tensor name: the longest ggml stores (64 with its NUL).",
        lambda r: _rename_vector(r, 63),
    ),
    ("four-dimensions", (), ("TI-NDIMS",), "A tensor of four dimensions, the most gguf.md allows.", _four_dims),
    ("version-3", (), ("HDR-VERSION",), "Version 3: the newest version.", _version(3)),
    ("version-0", ("HDR-VERSION",), (), "Version 0: below the first version.", _version(0)),
    ("kv-count-exact", (), ("HDR-COUNT", "KV-TRUNC"), "The KV count equals the pairs present.", _kv_count(0)),
    (
        "kv-count-one-more",
        ("KV-TRUNC",),
        (),
        "The KV count is one more than the pairs present: the tensor infos "
        "are read as a KV pair, which runs out of bytes.",
        _kv_count(1),
    ),
    (
        "tensor-count-one-more",
        ("TI-TRUNC",),
        (),
        "The tensor count is one more than the tensor infos present: the padding and data are read as a tensor info.",
        _tensor_count(1),
    ),
    (
        "data-ends-at-last-tensor",
        (),
        ("DATA-BOUNDS", "DATA-TRAILING-PAD"),
        "The file ends exactly where the last "
        "tensor's bytes end, which is on the alignment (no padding is needed after it).",
        _exact_data,
    ),
    (
        "data-one-byte-short",
        ("DATA-BOUNDS",),
        (),
        "The file ends one byte before the last tensor's bytes end.",
        _cut_data,
    ),
    (
        "alignment-8",
        (),
        ("ALIGN-MULT8", "ALIGN-POW2"),
        "general.alignment = 8: the smallest multiple of 8.",
        _alignment(8),
    ),
    ("alignment-16", (), ("ALIGN-POW2",), "general.alignment = 16.", _alignment(16)),
    ("alignment-64", (), ("ALIGN-POW2",), "general.alignment = 64.", _alignment(64)),
    ("alignment-256", (), ("ALIGN-POW2",), "general.alignment = 256.", _alignment(256)),
    ("alignment-4096", (), ("ALIGN-POW2",), "general.alignment = 4096 (a page).", _alignment(4096)),
    ("bool-0-and-1", (), ("KV-BOOL",), "BOOL values 0 and 1: the only two gguf.md allows.", _bools),
    ("empty-string-value", (), ("STR-EOF",), "A STRING value of length 0.", _empty_string_value),
)


def edge_cases() -> Iterator[Case]:
    """The other side of the limits the crafted breakages cross, and neighbours of them."""
    order = _catalog_order()
    for name, rules, near, doc, build in EDGES:
        name, rules, doc, data = _edge(name, rules, doc, build)
        group = "edge"
        folder = f"edge/{_primary(rules, order)}" if rules else "edge/valid"
        path = f"{folder}/{name}.gguf"
        yield Case(path, group, rules, doc, {path: data}, near=near)


# -- every version, byte order and value type -----------------------------------------------------------------------
_FLOATS = [-0.0, 1.5, -2.25, math.inf, -math.inf, math.nan]
SCALARS: dict[str, list] = {
    "UINT8": [0, 1, 255],
    "INT8": [-128, -1, 127],
    "UINT16": [0, 65535],
    "INT16": [-32768, 32767],
    "UINT32": [0, 2**32 - 1],
    "INT32": [-(2**31), 2**31 - 1],
    "UINT64": [0, 2**64 - 1],
    "INT64": [-(2**63), 2**63 - 1],
    "FLOAT32": _FLOATS + [3.4028234663852886e38, 1.401298464324817e-45],
    "FLOAT64": _FLOATS + [1.7976931348623157e308, 5e-324, 0.1],
    "BOOL": [0, 1],
    "STRING": ["", "plain", "\u00fc\u2192\U0001d11e multi-byte", "tab\tnewline\n"],
}


def _scalars(vtype: str) -> list:
    """The values of a scalar type's case: those listed above, else its extremes by the spec's kind and encoding."""
    if vtype in SCALARS:
        return SCALARS[vtype]
    type_id = VT[vtype]
    kind = structs.value_kind(type_id)
    if kind == "text":
        return SCALARS["STRING"]
    if kind == "bool":
        return [0, 1]
    dtype = _spec.numpy_dtype(structs.value_types()[type_id]["encoding"])
    if kind == "float":
        info = np.finfo(dtype)
        return _FLOATS + [float(info.max), float(info.smallest_subnormal)]
    info = np.iinfo(dtype)
    return [int(info.min), int(info.max)] if info.min else [0, 1, int(info.max)]


def _later_type_rule(version: int, vtype: str) -> str | None:
    """The rule a file of ``version`` holding ``vtype`` breaks when the type is newer than the version (the spec's
    ``since`` and ``before_since``)."""
    vt = structs.value_types()[VT[vtype]]
    return vt.get("before_since", "KV-TYPE-VERSION") if vt.get("since", 1) > version else None


def _value_type_names() -> list[str]:
    """The scalar value types of the spec (those of :data:`SCALARS` first, in its order, then any other in spec
    order), then the array type."""
    spec = [vt["name"] for vt in structs.value_types().values() if vt["kind"] != "array"]
    arrays = [vt["name"] for vt in structs.value_types().values() if vt["kind"] == "array"]
    return [n for n in SCALARS if n in spec] + [n for n in spec if n not in SCALARS] + arrays


def _value_file(version: int, byte_order: str, vtype: str) -> tuple[bytes, tuple[str, ...]]:
    raw = crafting.carrier(version, byte_order)
    rules = list(_container_rules(version, byte_order))
    if vtype == "ARRAY":
        raw.set("suite.nested", "ARRAY", [("INT32", [1, -2]), ("INT32", []), ("INT32", [3])], "ARRAY")
        raw.set("suite.nested_strings", "ARRAY", [("STRING", ["a", "bc"]), ("STRING", ["\u00e9"])], "ARRAY")
        rules.append("ARR-NESTED")
    else:
        values = _scalars(vtype)
        for i, v in enumerate(values):
            raw.set(f"suite.scalar_{i}", vtype, v)
        raw.set("suite.array", "ARRAY", values, vtype)
        raw.set("suite.empty_array", "ARRAY", [], vtype)
        later = _later_type_rule(version, vtype)
        if later is not None:
            rules.append(later)
    return raw.to_bytes(), tuple(rules)


def value_cases() -> Iterator[Case]:
    """Every value type (scalars at their extremes, an array and an empty array of it; arrays of arrays) in every
    version and byte order."""
    for version in VERSIONS:
        for byte_order in BYTE_ORDERS:
            for vtype in _value_type_names():
                data, rules = _value_file(version, byte_order, vtype)
                path = f"values/{_vt_suffix(version, byte_order)}/{vtype}.gguf"
                doc = f"Version {version}, {byte_order}-endian: " + (
                    "arrays of arrays (INT32 and STRING items)."
                    if vtype == "ARRAY"
                    else f"{vtype} scalars at the type's extremes, an array and an empty array of {vtype}."
                )
                yield Case(path, "values", rules, doc, {path: data})


# -- every tensor type ----------------------------------------------------------------------------------------------
def _tensor_values(type_name: str, n_per_row: int, rows: int) -> np.ndarray:
    i = np.arange(rows * n_per_row, dtype=np.float64)
    if type_name in ("I8", "I16", "I32", "I64"):
        width = {"I8": 8, "I16": 16, "I32": 32, "I64": 64}[type_name]
        span = 2 ** min(width, 20)
        vals = ((i * 7919) % span) - span // 2
        return vals.astype({"I8": np.int8, "I16": np.int16, "I32": np.int32, "I64": np.int64}[type_name]).reshape(
            rows, n_per_row
        )
    vals = np.sin(i * 0.37) * (1.0 + (i % 7)) + np.cos(i * 0.011)
    return vals.astype(np.float32).reshape(rows, n_per_row)


def _tensor_type_file(type_name: str, byte_order: str) -> bytes:
    from ..codecs import has_encoder, type_spec
    from ..filemodel.gguffile import load

    st = next(t for t in _spec.tensor_types() if t.name == type_name)
    n_per_row = max(256, st.block_size)
    g = load(crafting.carrier(structs.current_version(), byte_order).to_bytes(), lazy=False)
    if not has_encoder(type_name):  # a type the spec declares without a codec: bytes of the size the spec gives
        raw = bytes((37 * i + 11) & 0xFF for i in range(2 * (n_per_row // st.block_size) * st.type_size))
        g.add_tensor(f"suite.{type_name.lower()}", raw, type_name, shape=(n_per_row, 2))
        return g.to_bytes()
    values = _tensor_values(type_name, n_per_row, 2)
    imatrix = None
    if type_spec(type_name).imatrix == "required":
        imatrix = np.linspace(0.5, 2.0, n_per_row, dtype=np.float32)
    g.add_tensor(f"suite.{type_name.lower()}", values, type_name, imatrix=imatrix)
    return g.to_bytes()


def tensor_type_cases() -> Iterator[Case]:
    """A tiny tensor (two rows of 256 elements, or one block) of every tensor type ggml reads, in both byte orders;
    the manifest has its decoded values."""
    for byte_order in BYTE_ORDERS:
        for st in _spec.tensor_types():
            if not st.is_current:
                continue
            rules = list(_container_rules(structs.current_version(), byte_order))
            if st.extra.get("in_gguf_md", True) is False:
                rules.append("TI-TYPE-NEW")
            path = f"tensor-types/{structs.byte_order(byte_order).short}/{st.name}.gguf"
            doc = f"A {st.name} tensor (type {st.id}) of two rows, {byte_order}-endian, beside the carrier's two."
            data = _tensor_type_file(st.name, byte_order)
            yield Case(path, "tensor-types", tuple(rules), doc, {path: data}, decoded=codecs.has_decoder(st.name))


# -- split sets -----------------------------------------------------------------------------------------------------
def split_cases() -> Iterator[Case]:
    """A valid set of two shards, as llama.cpp's gguf-split writes it (each shard a case of its own)."""
    from ..filemodel.gguffile import load
    from ..operations.split import split_model

    source = load(crafting.carrier().to_bytes(), lazy=False)
    shards = split_model(source, "Tiny-1B-v1.0-Q4_0", max_tensors=1, dry_run=True)
    files = {f"split/valid-two-shards/{name}": shard.to_bytes() for name, shard in shards}
    for path in sorted(files):
        yield Case(path, "split", (), "One shard of a valid set of two, as gguf-split writes it.", files, split=True)


# -- whole models ---------------------------------------------------------------------------------------------------
def model_cases() -> Iterator[Case]:
    """Minimal models of several architectures (llama.cpp's loader accepts them) and labelled breakages of some."""
    from ..breaking.model_mutations import MUTATIONS, mutate
    from ..arch.synth import minimal_model_parts
    from ..breaking.models import build_model_file

    for arch in MODEL_ARCHITECTURES:
        meta, tensors = minimal_model_parts(arch)
        path = f"model/{arch}/valid.gguf"
        yield Case(
            path,
            "model",
            (),
            f"The smallest {arch} model llama.cpp's loader accepts (F32 zeros).",
            {path: build_model_file(meta, tensors).to_bytes()},
            model=True,
        )
        if arch not in MUTATED_ARCHITECTURES:
            continue
        for m in MUTATIONS:
            rng = random.Random(f"{arch}/{m.kind}")
            done = mutate(meta, tensors, m.kind, rng)
            if done is None:
                continue
            path = f"model/{arch}/{m.kind}.gguf"
            yield Case(
                path,
                "model",
                tuple(sorted(done.rules)),
                f"The minimal {arch} model, {done.what}.",
                {path: build_model_file(done.meta, done.tensors).to_bytes()},
                model=True,
            )


# -- ggml's limits of 2^30: a count one past them, in a short file (the files at them: .large) -------------------
BIG_KEY = {"STRING": "suite.long_string", "ARRAY": "suite.long_array"}
FILL = {"STRING": b"x", "ARRAY": b"\0"}  # a string of 'x', an array of UINT8 zeros


def declared(raw: RawFile, vtype: str, length: int, present: int) -> bytes:
    """The payload of the big key: its length prefix (and item type) and ``present`` bytes of its value."""
    le = structs.byte_order(raw.byte_order).struct
    head = struct.pack(le + "Q", length)
    if vtype == "ARRAY":
        head = struct.pack(le + "I", VT["UINT8"]) + head
    return head + FILL[vtype] * present


def declared_past_limit_cases() -> Iterator[Case]:
    """A string and an array declared one past ggml's limit, in files of a few hundred bytes."""
    specs = (
        ("STRING", "STR-MAXLEN", ("STR-MAXLEN", "STR-EOF"), "string", "bytes", LIMITS["string_bytes"]),
        ("ARRAY", "ARR-MAXLEN", ("ARR-MAXLEN", "ARR-EOF"), "UINT8 array", "elements", LIMITS["array_elements"]),
    )
    for vtype, limit_rule, rules, what, unit, limit in specs:
        raw = crafting.carrier()
        raw.set_raw(BIG_KEY[vtype], vtype, declared(raw, vtype, limit + 1, 16))
        path = f"edge/{limit_rule}/{'string' if vtype == 'STRING' else 'array'}-declared-past-limit.gguf"
        doc = (
            f"The last key declares a {what} of {limit + 1} {unit}, one past ggml's limit, and the file ends "
            f"a few hundred bytes later: a reader must refuse it (the value runs past the end of the file) "
            f"without allocating what the count asks for; ggml refuses it for the limit first."
        )
        yield Case(path, "edge", rules, doc, {path: raw.to_bytes()})


def all_cases() -> list[Case]:
    """Every case of the suite, in a fixed order."""
    out: list[Case] = []
    for source in (
        value_cases,
        tensor_type_cases,
        edge_cases,
        declared_past_limit_cases,
        crafted_cases,
        split_cases,
        model_cases,
    ):
        out.extend(source())
    seen: set[str] = set()
    for c in out:
        for p in c.files:
            if p in seen and not c.split:
                raise AssertionError(f"two cases write {p}")
            seen.add(p)
    return out
