"""Where each field of a spec type lies in one family, and how big it is, as small symbolic expressions.

The field tree (:mod:`gguf_construct.format.fieldtree`) locates the fields of one concrete record; this module answers
the same question for *every* record of a type at once: each field's offset and size is a constant number of bytes
(the family's own widths, the ones the reader and the builder use) plus terms for what depends on values, e.g.
``12 + name.len + 8 × n_dimensions`` for ``tensor_info.type`` in v2.  What no such sum describes (a value whose
type a switch selects, an array of variable-size items) is *variable*.  Everything is derived from the spec's
``seq`` lists and the family; a fixed-size type's size is its ``min_sizes`` entry.

Descriptions written once for every family (the exports) ask what is the *same* in every family: a primitive's
width and kind (:func:`common_scalar`), a field at one constant place (:func:`common_field`, e.g. the version word
read before the family is known), and what each case of a version alias stands for (:func:`alias_cases`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import spec as _spec
from .containerspec import (
    BYTE_ORDERS,
    FamilyShape,
    container_spec,
    container_spec_for,
    each_family,
    field_spec,
    resolve_alias,
    value_types,
    versions,
)

__all__ = [
    "Extent",
    "FieldLayout",
    "TypeLayout",
    "Scalar",
    "layout",
    "case_size",
    "field_at",
    "common_field",
    "scalar",
    "common_scalar",
    "alias_cases",
]


@dataclass(frozen=True)
class Extent:
    """A byte count: ``const`` plus ``per_unit × value of path`` for each term, or unknown when ``variable``.

    A term's path names a field holding a count or a length (``n_dimensions``, ``key.len``,
    ``header.metadata_kv_count``), relative to the record the extent belongs to."""

    const: int = 0
    terms: tuple[tuple[int, str], ...] = ()  # (bytes per unit, dotted field path)
    variable: bool = False

    @property
    def fixed(self) -> int | None:
        """The number of bytes when it depends on no value, else None."""
        return self.const if not self.terms and not self.variable else None

    def __add__(self, other: "Extent") -> "Extent":
        if self.variable or other.variable:
            return VARIABLE
        terms = {p: n for n, p in self.terms}
        for per_unit, path in other.terms:
            terms[path] = terms.get(path, 0) + per_unit
        return Extent(self.const + other.const, tuple((n, p) for p, n in terms.items()))

    def within(self, field_id: str) -> "Extent":
        """The same extent seen from the record one level up, where this record is field ``field_id``."""
        return Extent(self.const, tuple((n, f"{field_id}.{p}") for n, p in self.terms), self.variable)

    def evaluate(self, value_of: Callable[[str], int]) -> int | None:
        """The number of bytes with each term's field value from ``value_of(path)``; None when variable."""
        if self.variable:
            return None
        return self.const + sum(n * int(value_of(p)) for n, p in self.terms)

    def __str__(self) -> str:
        if self.variable:
            return "variable"
        parts = [str(self.const)] if self.const or not self.terms else []
        parts += [p if n == 1 else f"{n} × {p}" for n, p in self.terms]
        return " + ".join(parts)


VARIABLE = Extent(variable=True)


@dataclass(frozen=True)
class FieldLayout:
    """One field of a type's ``seq``: its id, its offset from the start of the record, and its size."""

    id: str
    offset: Extent
    size: Extent


@dataclass(frozen=True)
class TypeLayout:
    """Every field of a spec type in one family, in file order, and the size of the whole record."""

    type_name: str
    fields: tuple[FieldLayout, ...]
    size: Extent

    def __getitem__(self, field_id: str) -> FieldLayout:
        for f in self.fields:
            if f.id == field_id:
                return f
        raise KeyError(f"{self.type_name} has no field {field_id!r}")


def layout(fam: FamilyShape, type_name: str) -> TypeLayout:
    """The offset and size of every field of spec type ``type_name`` in ``fam``."""
    return _layout(fam, type_name, ())


def _layout(fam: FamilyShape, type_name: str, outer: tuple[str, ...]) -> TypeLayout:
    if type_name in outer:  # a type containing itself has no fixed layout
        return TypeLayout(type_name, (), VARIABLE)
    pos = Extent()
    fields = []
    for f in container_spec_for(fam.version)["types"][type_name]["seq"]:
        size = _field_size(fam, f, outer + (type_name,))
        fields.append(FieldLayout(f["id"], pos, size))
        pos = pos + size
    return TypeLayout(type_name, tuple(fields), pos)


