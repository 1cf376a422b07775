"""What the crafted files are made of: :class:`RawFile`, the byte-level model a breakage edits, the carrier file,
and the registry of named breakages (:data:`BREAKAGES`, filled by :func:`breakage`) with :func:`craft`.

The breakages themselves are registered by :mod:`.crafting` (one per rule) and :mod:`.crafting_security` (the
advisories and chat templates), both on top of this module; :mod:`.crafting` is the one to import.

:class:`RawFile` holds the records of the field model of :mod:`.rawfile` -- KV pairs whose value is their encoded
payload (:func:`RawKV`), tensor infos (:class:`~.rawfile.RawTI`) -- the data section as bytes, and overrides for
everything a valid writer would never produce (counts, version word, padding, truncation).  Its head is written
through that model (:meth:`RawFile.fields`), so both editing models share one set of records and one mapping onto
the generated family's permissive build.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..format import spec as _spec
from ..format import structs
from ..format.fieldtree import Raw
from ..format.reader import align_offset
from . import rawfile
from ..rulebook import read_head
from ..rulebook.walk import ALIGNMENT_KEY, ALIGNMENT_TYPE, _VT
from ..format import keynames

__all__ = [
    "RawKV",
    "payload",
    "set_payload",
    "RawTensor",
    "RawFile",
    "Breakage",
    "Crafted",
    "BREAKAGES",
    "CARRIER_NAME",
    "VT",
    "breakage",
    "breakages_for",
    "craft",
    "carrier",
    "encode_value",
    "struct_order",
    "tensor_nbytes",
]

VT = dict(_VT)


def encode_value(
    vtype: int | str, value: Any, *, version: int = 3, byte_order: str = "little", item_type: int | str | None = None
) -> bytes:
    """The payload bytes of a metadata value, written by the generated family's permissive build.

    Scalars are numbers, ``str``/``bytes`` for STRING; arrays take ``item_type`` and a list (for nested arrays,
    a list of ``(inner_item_type, inner_list)`` pairs).  Any number fits its field modulo its width, so invalid
    bools (2) are encodable.
    """
    vtype = VT[vtype] if isinstance(vtype, str) else vtype
    vt = structs.value_types()[vtype]
    fam = structs.family(version, byte_order)
    return fam.build(vt.get("encoding") or vt["type"], _build_value(vtype, value, item_type))[0]


def _build_value(vtype: int, value: Any, item_type: int | str | None = None) -> Any:
    """A value as the permissive build takes it."""
    if vtype == VT["STRING"]:
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if vtype != VT["ARRAY"]:
        return value
    item = VT[item_type] if isinstance(item_type, str) else item_type
    if item == VT["ARRAY"]:
        return {"type": item, "data": [_build_value(VT["ARRAY"], inner, it) for it, inner in value]}
    return {"type": item, "data": [_build_value(item, v) for v in value]}


# The records are those of the field model (:mod:`.rawfile`), one model for breaking files: a KV pair whose value
# is its encoded payload, written verbatim (``Raw``), and a tensor info (its bytes are in :attr:`RawFile.data`).
RawTensor = rawfile.RawTI


def RawKV(key: bytes, vtype: int, payload: bytes) -> rawfile.RawKV:  # noqa: N802 - reads as the record it makes
    """One KV pair as bytes: the key, the value type number and the encoded value (written as given)."""
    return rawfile.RawKV(key, vtype, Raw(bytes(payload)))


def payload(kv: rawfile.RawKV) -> bytes:
    """The encoded value of a KV pair made by :func:`RawKV`."""
    return kv.value.data


def set_payload(kv: rawfile.RawKV, data: bytes) -> None:
    """Replace the encoded value of a KV pair made by :func:`RawKV` (written verbatim)."""
    kv.value = Raw(bytes(data))


@dataclass
class RawFile:
    """A GGUF file at the byte level, with overrides for what valid writers never produce."""

    version: int = 3
    byte_order: str = "little"
    kvs: list[rawfile.RawKV] = field(default_factory=list)  # values written verbatim (see RawKV)
    tensors: list[RawTensor] = field(default_factory=list)
    data: bytes = b""  # the data section, from its (aligned) start
    magic: bytes = b"GGUF"
    version_word: int | None = None
    kv_count: int | None = None
    tensor_count: int | None = None
    head_pad: bytes | None = None  # bytes between the tensor infos and the data section (default: zeros)
    tail: bytes = b""
    truncate: int | None = None

    # -- reading ---------------------------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> "RawFile":
        """Split a valid GGUF file into its parts."""
        ctx = read_head(bytes(data))
        if not ctx.head_complete:
            raise ValueError("from_bytes needs a file whose head can be read")
        buf = ctx.buf
        kvs = [RawKV(kv.key_bytes, kv.vtype, bytes(buf[kv.value_offset : kv.end])) for kv in ctx.kvs]
        tensors = [RawTensor(t.name_bytes, list(t.dims), t.type, t.data_offset) for t in ctx.tensors]
        start = ctx.data_start if ctx.data_start is not None else ctx.head_end
        return cls(ctx.version, ctx.byte_order, kvs, tensors, bytes(buf[start:]))

    def copy(self) -> "RawFile":
        """A deep copy to break."""
        return copy.deepcopy(self)

    # -- metadata ------------------------------------------------------------------------------------------
    def encode(self, vtype, value, item_type=None) -> bytes:
        """:func:`encode_value` in this file's version and byte order."""
        return encode_value(vtype, value, version=self.version, byte_order=self.byte_order, item_type=item_type)

    def index(self, key: str | bytes) -> int:
        """Position of the first KV pair with ``key``."""
        key = key.encode() if isinstance(key, str) else key
        return next(i for i, kv in enumerate(self.kvs) if kv.key == key)

    def set(self, key: str | bytes, vtype, value, item_type=None) -> "RawFile":
        """Replace the value of ``key`` (kept in place) or append the pair."""
        key_b = key.encode() if isinstance(key, str) else key
        vt = VT[vtype] if isinstance(vtype, str) else vtype
        kv = RawKV(key_b, vt, self.encode(vt, value, item_type))
        try:
            self.kvs[self.index(key_b)] = kv
        except StopIteration:
            self.kvs.append(kv)
        return self

    def set_raw(self, key: str | bytes, vtype, payload: bytes) -> "RawFile":
        """Replace or append a pair with a hand-made payload."""
        key_b = key.encode() if isinstance(key, str) else key
        vt = VT[vtype] if isinstance(vtype, str) else vtype
        try:
            self.kvs[self.index(key_b)] = RawKV(key_b, vt, payload)
        except StopIteration:
            self.kvs.append(RawKV(key_b, vt, payload))
        return self

    def remove(self, key: str | bytes) -> "RawFile":
        """Drop the pair(s) with ``key``."""
        key_b = key.encode() if isinstance(key, str) else key
        self.kvs = [kv for kv in self.kvs if kv.key != key_b]
        return self

    def tensor(self, name: str | bytes) -> RawTensor:
        """The tensor info called ``name``."""
        name_b = name.encode() if isinstance(name, str) else name
        return next(t for t in self.tensors if t.name == name_b)

    def append_tensor(self, name: str | bytes, type_name: str, dims: list[int], raw: bytes) -> "RawFile":
        """Add a tensor at the canonical offset after the current data (data padded to the alignment)."""
        name_b = name.encode() if isinstance(name, str) else name
        a = self.alignment
        end = max((t.offset + tensor_nbytes(t) for t in self.tensors), default=0)
        offset = align_offset(end, a)
        data = self.data[:offset].ljust(offset, b"\0") + raw
        self.data = data.ljust(align_offset(len(data), a), b"\0")
        tid = next(t.id for t in _spec.tensor_types() if t.name == type_name)
        self.tensors.append(RawTensor(name_b, list(dims), tid, offset))
        return self

    def relayout(self) -> "RawFile":
        """Lay the tensors out canonically (in info order, each at the aligned end of the previous one) for the
        current alignment, keeping their bytes."""
        a = self.alignment
        body = b""
        for t in self.tensors:
            raw = self.data[t.offset : t.offset + tensor_nbytes(t)]
            t.offset = len(body)
            body = (body + raw).ljust(align_offset(len(body) + len(raw), a), b"\0")
        self.data = body
        return self

    @property
    def alignment(self) -> int:
        """ALIGNMENT as a reader computes it from the KV pairs (UINT32 general.alignment > 0, else 32)."""
        for kv in self.kvs:
            if kv.key == ALIGNMENT_KEY.encode() and kv.vtype == ALIGNMENT_TYPE:
                value = int.from_bytes(payload(kv)[:4], self.byte_order)
                return value if value > 0 else 32
            if kv.key == ALIGNMENT_KEY.encode():
                return 32
        return 32

    # -- writing -------------------------------------------------------------------------------------------
    def fields(self) -> "rawfile.RawFile":
        """This file as the field model of :mod:`.rawfile` (payloads written as they are), whose head mapping
        both models share."""
        version = self.version_word
        raw_version = (
            None if version is None else int.from_bytes((version % 2**32).to_bytes(4, self.byte_order), "little")
        )
        return rawfile.RawFile(
            self.version,
            self.byte_order,
            magic=self.magic,
            raw_version=raw_version,
            n_kv=self.kv_count,
            n_tensors=self.tensor_count,
            kvs=list(self.kvs),
            tensors=list(self.tensors),
        )

    def head(self) -> bytes:
        """Header, KV pairs and tensor infos, written by the generated family's permissive build."""
        return structs.family(self.version, self.byte_order).build("file_head", self.fields().head_value())[0]

    def head_padding(self) -> bytes:
        """The padding written after the head (zeros to the alignment when there are tensors)."""
        if self.head_pad is not None:
            return self.head_pad
        n = len(self.head())
        return b"\0" * (align_offset(n, self.alignment) - n) if self.tensors else b""

    def to_bytes(self) -> bytes:
        """The file."""
        out = self.head() + self.head_padding() + self.data + self.tail
        return out[: self.truncate] if self.truncate is not None else out


