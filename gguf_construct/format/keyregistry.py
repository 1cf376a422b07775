"""The metadata key registry (spec/keys.yaml) as lookups: which entry a key is, and which GGUF type a plain value
assigned to a standardized key gets.  The rulebook's key lookups (``rulebook.keys``) builds its type rules on this."""

from __future__ import annotations

import functools
import re
from typing import Any

from . import spec as _spec
from .enums import GGUFValueType

__all__ = ["keys_spec", "lookup", "registry_types"]

_PLACEHOLDER = re.compile(r"\{(arch|id|name)\}")
_FILL = {"id": r"[0-9]+", "name": r"[a-z0-9_]+(?:\.[a-z0-9_]+)*"}


@functools.lru_cache(maxsize=None)
def keys_spec() -> dict:
    """The parsed spec/keys.yaml."""
    return _spec.load_yaml("keys.yaml")


@functools.lru_cache(maxsize=64)
def _index(arch: str | None) -> tuple[dict[str, dict], tuple[tuple[re.Pattern, dict], ...]]:
    exact: dict[str, dict] = {}
    patterns = []
    for entry in keys_spec()["keys"]:
        for spelling in [entry["key"], *entry.get("aliases", [])]:
            if "{arch}" in spelling:
                if arch is None:
                    continue
                spelling = spelling.replace("{arch}", arch)
            if _PLACEHOLDER.search(spelling):
                rx = "".join(_FILL[p] if i % 2 else re.escape(p) for i, p in enumerate(_PLACEHOLDER.split(spelling)))
                patterns.append((re.compile(rx + r"\Z"), entry))
            else:
                exact.setdefault(spelling, entry)
    return exact, tuple(patterns)


@functools.lru_cache(maxsize=8192)
def lookup(key: str, arch: str | None) -> dict | None:
    """The registry entry of ``key`` (an alias counts; {arch} is the file's architecture), or None."""
    exact, patterns = _index(arch)
    entry = exact.get(key)
    if entry is not None:
        return entry
    for rx, e in patterns:
        if rx.match(key):
            return e
    return None


def _pair(t: Any) -> tuple[GGUFValueType, GGUFValueType | None]:
    if isinstance(t, str):
        return GGUFValueType[t], None
    return GGUFValueType[t["type"]], GGUFValueType[t["item_type"]] if t.get("item_type") else None


def registry_types(key: str, arch: str | None) -> list[tuple[GGUFValueType, GGUFValueType | None]]:
    """The (type, element type) pairs the registry allows for ``key``, its main type first, or [] for a key the
    registry does not know."""
    entry = lookup(key, arch)
    if entry is None:
        return []
    return [_pair(entry), *(_pair(alt) for alt in entry.get("alt_types", []))]
