"""In-place metadata edits from the command line: ``set`` (a key's value, or ``--delete``) and ``rename-tensor``.

Every edit rewrites the file atomically (a temporary file renamed over it); tensor data is streamed verbatim from
the old file, never loaded.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from ..format.enums import GGUFValueType
from ..format.containerspec import value_kind
from ..filemodel.inputs import open_input
from ..format.stringlist import StringList
from ..format.values import GGUFValue, first_fit, infer_value, make_value
from ..format import keynames

__all__ = ["parse_value", "set_key", "add_cli"]

_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def _scalar(text: str, vtype: GGUFValueType) -> Any:
    kind = value_kind(vtype)  # the spec's kind of the type: what the text is read as
    if kind == "text":
        return text
    if kind == "bool":
        word = text.strip().lower()
        if word not in _TRUE | _FALSE:
            raise ValueError(f"{text!r} is not a {vtype.name} (true/false)")
        return word in _TRUE
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number ({vtype.name})") from None
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer ({vtype.name}; decimal, or 0x.. hexadecimal)") from None


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


def _plain(text: str) -> Any:
    """Command-line ``text`` as the plain value it spells (a JSON number, bool or list), else the text itself."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return parsed if isinstance(parsed, (bool, int, float, list)) else text


def set_key(gguf, key: str, text: str, vtype: GGUFValueType | None = None,
            item_type: GGUFValueType | None = None) -> GGUFValue:
    """Set ``key`` of a loaded file from command-line ``text`` and return the stored value.

    The type is ``vtype`` (an ``item_type`` alone means an ARRAY of it); else the same rule as assigning a plain
    value in the API (:meth:`Metadata.type_candidates`: the key's present type when the key registry allows it,
    else the registry's, integers narrowest first; else inferred from the text)."""
    if vtype is None and item_type is not None:
        vtype = GGUFValueType.ARRAY
    if vtype is not None:
        value = parse_value(text, vtype, item_type)
    else:
        candidates = gguf.metadata.type_candidates(key, _plain(text))
        value = first_fit(key, candidates, lambda t, i: parse_value(text, t, i), text) if candidates \
            else parse_value(text, None)
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


def special_token_keys() -> dict[str, str]:
    """The special tokens llama.cpp reads, by short name (``bos``, ``eos``, ``unk``, ``sep``, ``pad``, ...) -> the
    key it reads their id from (spec/architectures/_loader.yaml's key table)."""
    from ..arch.programs import loader

    out = {}
    for kv, key in loader()["key_names"].items():
        m = re.fullmatch(r"LLM_KV_TOKENIZER_(\w+)_ID", kv)
        if m and key.endswith("_token_id"):
            out[m.group(1).lower()] = key
    return out


def token_id(gguf, text: str) -> int:
    """The id of the token spelled ``text`` in the file's vocabulary (tokenizer.ggml.tokens); ValueError when it
    has none or the token is not in it."""
    tokens = gguf.metadata.get(keynames.TOKENIZER_GGML_TOKENS)
    if not isinstance(tokens, (list, StringList)):
        raise ValueError("the file has no vocabulary (tokenizer.ggml.tokens) to look the token up in")
    try:
        return tokens.index(text)
    except ValueError:
        raise ValueError(f"no token {text!r} in tokenizer.ggml.tokens") from None


def read_value_file(path: str) -> str:
    """The text of a value file (UTF-8); a tokenizer_config.json gives its ``chat_template`` (a string, or the
    ``default`` entry of a list of named templates)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if path.endswith(".json"):
        try:
            config = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON: {exc}") from None
        template = config.get("chat_template") if isinstance(config, dict) else None
        if isinstance(template, list):
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default")
        if not isinstance(template, str):
            raise ValueError(f"{path}: no chat_template string in this JSON file")
        return template
    return text


def _edits(args) -> list[tuple[str, str, str | None]]:
    """The command line's edits in order: ("delete", key, None), ("set", key, text), ("token", name, text)."""
    edits: list[tuple[str, str, str | None]] = []
    if args.delete is not None:
        edits.append(("delete", args.delete, None))
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
        "set", help="set or delete a metadata key in place",
        description="Set metadata KEY of FILE to VALUE, or delete a key, rewriting FILE atomically once for all "
                    "edits (tensor data is copied verbatim). The type is --type, else as the API types a plain "
                    "value: the key's current type when spec/keys.yaml allows it, else the registry's (integers "
                    "narrowest first, as llama.cpp reads them), else inferred from VALUE (integer INT32, number "
                    "FLOAT32, true/false BOOL, JSON list ARRAY, anything else STRING).")
    p.add_argument("file", help="the GGUF file to edit")
    p.add_argument("key", nargs="?", help="the metadata key, e.g. general.name")
    p.add_argument("value", nargs="?", help="the new value; an ARRAY is a JSON list such as '[1, 2]' (or --from-file)")
    p.add_argument("--type", metavar="T", help=f"the value type: {types}")
    p.add_argument("--item-type", metavar="T", help="the element type of an ARRAY value (implies --type ARRAY)")
    p.add_argument("--from-file", metavar="PATH",
                   help="read KEY's value from this file (UTF-8 text as is, e.g. a chat template; a .json file "
                        "gives its chat_template)")
    p.add_argument("--chat-template-file", metavar="PATH",
                   help="set tokenizer.chat_template from a .jinja file or a tokenizer_config.json")
    p.add_argument("--special-token", nargs=2, action="append", metavar=("NAME", "TEXT"),
                   help="set the id of special token NAME (bos, eos, unk, sep, pad, cls, mask, eot, eom, fim_pre, "
                        "...) to the id of the token spelled TEXT in the vocabulary; repeatable")
    p.add_argument("--delete", metavar="KEY", help="delete KEY")
    p.set_defaults(func=_cmd_set)

    p = subparsers.add_parser(
        "rename-tensor", help="rename a tensor in place",
        description="Rename tensor OLD of FILE to NEW, rewriting FILE atomically; the data section is copied "
                    "verbatim (offsets do not change).")
    p.add_argument("file", help="the GGUF file to edit")
    p.add_argument("old", help="the tensor's current name")
    p.add_argument("new", help="its new name")
    p.set_defaults(func=_cmd_rename_tensor)
