"""The metadata key registry (spec/keys.yaml) as lookups: which entry a key is, and which types it may have."""

from __future__ import annotations

import functools
import re
from itertools import compress, repeat
from operator import attrgetter, is_, is_not
from typing import Any, Callable, Iterable

from ..format import spec as _spec
from ..format.keyregistry import _index, keys_spec, lookup
from .walk import ARRAY, KV, STRING, Context, _VT
from ..format import keynames

__all__ = [
    "keys_spec",
    "lookup",
    "allowed_types",
    "entry_fact",
    "type_label",
    "documented_architectures",
    "known_architectures",
    "standard_namespaces",
    "entries_required_by",
    "HYPHENATED_ARCHITECTURES",
    "UNWRITTEN_KEYS",
    "unwritten_keys",
    "file_architecture",
    "registry_entries",
    "required_spellings",
]

# errata (spec/errata.yaml) recording deviations from gguf.md that llama.cpp makes on purpose
HYPHENATED_ARCHITECTURES = "hyphenated-architectures"
UNWRITTEN_KEYS = "unwritten-required-keys"


def entry_fact(entry: dict, build: Callable[[dict], Any]) -> Any:
    """``build(entry)`` for a registry entry, computed once per entry (entries live as long as the parsed
    keys.yaml; ``build`` names the fact)."""
    key = (id(entry), build)
    got = _ENTRY_FACTS.get(key)
    if got is None or got[0] is not entry:
        got = _ENTRY_FACTS[key] = (entry, build(entry))
    return got[1]


_ENTRY_FACTS: dict[tuple[int, Callable], tuple[dict, Any]] = {}


def allowed_types(entry: dict) -> frozenset[tuple[int, int | None]]:
    """(value type, element type or None) pairs the entry allows: its type and its alt_types."""
    return entry_fact(entry, _allowed_types)


def _allowed_types(entry: dict) -> frozenset[tuple[int, int | None]]:
    out = {(_VT[entry["type"]], _VT[entry["item_type"]] if entry.get("item_type") else None)}
    for alt in entry.get("alt_types", []):
        if isinstance(alt, str):
            out.add((_VT[alt], None))
        else:
            out.add((_VT[alt["type"]], _VT[alt["item_type"]] if alt.get("item_type") else None))
    return frozenset(out)


def type_label(pairs: Iterable[tuple[int, int | None]]) -> str:
    """``UINT64 or UINT32`` for a set of allowed types."""
    names = {v: k for k, v in _VT.items()}
    labels = [f"ARRAY[{names[i]}]" if t == ARRAY else names[t] for t, i in pairs]
    return " or ".join(sorted(labels, key=lambda s: (s.startswith("ARRAY"), s)))


def kv_type(kv: KV) -> tuple[int, int | None]:
    """The (type, element type) pair of a KV pair."""
    return kv.vtype, kv.item_type


@functools.lru_cache(maxsize=1)
def documented_architectures() -> frozenset[str]:
    """Architectures gguf.md documents (keys.yaml architectures)."""
    return frozenset(a["id"] for a in keys_spec()["architectures"])


@functools.lru_cache(maxsize=1)
def known_architectures() -> frozenset[str]:
    """Every architecture name the spec knows: documented by gguf.md or loaded by llama.cpp
    (spec/architectures/)."""
    from ..arch.programs import architecture_names  # the file names: no architecture's program is read

    return documented_architectures() | architecture_names()


@functools.lru_cache(maxsize=1)
def standard_namespaces() -> frozenset[str]:
    """First segments of registry keys written without a placeholder (general, tokenizer, split, ...)."""
    return frozenset(e["key"].split(".")[0] for e in keys_spec()["keys"] if not e["key"].startswith("{"))


@functools.lru_cache(maxsize=64)
def entries_required_by(arch: str) -> tuple[dict, ...]:
    """Registry entries whose required_by names ``arch``."""
    return tuple(e for e in keys_spec()["keys"] if arch in e.get("required_by", []))


@functools.lru_cache(maxsize=None)
def unwritten_keys() -> frozenset[str]:
    """Keys (with {arch}) that gguf.md requires but llama.cpp does not write: the erratum's related keys."""
    for e in _spec.load_yaml("errata.yaml")["errata"]:
        if e["id"] == UNWRITTEN_KEYS:
            return frozenset(e["related"]["keys"])
    return frozenset()


def file_architecture(ctx: Context) -> str | None:
    """The file's general.architecture when it is a non-empty string (the {arch} of its keys), else None."""
    value = ctx.scalar(keynames.GENERAL_ARCHITECTURE, STRING)
    return value if isinstance(value, str) and value else None


def registry_entries(ctx: Context) -> list[tuple[KV, dict]]:
    """(KV pair, registry entry) of every pair whose key the registry knows, {arch} being the file's
    architecture; computed once per file for the rules that judge keys against the registry."""

    def build(c: Context) -> list[tuple[KV, dict]]:
        arch = file_architecture(c)
        exact, patterns = _index(arch)
        maybe = _any_pattern(arch).match  # one search for all the patterns: most keys match none
        keys = list(map(attrgetter("key"), c.kvs))
        found = list(map(exact.get, keys))  # in C loops: no Python step per key
        unknown = list(compress(range(len(keys)), map(is_, found, repeat(None))))
        for i in compress(unknown, map(maybe, map(keys.__getitem__, unknown))):
            found[i] = lookup(keys[i], arch) or None
        return list(compress(zip(c.kvs, found), map(is_not, found, repeat(None))))

    return ctx.derived("registry_entries", build)


@functools.lru_cache(maxsize=64)
def _any_pattern(arch: str | None) -> re.Pattern:
    """One pattern matching every key that some pattern of the registry (for ``arch``) matches."""
    patterns = [rx.pattern for rx, _ in _index(arch)[1]]
    return re.compile("|".join(f"(?:{p})" for p in patterns) if patterns else r"(?!)")


@functools.lru_cache(maxsize=64)
def required_spellings(arch: str) -> tuple[tuple[dict, tuple[str, ...]], ...]:
    """(entry, its spellings with {arch} filled in, main one first) of every registry entry ``arch`` requires."""
    return tuple(
        (e, tuple(s.replace("{arch}", arch) for s in [e["key"], *e.get("aliases", [])]))
        for e in entries_required_by(arch)
    )
