"""Generate Construct structs from ``spec/gguf.yaml``, one family per (version, byte order).

The generator reads the ``types`` section (Kaitai-style ``seq`` lists), resolves primitives and the version
aliases (``count_t`` …) for the family, and emits Construct objects.  Layout knowledge lives only in the spec;
this module knows how to *translate* spec constructs:

* a primitive or alias -> a fixed-size integer/float field in the family's byte order;
* ``contents`` -> a constant;
* a type whose ``seq`` is a length field followed by one field sized by it (``size: len``) -> a checked
  length-prefixed string (:class:`~gguf_construct.format.constructs.GGUFString`);
* ``repeat: <field>`` -> a checked array: numbers become one numpy array, strings are scanned in bulk;
* ``switch_on: <field>`` with ``enum: value_types`` -> a switch over every value type's ``encoding``/``type``,
  rejecting unknown selectors.

Two forms are produced: compiled parsers (fast) and the interpreted structs (for building).  A checked construct
that fails names the rule the spec declares for its field (:mod:`gguf_construct.format.fieldrules`).  Where each field
lies and why a read fails is answered by the field tree (:mod:`gguf_construct.format.fieldtree`), also from the spec;
the facts of the spec all three read are in :mod:`gguf_construct.format.containerspec`, below them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import construct as c
import numpy as np

from . import fieldlayout, fieldrules, fieldtree
from . import spec as _spec
from .lazystring import LAZY_STRING_BYTES
from ..base.arrayscan import STOP, STRING_ITEMS
from .constructs import ArrayScan, CheckedArray, Float32Field, GGUFString, NumericArray, Reject, StringArray
from .containerspec import (
    BYTE_ORDERS,
    ByteOrder,
    byte_order,
    current_version,
    value_kind,
    value_since,
    version_status,
    types_of_kind,
    value_types_in,
    FamilyShape,
    container_spec,
    container_spec_for,
    detect,
    each_family,
    field_limit,
    field_spec,
    is_string_type,
    is_valid,
    resolve_alias,
    value_types,
    version_word,
    versions,
)
from .containerspec import STRUCT_FORMATS
from .containerspec import STRUCT_FORMATS as _FORMAT

__all__ = [
    "BYTE_ORDERS",
    "STRUCT_FORMATS",
    "ByteOrder",
    "byte_order",
    "current_version",
    "value_kind",
    "value_since",
    "version_status",
    "types_of_kind",
    "value_types_in",
    "StructFamily",
    "family",
    "container_spec",
    "field_spec",
    "is_valid",
    "field_limit",
    "versions",
    "value_types",
    "resolve_alias",
    "version_word",
    "detect",
    "each_family",
]


def _this_expr(dotted: str):
    expr = c.this
    for part in dotted.split("."):
        expr = getattr(expr, part)
    return expr


@dataclass
class StructFamily(FamilyShape):
    """The generated structs for one (version, byte order)."""

    types: dict[str, c.Construct]  # interpreted (for building)
    compiled_head: Any  # compiled ``file_head`` parser
    min_sizes: dict[str, int]
    compiled_types: dict[str, Any]  # every spec type compiled on its own (for record-by-record readers)

    def case_min_size(self, selector: int) -> int:
        """Smallest size of a value of metadata value type ``selector`` (one array element of that type)."""
        vt = value_types()[selector]
        name = vt.get("encoding") or vt["type"]
        prim = self._resolve_primitive(name) if name in container_spec()["aliases"] else name
        return _spec.primitives()[prim].size if prim in _spec.primitives() else self.min_sizes[name]

    def record_parser(self, type_name: str) -> Callable[[Any], Any]:
        """The compiled parser of one ``type_name`` record from a stream at its position.  It names a root of its
        own (``_root=None``): construct's default makes each record's context its own root, a reference cycle
        that would keep the parsed values, and the file's memory map they view, alive until the garbage
        collector runs, after the file was closed."""
        parse = self.compiled_types[type_name].parse_stream
        return lambda stream: parse(stream, _root=None)

    def read(self, type_name: str, buf, start: int = 0, path: str = ""):
        """The located, tolerant read of one ``type_name`` at ``start`` (see :func:`gguf_construct.format.fieldtree.read`)."""
        return fieldtree.read(self, type_name, buf, start, path)

    def locate(self, type_name: str, tree, start: int = 0, path: str = ""):
        """The field tree (start, end, path of every field) of a parsed record (:func:`~.fieldtree.locate`)."""
        return fieldtree.locate(self, type_name, tree, start, path)

    def offset_of(self, type_name: str, tree, start: int, rel: str) -> int:
        """Start offset of one field of a parsed record (:func:`gguf_construct.format.fieldtree.offset_of`)."""
        return fieldtree.offset_of(self, type_name, tree, start, rel)

    def build(self, type_name: str, value, path: str = ""):
        """The permissive, located build: ``(bytes, field tree)`` of any value (:func:`~.fieldtree.build`)."""
        return fieldtree.build(self, type_name, value, path)

    def layout(self, type_name: str):
        """Offset and size of every field of ``type_name`` as symbolic expressions (:func:`~.fieldlayout.layout`)."""
        return fieldlayout.layout(self, type_name)

    def sizeof(self, type_name: str, tree) -> int:
        """Bytes a parsed instance of ``type_name`` occupies (:func:`gguf_construct.format.fieldtree.sizeof`)."""
        return fieldtree.sizeof(self, type_name, tree)


class _Generator:
    def __init__(self, version: int, byte_order: str):
        self.version = version
        self.byte_order = byte_order
        self.spec = container_spec_for(version)
        self.types: dict[str, c.Construct] = {}
        self.min_sizes: dict[str, int] = {}

    # -- scalars -------------------------------------------------------------------------------------------
    def primitive_name(self, name: str) -> str | None:
        if name in self.spec["aliases"]:
            return resolve_alias(name, self.version)
        return name if name in _spec.primitives() else None

    def scalar(self, prim: str, record: str | None = None) -> c.Construct:
        """A field of primitive ``prim`` in spec type ``record`` (whose ``truncated`` rule a short read breaks)."""
        if prim == "f4":
            return Float32Field(self.byte_order, fieldrules.truncated_rule(record) if record else None)
        order = _spec.byte_order(self.byte_order).struct
        return c.FormatField(order if _spec.primitives()[prim].size > 1 else "=", _FORMAT[prim])

    # -- type references -----------------------------------------------------------------------------------
    def type_ref(self, name: str, record: str | None = None) -> c.Construct:
        prim = self.primitive_name(name)
        if prim is not None:
            return self.scalar(prim, record)
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
        if is_string_type(name):
            width = _spec.primitives()[self.primitive_name(seq[0]["type"])].size
            return GGUFString(width, self.byte_order, fieldrules.truncated_rule(name))
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
            sub = self.field(name, f, inner.get(f["id"]))
            if f["id"] in defaults:
                sub = c.Default(sub, defaults[f["id"]])
            elif "default" in f:  # what a writer puts when it has no value of its own (a field new in a version)
                sub = c.Default(sub, f["default"])
            fields.append(f["id"] / sub)
        return c.Struct(*fields)

    def field(self, record: str, field: dict, counts: dict | None = None) -> c.Construct:
        """The construct of one field of spec type ``record``, failing with the rules the spec declares for it."""
        if "contents" in field:
            return c.Const(field["contents"].encode("ascii"))
        if "switch_on" in field:
            return self.switch(record, field)
        if "repeat" in field:
            return self.repeat(field["type"], record, field)
        if counts:  # the enclosing struct counts its lists with fields of this one
            return self.build_type(field["type"], counts)
        return self.type_ref(field["type"], record)

    def repeat(self, item: str, record: str, field: dict) -> c.Construct:
        count = _this_expr(field["repeat"])
        rule = fieldrules.field_rule(record, field["id"], "count")
        prim = self.primitive_name(item)
        if prim is not None:
            return NumericArray(count, _spec.numpy_dtype(prim, self.byte_order), rule=rule)
        if is_string_type(item):
            return StringArray(
                count, self.min_size(item), self.byte_order, rule=rule, element_rule=fieldrules.truncated_rule(item)
            )
        return CheckedArray(
            count, self.type_ref(item), self.min_size(item), item.replace("_", " "), rule, self.array_scan(item)
        )

    def array_scan(self, item: str) -> ArrayScan | None:
        """How items of type ``item`` are located in bulk when ``item`` is an array type (a selector field, a count
        field, then elements switched on the selector and repeated by the count), else None: the widths and the
        size of each value type's element come from the spec."""
        seq = self.spec["types"][item]["seq"]
        data = next((f for f in seq if "switch_on" in f and "repeat" in f), None)
        if data is None or len(seq) != 3 or seq[-1] is not data:
            return None
        by_id = {f["id"]: f for f in seq}
        selector, count = by_id.get(data["switch_on"]), by_id.get(data["repeat"])
        if selector is None or count is None:
            return None
        table = value_types()
        sizes = np.full(max(table) + 1, STOP, dtype=np.int64)
        string_width = 0
        for vt in table.values():
            target = vt.get("encoding") or vt["type"]
            prim = self.primitive_name(target)
            if prim is not None:
                sizes[vt["id"]] = _spec.primitives()[prim].size
            elif is_string_type(target):
                sizes[vt["id"]] = STRING_ITEMS
                string_width = self.min_size(target)
        if not string_width:
            sizes[sizes == STRING_ITEMS] = STOP
        return ArrayScan(
            self.min_size(selector["type"]), self.min_size(count["type"]), string_width or 8, self.byte_order, sizes
        )

    def switch(self, record: str, field: dict) -> c.Construct:
        selector = field["switch_on"]
        cases = {}
        for vt in value_types().values():
            target = vt.get("encoding") or vt["type"]
            if "repeat" in field:
                if vt.get("encoding"):
                    cases[vt["id"]] = NumericArray(
                        _this_expr(field["repeat"]),
                        _spec.numpy_dtype(vt["encoding"], self.byte_order),
                        as_bool=vt["name"] == "BOOL",
                        rule=fieldrules.field_rule(record, field["id"], "count"),
                    )
                else:
                    cases[vt["id"]] = self.repeat(target, record, field)
            elif self.primitive_name(target) is None and is_string_type(target):
                # a long STRING value stays a view over the buffer (LazyString)
                width = _spec.primitives()[self.primitive_name(self.spec["types"][target]["seq"][0]["type"])].size
                cases[vt["id"]] = GGUFString(
                    width, self.byte_order, fieldrules.truncated_rule(target), lazy_over=LAZY_STRING_BYTES
                )
            else:
                cases[vt["id"]] = self.type_ref(target, record)
        unknown = fieldrules.field_rule(record, field["id"], "selector")
        default = Reject("unknown value type {this.%s}" % selector, unknown)
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


CompiledParser = Callable[[Any], Any]
