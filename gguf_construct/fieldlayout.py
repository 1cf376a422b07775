"""Where each field of a spec type lies in one family, and how big it is, as small symbolic expressions.

The field tree (:mod:`gguf_construct.fieldtree`) locates the fields of one concrete record; this module answers
the same question for *every* record of a type at once: each field's offset and size is a constant number of bytes
(the family's own widths, the ones the reader and the builder use) plus terms for what depends on values, e.g.
``12 + name.len + 8 × n_dimensions`` for ``tensor_info.type`` in v2.  What no such sum describes (a value whose
type a switch selects, an array of variable-size items) is *variable*.  Everything is derived from the spec's
``seq`` lists and the family; a fixed-size type's size is its ``min_sizes`` entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import structs

__all__ = ["Extent", "FieldLayout", "TypeLayout", "layout", "case_size"]


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


def layout(fam: structs.StructFamily, type_name: str) -> TypeLayout:
    """The offset and size of every field of spec type ``type_name`` in ``fam``."""
    return _layout(fam, type_name, ())


def _layout(fam: structs.StructFamily, type_name: str, outer: tuple[str, ...]) -> TypeLayout:
    if type_name in outer:  # a type containing itself has no fixed layout
        return TypeLayout(type_name, (), VARIABLE)
    pos = Extent()
    fields = []
    for f in structs.container_spec()["types"][type_name]["seq"]:
        size = _field_size(fam, f, outer + (type_name,))
        fields.append(FieldLayout(f["id"], pos, size))
        pos = pos + size
    return TypeLayout(type_name, tuple(fields), pos)


def _field_size(fam: structs.StructFamily, f: dict, outer: tuple[str, ...]) -> Extent:
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


def _item_size(fam: structs.StructFamily, name: str, outer: tuple[str, ...]) -> Extent:
    if name in structs.container_spec()["types"]:
        return _layout(fam, name, outer).size
    return Extent(fam.primitive_width(name))


def case_size(fam: structs.StructFamily, selector: int) -> Extent:
    """The size of one value of metadata value type ``selector`` (a ``switch_on`` case), relative to the value."""
    vt = structs.value_types()[selector]
    return _item_size(fam, vt.get("encoding") or vt["type"], ())
