"""The metadata key registry (spec/keys.yaml) as lookups: which entry a key is, and which types it may have."""

from __future__ import annotations

import functools
from typing import Iterable

from .. import spec as _spec
from ..keyregistry import keys_spec, lookup
from .walk import ARRAY, KV, _VT

__all__ = ["keys_spec", "lookup", "allowed_types", "type_label", "documented_architectures",
           "known_architectures", "standard_namespaces", "entries_required_by", "HYPHENATED_ARCHITECTURES",
           "UNWRITTEN_KEYS", "unwritten_keys"]

# errata (spec/errata.yaml) recording deviations from gguf.md that llama.cpp makes on purpose
HYPHENATED_ARCHITECTURES = "hyphenated-architectures"
UNWRITTEN_KEYS = "unwritten-required-keys"


def allowed_types(entry: dict) -> set[tuple[int, int | None]]:
    """(value type, element type or None) pairs the entry allows: its type and its alt_types."""
    out = {(_VT[entry["type"]], _VT[entry["item_type"]] if entry.get("item_type") else None)}
    for alt in entry.get("alt_types", []):
        if isinstance(alt, str):
            out.add((_VT[alt], None))
        else:
            out.add((_VT[alt["type"]], _VT[alt["item_type"]] if alt.get("item_type") else None))
    return out


def type_label(pairs: Iterable[tuple[int, int | None]]) -> str:
    """``UINT64 or UINT32`` for a set of allowed types."""
    names = {v: k for k, v in _VT.items()}
    labels = [f"ARRAY[{names[i]}]" if t == ARRAY else names[t] for t, i in pairs]
    return " or ".join(sorted(labels, key=lambda s: (s.startswith("ARRAY"), s)))


def kv_type(kv: KV) -> tuple[int, int | None]:
    """The (type, element type) pair of a KV pair."""
    return kv.vtype, kv.item_type


def documented_architectures() -> set[str]:
    """Architectures gguf.md documents (keys.yaml architectures)."""
    return {a["id"] for a in keys_spec()["architectures"]}


def known_architectures() -> set[str]:
    """Every architecture name the spec knows: documented by gguf.md or loaded by llama.cpp
    (spec/architectures/)."""
    from ..arch import architectures

    return documented_architectures() | set(architectures())


@functools.lru_cache(maxsize=1)
def standard_namespaces() -> frozenset[str]:
    """First segments of registry keys written without a placeholder (general, tokenizer, split, ...)."""
    return frozenset(e["key"].split(".")[0] for e in keys_spec()["keys"] if not e["key"].startswith("{"))


def entries_required_by(arch: str) -> list[dict]:
    """Registry entries whose required_by names ``arch``."""
    return [e for e in keys_spec()["keys"] if arch in e.get("required_by", [])]


@functools.lru_cache(maxsize=None)
def unwritten_keys() -> frozenset[str]:
    """Keys (with {arch}) that gguf.md requires but llama.cpp does not write: the erratum's related keys."""
    for e in _spec.load_yaml("errata.yaml")["errata"]:
        if e["id"] == UNWRITTEN_KEYS:
            return frozenset(e["related"]["keys"])
    return frozenset()
