"""Which conformance rule a field that cannot be read breaks, as ``spec/gguf.yaml`` declares it with the field.

A read of the container stops at the first field it cannot read, for one of these reasons (the keys of a
``breaks:`` mapping in the spec):

* ``truncated`` (on a type): the file ends inside one of the type's fields (for a string type: its length, or
  its bytes run past the end).  A type that declares none takes the rule of the fields that hold it
  (``gguf_array``, a metadata value, takes ``metadata_kv``'s);
* ``count`` (on a ``repeat`` field): the count asks for more items than the bytes left can hold; a repeat without
  one breaks its record's ``truncated`` rule;
* ``selector`` (on a ``switch_on`` field): the selector names no case (an unknown value type);
* ``mismatch`` (on a ``contents`` field): the bytes are not the fixed contents (the magic);
* ``invalid`` (on a field with ``valid:``): the value is not one the field allows, where a read stops on it (the
  version, which decides how to read on; the dimension count, which decides how many dimensions follow);
* ``nesting`` (on a field whose switch can select its own type): items nested deeper than a reader can follow.

The compiled read (:mod:`gguf_construct.format.structs`), the located tolerant read (:mod:`gguf_construct.format.fieldtree`)
and the bootstrap (:mod:`gguf_construct.format.reader`) all ask here, so each decision is made once, by the spec.
"""

from __future__ import annotations

from typing import Iterator

from .containerspec import container_spec, is_string_type, value_types

__all__ = [
    "TYPE_FAILURES",
    "FIELD_FAILURES",
    "truncated_rule",
    "field_rule",
    "nesting_rule",
    "default_rule",
    "declarations",
]

TYPE_FAILURES = ("truncated",)
FIELD_FAILURES = ("count", "selector", "mismatch", "invalid", "nesting")

_CACHE: dict = {}  # spec object -> {question: answer}; a spec reloaded (a test's copy) starts afresh


def _answers() -> dict:
    spec = container_spec()
    if _CACHE.get("spec") is not spec:
        _CACHE.clear()
        _CACHE["spec"] = spec  # held, so its id is never reused while it is the key
        _CACHE["answers"] = {}
    return _CACHE["answers"]


def _holders(type_name: str) -> Iterator[tuple[str, dict]]:
    """(type, field) of every field whose value can be a ``type_name``: by ``type`` or through a switch's case."""
    cases = {vt.get("encoding") or vt["type"] for vt in value_types().values()}
    for holder, t in container_spec()["types"].items():
        for f in t["seq"]:
            if f.get("type") == type_name or ("switch_on" in f and type_name in cases):
                yield holder, f


def truncated_rule(type_name: str) -> str | None:
    """The rule a file ending inside a field of ``type_name`` breaks: the type's declaration, else the one rule of
    the types that hold it (None when there is none, or they disagree)."""
    answers = _answers()
    key = ("truncated", type_name)
    if key not in answers:
        answers[key] = None  # a type holding itself: the other holders decide
        declared = container_spec()["types"][type_name].get("breaks", {}).get("truncated")
        if declared is None:
            found = {truncated_rule(holder) for holder, _ in _holders(type_name) if holder != type_name} - {None}
            declared = found.pop() if len(found) == 1 else None
        answers[key] = declared
    return answers[key]


def field_rule(type_name: str, field_id: str, failure: str) -> str | None:
    """The rule field ``field_id`` of ``type_name`` breaks when it fails as ``failure`` (one of
    :data:`FIELD_FAILURES`); a ``count`` without a declaration breaks the record's :func:`truncated_rule`."""
    if failure not in FIELD_FAILURES:
        raise ValueError(f"unknown failure {failure!r}: one of {FIELD_FAILURES}")
    for f in container_spec()["types"][type_name]["seq"]:
        if f["id"] == field_id:
            rule = f.get("breaks", {}).get(failure)
            return truncated_rule(type_name) if rule is None and failure == "count" else rule
    raise KeyError(f"{type_name} has no field {field_id!r}")


def nesting_rule(type_name: str) -> str | None:
    """The ``nesting`` rule of the first field that declares one among the fields a ``type_name`` can hold, at
    any depth (what a read of ``type_name`` that ran out of stack breaks)."""
    answers = _answers()
    key = ("nesting", type_name)
    if key not in answers:
        answers[key] = None  # recursion guard
        types = container_spec()["types"]
        cases = [vt.get("encoding") or vt["type"] for vt in value_types().values()]
        found = None
        for f in types[type_name]["seq"]:
            found = f.get("breaks", {}).get("nesting")
            inner = cases if "switch_on" in f else [f.get("type")]
            for name in inner:
                if found is None and name in types:
                    found = nesting_rule(name)
            if found is not None:
                break
        answers[key] = found
    return answers[key]


def default_rule(construct: str) -> str | None:
    """The rule a checked construct made without one (outside the generator, which names the field) breaks: the
    one rule the spec declares for every field it can stand for (None when they disagree).  ``construct``:
    ``string`` (a string that runs past the end), ``strings`` or ``numbers`` (the count of an array of strings or
    of numbers), or a primitive such as ``f4`` (a short read of a single value)."""
    answers = _answers()
    key = ("default", construct)
    if key not in answers:
        types = container_spec()["types"]
        cases = [vt.get("encoding") or vt["type"] for vt in value_types().values()]
        found = set()
        if construct == "string":
            found = {truncated_rule(name) for name in types if is_string_type(name)}
        for type_name, t in types.items():
            for f in t["seq"]:
                items = cases if "switch_on" in f else [f.get("type")]
                if construct in ("strings", "numbers") and "repeat" in f:
                    strings = [i for i in items if i in types and is_string_type(i)]
                    numbers = [i for i in items if i is not None and i not in types]
                    if strings if construct == "strings" else numbers:
                        found.add(field_rule(type_name, f["id"], "count"))
                elif "repeat" not in f and construct in items:
                    found.add(truncated_rule(type_name))
        answers[key] = found.pop() if len(found) == 1 else None
    return answers[key]


def declarations() -> list[tuple[str, str, str]]:
    """Every declaration of the spec as ``(where, failure, rule)``: ``where`` is a type (``header``) or a field
    (``header.magic``)."""
    out = []
    for type_name, t in container_spec()["types"].items():
        out += [(type_name, failure, rule) for failure, rule in t.get("breaks", {}).items()]
        for f in t["seq"]:
            out += [(f"{type_name}.{f['id']}", failure, rule) for failure, rule in f.get("breaks", {}).items()]
    return out
