"""Generate Construct structs from ``spec/gguf.yaml``, one family per (version, byte order).

The generator reads the ``types`` section (Kaitai-style ``seq`` lists), resolves primitives and the version
aliases (``count_t`` …) for the family, and emits Construct objects.  Layout knowledge lives only in the spec;
this module knows how to *translate* spec constructs:

* a primitive or alias -> a fixed-size integer/float field in the family's byte order;
* ``contents`` -> a constant;
* a type whose ``seq`` is a length field followed by one field sized by it (``size: len``) -> a checked
  length-prefixed string (:class:`~gguf_construct.constructs.GGUFString`);
* ``repeat: <field>`` -> a checked array: numbers become one numpy array, strings are scanned in bulk;
* ``switch_on: <field>`` with ``enum: value_types`` -> a switch over every value type's ``encoding``/``type``,
  rejecting unknown selectors.

Two forms are produced: compiled parsers (fast) and the interpreted structs (for building).  Where each field
lies and why a read fails is answered by the field tree (:mod:`gguf_construct.fieldtree`), also from the spec.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import construct as c

from . import spec as _spec
from .constructs import CheckedArray, Float32Field, GGUFString, NumericArray, Reject, StringArray

BYTE_ORDERS = ("little", "big")

_FORMAT = {"u1": "B", "i1": "b", "u2": "H", "i2": "h", "u4": "L", "i4": "l", "u8": "Q", "i8": "q",
           "f2": "e", "bf2": "H", "f4": "f", "f8": "d"}

# which conformance rule a count that cannot be satisfied violates, by the field holding the count
_COUNT_RULES = {"header.metadata_kv_count": "HDR-COUNT", "header.tensor_count": "HDR-COUNT",
                "n_dimensions": "TI-TRUNC", "len": "ARR-EOF"}


def container_spec() -> dict:
    """The parsed ``spec/gguf.yaml``."""
    return _spec.load_yaml("gguf.yaml")


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


@functools.lru_cache(maxsize=None)
def value_types() -> dict[int, dict]:
    """The metadata value types from the spec, keyed by id."""
    return {vt["id"]: vt for vt in container_spec()["value_types"]}


def resolve_alias(name: str, version: int) -> str:
    """The primitive an alias such as ``count_t`` stands for in ``version``."""
    cases = container_spec()["aliases"][name]["cases"]
    return cases.get(version, cases["_"])


def _this_expr(dotted: str):
    expr = c.this
    for part in dotted.split("."):
        expr = getattr(expr, part)
    return expr


@dataclass
class StructFamily:
    """The generated structs for one (version, byte order)."""

    version: int
    byte_order: str
    types: dict[str, c.Construct]  # interpreted (for building)
    compiled_head: Any  # compiled ``file_head`` parser
    min_sizes: dict[str, int]
    compiled_types: dict[str, Any]  # every spec type compiled on its own (for record-by-record readers)

    def primitive_width(self, alias: str) -> int:
        """Byte width of an alias or primitive in this family."""
        prim = self._resolve_primitive(alias)
        return _spec.primitives()[prim].size

    def _resolve_primitive(self, name: str) -> str:
        return resolve_alias(name, self.version) if name in container_spec()["aliases"] else name

    def case_min_size(self, selector: int) -> int:
        """Smallest size of a value of metadata value type ``selector`` (one array element of that type)."""
        vt = value_types()[selector]
        name = vt.get("encoding") or vt["type"]
        prim = self._resolve_primitive(name) if name in container_spec()["aliases"] else name
        return _spec.primitives()[prim].size if prim in _spec.primitives() else self.min_sizes[name]

    def read(self, type_name: str, buf, start: int = 0, path: str = ""):
        """The located, tolerant read of one ``type_name`` at ``start`` (see :func:`gguf_construct.fieldtree.read`)."""
        from . import fieldtree

        return fieldtree.read(self, type_name, buf, start, path)

    def locate(self, type_name: str, tree, start: int = 0, path: str = ""):
        """The field tree (start, end, path of every field) of a parsed record (:func:`~.fieldtree.locate`)."""
        from . import fieldtree

        return fieldtree.locate(self, type_name, tree, start, path)

    def offset_of(self, type_name: str, tree, start: int, rel: str) -> int:
        """Start offset of one field of a parsed record (:func:`gguf_construct.fieldtree.offset_of`)."""
        from . import fieldtree

        return fieldtree.offset_of(self, type_name, tree, start, rel)

    def build(self, type_name: str, value, path: str = ""):
        """The permissive, located build: ``(bytes, field tree)`` of any value (:func:`~.fieldtree.build`)."""
        from . import fieldtree

        return fieldtree.build(self, type_name, value, path)

    def layout(self, type_name: str):
        """Offset and size of every field of ``type_name`` as symbolic expressions (:func:`~.fieldlayout.layout`)."""
        from . import fieldlayout

        return fieldlayout.layout(self, type_name)

    def sizeof(self, type_name: str, tree) -> int:
        """Bytes a parsed instance of ``type_name`` occupies (:func:`gguf_construct.fieldtree.sizeof`)."""
        from . import fieldtree

        return fieldtree.sizeof(self, type_name, tree)


class _Generator:
    def __init__(self, version: int, byte_order: str):
        self.version = version
        self.byte_order = byte_order
        self.spec = container_spec()
        self.types: dict[str, c.Construct] = {}
        self.min_sizes: dict[str, int] = {}

    # -- scalars -------------------------------------------------------------------------------------------
    def primitive_name(self, name: str) -> str | None:
        if name in self.spec["aliases"]:
            return resolve_alias(name, self.version)
        return name if name in _spec.primitives() else None

    def scalar(self, prim: str) -> c.Construct:
        if prim == "f4":
            return Float32Field(self.byte_order)
        order = "<" if self.byte_order == "little" else ">"
        return c.FormatField(order if _spec.primitives()[prim].size > 1 else "=", _FORMAT[prim])

    # -- type references -----------------------------------------------------------------------------------
    def type_ref(self, name: str) -> c.Construct:
        prim = self.primitive_name(name)
        if prim is not None:
            return self.scalar(prim)
        if name not in self.types:
            self.types[name] = c.LazyBound(lambda: self.types[name])  # placeholder for recursive types
            self.types[name] = self.build_type(name)
        return self.types[name]

    def min_size(self, name: str) -> int:
        """Smallest number of bytes an instance of a primitive, alias or type can occupy."""
        prim = self.primitive_name(name)
        if prim is not None:
            return _spec.primitives()[prim].size
        if name not in self.min_sizes:
            self.min_sizes[name] = 0  # recursion guard
            total = 0
            for field in self.spec["types"][name]["seq"]:
                total += self.field_min_size(field)
            self.min_sizes[name] = total
        return self.min_sizes[name]

    def field_min_size(self, field: dict) -> int:
        if "contents" in field:
            return len(field["contents"])
        if "repeat" in field or "size" in field:
            return 0
        if "switch_on" in field:
            return min(self.case_min_size(vt) for vt in value_types().values())
        return self.min_size(field["type"])

    def case_min_size(self, vt: dict) -> int:
        return self.min_size(vt.get("encoding") or vt["type"])

    # -- compound types ------------------------------------------------------------------------------------
    def build_type(self, name: str, counts: dict | None = None) -> c.Construct:
        """The struct of spec type ``name``.  A count field (one a ``repeat`` names) may be left out when building:
        it defaults to the length of its list, in this struct or, for ``counts`` (count field id -> how to find
        the list), in the enclosing one."""
        seq = self.spec["types"][name]["seq"]
        if len(seq) == 2 and seq[1].get("size") == seq[0]["id"]:
            width = _spec.primitives()[self.primitive_name(seq[0]["type"])].size
            return GGUFString(width, self.byte_order)
        defaults = dict(counts or {})
        inner: dict[str, dict] = {}
        for f in seq:
            if "repeat" in f:
                head, _, rest = f["repeat"].partition(".")
                if rest:
                    inner.setdefault(head, {})[rest] = c.len_(c.this._[f["id"]])
                else:
                    defaults[head] = c.len_(c.this[f["id"]])
        fields = []
        for f in seq:
            sub = self.field(f, inner.get(f["id"]))
            fields.append(f["id"] / c.Default(sub, defaults[f["id"]]) if f["id"] in defaults else f["id"] / sub)
        return c.Struct(*fields)

    def field(self, field: dict, counts: dict | None = None) -> c.Construct:
        if "contents" in field:
            return c.Const(field["contents"].encode("ascii"))
        if "switch_on" in field:
            return self.switch(field)
        if "repeat" in field:
            return self.repeat(field["type"], field["repeat"])
        if counts:  # the enclosing struct counts its lists with fields of this one
            return self.build_type(field["type"], counts)
        return self.type_ref(field["type"])

    def repeat(self, item: str | dict, count_field: str) -> c.Construct:
        count = _this_expr(count_field)
        prim = self.primitive_name(item) if isinstance(item, str) else None
        if prim is not None:
            return NumericArray(count, _spec.numpy_dtype(prim, self.byte_order))
        rule = _COUNT_RULES.get(count_field, "ARR-EOF")
        if item == "gguf_string":
            width = self.min_size("gguf_string")
            return StringArray(count, width, self.byte_order)
        return CheckedArray(count, self.type_ref(item), self.min_size(item), item.replace("_", " "), rule)

    def switch(self, field: dict) -> c.Construct:
        selector = field["switch_on"]
        cases = {}
        for vt in value_types().values():
            target = vt.get("encoding") or vt["type"]
            if "repeat" in field:
                if vt.get("encoding"):
                    cases[vt["id"]] = NumericArray(_this_expr(field["repeat"]),
                                                   _spec.numpy_dtype(vt["encoding"], self.byte_order),
                                                   as_bool=vt["name"] == "BOOL")
                else:
                    cases[vt["id"]] = self.repeat(target, field["repeat"])
            else:
                cases[vt["id"]] = self.type_ref(target)
        rule = "ARR-TYPE" if "repeat" in field else "KV-TYPE"
        default = Reject("unknown value type {this.%s}" % selector, rule)
        return c.Switch(_this_expr(selector), cases, default)


@functools.lru_cache(maxsize=None)
def family(version: int, byte_order: str) -> StructFamily:
    """The struct family for a GGUF version and byte order (generated once, then cached)."""
    if version not in versions():
        raise ValueError(f"GGUF version {version} is not in the spec")
    if byte_order not in BYTE_ORDERS:
        raise ValueError(f"byte order must be one of {BYTE_ORDERS}")
    gen = _Generator(version, byte_order)
    compiled = gen.type_ref("file_head").compile()
    compiled_types = {}
    for name in container_spec()["types"]:
        gen.min_size(name)
        compiled_types[name] = compiled if name == "file_head" else gen.type_ref(name).compile()
    return StructFamily(version, byte_order, dict(gen.types), compiled, dict(gen.min_sizes), compiled_types)


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
    raw = prefix[start:start + width]
    word = int.from_bytes(raw, "little")
    mask = container_spec()["byte_order"]["detection_mask"]
    if word & mask == 0 and word != 0:
        return int.from_bytes(raw, "big"), "big"
    return word, "little"


def each_family() -> list[tuple[int, str]]:
    """Every (version, byte order) the spec declares."""
    return [(v, bo) for v in versions() for bo in BYTE_ORDERS]


CompiledParser = Callable[[Any], Any]
