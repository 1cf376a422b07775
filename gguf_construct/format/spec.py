"""Loading the YAML specification in ``spec/``.

Everything the package knows about GGUF comes from these files: the container layout (``gguf.yaml``), the
tensor types (``tensor_types/*.yaml``), lookup tables (``tables/*.yaml``), the metadata key registry, the
naming convention and the conformance rules.  This module only reads them; the generators live elsewhere.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

try:  # libyaml is much faster for the large lookup tables
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader


SPEC_DIR_ENV = "GGUF_CONSTRUCT_SPEC_DIR"


def spec_dir() -> Path:
    """Return the directory holding the YAML specification: ``$GGUF_CONSTRUCT_SPEC_DIR`` when set (a changed copy
    of spec/, to try a format change before it is made), else the package's own."""
    override = os.environ.get(SPEC_DIR_ENV)
    if override:
        if not (Path(override) / "gguf.yaml").is_file():
            raise FileNotFoundError(f"gguf_construct: {SPEC_DIR_ENV}={override} holds no gguf.yaml")
        return Path(override)
    package = Path(__file__).resolve().parent.parent  # gguf_construct/
    for candidate in (package / "_spec", package.parent / "spec"):
        if (candidate / "gguf.yaml").is_file():
            return candidate
    raise FileNotFoundError("gguf_construct: spec/ directory not found next to the package")


@functools.lru_cache(maxsize=None)
def load_yaml(relative: str) -> Any:
    """Parse one spec file, given relative to ``spec/`` (cached), with the facts it derives from itself filled in
    (see :func:`_derive_versions`)."""
    with open(spec_dir() / relative, "rb") as fh:
        doc = yaml.load(fh, Loader=_Loader)
    return _derive_versions(doc) if relative == "gguf.yaml" else doc


def _derive_versions(doc: dict) -> dict:
    """gguf.yaml names its versions once, in ``versions:``; the header's valid versions and ``meta.
    current_version`` (the newest version of status ``current``: what writers make) follow from that list, so a
    new version is one entry there.  A spec that still states either must agree with the list."""
    listed = [v["version"] for v in doc.get("versions", ())]
    current = [v["version"] for v in doc.get("versions", ()) if v.get("status") == "current"]
    meta = doc.setdefault("meta", {})
    if current and meta.setdefault("current_version", max(current)) != max(current):
        raise ValueError(
            f"gguf.yaml: meta.current_version {meta['current_version']} is not the newest current "
            f"version of versions: ({max(current)})"
        )
    for header_field in doc.get("types", {}).get("header", {}).get("seq", ()):
        if header_field.get("id") == "version" and listed:
            valid = header_field.setdefault("valid", list(listed))
            if sorted(valid) != sorted(listed):
                raise ValueError(f"gguf.yaml: header.version valid {valid} differs from versions: {listed}")
    return doc


# --------------------------------------------------------------------------------------------------------------
# primitive types (declared in gguf.yaml, section ``primitives``)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Primitive:
    """A fixed-size scalar encoding such as ``u4`` or ``f2``."""

    name: str
    size: int
    numpy: str  # numpy dtype code without byte order, e.g. "u4", "f2"
    doc: str
    struct: str = ""  # the ``struct`` module's format character, e.g. "I", "e"


@functools.lru_cache(maxsize=None)
def primitives() -> dict[str, Primitive]:
    """The scalar encodings by spec name (``u1`` … ``f8``, ``bf2``)."""
    out = {}
    for entry in load_yaml("gguf.yaml")["primitives"]:
        out[entry["id"]] = Primitive(
            entry["id"], entry["size"], entry["numpy"], entry.get("doc", ""), entry.get("struct", "")
        )
    return out


# --------------------------------------------------------------------------------------------------------------
# byte orders (gguf.yaml, section ``byte_order.orders``)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ByteOrder:
    """One byte order of the spec (``byte_order.orders``): its name, the prefix of Python ``struct`` formats and of
    numpy dtypes, and the short name of file names and suite cases (``le``)."""

    name: str
    struct: str
    numpy: str
    short: str
    since: int = 1  # the first GGUF version that has this byte order

    def __str__(self) -> str:
        return self.name

    @property
    def other(self) -> "ByteOrder":
        """The other byte order (a file's swap)."""
        return next(o for o in _byte_orders().values() if o.name != self.name)

    def format(self, codes: str) -> str:
        """A ``struct`` format of ``codes`` in this byte order, e.g. ``ByteOrder.format("I")`` -> ``"<I"``."""
        return self.struct + codes

    def dtype(self, code: str):
        """The numpy dtype of ``code`` (``u4``, ``f2`` ...) in this byte order."""
        return np.dtype(self.numpy + code)


@functools.lru_cache(maxsize=None)
def _byte_orders() -> dict[str, ByteOrder]:
    return {
        o["id"]: ByteOrder(o["id"], o["struct"], o["numpy"], o["short"], o.get("since", 1))
        for o in load_yaml("gguf.yaml")["byte_order"]["orders"]
    }


