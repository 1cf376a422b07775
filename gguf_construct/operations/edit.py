"""In-place metadata edits from the command line: ``set`` (a key's value, or ``--delete``) and ``rename-tensor``.

Every edit rewrites the file atomically (a temporary file renamed over it); tensor data is streamed verbatim from
the old file, never loaded.
"""

from __future__ import annotations

import errno
import json
import os
import re
import select
import stat
from typing import Any

from ..format.enums import GGUFValueType
from ..format.containerspec import value_kind
from ..format.stringlist import StringList
from ..format.values import GGUFValue, first_fit, infer_value, make_value
from ..format import keynames

__all__ = ["parse_value", "set_key"]

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
    return make_value(vtype, [_scalar(i if isinstance(i, str) else json.dumps(i), item_type) for i in items], item_type)


def _plain(text: str) -> Any:
    """Command-line ``text`` as the plain value it spells (a JSON number, bool or list), else the text itself."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return parsed if isinstance(parsed, (bool, int, float, list)) else text


def set_key(
    gguf, key: str, text: str, vtype: GGUFValueType | None = None, item_type: GGUFValueType | None = None
) -> GGUFValue:
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
        value = (
            first_fit(key, candidates, lambda t, i: parse_value(text, t, i), text)
            if candidates
            else parse_value(text, None)
        )
    gguf.metadata[key] = value
    return value


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


VALUE_FILE_LIMIT = 256 << 20  # bytes of a value file; a stream (a pipe, /dev/zero) is cut off here
PIPE_SILENCE = 10.0  # seconds a pipe may stay silent before reading it gives up (a FIFO nobody writes)


def _read_bounded(path: str) -> bytes:
    """The bytes of ``path``: a regular file, or a pipe or device read until its end -- at most
    :data:`VALUE_FILE_LIMIT` bytes, and a pipe silent for :data:`PIPE_SILENCE` seconds is an error, never a hang."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO without a writer must not block
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        chunks, size = [], 0
        while True:
            if not stat.S_ISREG(mode):
                ready, _, _ = select.select([fd], [], [], PIPE_SILENCE)
                if not ready:
                    raise OSError(errno.ETIMEDOUT, f"nothing to read for {PIPE_SILENCE:g} s", path)
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > VALUE_FILE_LIMIT:
                raise OSError(errno.EFBIG, f"more than {VALUE_FILE_LIMIT >> 20} MiB", path)
            chunks.append(chunk)
    finally:
        os.close(fd)


def read_value_file(path: str) -> str:
    """The text of a value file (UTF-8); a tokenizer_config.json gives its ``chat_template`` (a string, or the
    ``default`` entry of a list of named templates)."""
    try:
        data = _read_bounded(path)
    except OSError as exc:
        text = exc.strerror or str(exc)
        raise ValueError(f"{path}: {text[:1].lower() + text[1:]}") from None
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
