"""The container spec (``spec/gguf.yaml``) as data: its types and fields, their valid values, the version aliases
and the widths they stand for in each (version, byte order).

This is what the struct generator (:mod:`gguf_construct.format.structs`), the field tree (:mod:`gguf_construct.format.fieldtree`)
and the symbolic layout (:mod:`gguf_construct.format.fieldlayout`) all read; it sits below the three of them, so none of
them imports another to learn a fact of the spec.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from . import spec as _spec
from .spec import ByteOrder, _byte_orders, byte_order

__all__ = [
    "BYTE_ORDERS",
    "STRUCT_FORMATS",
    "ByteOrder",
    "byte_order",
    "FamilyShape",
    "container_spec",
    "container_spec_for",
    "field_spec",
    "is_valid",
    "field_limit",
    "versions",
    "current_version",
    "value_types",
    "value_kind",
    "value_since",
    "version_status",
    "types_of_kind",
    "value_types_in",
    "struct_format",
    "resolve_alias",
    "is_string_type",
    "version_word",
    "detect",
    "each_family",
]

VALUE_KINDS = ("integer", "float", "bool", "text", "array")


def container_spec() -> dict:
    """The parsed ``spec/gguf.yaml``."""
    return _spec.load_yaml("gguf.yaml")


def container_spec_for(version: int) -> dict:
    """The container spec as a file of ``version`` has it: a field declaring ``since`` (the first version that
    has it) is left out of the types of earlier versions.  The generated structs and the field tree of a family
    read this."""
    spec = container_spec()
    if not any(f.get("since", 1) > version for t in spec["types"].values() for f in t["seq"]):
        return spec
    types = {
        name: dict(t, seq=[f for f in t["seq"] if f.get("since", 1) <= version]) for name, t in spec["types"].items()
    }
    return dict(spec, types=types)


BYTE_ORDERS: tuple[str, ...] = tuple(_byte_orders())  # the spec's byte orders by name, the default first

# the ``struct`` module's format character of each primitive (``bf2`` is held as its 16 bits), from the spec
STRUCT_FORMATS: dict[str, str] = {name: p.struct for name, p in _spec.primitives().items()}


def struct_format(primitive: str, order: "str | ByteOrder" = "little") -> str:
    """The ``struct`` format of one ``primitive`` in a byte order (``"<I"`` for ``u4`` little-endian)."""
    return byte_order(order).struct + STRUCT_FORMATS[primitive]


@functools.lru_cache(maxsize=None)
def field_spec(type_name: str, field_id: str) -> dict:
    """The spec entry of one field of a compound type, e.g. ``field_spec("tensor_info", "n_dimensions")``."""
    for field in container_spec()["types"][type_name]["seq"]:
        if field["id"] == field_id:
            return field
    raise KeyError(f"{type_name} has no field {field_id!r}")


def is_valid(type_name: str, field_id: str, value: Any) -> bool:
    """Whether ``value`` satisfies the field's ``valid:`` declaration (a list of values, ``min``/``max``, or
    ``max_size`` in bytes for a string); a field without one accepts anything."""
    valid = field_spec(type_name, field_id).get("valid")
    if valid is None:
        return True
    if isinstance(valid, list):
        return value in valid
    if "max_size" in valid:
        return len(value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value) <= valid["max_size"]
    return valid.get("min", value) <= value <= valid.get("max", value)


def field_limit(type_name: str, field_id: str, bound: str = "max") -> int:
    """The ``min``, ``max`` or ``max_size`` a field's ``valid:`` declares, e.g. GGML_MAX_DIMS for
    ``tensor_info.n_dimensions``."""
    return field_spec(type_name, field_id)["valid"][bound]


def versions() -> tuple[int, ...]:
    """GGUF versions the spec declares: the valid values of ``header.version``."""
    return tuple(field_spec("header", "version")["valid"])


def current_version() -> int:
    """The version writers make by default (``meta.current_version``)."""
    return container_spec()["meta"]["current_version"]


@functools.lru_cache(maxsize=None)
def value_types() -> dict[int, dict]:
    """The metadata value types from the spec, keyed by id."""
    return {vt["id"]: vt for vt in container_spec()["value_types"]}


def value_kind(type_id: int) -> str:
    """What a value of metadata value type ``type_id`` is to a program: ``integer``, ``float``, ``bool``, ``text``
    or ``array`` (the spec's ``kind``)."""
    return value_types()[int(type_id)]["kind"]


def version_status(version: int) -> str:
    """The status of a GGUF version in the spec's ``versions:`` (``obsolete``, ``legacy`` or ``current``)."""
    return next(v["status"] for v in container_spec()["versions"] if v["version"] == version)


def value_since(type_id: int) -> int:
    """The first GGUF version that has metadata value type ``type_id``."""
    return value_types()[int(type_id)].get("since", 1)


def types_of_kind(*kinds: str) -> tuple[int, ...]:
    """The ids of the value types of these kinds, in spec order."""
    return tuple(i for i, vt in value_types().items() if vt["kind"] in kinds)


def value_types_in(version: int) -> tuple[int, ...]:
    """The ids of the value types a file of ``version`` can hold (``since`` at most ``version``)."""
    return tuple(i for i, vt in value_types().items() if vt.get("since", 1) <= version)


def resolve_alias(name: str, version: int) -> str:
    """The primitive an alias such as ``count_t`` stands for in ``version``."""
    cases = container_spec()["aliases"][name]["cases"]
    return cases.get(version, cases["_"])


def is_string_type(type_name: str) -> bool:
    """True for a type whose ``seq`` is a length field followed by one field sized by it (``gguf_string``)."""
    seq = container_spec()["types"][type_name]["seq"]
    return len(seq) == 2 and seq[1].get("size") == seq[0]["id"]


@dataclass
class FamilyShape:
    """One (version, byte order) as the spec describes it: what each alias and primitive is and how wide."""

    version: int
    byte_order: str

    def primitive_width(self, alias: str) -> int:
        """Byte width of an alias or primitive in this family."""
        return _spec.primitives()[self._resolve_primitive(alias)].size

    def _resolve_primitive(self, name: str) -> str:
        return resolve_alias(name, self.version) if name in container_spec()["aliases"] else name


def version_word() -> tuple[int, int]:
    """(offset, width) of the version word: after the header's fixed-size fields before it, as the spec declares
    them (it is a fixed-width primitive, at the same place in every family)."""
    offset = 0
    for f in container_spec()["types"]["header"]["seq"]:
        width = len(f["contents"]) if "contents" in f else _spec.primitives()[f["type"]].size
        if f["id"] == "version":
            return offset, width
        offset += width
    raise KeyError("header has no version field")


def detect(prefix: bytes) -> tuple[int, str]:
    """Byte order and version from the start of a file (magic not checked here).

    Returns ``(version_as_read, byte_order)``; the version may be invalid.
    """
    start, width = version_word()
    raw = prefix[start : start + width]
    default = byte_order(BYTE_ORDERS[0])  # the spec's first byte order; the word is read in it first
    word = int.from_bytes(raw, default.name)  # type: ignore[arg-type]  # the spec's ids are Python's names
    mask = container_spec()["byte_order"]["detection_mask"]
    if word & mask == 0 and word != 0:
        other = default.other
        return int.from_bytes(raw, other.name), other.name  # type: ignore[arg-type]
    return word, default.name


def each_family() -> list[tuple[int, str]]:
    """Every (version, byte order) the spec declares."""
    return [(v, bo) for v in versions() for bo in BYTE_ORDERS]