def byte_order(name: "str | ByteOrder") -> ByteOrder:
    """The :class:`ByteOrder` named ``name`` (``little`` or ``big``); ValueError naming the others."""
    if isinstance(name, ByteOrder):
        return name
    found = _byte_orders().get(name)
    if found is None:
        raise ValueError(f"byte order must be one of {tuple(_byte_orders())}, not {name!r}")
    return found


def numpy_dtype(primitive: str, byte_order: "str | ByteOrder" = "little") -> np.dtype:
    """The numpy dtype of a spec primitive in the given byte order."""
    prim = primitives()[primitive]
    prefix = "|" if prim.size == 1 else _byte_orders()[getattr(byte_order, "name", byte_order)].numpy
    return np.dtype(prefix + prim.numpy)


# --------------------------------------------------------------------------------------------------------------
# tensor types (spec/tensor_types/*.yaml)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockField:
    """One field of a tensor type's block, e.g. ``d: f2`` or ``qs: u1[16]``."""

    id: str
    type: str
    count: int
    doc: str
    c_decl: str | None = None
    nan_codes: tuple[int, ...] = ()  # one-byte scale codes meaning NaN (E8M0, UE4M3)

    @property
    def size(self) -> int:
        """Size of the field in bytes."""
        return primitives()[self.type].size * self.count


@dataclass(frozen=True)
class TensorTypeSpec:
    """A ggml tensor type as declared in spec/tensor_types."""

    id: int
    name: str
    c_name: str
    status: str  # "current" or "removed"
    kind: str  # "float", "integer" or "quantized"
    block_size: int
    type_size: int
    codec: str | None
    fields: tuple[BlockField, ...]
    doc: str
    doc_ref: str
    imatrix: str | None = None  # how ggml_quantize_chunk treats an importance matrix: required, used or ignored
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_current(self) -> bool:
        """True for types that may appear in a GGUF file today."""
        return self.status == "current"

    @property
    def bits_per_weight(self) -> float:
        """Storage cost per element in bits (0 for removed types)."""
        return 8.0 * self.type_size / self.block_size if self.block_size else 0.0


_TT_KEYS = {
    "id",
    "name",
    "c_name",
    "status",
    "kind",
    "block_size",
    "type_size",
    "codec",
    "fields",
    "doc",
    "doc_ref",
    "imatrix",
}


@functools.lru_cache(maxsize=None)
def tensor_types() -> tuple[TensorTypeSpec, ...]:
    """All ggml tensor types, current and removed, ordered by id."""
    out = []
    for path in sorted((spec_dir() / "tensor_types").glob("*.yaml")):
        raw = load_yaml(f"tensor_types/{path.name}")
        fields = tuple(
            BlockField(
                f["id"],
                f["type"],
                int(f.get("count", 1)),
                f.get("doc", ""),
                f.get("c_decl"),
                tuple(f.get("nan_codes", ())),
            )
            for f in raw.get("fields") or ()
        )
        out.append(
            TensorTypeSpec(
                id=raw["id"],
                name=raw["name"],
                c_name=raw["c_name"],
                status=raw["status"],
                kind=raw["kind"],
                block_size=raw["block_size"],
                type_size=raw["type_size"],
                codec=raw.get("codec"),
                fields=fields,
                doc=raw["doc"],
                doc_ref=raw["doc_ref"],
                imatrix=raw.get("imatrix"),
                extra={k: v for k, v in raw.items() if k not in _TT_KEYS},
            )
        )
    out.sort(key=lambda t: t.id)
    return tuple(out)


@functools.lru_cache(maxsize=None)
def tensor_type_by_id() -> dict[int, TensorTypeSpec]:
    """Tensor types keyed by their numeric id."""
    return {t.id: t for t in tensor_types()}


# --------------------------------------------------------------------------------------------------------------
# lookup tables (spec/tables/*.yaml)
# --------------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def table(name: str) -> np.ndarray:
    """A lookup table from spec/tables/<name>.yaml as a read-only numpy array of its declared dtype/shape."""
    raw = load_yaml(f"tables/{name}.yaml")
    arr = np.array(raw["values"], dtype=numpy_dtype(raw["dtype"]).newbyteorder("="))
    arr = arr.reshape(raw.get("shape", [len(raw["values"])]))
    arr.setflags(write=False)
    return arr


def in_checkout() -> bool:
    """True when the spec in use is the spec/ folder of a source checkout (not an installed package's copy)."""
    return spec_dir().name == "spec"


def nothing_to_check(out: Path | str | None, what: str) -> str | None:
    """Why ``--check`` has nothing to compare with (an installed package and no --out), or None when it has."""
    if out is None and not in_checkout():
        return (
            f"{what} --check compares a source checkout's {what}/ with the spec, and this is an installed "
            f"package with no checkout; give --out DIR to check a folder"
        )
    return None
