"""A loaded file's metadata as ``plan_load`` takes it: key -> :class:`~gguf_construct.arch.loader.MetaValue`, each
made when the loader asks for its key (a file of millions of keys is not converted for the few an architecture
reads); its tensor infos likewise, name -> :class:`~gguf_construct.arch.loader.TensorMeta`."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Iterator, MutableMapping

from ..format.enums import GGUFValueType
from .loader import MetaValue, TensorMeta

_NAME = attrgetter("name")

_ARRAY_TYPE = GGUFValueType.ARRAY  # an ARRAY GGUFValue's type (a MetaValue's is the name, "ARRAY")

__all__ = ["FileMeta", "FileTensors"]


class FileMeta(MutableMapping[str, MetaValue]):
    """key -> :class:`MetaValue` over ``(key, GGUFValue)`` pairs in file order, each converted on first access
    (and kept); keys set here hold the :class:`MetaValue` given.  Iteration, ``len`` and ``in`` read only keys."""

    __slots__ = ("_items",)

    def __init__(self, pairs: Any) -> None:
        self._items: dict[str, Any] = dict(pairs)

    def __getitem__(self, key: str) -> MetaValue:
        v = self._items[key]
        if type(v) is MetaValue:
            return v
        item = v.item_type.name if v.item_type is not None else None
        made = self._items[key] = MetaValue(v.type.name, v.value, item)
        return made

    def __setitem__(self, key: str, value: MetaValue) -> None:
        self._items[key] = value

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def without_arrays(self) -> "FileMeta":
        """The keys whose value is not an ARRAY (a read array may hold the file's memory map), still unconverted."""
        out = FileMeta(())
        out._items = {k: v for k, v in self._items.items() if v.type is not _ARRAY_TYPE and v.type != "ARRAY"}
        return out


class FileTensors(MutableMapping[str, TensorMeta]):
    """name -> :class:`TensorMeta` over a file's tensors (the last of a repeated name wins, at its first place),
    each converted on first access (and kept)."""

    __slots__ = ("_items",)

    def __init__(self, tensors: Any) -> None:
        tensors = list(tensors)
        self._items: dict[str, Any] = dict(zip(map(_NAME, tensors), tensors))

    def __getitem__(self, name: str) -> TensorMeta:
        t = self._items[name]
        if type(t) is TensorMeta:
            return t
        made = self._items[name] = TensorMeta(t.name, tuple(t.shape), int(t.ggml_type))
        return made

    def __setitem__(self, name: str, value: TensorMeta) -> None:
        self._items[name] = value

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items
