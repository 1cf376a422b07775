"""Typed metadata values and the ordered metadata mapping.

Every value keeps its GGUF type, so a file read and written again is byte-identical.  Scalars are Python
objects (``int``, ``float``, ``bool``, ``str``); arrays of numbers are numpy arrays in native byte order, arrays
of strings are :class:`~gguf_construct.format.stringlist.StringList` (an immutable sequence of ``str`` over the file's
bytes, decoded item by item when accessed; ``to_list()`` gives a plain list), and arrays of arrays are lists of
:class:`GGUFValue`.  Strings that are not valid UTF-8 are kept losslessly with ``surrogateescape``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterator

import numpy as np

from . import spec as _spec
from .enums import GGUFValueType
from .keyregistry import registry_types
from .lazystring import LazyString
from .constructs import InnerArrays
from .stringlist import StringList
from .containerspec import BYTE_ORDERS, struct_format
from .structs import value_kind, value_types
from . import keynames

__all__ = ["GGUFValue", "Metadata", "numpy_dtype_of", "infer_value", "first_fit"]


def numpy_dtype_of(vtype: GGUFValueType) -> np.dtype | None:
    """Native numpy dtype of a numeric value type (None for STRING and ARRAY)."""
    enc = value_types()[int(vtype)].get("encoding")
    if enc is None:
        return None
    if value_kind(vtype) == "bool":
        return np.dtype(np.bool_)
    return _spec.numpy_dtype(enc).newbyteorder("=")


def _float_format(vtype: GGUFValueType) -> str:
    """The ``struct`` format (in the spec's default byte order) of a float value type, whose bytes tell two values
    apart."""
    return struct_format(value_types()[int(vtype)]["encoding"], BYTE_ORDERS[0])


_INT_RANGES = {}
for _vt in GGUFValueType:
    _dt = numpy_dtype_of(_vt)
    if _dt is not None and _dt.kind in "iu":
        _INT_RANGES[_vt] = (int(np.iinfo(_dt).min), int(np.iinfo(_dt).max))


@dataclass(frozen=True, eq=False, slots=True)
class GGUFValue:
    """A metadata value with its GGUF type (and element type for arrays).  Slotted: a head of millions of keys is
    millions of these."""

    type: GGUFValueType
    value: Any
    item_type: GGUFValueType | None = None

    def __post_init__(self):
        object.__setattr__(self, "type", GGUFValueType(self.type))
        if self.item_type is not None:
            object.__setattr__(self, "item_type", GGUFValueType(self.item_type))
        if self.type == GGUFValueType.ARRAY and self.item_type is None:
            raise ValueError("an ARRAY value needs an item_type")

    @classmethod
    def trusted(cls, vtype: GGUFValueType, value: Any, item_type: GGUFValueType | None = None) -> "GGUFValue":
        """A value made without the constructor's checks, for a reader whose ``vtype`` and ``item_type`` are
        members already (and ``item_type`` given for an ARRAY): one object, no conversions."""
        made = object.__new__(cls)
        object.__setattr__(made, "type", vtype)
        object.__setattr__(made, "value", value)
        object.__setattr__(made, "item_type", item_type)
        return made

    def __len__(self) -> int:
        if self.type != GGUFValueType.ARRAY:
            raise TypeError("only ARRAY values have a length")
        return len(self.value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GGUFValue):
            return NotImplemented
        if self.type != other.type or self.item_type != other.item_type:
            return False
        return _same(self.type, self.item_type, self.value, other.value)

    __hash__ = None  # type: ignore[assignment]

    def to_python(self) -> Any:
        """Plain Python data: lists for arrays (recursively), scalars as they are (a long STRING value read lazily
        becomes its ``str``)."""
        if self.type != GGUFValueType.ARRAY:
            return str(self.value) if isinstance(self.value, LazyString) else self.value
        if self.item_type == GGUFValueType.ARRAY:
            return [v.to_python() for v in self.value]
        if isinstance(self.value, np.ndarray):
            return self.value.tolist()
        if isinstance(self.value, StringList):
            return self.value.to_list()
        return list(self.value)


def _same(vtype, item_type, a, b) -> bool:
    if vtype == GGUFValueType.ARRAY:
        if isinstance(a, StringList) and isinstance(b, StringList):
            return a == b  # compared as bytes, nothing decoded
        if isinstance(a, InnerArrays) and isinstance(b, InnerArrays):
            return a == b  # compared as bytes when both layouts are one, nothing parsed
        if item_type == GGUFValueType.STRING or item_type == GGUFValueType.ARRAY:
            return len(a) == len(b) and all(x == y for x, y in zip(a, b))
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.tobytes() == b.tobytes()
    kind = value_kind(vtype)
    if kind == "float":
        if vtype == GGUFValueType.FLOAT32:
            return _f32_bits(a) == _f32_bits(b)  # a NaN read from a file keeps its bits
        fmt = _float_format(vtype)
        return struct.pack(fmt, a) == struct.pack(fmt, b)
    return type(a) is type(b) and a == b if kind == "bool" else a == b


_U4, _F4 = struct_format("u4", BYTE_ORDERS[0]), struct_format("f4", BYTE_ORDERS[0])


def _f32_bits(x: float) -> int:
    bits = getattr(x, "bits", None)
    return bits if bits is not None else struct.unpack(_U4, struct.pack(_F4, x))[0]


def _check_scalar(vtype: GGUFValueType, value: Any) -> Any:
    kind = value_kind(vtype)
    if kind == "text":
        if not isinstance(value, (str, LazyString)):
            raise TypeError(f"{vtype.name} value must be str, not {type(value).__name__}")
        return value
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, (int, np.integer)) and 0 <= int(value) <= 255:
            return int(value)  # raw byte kept as read (only 0/1 are valid)
        raise TypeError(f"{vtype.name} value must be bool")
    if vtype in _INT_RANGES:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{vtype.name} value must be int, not {type(value).__name__}")
        lo, hi = _INT_RANGES[vtype]
        if not lo <= int(value) <= hi:
            raise ValueError(f"{value} does not fit {vtype.name}")
        return int(value)
    if kind == "float":
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise TypeError(f"{vtype.name} value must be a number")
        if getattr(value, "bits", None) is not None:
            return value  # a NaN read from a file keeps its exact bits
        value = float(value)
        dtype = numpy_dtype_of(vtype)
        assert dtype is not None  # every float kind has an encoding
        return value if dtype.itemsize == 8 else float(dtype.type(value))  # rounded as the file will hold it
    raise TypeError(f"cannot store a scalar as {vtype.name}")


def make_value(vtype, value: Any, item_type=None) -> GGUFValue:
    """Build a checked :class:`GGUFValue` of an explicit type."""
    vtype = GGUFValueType(vtype)
    if isinstance(value, GGUFValue):
        value = value.value
    if vtype != GGUFValueType.ARRAY:
        return GGUFValue(vtype, _check_scalar(vtype, value))
    if item_type is None:
        return infer_value(value, array_hint=True)
    item_type = GGUFValueType(item_type)
    if item_type == GGUFValueType.STRING:
        if isinstance(value, StringList):
            return GGUFValue(vtype, value, item_type)
        items = list(value)
        for s in items:
            _check_scalar(item_type, s)
        return GGUFValue(vtype, StringList(items), item_type)
    if item_type == GGUFValueType.ARRAY:
        inner = [v if isinstance(v, GGUFValue) else infer_value(v, array_hint=True) for v in value]
        if any(v.type != GGUFValueType.ARRAY for v in inner):
            raise TypeError("elements of an array of arrays must be arrays")
        return GGUFValue(vtype, inner, item_type)
    dtype = numpy_dtype_of(item_type)
    arr = np.asarray(value)
    if arr.ndim != 1 and arr.size:
        raise ValueError("array values must be one-dimensional")
    if dtype.kind in "iu" and arr.dtype.kind in "fO" and all(isinstance(v, (int, np.integer)) for v in value):  # type: ignore[union-attr]
        # Python integers past int64 (a UINT64 near its top) make numpy guess float64: take them exactly
        lo, hi = _INT_RANGES[item_type]
        if any(int(v) < lo or int(v) > hi for v in value):
            raise ValueError(f"array elements do not fit {item_type.name}")
        arr = np.array([int(v) for v in value], dtype=dtype)
    if arr.dtype.kind in "iub" and dtype.kind in "iu" and arr.size:  # type: ignore[union-attr]
        lo, hi = _INT_RANGES[item_type]
        if int(arr.min()) < lo or int(arr.max()) > hi:
            raise ValueError(f"array elements do not fit {item_type.name}")
    arr = np.ascontiguousarray(arr.reshape(-1), dtype=dtype)
    return GGUFValue(vtype, arr, item_type)


_NUMPY_TO_GGUF: dict[np.dtype, GGUFValueType] = {}  # the value type of each numpy dtype (the first that has it)
for _vt in GGUFValueType:
    _dt = numpy_dtype_of(_vt)
    if _dt is not None:
        _NUMPY_TO_GGUF.setdefault(_dt, _vt)


def _scalar_type(value: Any) -> GGUFValueType:
    if isinstance(value, (bool, np.bool_)):
        return GGUFValueType.BOOL
    if isinstance(value, np.generic):
        return _NUMPY_TO_GGUF[value.dtype.newbyteorder("=")]
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return GGUFValueType.INT32
        return GGUFValueType.INT64 if -(2**63) <= value < 2**63 else GGUFValueType.UINT64
    if isinstance(value, float):
        return GGUFValueType.FLOAT32
    if isinstance(value, (str, LazyString)):
        return GGUFValueType.STRING
    raise TypeError(f"cannot infer a GGUF type for {type(value).__name__}")


def infer_value(value: Any, *, array_hint: bool = False) -> GGUFValue:
    """Choose a GGUF type for a Python value: bool -> BOOL, int -> INT32 (INT64 when it does not fit),
    float -> FLOAT32, str -> STRING, numpy scalars and arrays by dtype, lists -> ARRAY of their elements' type
    (integers and floats together: FLOAT32)."""
    if isinstance(value, GGUFValue):
        return value
    if isinstance(value, np.ndarray):
        return make_value(GGUFValueType.ARRAY, value, _NUMPY_TO_GGUF[value.dtype.newbyteorder("=")])
    if isinstance(value, StringList):
        return GGUFValue(GGUFValueType.ARRAY, value, GGUFValueType.STRING)
    if isinstance(value, (list, tuple)):
        if not value:
            return GGUFValue(GGUFValueType.ARRAY, np.zeros(0, np.int32), GGUFValueType.INT32)
        if all(isinstance(v, (list, tuple, np.ndarray, GGUFValue)) for v in value):
            return make_value(GGUFValueType.ARRAY, value, GGUFValueType.ARRAY)
        kinds = {_scalar_type(v) for v in value}
        if kinds <= {GGUFValueType.INT32, GGUFValueType.INT64, GGUFValueType.UINT64}:
            kind = max(kinds, key=lambda k: [GGUFValueType.INT32, GGUFValueType.INT64, GGUFValueType.UINT64].index(k))
        elif len(kinds) == 1:
            kind = kinds.pop()
        elif GGUFValueType.FLOAT32 in kinds and kinds <= {
            GGUFValueType.FLOAT32,
            GGUFValueType.INT32,
            GGUFValueType.INT64,
            GGUFValueType.UINT64,
        }:
            kind = GGUFValueType.FLOAT32  # numbers written as 1.5 and 2 in one list: a float array, as in JSON
            value = [float(v) for v in value]
        else:
            raise TypeError(f"array elements of mixed types {sorted(k.name for k in kinds)}")
        return make_value(GGUFValueType.ARRAY, value, kind)
    if array_hint:
        raise TypeError("expected an array")
    return make_value(_scalar_type(value), value)


def first_fit(key: str, candidates, build, shown: Any) -> GGUFValue:
    """``build(type, item_type)`` for the first candidate type pair that takes the value; TypeError naming them
    all when none does."""
    for vtype, item_type in candidates:
        try:
            return build(vtype, item_type)
        except (TypeError, ValueError, OverflowError):
            continue
    names = " or ".join(f"ARRAY[{i.name}]" if i else t.name for t, i in candidates)
    raise TypeError(
        f"{key} is {names} in the key registry or the file; {shown!r} does not fit (give the type "
        f"explicitly to store another)"
    )


class Metadata(MutableMapping):
    """Ordered key -> value mapping where every value keeps its GGUF type.

    ``md[key]`` gives the plain value (a string array is a :class:`~gguf_construct.format.stringlist.StringList`, read-only
    and decoded per item; assign a new list to change it; a STRING value read from a file longer than
    ``reading.lazy_string_bytes`` of spec/gguf.yaml is a :class:`~gguf_construct.format.lazystring.LazyString`,
    decoded when asked for: ``str(md[key])``); :meth:`typed` the :class:`GGUFValue`; :meth:`type_of` its type.
    Assigning a plain value keeps the key's existing type unless the key registry (spec/keys.yaml) disallows it; a
    standardized key then gets the registry's type (the narrowest allowed integer type the value fits, so
    ``llama.context_length = 4096`` is UINT32 as llama.cpp writes it); any other new key gets an inferred type
    (see :func:`infer_value`); :meth:`type_candidates` is that rule.  Use :meth:`set` to give the type
    explicitly.
    """

    def __init__(self, items: "dict[str, GGUFValue] | None" = None):
        self._items: dict[str, GGUFValue] = dict(items or {})
        self.changed = False

    def __getitem__(self, key: str) -> Any:
        return self._items[key].value

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(value, GGUFValue):
            new = value
        else:
            candidates = self.type_candidates(key, value)
            old = self._items.get(key)
            if old is not None and candidates == [(old.type, old.item_type)]:
                new = make_value(old.type, value, old.item_type)  # the key keeps its type, or says why it cannot
            elif candidates:
                new = first_fit(key, candidates, lambda vtype, item_type: make_value(vtype, value, item_type), value)
            else:
                new = infer_value(value)
        self._items[key] = new
        self.changed = True

    def type_candidates(self, key: str, value: Any = None) -> list[tuple[GGUFValueType, GGUFValueType | None]]:
        """The (type, element type) pairs a plain ``value`` assigned to ``key`` may take, in order of preference.

        The key's present type when the key registry (spec/keys.yaml) allows it or does not know the key; else the
        registry's types, integer types narrowest first for an ``int`` (``llama.context_length = 4096`` is UINT32,
        as llama.cpp writes and reads it); [] for a new key the registry does not know (the type is then
        inferred).  The API's assignment and the command line's ``set`` both type values by this one rule."""
        arch = self._items.get(keynames.GENERAL_ARCHITECTURE)
        pairs = registry_types(key, arch.value if arch is not None and isinstance(arch.value, str) else None)
        old = self._items.get(key)
        if old is not None and (not pairs or (old.type, old.item_type) in pairs):
            return [(old.type, old.item_type)]
        if isinstance(value, int) and not isinstance(value, bool):
            ints = [p for p in pairs if p[0] in _INT_RANGES]
            pairs = sorted(ints, key=lambda p: numpy_dtype_of(p[0]).itemsize) + [p for p in pairs if p not in ints]  # type: ignore[union-attr]
        return pairs

    def __delitem__(self, key: str) -> None:
        del self._items[key]
        self.changed = True

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Metadata({len(self)} keys)"

    def set(self, key: str, value: Any, type=None, item_type=None) -> None:  # noqa: A002 - GGUF's own word
        """Set ``key`` with an explicit GGUF type (a GGUFValueType, its name or id)."""
        if type is None:
            self[key] = value
            return
        vtype = GGUFValueType[type] if isinstance(type, str) else GGUFValueType(type)
        if isinstance(item_type, str):
            item_type = GGUFValueType[item_type]
        self._items[key] = make_value(vtype, value, item_type)
        self.changed = True

    def typed(self, key: str) -> GGUFValue:
        """The :class:`GGUFValue` stored under ``key``."""
        return self._items[key]

    def type_of(self, key: str) -> GGUFValueType:
        """The GGUF type of the value under ``key``."""
        return self._items[key].type

    def typed_items(self) -> Iterator[tuple[str, GGUFValue]]:
        """(key, GGUFValue) pairs in file order."""
        return iter(self._items.items())

    def typed_view(self) -> Mapping[str, GGUFValue]:
        """A read-only live view of key -> :class:`GGUFValue`, in file order (no copy)."""
        return MappingProxyType(self._items)