def tensor_nbytes(t: RawTensor) -> int:
    """The byte size of a tensor info's data (its type and dimensions)."""
    st = _spec.tensor_type_by_id()[t.type]
    n = 1
    for d in t.dims:
        n *= d
    return n // st.block_size * st.type_size


# -- the carrier ---------------------------------------------------------------------------------------------
CARRIER_NAME = "Tiny-1B-v1.0-Q4_0.gguf"


def _q4_0_blocks(n: int, byte_order: str) -> bytes:
    d = np.array([1.0], dtype=_spec.numpy_dtype("f2", byte_order)).tobytes()
    return b"".join(d + bytes((17 * i + j) & 0xFF for j in range(16)) for i in range(n))


def carrier(version: int = 3, byte_order: str = "little") -> RawFile:
    """A small valid model file that draws no finding at all: llama metadata with every required key, a
    five-token vocabulary, a Q4_0 matrix and an F32 vector, canonical layout.  Built with
    :class:`~gguf_construct.GGUFFile` and split into a :class:`RawFile`."""
    from ..filemodel.gguffile import GGUFFile

    g = GGUFFile.new(version=version, byte_order=byte_order)
    m = g.metadata
    m.set(keynames.GENERAL_ARCHITECTURE, "llama", "STRING")
    for key, value in (
        (keynames.GENERAL_NAME, "Tiny"),
        (keynames.GENERAL_BASENAME, "Tiny"),
        (keynames.GENERAL_SIZE_LABEL, "1B"),
        (keynames.GENERAL_VERSION, "v1.0"),
    ):
        m.set(key, value, "STRING")
    m.set(ALIGNMENT_KEY, 32, "UINT32")
    m.set(keynames.GENERAL_FILE_TYPE, 2, "UINT32")
    m.set(keynames.GENERAL_QUANTIZATION_VERSION, 2, "UINT32")
    for key, value in (
        ("context_length", 128),
        ("embedding_length", 32),
        ("block_count", 1),
        ("feed_forward_length", 64),
        ("attention.head_count", 4),
        ("rope.dimension_count", 8),
    ):
        m.set(f"llama.{key}", value, "UINT32")
    m.set(keynames.ARCH_ATTENTION_LAYER_NORM_RMS_EPSILON.format(arch="llama"), 1e-5, "FLOAT32")
    m.set(keynames.TOKENIZER_GGML_MODEL, "llama", "STRING")
    m.set(keynames.TOKENIZER_GGML_TOKENS, ["<unk>", "<s>", "</s>", "a", "b"], "ARRAY", "STRING")
    m.set(keynames.TOKENIZER_GGML_SCORES, np.array([0, 0, 0, -1, -2], dtype=np.float32), "ARRAY", "FLOAT32")
    m.set(keynames.TOKENIZER_GGML_TOKEN_TYPE, np.array([2, 3, 3, 1, 1], dtype=np.int32), "ARRAY", "INT32")
    m.set(keynames.TOKENIZER_GGML_BOS_TOKEN_ID, 1, "UINT32")
    m.set(keynames.TOKENIZER_GGML_EOS_TOKEN_ID, 2, "UINT32")
    m.set(keynames.TOKENIZER_GGML_ADD_BOS_TOKEN, True, "BOOL")
    g.add_tensor("token_embd.weight", _q4_0_blocks(5, byte_order), "Q4_0", shape=(32, 5))
    ones = np.ones(32, dtype=_spec.numpy_dtype("f4", byte_order)).tobytes()
    g.add_tensor("output_norm.weight", ones, "F32", shape=(32,))
    return RawFile.from_bytes(g.to_bytes())


