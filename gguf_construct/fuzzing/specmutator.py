"""The spec-aware mutator: edit one thing of a GGUF file by its declared meaning, for a coverage-guided engine.

:func:`mutate` reads the input with the tolerant read of the checker (:func:`gguf_construct.rulebook.read_head`)
into the byte-level model of :mod:`gguf_construct.breaking.crafted`, changes exactly one thing -- a count, a
string or array length, a value/item/tensor type, a dimension or n_dims, a tensor offset, the alignment, a key of
the key registry (``spec/keys.yaml``) or of the architecture's hyperparameters as llama.cpp's replayed loader reads
them (:func:`gguf_construct.arch.plan_load`), the architecture itself, a tensor of the shape
:func:`gguf_construct.arch.expect.expect` says llama.cpp asks for -- and writes the file again: byte-exact
(only that thing differs) or, one time in :data:`BREAK_EVERY`, broken on purpose by one of the named breakages
of :mod:`gguf_construct.breaking.mutations`.  :func:`crossover` splices two files' fields (records of one into
the other).

The engine is libFuzzer: ``fuzz/harness/common.cpp`` embeds Python in the ``*_spec`` targets and calls
:func:`libfuzzer_mutate` / :func:`libfuzzer_crossover` from ``LLVMFuzzerCustomMutator`` /
``LLVMFuzzerCustomCrossOver``.  ``None`` asks the engine for one of its byte-level mutations instead: for an input
our read cannot split into fields, and one time in :data:`BYTES_EVERY` (so comparison-guided byte edits still
happen).  Values come from the spec, never from a list kept here: type ids from ``spec/gguf.yaml`` and
``spec/tensor_types/``, keys from ``spec/keys.yaml``, hyperparameters and tensor shapes from the model layer.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import struct
from collections import Counter, OrderedDict
from typing import Callable

from ..arch import MetaValue, TensorMeta, plan_load
from ..arch.expect import expect
from ..arch.synth import model_architectures
from ..breaking import mutations as breakages
from ..breaking.crafted import RawFile, RawKV, RawTensor, encode_value, payload, set_payload, tensor_nbytes
from ..format import structs
from ..format.reader import MAX_DIMS, align_offset
from ..format.spec import byte_order, load_yaml, tensor_type_by_id
from ..rulebook import read_head
from ..format import keynames

__all__ = [
    "mutate",
    "crossover",
    "parse",
    "setup",
    "libfuzzer_mutate",
    "libfuzzer_crossover",
    "KINDS",
    "STATS",
    "BREAK_EVERY",
    "BYTES_EVERY",
]

BREAK_EVERY = 8  # one output in 8 is broken on purpose by a named breakage
BYTES_EVERY = 6  # one call in 6 is left to the engine's byte-level mutations
MAX_PARSE = 4 << 20  # inputs larger than this are left to the engine (the read of a 4 MiB vocabulary costs ~1 s)
STATS: Counter = Counter()  # kind -> how many outputs it made (written at exit to $GGUF_MUTATOR_STATS)

_VT = {vt["name"]: vt["id"] for vt in structs.container_spec()["value_types"]}
_SCALARS = {vt["id"]: vt for vt in structs.container_spec()["value_types"] if vt.get("encoding")}
_ARRAY, _STRING = _VT["ARRAY"], _VT["STRING"]
_FMT = {"u1": "B", "i1": "b", "u2": "H", "i2": "h", "u4": "I", "i4": "i", "u8": "Q", "i8": "q", "f4": "f", "f8": "d"}


class Parsed:
    """An input split into fields: the raw model, the read's context, the metadata and tensor infos as the
    replayed loader takes them."""

    def __init__(self, data: bytes):
        ctx = read_head(data)
        if not ctx.head_complete:
            raise ValueError("head not complete")
        buf = ctx.buf
        self.kv_values = {kv.key: kv for kv in ctx.kvs}
        kvs = [RawKV(kv.key_bytes, kv.vtype, bytes(buf[kv.value_offset : kv.end])) for kv in ctx.kvs]
        tensors = [RawTensor(t.name_bytes, list(t.dims), t.type, t.data_offset) for t in ctx.tensors]
        start = ctx.data_start if ctx.data_start is not None else ctx.head_end
        self.raw = RawFile(ctx.version, ctx.byte_order, kvs, tensors, bytes(buf[start:]))
        self.version, self.byte_order = ctx.version, ctx.byte_order
        self.ctx = ctx

    @functools.cached_property
    def model(self) -> tuple[dict[str, MetaValue], dict[str, TensorMeta]]:
        """``(meta, tensors)`` as :func:`~gguf_construct.arch.plan_load` takes them (first of duplicate keys)."""
        meta: dict[str, MetaValue] = {}
        for kv in self.ctx.kvs:
            if kv.key in meta:
                continue
            if kv.vtype == _ARRAY:
                meta[kv.key] = MetaValue("ARRAY", kv.value.data, _name(kv.value.type))
            else:
                meta[kv.key] = MetaValue(_name(kv.vtype), kv.value)
        tensors = {t.name: TensorMeta(t.name, tuple(t.dims), t.type) for t in self.ctx.tensors}
        return meta, tensors

    @functools.cached_property
    def keys_read(self) -> dict[str, str]:
        """Every key the replayed full load reads, with the C type it reads it as (empty without metadata)."""
        meta, tensors = self.model
        return plan_load(meta, tensors, vocab_only=False).keys_read if meta else {}

    @property
    def arch(self) -> str | None:
        """The value of general.architecture, if it is a string."""
        v = self.model[0].get(keynames.GENERAL_ARCHITECTURE)
        return v.value if v is not None and isinstance(v.value, str) else None


def _name(vtype: int) -> str:
    return next((n for n, i in _VT.items() if i == vtype), str(vtype))


_cache: OrderedDict[bytes, Parsed | None] = OrderedDict()


def parse(data: bytes) -> Parsed | None:
    """The input split into fields, or None when its head cannot be read (cached: the engine mutates the same
    corpus entries again and again)."""
    digest = hashlib.blake2b(data, digest_size=16).digest()
    if digest in _cache:
        _cache.move_to_end(digest)
        return _cache[digest]
    try:
        got = Parsed(bytes(data)) if len(data) <= MAX_PARSE else None
    except Exception:  # noqa: BLE001 - any input our read cannot split is left to byte-level edits
        got = None
    _cache[digest] = got
    if len(_cache) > 256:
        _cache.popitem(last=False)
    return got


# -- values by meaning --------------------------------------------------------------------------------------------
def _boundary(rng: random.Random, n: int, width: int = 8) -> int:
    """A count, length or dimension near where readers decide: off by one, zero, the width's edges, overflow."""
    top = (1 << (8 * width)) - 1
    options = [
        max(n - 1, 0),
        n + 1,
        0,
        1,
        n * 2,
        n + rng.randint(2, 64),
        1 << 31,
        (1 << 32) - 1,
        1 << 32,
        (1 << 63) - 1,
        1 << 63,
        top,
        top - n + 1,
    ]
    return rng.choice([o for o in options if 0 <= o <= top])


