"""``gguf-construct set`` and ``rename-tensor``: in-place metadata edits, each file rewritten atomically once."""

from __future__ import annotations

import sys

from ..filemodel.inputs import open_input
from ..format import keynames
from ..format.enums import GGUFValueType
from ..operations.edit import read_value_file, set_key, special_token_keys, token_id

__all__ = ["add_cli"]


def _type_arg(text: str) -> GGUFValueType:
    try:
        return GGUFValueType[text.upper()]
    except KeyError:
        raise ValueError(f"unknown type {text!r}; the types are: " + ", ".join(t.name for t in GGUFValueType)) from None


def _fail(message: str) -> int:
    print(f"gguf-construct: {message}", file=sys.stderr)
    return 2


def _edits(args) -> list[tuple[str, str, str | None]]:
    """The command line's edits in order: ("delete", key, None), ("set", key, text), ("token", name, text)."""
    edits: list[tuple[str, str, str | None]] = []
    for key in args.delete or ():
        edits.append(("delete", key, None))
    if args.key is not None:
        if args.from_file is not None:
            if args.value is not None:
                raise ValueError("give VALUE or --from-file, not both")
            edits.append(("set", args.key, read_value_file(args.from_file)))
        elif args.value is None:
            raise ValueError(f"set {args.key} needs a VALUE (or --from-file PATH)")
        else:
            edits.append(("set", args.key, args.value))
    elif args.value is not None or args.from_file is not None:
        raise ValueError("a VALUE needs its KEY")
    if args.chat_template_file is not None:
        edits.append(("set", keynames.TOKENIZER_CHAT_TEMPLATE, read_value_file(args.chat_template_file)))
    for name, text in args.special_token or ():
        edits.append(("token", name, text))
    if not edits:
        raise ValueError("set needs KEY VALUE, --delete KEY, --special-token NAME TEXT or --chat-template-file PATH")
    return edits


def _special_key(name: str) -> str:
    keys = special_token_keys()
    key = keys.get(name.lower())
    if key is None:
        raise ValueError(f"unknown special token {name!r}; llama.cpp reads: {', '.join(sorted(keys))}")
    return key


def _cmd_set(args) -> int:
    try:
        vtype = _type_arg(args.type) if args.type else None
        item_type = _type_arg(args.item_type) if args.item_type else None
        edits = _edits(args)
    except ValueError as exc:
        return _fail(str(exc))
    gguf = open_input(args.file)
    done = []
    try:
        for kind, key, text in edits:
            try:
                if kind == "delete":
                    if key not in gguf.metadata:
                        return _fail(f"{args.file}: no key {key!r}")
                    del gguf.metadata[key]
                    done.append(f"deleted {key}")
                    continue
                if kind == "token":
                    key, tid = _special_key(key), token_id(gguf, text)
                    value = set_key(gguf, key, str(tid))
                else:
                    value = set_key(gguf, key, text, vtype, item_type)
            except (ValueError, TypeError) as exc:
                return _fail(f"{args.file}: {key}: {exc}")
            label = value.type.name if value.item_type is None else f"ARRAY[{value.item_type.name}]"
            done.append(f"set {key} ({label})")
        gguf.save(args.file)
    finally:
        gguf.close()
    for line in done:
        print(f"{args.file}: {line}")
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
        "set",
        help="set or delete a metadata key in place",
        description="Set metadata KEY of FILE to VALUE, or delete a key, rewriting FILE atomically once for all "
        "edits (tensor data is copied verbatim). The type is --type, else as the API types a plain "
        "value: the key's current type when spec/keys.yaml allows it, else the registry's (integers "
        "narrowest first, as llama.cpp reads them), else inferred from VALUE (integer INT32, number "
        "FLOAT32, true/false BOOL, JSON list ARRAY, anything else STRING).",
    )
    p.add_argument("file", help="the GGUF file to edit")
    p.add_argument("key", nargs="?", help=f"the metadata key, e.g. {keynames.GENERAL_NAME}")
    p.add_argument("value", nargs="?", help="the new value; an ARRAY is a JSON list such as '[1, 2]' (or --from-file)")
    p.add_argument("--type", metavar="T", help=f"the value type: {types}")
    p.add_argument("--item-type", metavar="T", help="the element type of an ARRAY value (implies --type ARRAY)")
    p.add_argument(
        "--from-file",
        metavar="PATH",
        help="read KEY's value from this file (UTF-8 text as is, e.g. a chat template; a .json file "
        "gives its chat_template)",
    )
    p.add_argument(
        "--chat-template-file",
        metavar="PATH",
        help=f"set {keynames.TOKENIZER_CHAT_TEMPLATE} from a .jinja file or a tokenizer_config.json",
    )
    special = p.add_argument(
        "--special-token",
        nargs=2,
        action="append",
        metavar=("NAME", "TEXT"),
        help="set the id of special token NAME (bos, eos, unk, sep, pad, cls, mask, eot, eom, "
        "fim_pre, ...) to the id of the token spelled TEXT in the vocabulary; repeatable",
    )
    special.candidates = lambda: sorted(special_token_keys())  # NAME, for shell completion
    p.add_argument("--delete", metavar="KEY", action="append", help="delete KEY; repeatable")
    p.set_defaults(func=_cmd_set)

    p = subparsers.add_parser(
        "rename-tensor",
        help="rename a tensor in place",
        description="Rename tensor OLD of FILE to NEW, rewriting FILE atomically; the data section is copied "
        "verbatim (offsets do not change).",
    )
    p.add_argument("file", help="the GGUF file to edit")
    p.add_argument("old", help="the tensor's current name")
    p.add_argument("new", help="its new name")
    p.set_defaults(func=_cmd_rename_tensor)
