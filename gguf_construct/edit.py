"""In-place metadata edits from the command line: ``set`` (a key's value, or ``--delete``) and ``rename-tensor``.

Every edit rewrites the file atomically (a temporary file renamed over it); tensor data is streamed verbatim from
the old file, never loaded.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .enums import GGUFValueType
from .inputs import open_input
from .values import GGUFValue, infer_value, make_value

__all__ = ["parse_value", "registry_type", "set_key", "add_cli"]

_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def registry_type(key: str, arch: str | None, current: tuple | None = None
                  ) -> tuple[GGUFValueType, GGUFValueType | None] | None:
    """The (type, element type) spec/keys.yaml gives ``key`` (``{arch}`` keys for ``arch``), or None.

    ``current`` (the key's present type pair) is kept when the registry allows it too (e.g. UINT32 where UINT64
    is the documented type and UINT32 an allowed alternative)."""
    from .rulebook.keys import allowed_types, lookup

    entry = lookup(key, arch)
    if entry is None:
        return None
    if current is not None and (int(current[0]), None if current[1] is None else int(current[1])) \
            in allowed_types(entry):
        return current
    item = entry.get("item_type")
    return GGUFValueType[entry["type"]], GGUFValueType[item] if item else None


def _scalar(text: str, vtype: GGUFValueType) -> Any:
    if vtype == GGUFValueType.STRING:
        return text
    if vtype == GGUFValueType.BOOL:
        word = text.strip().lower()
        if word not in _TRUE | _FALSE:
            raise ValueError(f"{text!r} is not a BOOL (true/false)")
        return word in _TRUE
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        return float(text)
    return int(text, 0)


def parse_value(text: str, vtype: GGUFValueType | None, item_type: GGUFValueType | None = None) -> GGUFValue:
    """The typed value of command-line ``text``.

    With a type: scalars parse as that type (ints also as 0x..., BOOL as true/false); an ARRAY is a JSON list
    whose items parse as ``item_type``.  Without: a JSON list is an array, else an integer is INT32 (INT64 when
    larger), a number FLOAT32, true/false BOOL, anything else a STRING.
    """
    if vtype is None:
        try:
            parsed = json.loads(text)
        except ValueError:
            return infer_value(text)
        if isinstance(parsed, (bool, int, float, list)):
            return infer_value(parsed)
        return infer_value(text)
    if vtype != GGUFValueType.ARRAY:
        return make_value(vtype, _scalar(text, vtype))
    items = json.loads(text)
    if not isinstance(items, list):
        raise ValueError("an ARRAY value is a JSON list, e.g. '[1, 2, 3]' or '[\"a\", \"b\"]'")
    if item_type is None:
        return infer_value(items)
    if item_type == GGUFValueType.ARRAY:
        return make_value(vtype, items, item_type)
    return make_value(vtype, [_scalar(i if isinstance(i, str) else json.dumps(i), item_type) for i in items],
                      item_type)


def set_key(gguf, key: str, text: str, vtype: GGUFValueType | None = None,
            item_type: GGUFValueType | None = None) -> GGUFValue:
    """Set ``key`` of a loaded file from command-line text; the type is ``vtype``, else the registry's (spec/
    keys.yaml; the current type when the registry allows it), else the key's current type, else inferred.
    Returns the stored value."""
    if vtype is None:
        arch = gguf.metadata.get("general.architecture")
        current = None
        if key in gguf.metadata:
            old = gguf.metadata.typed(key)
            current = (old.type, old.item_type)
        found = registry_type(key, arch if isinstance(arch, str) else None, current) or current
        if found is not None:
            vtype, item_type = found
    value = parse_value(text, vtype, item_type)
    gguf.metadata[key] = value
    return value


def _type_arg(text: str) -> GGUFValueType:
    try:
        return GGUFValueType[text.upper()]
    except KeyError:
        raise ValueError(f"unknown type {text!r}; the types are: "
                         + ", ".join(t.name for t in GGUFValueType)) from None


def _fail(message: str) -> int:
    print(f"gguf-construct: {message}", file=sys.stderr)
    return 2


def _cmd_set(args) -> int:
    if args.delete is not None:
        if args.key is not None or args.value is not None:
            return _fail("set --delete KEY takes no KEY VALUE")
    elif args.key is None or args.value is None:
        return _fail("set needs KEY VALUE (or --delete KEY)")
    try:
        vtype = _type_arg(args.type) if args.type else None
        item_type = _type_arg(args.item_type) if args.item_type else None
    except ValueError as exc:
        return _fail(str(exc))
    gguf = open_input(args.file)
    try:
        if args.delete is not None:
            if args.delete not in gguf.metadata:
                return _fail(f"{args.file}: no key {args.delete!r}")
            del gguf.metadata[args.delete]
            done = f"deleted {args.delete}"
        else:
            try:
                value = set_key(gguf, args.key, args.value, vtype, item_type)
            except (ValueError, TypeError) as exc:
                return _fail(f"{args.key}: {exc}")
            label = value.type.name if value.item_type is None else f"ARRAY[{value.item_type.name}]"
            done = f"set {args.key} ({label})"
        gguf.save(args.file)
    finally:
        gguf.close()
    print(f"{args.file}: {done}")
    return 0


def _cmd_rename_tensor(args) -> int:
    gguf = open_input(args.file)
    try:
        try:
            gguf.rename_tensor(args.old, args.new)
        except KeyError:
            return _fail(f"{args.file}: no tensor {args.old!r}")
        except ValueError as exc:
            return _fail(f"{args.file}: {exc}")
        gguf.save(args.file)
    finally:
        gguf.close()
    print(f"{args.file}: renamed tensor {args.old} -> {args.new}")
    return 0


def add_cli(subparsers) -> None:
    """Register the ``set`` and ``rename-tensor`` sub-commands."""
    types = ", ".join(t.name for t in GGUFValueType)
    p = subparsers.add_parser(
        "set", help="set or delete a metadata key in place",
        description="Set metadata KEY of FILE to VALUE, or delete a key, rewriting FILE atomically (tensor data "
                    "is copied verbatim). The type is --type, else the one spec/keys.yaml gives the key (its current "
                    "type when the registry allows that too), else the key's current type, else inferred from VALUE (integer INT32, number FLOAT32, true/false "
                    "BOOL, JSON list ARRAY, anything else STRING).")
    p.add_argument("file", help="the GGUF file to edit")
    p.add_argument("key", nargs="?", help="the metadata key, e.g. general.name")
    p.add_argument("value", nargs="?", help="the new value; an ARRAY is a JSON list such as '[1, 2]'")
    p.add_argument("--type", metavar="T", help=f"the value type: {types}")
    p.add_argument("--item-type", metavar="T", help="the element type of an ARRAY value")
    p.add_argument("--delete", metavar="KEY", help="delete KEY instead of setting one")
    p.set_defaults(func=_cmd_set)

    p = subparsers.add_parser(
        "rename-tensor", help="rename a tensor in place",
        description="Rename tensor OLD of FILE to NEW, rewriting FILE atomically; the data section is copied "
                    "verbatim (offsets do not change).")
    p.add_argument("file", help="the GGUF file to edit")
    p.add_argument("old", help="the tensor's current name")
    p.add_argument("new", help="its new name")
    p.set_defaults(func=_cmd_rename_tensor)
