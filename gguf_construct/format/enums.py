"""Enumerations generated from the spec: metadata value types, ggml tensor types, llama file types."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, TypeVar

from . import spec as _spec
from .structs import container_spec

__all__ = ["GGUFValueType", "VALUE_TYPE_IDS", "GGMLType", "LlamaFileType", "ggml_type_or_none"]


def _file_type_members() -> list[tuple[str, int]]:
    try:
        raw = _spec.load_yaml("file_types.yaml")
    except FileNotFoundError:
        return [("ALL_F32", 0)]
    entries = raw.get("file_types") or raw.get("values") or []
    return [(e["name"], e["value"]) for e in entries if "name" in e and "value" in e] or [("ALL_F32", 0)]


if TYPE_CHECKING:
    _E = TypeVar("_E")

    class _MembersFromSpec(enum.EnumMeta):
        """For type checkers only: the members are read from spec/ at import, so any name is a member."""

        def __getattr__(cls: type[_E], name: str) -> _E: ...

    class GGUFValueType(enum.IntEnum, metaclass=_MembersFromSpec):
        """GGUF metadata value types (spec/gguf.yaml, section value_types)."""

    class GGMLType(enum.IntEnum, metaclass=_MembersFromSpec):
        """ggml tensor types, current and removed (spec/tensor_types)."""

    class LlamaFileType(enum.IntEnum, metaclass=_MembersFromSpec):
        """llama.cpp's llama_ftype, stored in general.file_type (spec/file_types.yaml)."""

else:
    GGUFValueType = enum.IntEnum(  # type: ignore[misc]
        "GGUFValueType", [(vt["name"], vt["id"]) for vt in container_spec()["value_types"]], module=__name__
    )
    GGUFValueType.__doc__ = "GGUF metadata value types (spec/gguf.yaml, section value_types)."

    GGMLType = enum.IntEnum(  # type: ignore[misc]
        "GGMLType", [(t.name, t.id) for t in _spec.tensor_types()], module=__name__
    )
    GGMLType.__doc__ = "ggml tensor types, current and removed (spec/tensor_types)."

    LlamaFileType = enum.IntEnum("LlamaFileType", _file_type_members(), module=__name__)  # type: ignore[misc]
    LlamaFileType.__doc__ = "llama.cpp's llama_ftype, stored in general.file_type (spec/file_types.yaml)."


VALUE_TYPE_IDS: dict[str, int] = {vt.name: int(vt) for vt in GGUFValueType}  # the value types as plain ints


def _name_as_str(self) -> str:
    return self.name


for _enum in (GGUFValueType, GGMLType, LlamaFileType):  # str() gives the name (IntEnum would print the number)
    _enum.__str__ = _name_as_str  # type: ignore[method-assign]


def ggml_type_or_none(value: int) -> "GGMLType | None":
    """The GGMLType member for an id, or None for ids ggml never defined."""
    try:
        return GGMLType(value)
    except ValueError:
        return None
