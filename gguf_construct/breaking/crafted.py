"""What the crafted files are made of: the carrier file, the registry of named breakages (:data:`BREAKAGES`, filled by
:func:`breakage`) with :func:`craft`, on the one raw-file model :class:`~.rawfile.RawFile`.

The breakages themselves are registered by :mod:`.crafting` (one per rule) and :mod:`.crafting_security` (the
advisories and chat templates), both on top of this module; :mod:`.crafting` is the one to import.

A crafted file is a :class:`~.rawfile.RawFile` read from a valid file (``RawFile.from_bytes``): KV pairs whose
value is their encoded payload (:func:`RawKV`), tensor infos, the data section as one blob, and overrides for
everything a valid writer would never produce (counts, version word, padding, truncation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..format import spec as _spec
from ..format.fieldtree import Raw
from . import rawfile
from ..rulebook.walk import ALIGNMENT_KEY, _VT
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

# The one raw-file model (:mod:`.rawfile`): crafted files are :class:`RawFile` objects holding their data section
# as one blob (``RawFile.from_bytes``); a KV pair's value is its encoded payload, written verbatim.
RawFile = rawfile.RawFile
RawTensor = rawfile.RawTI
encode_value = rawfile.encode_value
tensor_nbytes = rawfile.tensor_nbytes


def RawKV(key: bytes, vtype: int, payload: bytes) -> rawfile.RawKV:  # noqa: N802 - reads as the record it makes
    """One KV pair as bytes: the key, the value type number and the encoded value (written as given)."""
    return rawfile.RawKV(key, vtype, Raw(bytes(payload)))


def payload(kv: rawfile.RawKV) -> bytes:
    """The encoded value of a KV pair made by :func:`RawKV`."""
    return kv.value.data


def set_payload(kv: rawfile.RawKV, data: bytes) -> None:
    """Replace the encoded value of a KV pair made by :func:`RawKV` (written verbatim)."""
    kv.value = Raw(bytes(data))


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