# -- breakages -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Crafted:
    """A crafted file: its bytes, the rules expected to fire, and how to check it.

    ``files`` (name -> bytes) holds every file of a multi-file case (shard sets); ``file_name`` is the name to
    give a single file (naming rules); ``data`` asks for ``check(..., data=True)``; ``profile`` is the profile
    under which the rules fire (the model rules need ``llama.cpp``); ``limits`` are lowered
    implementation limits (:data:`gguf_construct.rulebook.container.LIMITS`) without which the rule cannot fire
    in a small file.
    """

    name: str
    data: bytes
    rules: frozenset
    file_name: str = CARRIER_NAME
    files: dict = field(default_factory=dict)
    check_data: bool = False
    limits: dict = field(default_factory=dict)
    doc: str = ""
    profile: str = "spec"


@dataclass(frozen=True)
class Breakage:
    """A named way to break a valid file, with the rules it makes fire."""

    name: str
    rules: frozenset
    apply: Callable[[RawFile], Any]
    doc: str
    needs_carrier: bool = False  # the breakage relies on the carrier's own keys and tensors


BREAKAGES: dict[str, Breakage] = {}


def breakage(name: str, *rules: str, carrier_only: bool = True):
    """Register the decorated function (it edits a :class:`RawFile` in place, or returns one) as the breakage
    ``name``, expected to make ``rules`` fire; ``carrier_only``: it needs the carrier's own keys and tensors."""

    def deco(fn):
        BREAKAGES[name] = Breakage(name, frozenset(rules), fn, (fn.__doc__ or "").strip(), carrier_only)
        return fn

    return deco


