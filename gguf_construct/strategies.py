"""Hypothesis strategies for GGUF files: public API for testing GGUF readers and writers.

``gguf_files()`` draws ``(data, document)`` pairs: the bytes of a valid GGUF file and the :class:`Document`
they encode.  Everything is derived from the spec (value types, versions, tensor types and their block sizes).

Example::

    from hypothesis import given
    from gguf_construct.strategies import gguf_files

    @given(gguf_files(versions=[3], max_tensors=2))
    def test_my_reader(sample):
        data, doc = sample
        assert my_reader(data).keys() == {k for k, _ in doc.metadata}

``invalid_gguf_files()`` draws ``(data, rules)`` pairs: a file broken at the structure level in one named way
(see :mod:`gguf_construct.breaking.mutations`) and the IDs of the conformance rules it breaks (spec/rules.yaml),
as the breakage declared them for the edit it made (not derived from the checker)::

    from gguf_construct.strategies import invalid_gguf_files

    @given(invalid_gguf_files(rules=["STR-EOF", "ARR-EOF"]))
    def test_my_reader_rejects(sample):
        data, rules = sample
        with pytest.raises(MyReaderError):
            my_reader(data)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from .format import spec as _spec
from .format import structs
from .breaking.intent import Labels, compose
from .breaking.mutations import HypothesisPick, Skip, mutations_for
from .breaking.rawfile import from_document
from .rulebook.catalog import PROFILES, catalog
from .format.enums import GGMLType, GGUFValueType
from .filemodel.gguffile import GGUFFile, tensor_nbytes
from .format.values import GGUFValue, numpy_dtype_of
from .format import keynames

__all__ = [
    "Document",
    "gguf_files",
    "invalid_gguf_files",
    "documents",
    "metadata_values",
    "metadata_keys",
    "tensor_specs",
    "violations",
    "model_files",
    "invalid_model_files",
    "MODEL_TENSOR_TYPES",
    "broken_gguf_files",
    "Broken",
]

_SCALARS = [vt for vt in GGUFValueType if structs.value_kind(vt) != "array"]
_ALIGNMENTS = [None, 8, 16, 64, 128]


@dataclass
class Document:
    """What a generated GGUF file contains, independent of its encoding."""

    version: int
    byte_order: str
    alignment: int | None
    metadata: list[tuple[str, GGUFValue]] = field(default_factory=list)
    tensors: list[tuple[str, GGMLType, tuple[int, ...], bytes]] = field(default_factory=list)

    def build(self) -> GGUFFile:
        """The :class:`GGUFFile` of this document (canonical layout)."""
        gguf = GGUFFile.new(self.version, self.byte_order)  # general.alignment, if any, is in metadata
        for key, value in self.metadata:
            gguf.metadata[key] = value
        for name, gtype, shape, raw in self.tensors:
            gguf.add_tensor(name, raw, gtype, shape=shape)
        return gguf

    def to_bytes(self) -> bytes:
        """Encode the document."""
        return self.build().to_bytes()


def _value_types_for(version: int) -> list[GGUFValueType]:
    have = structs.value_types_in(version)
    return [vt for vt in _SCALARS if int(vt) in have]


def _scalar(vtype: GGUFValueType) -> st.SearchStrategy:
    kind = structs.value_kind(vtype)  # drawn by what the spec says the type is
    if kind == "text":
        return st.text(max_size=12)
    if kind == "bool":
        return st.booleans()
    if kind == "float":
        dtype = numpy_dtype_of(vtype)
        assert dtype is not None  # every float kind has an encoding
        if dtype.itemsize == 8:
            return st.floats()
        width = 8 * dtype.itemsize
        return st.floats(width=width).map(lambda x: float(dtype.type(x)))  # type: ignore[arg-type]
    info = np.iinfo(numpy_dtype_of(vtype))
    return st.integers(int(info.min), int(info.max))


def _array(item: GGUFValueType, version: int, depth: int, nested: bool = True) -> st.SearchStrategy:
    if item == GGUFValueType.ARRAY:
        inner = metadata_values(version=version, depth=depth + 1, nested=nested, arrays_only=True)
        return st.lists(inner, max_size=3).map(lambda vs: GGUFValue(GGUFValueType.ARRAY, vs, item))
    if item == GGUFValueType.STRING:
        return st.lists(_scalar(item), max_size=6).map(lambda vs: GGUFValue(GGUFValueType.ARRAY, vs, item))
    dtype = numpy_dtype_of(item)
    return st.lists(_scalar(item), max_size=6).map(
        lambda vs: GGUFValue(GGUFValueType.ARRAY, np.array(vs, dtype=dtype), item)
    )


@st.composite
def metadata_values(draw, *, version: int = 3, depth: int = 0, nested: bool = True, arrays_only: bool = False):
    """A typed metadata value valid in ``version`` (arrays nest at most two levels)."""
    choices = _value_types_for(version)
    kind = GGUFValueType.ARRAY if arrays_only else draw(st.sampled_from(choices + [GGUFValueType.ARRAY]))
    if kind != GGUFValueType.ARRAY:
        return GGUFValue(kind, draw(_scalar(kind)))
    items = choices + ([GGUFValueType.ARRAY] if nested and depth < 1 else [])
    return draw(_array(draw(st.sampled_from(items)), version, depth, nested))


_SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=8)


def metadata_keys() -> st.SearchStrategy[str]:
    """Valid keys: lower_snake_case segments joined by dots, under a test namespace."""
    return st.lists(_SEGMENT, min_size=1, max_size=3).map(lambda parts: "test." + ".".join(parts))


def _current_types(names: Iterable[str] | None) -> list[_spec.TensorTypeSpec]:
    types = [t for t in _spec.tensor_types() if t.is_current]
    if names is not None:
        wanted = {n.upper() if isinstance(n, str) else GGMLType(n).name for n in names}
        types = [t for t in types if t.name in wanted]
    return types


@st.composite
def tensor_specs(draw, *, tensor_types: Sequence[str] | None = None):
    """``(ggml_type, shape, raw)`` with ne[0] a multiple of the block size and random data of the right size."""
    t = draw(st.sampled_from(_current_types(tensor_types)))
    n_dims = draw(st.integers(1, 4))
    shape = [t.block_size * draw(st.integers(1, 2))] + [draw(st.integers(1, 3)) for _ in range(n_dims - 1)]
    nbytes = tensor_nbytes(t.id, shape)
    seed = draw(st.integers(0, 2**32 - 1))
    raw = np.random.default_rng(seed).bytes(nbytes)
    return GGMLType(t.id), tuple(shape), raw


@st.composite
def documents(
    draw,
    *,
    versions: Sequence[int] | None = None,
    byte_orders: Sequence[str] | None = None,
    tensor_types: Sequence[str] | None = None,
    max_kv: int = 6,
    max_tensors: int = 3,
    nested_arrays: bool = True,
) -> Document:
    """A :class:`Document`: version, byte order, alignment, unique keys with typed values, tensors.

    ``versions`` and ``byte_orders`` default to every one spec/gguf.yaml declares.

    ``nested_arrays=False`` leaves out arrays of arrays (valid, but ggml's reader rejects them).
    """
    version = draw(st.sampled_from(list(versions or structs.versions())))
    byte_order = draw(st.sampled_from(list(byte_orders or structs.BYTE_ORDERS)))
    alignment = draw(st.sampled_from(_ALIGNMENTS))
    keys = draw(st.lists(metadata_keys(), max_size=max_kv, unique=True))
    metadata = [(k, draw(metadata_values(version=version, nested=nested_arrays))) for k in keys]
    if alignment is not None:
        metadata.insert(
            draw(st.integers(0, len(metadata))),
            (keynames.GENERAL_ALIGNMENT, GGUFValue(GGUFValueType.UINT32, alignment)),
        )
    n_tensors = draw(st.integers(0, max_tensors))
    tensors = []
    for i in range(n_tensors):
        gtype, shape, raw = draw(tensor_specs(tensor_types=tensor_types))
        tensors.append((f"blk.{i}.weight", gtype, shape, raw))
    return Document(version, byte_order, alignment, metadata, tensors)


def gguf_files(
    *,
    versions: Sequence[int] | None = None,
    byte_orders: Sequence[str] | None = None,
    tensor_types: Sequence[str] | None = None,
    max_kv: int = 6,
    max_tensors: int = 3,
) -> st.SearchStrategy[tuple[bytes, Document]]:
    """Valid GGUF files as ``(bytes, document)``."""
    return documents(
        versions=versions, byte_orders=byte_orders, tensor_types=tensor_types, max_kv=max_kv, max_tensors=max_tensors
    ).map(lambda doc: (doc.to_bytes(), doc))


def violations(rules) -> frozenset[str]:
    """The rule IDs of ``rules`` that are an error or a warning under some profile (infos are facts)."""
    cat = catalog()
    return frozenset(r for r in rules if any(cat[r].severity(p) not in ("info", "off") for p in PROFILES))


def invalid_gguf_files(
    *,
    rules: Sequence[str] | None = None,
    versions: Sequence[int] | None = None,
    byte_orders: Sequence[str] | None = None,
    tensor_types: Sequence[str] | None = None,
    max_kv: int = 4,
    max_tensors: int = 2,
    nested_arrays: bool = True,
    mutations: int = 1,
) -> st.SearchStrategy[tuple[bytes, frozenset[str]]]:
    """Invalid or suspicious GGUF files as ``(bytes, rule_ids)``.

    A valid file is drawn as by :func:`gguf_files`, then broken at the structure level by ``mutations``
    structural mutations (bad counts, types, lengths, offsets, names, truncation at field boundaries, ...; see
    :mod:`gguf_construct.breaking.mutations`).  ``rule_ids`` are the rules the breakages declare they break for
    the edits they made (:class:`gguf_construct.breaking.intent.Intent`), those that are an error or a warning under
    some profile (see :func:`violations`): a conformance checker reports each of them.  The file may also show the
    valid carrier's own findings (its version and byte order, nested arrays), the breakages' declared side effects,
    and metadata-schema (META-*), model (MODEL-*) and file-name (NAME-*) findings.  With ``rules`` given, only files
    breaking at least one of them are drawn (ValueError for a rule no mutation aims at, or one that is an info under
    every profile and so never a label).
    """
    return broken_gguf_files(
        rules=rules,
        versions=versions,
        byte_orders=byte_orders,
        tensor_types=tensor_types,
        max_kv=max_kv,
        max_tensors=max_tensors,
        nested_arrays=nested_arrays,
        mutations=mutations,
    ).map(lambda b: (b.data, b.labels))


@dataclass(frozen=True)
class Broken:
    """A file drawn by :func:`broken_gguf_files`: its bytes, labels, the combined declared intent of its
    breakages, the valid carrier it was made from and the names of the mutations applied."""

    data: bytes
    labels: frozenset
    intent: Labels
    carrier: bytes
    mutations: tuple


def broken_gguf_files(
    *,
    rules: Sequence[str] | None = None,
    versions: Sequence[int] | None = None,
    byte_orders: Sequence[str] | None = None,
    tensor_types: Sequence[str] | None = None,
    max_kv: int = 4,
    max_tensors: int = 2,
    nested_arrays: bool = True,
    mutations: int = 1,
) -> st.SearchStrategy[Broken]:
    """The files of :func:`invalid_gguf_files` (same arguments) as :class:`Broken`, with their breakages'
    declared intent (``intent.breaks``, ``intent.may``) and the unbroken carrier's bytes."""
    wanted: frozenset[str] | None = None
    if rules is not None:
        wanted = frozenset(rules)
        mutations_for(wanted)  # refuses rules no mutation produces
        infos = wanted - violations(wanted)
        if infos:
            raise ValueError(f"{sorted(infos)} are infos under every profile: never labels of an invalid file")
    return _broken_gguf_files(
        wanted, versions, byte_orders, tensor_types, max_kv, max_tensors, nested_arrays, mutations
    )


@st.composite
def _broken_gguf_files(draw, rules, versions, byte_orders, tensor_types, max_kv, max_tensors, nested_arrays, mutations):
    doc = draw(
        documents(
            versions=versions,
            byte_orders=byte_orders,
            tensor_types=tensor_types,
            max_kv=max_kv,
            max_tensors=max_tensors,
            nested_arrays=nested_arrays,
        )
    )
    raw = from_document(doc)
    carrier = raw.encode(with_marks=False)[0]
    pick = HypothesisPick(draw, rules)
    candidates = mutations_for(rules)
    chosen = [draw(st.sampled_from(candidates)) for _ in range(mutations)]
    for mutation in sorted(chosen, key=lambda m: m.phase):
        try:
            mutation.apply(raw, pick)
        except Skip:
            assume(False)
    intent = compose(raw)
    labels = violations(intent.breaks)
    assume(labels)  # some edits land on a valid value (e.g. alignment 64), or a later one hides what they broke
    if rules is not None:
        assume(labels & rules)
    return Broken(raw.encode(with_marks=False)[0], labels, intent, carrier, tuple(m.name for m in chosen))


# ----------------------------------------------------------------------------------------------------------------
# the model layer: whole models of the architectures llama.cpp knows
# ----------------------------------------------------------------------------------------------------------------

# tensor types a generated model may store its tensors in (block sizes from the spec decide where each fits)
MODEL_TENSOR_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K")


def _loadable_architectures() -> list[str]:
    from .arch.synth import model_architectures

    return model_architectures()


@st.composite
def _model_sizes(draw) -> dict[str, int]:
    """Small hyperparameters that divide evenly: embedding = heads x head size, kv heads divide heads."""
    heads = draw(st.sampled_from((1, 2, 4)))
    head_dim = draw(st.sampled_from((16, 32)))
    kv = draw(st.sampled_from([d for d in (1, 2, 4) if heads % d == 0]))
    return {
        "embedding_length": heads * head_dim,
        "attention.head_count": heads,
        "attention.head_count_kv": kv,
        "block_count": draw(st.integers(1, 3)),
        "feed_forward_length": draw(st.sampled_from((32, 64, 128))),
        "context_length": draw(st.sampled_from((32, 64, 128))),
    }


@st.composite
def _model_parts(draw, architectures, tensor_types):
    from .arch.synth import SynthesisError, minimal_model_parts
    from .arch.loader import TensorMeta

    name = draw(st.sampled_from(list(architectures) if architectures else _loadable_architectures()))
    n_vocab = draw(st.integers(16, 48))
    try:
        meta, tensors = minimal_model_parts(name, n_vocab=n_vocab, sizes=draw(_model_sizes()))
    except SynthesisError:  # the drawn sizes break one of the architecture's asserts: its default sizes do not
        meta, tensors = minimal_model_parts(name)
    by_name = {t.name: t for t in _spec.tensor_types()}
    allowed = [by_name[n] for n in (tensor_types or MODEL_TENSOR_TYPES)]
    out = {}
    for tname, t in tensors.items():
        fits = [tt for tt in allowed if t.ne and t.ne[0] % tt.block_size == 0] or [by_name["F32"]]
        out[tname] = TensorMeta(tname, t.ne, draw(st.sampled_from(fits)).id)
    return name, meta, out


def model_files(
    *,
    architectures: Sequence[str] | None = None,
    versions: Sequence[int] = (3,),
    byte_orders: Sequence[str] = ("little",),
    tensor_types: Sequence[str] | None = None,
) -> st.SearchStrategy[tuple[bytes, str]]:
    """Valid minimal models as ``(bytes, architecture)``: any architecture llama.cpp knows (or those named), with
    small random hyperparameters that satisfy the loader's constraints, every tensor the loader asks for in the
    shape it computes, stored in types that fit (``tensor_types``, default :data:`MODEL_TENSOR_TYPES`; data is
    zeros).  llama.cpp's loader accepts each (``check --profile llama.cpp`` says so, and the differential test
    holds it against libllama)."""
    from .breaking.models import build_model_file

    @st.composite
    def draw_file(draw):
        name, meta, tensors = draw(_model_parts(architectures, tensor_types))
        f = build_model_file(
            meta,
            tensors,
            version=draw(st.sampled_from(list(versions))),
            byte_order=draw(st.sampled_from(list(byte_orders))),
        )
        return f.to_bytes(), name

    return draw_file()


def invalid_model_files(
    *,
    rules: Sequence[str] | None = None,
    architectures: Sequence[str] | None = None,
    tensor_types: Sequence[str] | None = None,
) -> st.SearchStrategy[tuple[bytes, frozenset[str]]]:
    """Models that llama.cpp refuses, as ``(bytes, rule_ids)``: a model of :func:`model_files` with one labelled
    edit (:mod:`gguf_construct.breaking.model_mutations`: a key dropped or retyped, a tensor dropped, reshaped or
    added, the block count changed) whose declared intent is the MODEL-* rules in ``rule_ids``.  With ``rules``, only edits
    aimed at one of them are drawn.  Benign edits (an optional key dropped) are not drawn."""
    import random

    from .breaking.model_mutations import MUTATIONS
    from .breaking.models import build_model_file
    from hypothesis import assume

    wanted = frozenset(rules) if rules is not None else None

    @st.composite
    def draw_file(draw):
        _, meta, tensors = draw(_model_parts(architectures, tensor_types))
        mutation = draw(st.sampled_from(MUTATIONS))
        got = mutation.apply(meta, tensors, random.Random(draw(st.integers(0, 2**32 - 1))))
        assume(got is not None and got.rules and (wanted is None or got.rules & wanted))
        return build_model_file(got.meta, got.tensors).to_bytes(), got.rules

    return draw_file()