def _scalar(rng: random.Random, vtype: int):
    """A value of a scalar type near its edges."""
    enc = _SCALARS[vtype]["encoding"]
    if enc in ("f4", "f8"):
        return rng.choice([0.0, -0.0, 1.0, -1.0, 1e-5, 1e30, -1e30, float("inf"), float("-inf"), float("nan")])
    bits = int(enc[1]) * 8
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if enc[0] == "i" else (0, (1 << bits) - 1)
    return rng.choice([lo, hi, 0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 4096, hi // 2 + 1, rng.randint(lo, hi)])


@functools.lru_cache(maxsize=1)
def _registry() -> list[tuple[str, str, str | None]]:
    """(key pattern, type name, item type) of every key of spec/keys.yaml."""
    return [(k["key"], k["type"], k.get("item_type")) for k in load_yaml("keys.yaml")["keys"]]


@functools.lru_cache(maxsize=1)
def _architectures() -> list[str]:
    return model_architectures()


_TENSOR_TYPES = sorted(tensor_type_by_id())


def _value_payload(p: Parsed, rng: random.Random, gtype: str, item: str | None, key: str) -> tuple[int, bytes]:
    """A value of type ``gtype`` (a GGUF type name, or a C type of the loader) for ``key``, encoded."""
    vt = _VT.get(gtype, _VT["UINT32"])
    if vt == _STRING:
        arch = p.arch or "llama"
        value = rng.choice(
            [
                arch,
                rng.choice(_architectures()),
                "",
                "x" * rng.randint(1, 300),
                "gpt2",
                "llama",
                "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",
            ]
        )
        return vt, encode_value(vt, value, version=p.version, byte_order=p.byte_order)
    if vt == _ARRAY:
        it = _VT.get(item or "", rng.choice([_VT["INT32"], _VT["FLOAT32"], _STRING, _VT["UINT32"]]))
        n = rng.choice([0, 1, 2, 3, 4, 8, 32, 64])
        values = (
            [rng.choice(["a", "<s>", "</s>", "\u0120t", "ab cd"]) for _ in range(n)]
            if it == _STRING
            else [_scalar(rng, it) for _ in range(n)]
            if it in _SCALARS
            else []
        )
        if it == _ARRAY:
            it, values = _VT["INT32"], []
        return vt, encode_value(vt, values, version=p.version, byte_order=p.byte_order, item_type=it)
    return vt, encode_value(vt, _scalar(rng, vt), version=p.version, byte_order=p.byte_order)


# -- the mutations --------------------------------------------------------------------------------------------------
def m_count(p: Parsed, raw: RawFile, rng: random.Random) -> str:
    """A header count: tensors or KV pairs."""
    if rng.random() < 0.5:
        raw.n_tensors = _boundary(rng, len(raw.tensors), _width(p))
        return "count.tensors"
    raw.n_kv = _boundary(rng, len(raw.kvs), _width(p))
    return "count.kv"


def _width(p: Parsed) -> int:
    return structs.family(p.version, p.byte_order).primitive_width("count_t")


def m_length(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """A string length or array length written in a value, or a tensor name's length."""
    w, bo = _width(p), byte_order(p.byte_order).struct
    fmt = bo + ("Q" if w == 8 else "I")
    strings = [kv for kv in raw.kvs if kv.vtype == _STRING]
    arrays = [kv for kv in raw.kvs if kv.vtype == _ARRAY and len(payload(kv)) >= 4 + w]
    choice = rng.random()
    if choice < 0.4 and strings:
        kv = rng.choice(strings)
        n = struct.unpack(fmt, payload(kv)[:w])[0]
        set_payload(kv, struct.pack(fmt, _boundary(rng, n, w)) + payload(kv)[w:])
        return "length.string"
    if choice < 0.8 and arrays:
        kv = rng.choice(arrays)
        n = struct.unpack(fmt, payload(kv)[4 : 4 + w])[0]
        set_payload(kv, payload(kv)[:4] + struct.pack(fmt, _boundary(rng, n, w)) + payload(kv)[4 + w :])
        return "length.array"
    if raw.tensors:
        t = rng.choice(raw.tensors)
        t.name_len = _boundary(rng, len(t.name), w)
        return "length.tensor_name"
    return None


def m_type(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """A value type, an array's item type, or a tensor type: another one the spec declares, or one it does not."""
    bad = [len(_VT) + 1, 255, 1 << 16, (1 << 31) + 1, (1 << 32) - 1]
    kind = rng.random()
    if kind < 0.4 and raw.tensors:
        t = rng.choice(raw.tensors)
        t.type = rng.choice(_TENSOR_TYPES) if rng.random() < 0.8 else rng.choice(bad)
        return "type.tensor"
    if not raw.kvs:
        return None
    kv = rng.choice(raw.kvs)
    if kind < 0.7 and kv.vtype == _ARRAY and len(payload(kv)) >= 4:
        item = rng.choice(list(_VT.values())) if rng.random() < 0.8 else rng.choice(bad)
        set_payload(kv, struct.pack(byte_order(p.byte_order).struct + "I", item) + payload(kv)[4:])
        return "type.item"
    kv.vtype = rng.choice(list(_VT.values())) if rng.random() < 0.8 else rng.choice(bad)
    return "type.value"


def m_dimension(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """A tensor dimension or n_dimensions: edges, overflows, multiples of the type's block and not."""
    if not raw.tensors:
        return None
    t = rng.choice(raw.tensors)
    if rng.random() < 0.25:
        t.n_dims = rng.choice([0, 1, 2, 3, MAX_DIMS, MAX_DIMS + 1, 255, (1 << 32) - 1])
        return "dimension.n_dims"
    if not t.dims:
        t.dims = [rng.choice([1, 32, 256])]
        return "dimension.add"
    i = rng.randrange(len(t.dims))
    spec = tensor_type_by_id().get(t.type)
    block = spec.block_size if spec else 1
    t.dims[i] = rng.choice(
        [
            _boundary(rng, t.dims[i]),
            t.dims[i] + block,
            max(t.dims[i] - block, 0),
            block * rng.randint(1, 8),
            t.dims[i] + 1,
        ]
    )
    return "dimension.ne"


def m_offset(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """A tensor's data offset: another tensor's (overlap), misaligned, past the end, huge, or all re-laid out."""
    if not raw.tensors:
        return None
    t = rng.choice(raw.tensors)
    a = raw.alignment
    size = len(raw.data)
    t.offset = rng.choice(
        [o.offset for o in raw.tensors]
        + [
            t.offset + 1,
            t.offset + a,
            max(t.offset - a, 0),
            align_offset(size, a),
            size + a,
            size - 1 if size else 0,
            (1 << 63) - 1,
            (1 << 64) - a,
            t.offset + (1 << 32),
        ]
    )
    return "offset.tensor"


def m_alignment(p: Parsed, raw: RawFile, rng: random.Random) -> str:
    """general.alignment: a power of two or not, zero, huge, or another type; the tensors re-laid out or not."""
    key = b"general.alignment"
    value = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256, 4096, 0, 3, 7, 12, 24, 1 << 20, 1 << 31, (1 << 32) - 1])
    if rng.random() < 0.15:
        vt = rng.choice([_VT["UINT8"], _VT["INT32"], _VT["UINT64"], _STRING])
        raw.set_raw(
            key,
            vt,
            encode_value(
                vt,
                str(value) if vt == _STRING else value % 256 if vt == _VT["UINT8"] else min(value, (1 << 31) - 1),
                version=p.version,
                byte_order=p.byte_order,
            ),
        )
        return "alignment.type"
    raw.set(key, "UINT32", value)
    if rng.random() < 0.7 and 0 < value <= 4096 and _laid_out(raw):
        raw.relayout()
        return "alignment.relayout"
    return "alignment.value"


def m_key(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """A key of the registry or of the architecture's hyperparameters (as the loader reads them), set to a value
    of its type near the edges, to a value of another type, or removed; or the architecture changed."""
    arch = p.arch or "llama"
    roll = rng.random()
    if roll < 0.15:
        raw.set(keynames.GENERAL_ARCHITECTURE, "STRING", rng.choice(_architectures()))
        return "key.architecture"
    if roll < 0.25 and raw.kvs:
        raw.kvs.pop(rng.randrange(len(raw.kvs)))
        return "key.remove"
    if roll < 0.65:
        read = p.keys_read
        if read:
            key = rng.choice(sorted(read))
            ctype = read[key]
            gtype = _ctype_gguf(ctype) if rng.random() < 0.85 else rng.choice(list(_VT))
            vt, payload = _value_payload(p, rng, gtype, None, key)
            raw.set_raw(key, vt, payload)
            return "key.hparam"
    pattern, gtype, item = rng.choice(_registry())
    key = pattern.replace("{arch}", arch).replace("{id}", str(rng.randint(0, 2))).replace("{name}", "tool_use")
    if rng.random() < 0.15:
        gtype = rng.choice(list(_VT))
    vt, payload = _value_payload(p, rng, gtype, item, key)
    raw.set_raw(key, vt, payload)
    return "key.registry"


@functools.lru_cache(maxsize=1)
def _ctypes() -> dict[str, str]:
    from ..arch import model_spec

    return model_spec()["key_types"]["scalar"]


def _ctype_gguf(ctype: str) -> str:
    return _ctypes().get(ctype, "UINT32")


def m_tensor(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """A tensor llama.cpp asks for (:func:`~gguf_construct.arch.expect.expect`), added or given the shape it
    expects -- or, sometimes, a shape off by one in one dimension."""
    meta, tensors = p.model
    if keynames.GENERAL_ARCHITECTURE not in meta:
        return None
    got = expect(meta, tensors)
    wanted = [e for e in got.tensors if e.status in ("missing", "shape") and all(d for d in e.shape)]
    if not wanted:
        if not raw.tensors:
            return None
        raw.tensors.pop(rng.randrange(len(raw.tensors)))
        if _laid_out(raw):
            raw.relayout()
        return "tensor.drop"
    required = [e for e in wanted if e.required]
    e = rng.choice(required if required and rng.random() < 0.75 else wanted[:8])
    dims = list(e.shape)
    if rng.random() < 0.15:
        i = rng.randrange(len(dims))
        dims[i] += rng.choice([-1, 1])
    name = e.name.encode()
    raw.tensors = [t for t in raw.tensors if t.name != name]
    n = 1
    for d in dims:
        n *= max(d, 0)
    if n * 4 > 1 << 20 or not _laid_out(raw):
        return None
    raw.relayout()
    raw.append_tensor(name, "F32", dims, bytes(4 * n))
    return "tensor.expected" if e.status == "missing" else "tensor.reshaped"


# -- mutations that keep a model loadable ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _enumerated() -> dict[str, list]:
    """Keys whose values the spec enumerates -> those values: ``values`` of ``spec/keys.yaml`` and the
    vocabulary's tokenizer models and BPE pre-tokenizers of ``spec/model.yaml``."""
    from ..arch import model_spec

    out: dict[str, list] = {}
    for k in load_yaml("keys.yaml")["keys"]:
        if isinstance(k.get("values"), dict) and k["type"] != "ARRAY":
            out[k["key"]] = list(k["values"])
    vocab = model_spec()["vocab"]
    out[vocab["model_key"]] = list(vocab["models"])
    out[vocab["pre_key"]] = list(vocab["bpe_pre"])
    return out


def _plausible(rng: random.Random, key: str, current, n_vocab: int) -> int:
    """A small value for an integer hyperparameter, near the current one or at the loader's usual sizes (a
    token id: in the vocabulary, its last one, or one past it)."""
    cur = current if isinstance(current, int) and not isinstance(current, bool) else 0
    options = [0, 1, 2, 3, 4, 8, 16, 32, 64, cur + 1, max(cur - 1, 0), cur * 2, max(cur // 2, 1)]
    if key.endswith("token_id"):
        options = [0, 1, 2, max(n_vocab - 1, 0), n_vocab, n_vocab + 1]
    return rng.choice(options)


def m_flip(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """One key the loader tests across its branches: a bool the loader reads turned over, or a key whose values
    the spec enumerates (tokenizer model, BPE pre-tokenizer, pooling and rope types ...) set to another one."""
    meta, _ = p.model
    read = p.keys_read
    bools = [k for k, c in read.items() if _ctype_gguf(c) == "BOOL"]
    enums = [k for k in _enumerated() if k.replace("{arch}", p.arch or "") in read or k in meta]
    if bools and (not enums or rng.random() < 0.3):
        key = rng.choice(bools)
        old = meta.get(key)
        raw.set(key, "BOOL", not (old.value if old is not None else False))
        return "flip.bool"
    if not enums:
        return None
    pattern = rng.choice(enums)
    key = pattern.replace("{arch}", p.arch or "")
    value = rng.choice(_enumerated()[pattern])
    spec_type = next((k["type"] for k in load_yaml("keys.yaml")["keys"] if k["key"] == pattern), "STRING")
    if isinstance(value, str) or spec_type == "STRING":
        raw.set(key, "STRING", str(value))
    else:
        raw.set(key, spec_type, int(value))
    return "flip.enum"


def m_fit(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """One integer hyperparameter the loader reads set to a small plausible value, and every tensor the loader
    then asks for given the shape it computes (:func:`~gguf_construct.arch.expect.expect`).  Of a few candidate
    values the first the replayed load accepts is taken (most of the time), so the file stays a complete model
    and the full load goes on past ``load_hparams``; otherwise the value the replay refuses (an edge)."""
    meta, tensors = p.model
    if keynames.GENERAL_ARCHITECTURE not in meta:
        return None
    enumerated = _enumerated()
    ints = [
        k
        for k, c in p.keys_read.items()
        if _ctype_gguf(c) in ("UINT32", "INT32", "UINT64") and not c.startswith("enum") and "." in k
    ]
    ints = [k for k in ints if k.replace(p.arch or "", "{arch}") not in enumerated]
    if not ints:
        return None
    key = rng.choice(sorted(ints))
    tokens = meta.get(keynames.TOKENIZER_GGML_TOKENS)
    n_vocab = len(tokens.value) if tokens is not None and hasattr(tokens.value, "__len__") else 0
    old = meta.get(key)
    gtype = _ctype_gguf(p.keys_read[key]) if old is None or old.type == "ARRAY" else old.type
    if gtype not in ("UINT32", "INT32", "UINT64", "INT64", "UINT16", "UINT8"):
        gtype = "UINT32"
    want_loadable = rng.random() < 0.8
    got = None
    value = 0
    for _ in range(4):
        value = _plausible(rng, key, old.value if old is not None else None, n_vocab)
        new_meta = dict(meta)
        new_meta[key] = MetaValue(gtype, value)
        got = expect(new_meta, tensors)
        clean = not [q for q in got.problems if not q.code.startswith("TENSOR")]
        if clean == want_loadable:
            break
    raw.set(key, gtype, value)
    if got is None or not _laid_out(raw):
        return "fit.value"
    changed = 0
    unused = {e.name.encode() for e in got.tensors if e.status == "unused"}
    if unused and rng.random() < 0.9:  # llama.cpp refuses a file with tensors it did not ask for
        raw.tensors = [t for t in raw.tensors if t.name not in unused]
        raw.relayout()
        changed += 1
    for e in got.tensors:
        # an optional tensor added would switch the loader to another branch (a fused tensor for the split ones)
        wanted = e.status == "shape" or (e.status == "missing" and e.required)
        if not wanted or e.duplicate or not e.shape or not all(e.shape):
            continue
        n = 1
        for d in e.shape:
            n *= int(d or 0)
        if n <= 0 or n * 4 > 1 << 18 or len(e.shape) > MAX_DIMS:
            continue
        name = e.name.encode()
        raw.tensors = [t for t in raw.tensors if t.name != name]
        raw.relayout()
        raw.append_tensor(name, "F32", [int(d or 0) for d in e.shape], bytes(4 * n))
        changed += 1
    return "fit.refit" if changed else "fit.value"


def m_array(p: Parsed, raw: RawFile, rng: random.Random) -> str | None:
    """A hyperparameter the loader reads written as a per-layer ARRAY (``get_key_or_arr`` / ``get_arr``): one
    item per block of its type, or one too many or too few, or of another item type."""
    meta, _ = p.model
    arch = p.arch
    if not arch:
        return None
    keys = [k for k, c in p.keys_read.items() if k.startswith(arch + ".") and _ctype_gguf(c) in _NUMERIC]
    arrays = [k for k in keys if k.replace(arch, "{arch}", 1) in _array_keys()]
    if arrays and rng.random() < 0.85:
        keys = arrays
    if not keys:
        return None
    key = rng.choice(sorted(keys))
    blocks = meta.get(f"{arch}.block_count")
    n = int(blocks.value) if blocks is not None and isinstance(blocks.value, int) and blocks.value < 4096 else 1
    n = rng.choice([n, n, n, n + 1, max(n - 1, 0), 4, 8, 512, 513])
    item = _ctype_gguf(p.keys_read[key])
    if rng.random() < 0.15:
        item = rng.choice(list(_NUMERIC))
    old = meta.get(key)
    base = old.value if old is not None and isinstance(old.value, (int, float)) else 1
    vt = _VT[item]
    values = [base] * n
    if values and rng.random() < 0.5:
        values[rng.randrange(n)] = _scalar(rng, vt)
    if item in ("FLOAT32", "FLOAT64"):
        values = [float(v) for v in values]
    else:
        enc = _SCALARS[vt]["encoding"]
        bits = int(enc[1]) * 8
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if enc[0] == "i" else (0, (1 << bits) - 1)
        values = [min(max(int(v), lo), hi) if v == v and abs(v) != float("inf") else 0 for v in values]
    raw.set(key, "ARRAY", values, item_type=item)
    return "array.hparam"


_NUMERIC = ("UINT32", "INT32", "FLOAT32", "UINT64", "BOOL")


@functools.lru_cache(maxsize=1)
def _array_keys() -> frozenset[str]:
    """The keys the architectures' loader programs (``spec/architectures/*.yaml``) read with ``get_key_or_arr``
    or ``get_arr``: those a per-layer array is right for."""
    import re
    from ..format.spec import spec_dir

    found: set[str] = set()
    pattern = re.compile(r"get_(?:key_or_arr|arr)\('+([^']+)'")
    for path in sorted((spec_dir() / "architectures").glob("*.yaml")):
        found.update(pattern.findall(path.read_text()))
    return frozenset(found)


def _break(p: Parsed, raw: RawFile, rng: random.Random) -> bytes | None:
    """The file written, then broken on purpose by one named breakage (:mod:`gguf_construct.breaking.mutations`)."""
    fields = raw.fields()
    for t, rt in zip(fields.tensors, raw.tensors):
        t.blob = raw.data[rt.offset : rt.offset + _nbytes(rt)] if rt.offset < len(raw.data) else b""
    pick = breakages.RandomPick(rng)
    for _ in range(4):
        m = rng.choice(breakages.MUTATIONS)
        try:
            m.edit(fields, pick)
        except breakages.Skip:
            continue
        except Exception:  # noqa: BLE001 - a breakage that does not fit this carrier
            return None
        STATS["break." + m.name] += 1
        return fields.encode(with_marks=False)[0]
    return None


def _laid_out(raw: RawFile) -> bool:
    """True when every tensor's data is small and of a known type, so the tensors can be re-laid out."""
    sizes = [_nbytes(t) for t in raw.tensors]
    return (
        raw.alignment <= 1 << 16
        and all(t.type in tensor_type_by_id() and len(t.dims) <= MAX_DIMS for t in raw.tensors)
        and sum(sizes) <= 1 << 20
        and all(t.offset < 1 << 30 for t in raw.tensors)
    )


def _to_bytes(raw: RawFile) -> bytes:
    """The file written (:meth:`RawFile.to_bytes`, with its head built once)."""
    head = raw.head()
    pad = (
        raw.head_pad
        if raw.head_pad is not None
        else bytes(align_offset(len(head), raw.alignment) - len(head))
        if raw.tensors and raw.alignment <= 1 << 16
        else b""
    )
    out = b"".join((head, pad, raw.data, raw.tail))
    return out[: raw.truncate] if raw.truncate is not None else out


def _nbytes(t: RawTensor) -> int:
    try:
        return tensor_nbytes(t)
    except Exception:  # noqa: BLE001 - an unknown type or a shape that does not divide
        return 0


KINDS: dict[str, Callable[[Parsed, RawFile, random.Random], str | None]] = {
    "count": m_count,
    "length": m_length,
    "type": m_type,
    "dimension": m_dimension,
    "offset": m_offset,
    "alignment": m_alignment,
    "key": m_key,
    "tensor": m_tensor,
    "flip": m_flip,
    "fit": m_fit,
    "array": m_array,
}
# how often each kind is drawn: the model layer's edits (keys, tensors) reach deepest into the loader
WEIGHTS = {
    "count": 1,
    "length": 2,
    "type": 2,
    "dimension": 2,
    "offset": 1,
    "alignment": 1,
    "key": 4,
    "tensor": 3,
    "flip": 4,
    "fit": 5,
    "array": 1,
}


def mutate(data: bytes, rng: random.Random, max_size: int | None = None) -> bytes | None:
    """One spec-aware edit of ``data`` (None when the input cannot be split into fields or no edit applies)."""
    p = parse(data)
    if p is None:
        return None
    names = list(KINDS)
    for _ in range(3):
        raw = p.raw.copy()
        kind = rng.choices(names, [WEIGHTS[n] for n in names])[0]
        try:
            label = KINDS[kind](p, raw, rng)
            if label is None:
                continue
            if rng.randrange(BREAK_EVERY) == 0:
                out = _break(p, raw, rng)
            else:
                out = _to_bytes(raw)
        except Exception:  # noqa: BLE001 - a value the permissive build cannot write: try another edit
            if os.environ.get("GGUF_FUZZ_DEBUG"):
                raise
            continue
        if out is None or (max_size is not None and len(out) > max_size) or out == data:
            continue
        STATS[label] += 1
        return out
    return None


def crossover(a: bytes, b: bytes, rng: random.Random, max_size: int | None = None) -> bytes | None:
    """A splice of two files' fields: KV pairs, tensors (with their data) or the architecture's keys of ``b``
    put into ``a``."""
    pa, pb = parse(a), parse(b)
    if pa is None or pb is None:
        return None
    raw = pa.raw.copy()
    donor = pb.raw
    kind = rng.random()
    if kind < 0.4 and donor.kvs:
        for kv in rng.sample(donor.kvs, min(len(donor.kvs), rng.randint(1, 4))):
            raw.set_raw(kv.key, kv.vtype, payload(kv))
        label = "splice.kv"
    elif kind < 0.7 and donor.tensors and _laid_out(raw):
        for t in rng.sample(donor.tensors, min(len(donor.tensors), rng.randint(1, 3))):
            n = _nbytes(t)
            blob = donor.data[t.offset : t.offset + n]
            if len(blob) != n or any(x.name == t.name for x in raw.tensors) or t.type not in tensor_type_by_id():
                continue
            raw.relayout()
            raw.append_tensor(t.name, tensor_type_by_id()[t.type].name, list(t.dims), blob)
        label = "splice.tensors"
    else:
        arch = pb.arch
        if not arch:
            return None
        prefix = arch.encode() + b"."
        for kv in donor.kvs:
            if kv.key.startswith(prefix) or kv.key == b"general.architecture":
                raw.set_raw(kv.key, kv.vtype, payload(kv))
        label = "splice.architecture"
    try:
        out = _to_bytes(raw)
    except Exception:  # noqa: BLE001
        return None
    if (max_size is not None and len(out) > max_size) or out == a:
        return None
    STATS[label] += 1
    return out


# -- the engine's entry points ------------------------------------------------------------------------------------
_target = "ggml"


def setup(target: str) -> None:
    """Called once by the harness: ``ggml`` or ``llama``; warms the spec caches; registers the statistics dump."""
    global _target
    _target = target
    _registry()
    _architectures()
    global _stats_path
    _stats_path = os.environ.get("GGUF_MUTATOR_STATS")


_stats_path: str | None = None
_calls = 0


def _dump_stats() -> None:
    """Write :data:`STATS` to $GGUF_MUTATOR_STATS every 256 calls (libFuzzer ends with ``_Exit``: no atexit)."""
    global _calls
    _calls += 1
    if _stats_path and _calls % 256 == 0:
        import json

        tmp = _stats_path + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(json.dumps(dict(STATS), sort_keys=True))
        os.replace(tmp, _stats_path)


def libfuzzer_mutate(data: bytes, max_size: int, seed: int) -> bytes | None:
    """``LLVMFuzzerCustomMutator``'s Python side: the edited input, or None for a byte-level edit."""
    rng = random.Random(seed)
    _dump_stats()
    if os.environ.get("GGUF_FUZZ_TRACE"):
        import sys

        print("mutate", len(data), _calls, _stats_path, file=sys.stderr, flush=True)
    if rng.randrange(BYTES_EVERY) == 0:
        STATS["bytes"] += 1
        return None
    out = mutate(data, rng, max_size)
    if out is None:
        STATS["bytes.unparsed"] += 1
    return out


def libfuzzer_crossover(a: bytes, b: bytes, max_size: int, seed: int) -> bytes | None:
    """``LLVMFuzzerCustomCrossOver``'s Python side: a splice of two inputs' fields, or None."""
    return crossover(a, b, random.Random(seed), max_size)