def breakages_for(rule_id: str) -> list[Breakage]:
    """The breakages expected to make ``rule_id`` fire."""
    return [b for b in BREAKAGES.values() if rule_id in b.rules]


def craft(name: str, base: bytes | RawFile | Any | None = None) -> Crafted:
    """Apply the breakage ``name`` to ``base`` (bytes, a :class:`RawFile`, a ``GGUFFile``; default: the carrier).

    Breakages that rebuild the file in another version or byte order, or that edit the carrier's own keys and
    tensors, work on the carrier only (see :attr:`Breakage.needs_carrier`).
    """
    b = BREAKAGES[name]
    if base is None:
        raw = carrier()
    elif isinstance(base, RawFile):
        raw = base.copy()
    elif isinstance(base, (bytes, bytearray, memoryview)):
        raw = RawFile.from_bytes(bytes(base))
    else:
        raw = RawFile.from_bytes(base.to_bytes())
    result = b.apply(raw)
    extra: dict = {}
    if isinstance(result, tuple):
        result, extra = result
    if isinstance(result, RawFile):
        raw = result
    data = raw.to_bytes() if not extra.get("files") else b""
    return Crafted(name, data, b.rules, doc=b.doc, **extra)


def struct_order(raw: RawFile) -> str:
    """The ``struct`` module's byte-order character of ``raw``'s byte order."""
    return _spec.byte_order(raw.byte_order).struct