def _field_size(fam: FamilyShape, f: dict, outer: tuple[str, ...]) -> Extent:
    if "contents" in f:
        return Extent(len(f["contents"]))
    if "size" in f:
        return Extent(0, ((1, f["size"]),))
    if "switch_on" in f:
        return VARIABLE
    item = _item_size(fam, f["type"], outer)
    if "repeat" not in f:
        return item.within(f["id"])
    if item.fixed is None:
        return VARIABLE
    return Extent(0, ((item.fixed, f["repeat"]),))


def _item_size(fam: FamilyShape, name: str, outer: tuple[str, ...]) -> Extent:
    if name in container_spec()["types"]:
        return _layout(fam, name, outer).size
    return Extent(fam.primitive_width(name))


def case_size(fam: FamilyShape, selector: int) -> Extent:
    """The size of one value of metadata value type ``selector`` (a ``switch_on`` case), relative to the value."""
    vt = value_types()[selector]
    return _item_size(fam, vt.get("encoding") or vt["type"], ())


def field_at(fam: FamilyShape, type_name: str, path: str) -> FieldLayout:
    """The offset (from the start of a ``type_name`` record) and size of the field at dotted ``path`` inside it,
    through nested records, e.g. ``field_at(fam, "file_head", "header.version")``."""
    head, _, rest = path.partition(".")
    outer = layout(fam, type_name)[head]
    if not rest:
        return outer
    f = field_spec(type_name, head)
    if "repeat" in f or f.get("type") not in container_spec()["types"]:
        raise KeyError(f"{type_name}.{head} is not a single record: {path!r} has no one place")
    inner = field_at(fam, f["type"], rest)
    return FieldLayout(path, outer.offset + inner.offset.within(head), inner.size.within(head))


def common_field(type_name: str, path: str) -> FieldLayout:
    """The field at ``path`` of ``type_name`` (see :func:`field_at`), which must have the same constant offset and
    size in every family, as the version word must (it is read to find the family); ValueError otherwise."""
    places = {field_at(FamilyShape(v, bo), type_name, path) for v, bo in each_family()}
    place = next(iter(places))
    if len(places) != 1 or place.offset.fixed is None or place.size.fixed is None:
        raise ValueError(
            f"{type_name}.{path} has no one constant place in every family: "
            + ", ".join(sorted(f"at {f.offset}, {f.size} bytes" for f in places))
        )
    return place


@dataclass(frozen=True)
class Scalar:
    """A primitive as a family reads it: its spec name, its width in bytes and its kind, the kind of its numpy dtype
    (``u`` unsigned, ``i`` signed, ``f`` floating point; ``bf2``, which numpy lacks, is ``u``: its bits)."""

    primitive: str
    width: int
    kind: str


def scalar(fam: FamilyShape, name: str) -> Scalar:
    """The primitive or alias ``name`` as ``fam`` reads it (an alias resolved for the family's version)."""
    prim = resolve_alias(name, fam.version) if name in container_spec()["aliases"] else name
    return Scalar(prim, fam.primitive_width(name), _spec.numpy_dtype(prim).kind)


def common_scalar(name: str) -> Scalar:
    """The scalar ``name`` stands for, the same in every family (any primitive); ValueError for what differs
    between families (an alias: see :func:`alias_cases`)."""
    found = {scalar(FamilyShape(v, bo), name) for v, bo in each_family()}
    if len(found) != 1:
        raise ValueError(f"{name} differs between families: {sorted(s.primitive for s in found)}")
    return found.pop()


def alias_cases(name: str) -> dict[int | str, Scalar]:
    """The cases of version alias ``name`` as the spec lists them (a version, or ``_`` for every other version),
    each with the scalar the families of its versions read (a default no version takes: its primitive's)."""
    cases = container_spec()["aliases"][name]["cases"]
    others = [v for v in versions() if v not in cases]
    out: dict[int | str, Scalar] = {}
    for key, prim in cases.items():
        version = key if key in versions() else (others[0] if key == "_" and others else None)
        if version is None:
            out[key] = common_scalar(prim)
        else:
            out[key] = scalar(FamilyShape(version, BYTE_ORDERS[0]), name)
    return out
