"""Rules declared in spec/rules.yaml alone: a rule with a ``key_check`` needs no predicate of its own.

``key_check`` names a metadata key (a key of spec/keys.yaml, or any key; ``{arch}`` stands for the file's
general.architecture, ``{id}`` and ``{name}`` for any one segment) and what its value must be, by any of:

- ``types``: the value type names it may have (``[UINT32, UINT64]``; an array as ``ARRAY[FLOAT32]``);
- ``min`` / ``max``: the bounds of a number (a scalar of an integer or float value type);
- ``values``: the values it may take.

Each KV pair with that key breaking one of them is a hit at the field that breaks it (the value type, or the
value), with the placeholders ``key``, ``type``, ``value`` and ``expected`` for the rule's message.  The one
predicate here is registered for every such rule when the catalog is read, so a new rule of this kind is an edit
of spec/rules.yaml only.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

from ..format import structs
from ..rulebook.catalog import Hit, catalog, rule
from ..rulebook.keys import file_architecture
from ..rulebook.walk import KV, Context

__all__ = ["KEY_CHECK", "key_check_predicate", "declared_rules", "describe"]

KEY_CHECK = "key_check"  # the field of a rules.yaml entry that declares it
_NUMBER_TYPES = frozenset(structs.types_of_kind("integer", "float"))
_PLACEHOLDER = re.compile(r"\\\{(\w+)\\\}")


def _key_pattern(key: str, arch: str | None) -> re.Pattern:
    """The keys ``key`` stands for in a file of architecture ``arch`` (``{arch}`` nothing when it has none)."""

    def fill(m: re.Match) -> str:
        if m.group(1) == "arch":
            return re.escape(arch) if arch else r"(?!)"
        return r"[^.]+"

    return re.compile(_PLACEHOLDER.sub(fill, re.escape(key)) + r"\Z")


def _bounds(check: dict) -> str:
    lo, hi = check.get("min"), check.get("max")
    if lo is not None and hi is not None:
        return f"{lo} to {hi}"
    return f"at least {lo}" if lo is not None else f"at most {hi}"


def _breaks(kv: KV, check: dict) -> Hit | None:
    """The hit of one KV pair against a ``key_check`` (None when it keeps it)."""
    types = check.get("types")
    if types is not None and kv.type_label() not in types:
        return Hit(
            kv.at("value_type"),
            f"{kv.path}.value_type",
            key=kv.key,
            type=kv.type_label(),
            value=None,
            expected=" or ".join(types),
        )
    value: Any = kv.value
    if ("min" in check or "max" in check) and kv.vtype in _NUMBER_TYPES:
        lo, hi = check.get("min"), check.get("max")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return Hit(
                kv.value_offset,
                f"{kv.path}.value",
                key=kv.key,
                type=kv.type_label(),
                value=value,
                expected=_bounds(check),
            )
    values = check.get("values")
    if values is not None and kv.item_type is None and value not in values:
        return Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, type=kv.type_label(), value=value, expected=values)
    return None


def describe(check: dict) -> str:
    """A ``key_check`` in words: ``{arch}.context_length is 1 to 1048576``."""
    parts = []
    if check.get("types"):
        parts.append("has type " + " or ".join(check["types"]))
    if "min" in check or "max" in check:
        parts.append("is " + _bounds(check))
    if check.get("values") is not None:
        parts.append("is one of " + ", ".join(repr(v) for v in check["values"]))
    return f"{check['key']} " + " and ".join(parts)


def key_check_predicate(check: dict) -> Callable[[Context], Iterator[Hit]]:
    """The predicate of a rule declared by its ``key_check``."""

    def predicate(ctx: Context) -> Iterator[Hit]:
        pattern = _key_pattern(check["key"], file_architecture(ctx))
        for kv in ctx.kvs:
            if pattern.match(kv.key):
                hit = _breaks(kv, check)
                if hit is not None:
                    yield hit

    return predicate


def declared_rules() -> dict[str, dict]:
    """The rules of the catalog declared by a ``key_check``, by ID."""
    return {rid: r.raw[KEY_CHECK] for rid, r in catalog().items() if KEY_CHECK in r.raw}


for _rule_id, _check in declared_rules().items():
    rule(_rule_id)(key_check_predicate(_check))
