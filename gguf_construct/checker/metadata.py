"""Predicates of the metadata-schema rules (META-*): standardized keys and their types, architecture keys,
tokenizer consistency, general.file_type, split keys.  Everything comes from spec/keys.yaml and
spec/file_types.yaml."""

from __future__ import annotations

import functools
import re
from typing import Iterator

import numpy as np

from ..format import spec as _spec
from ..format import splitset
from ..rulebook.keys import (
    HYPHENATED_ARCHITECTURES,
    UNWRITTEN_KEYS,
    allowed_types,
    documented_architectures,
    entry_fact,
    file_architecture,
    known_architectures,
    lookup,
    registry_entries,
    required_spellings,
    type_label,
    unwritten_keys,
)
from ..rulebook.catalog import Hit, rule
from ..rulebook.walk import ALIGNMENT_KEY, ARRAY, STRING, KV, Context
from ..format.lazystring import LazyString
from ..format.stringlist import StringList
from ..format import keynames, structs

ARCH_KEY = keynames.GENERAL_ARCHITECTURE
QV_KEY = keynames.GENERAL_QUANTIZATION_VERSION
FILE_TYPE_KEY = keynames.GENERAL_FILE_TYPE
TOKENS_KEY = keynames.TOKENIZER_GGML_TOKENS
TOKENIZER_ARRAYS = (
    keynames.TOKENIZER_GGML_TOKENS,
    keynames.TOKENIZER_GGML_SCORES,
    keynames.TOKENIZER_GGML_TOKEN_TYPE,
    keynames.TOKENIZER_GGML_MERGES,
)
SPLIT_KEYS = splitset.SPLIT_KEYS
_ARCH_CHARSET = re.compile(r"[a-z0-9]+\Z")
_TOKEN_ID = re.compile(r"tokenizer\.ggml\.[a-z0-9_]+_token_id\Z")
_INTEGER_TYPES = set(structs.types_of_kind("integer"))


def _int(ctx: Context, key: str) -> int | None:
    value = ctx.scalar(key)
    kv = ctx.first(key)
    if kv is None or kv.vtype not in _INTEGER_TYPES:
        return None
    return int(value)


def _value_hit(kv: KV, **params) -> Hit:
    return Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, **params)


def _type_hit(kv: KV, allowed) -> Hit:
    return Hit(
        kv.at("value_type"), f"{kv.path}.value_type", key=kv.key, type=kv.type_label(), expected=type_label(allowed)
    )


@rule("META-ARCH-MISSING")
def _arch_missing(ctx: Context) -> Iterator[Hit]:
    if ctx.kv_complete and ctx.first(ARCH_KEY) is None:
        yield Hit(None, "metadata_kv", key=ARCH_KEY)


def _in_arch_charset(value: "str | LazyString") -> bool:
    """True when every character of ``value`` is in the architecture names' charset (a long value judged a
    chunk at a time: the pattern is one character class repeated)."""
    if isinstance(value, LazyString):
        return all(_ARCH_CHARSET.match(text) for text in value.iter_chunks())
    return bool(_ARCH_CHARSET.match(value))


@rule("META-ARCH-CHARSET")
def _arch_charset(ctx: Context) -> Iterator[Hit]:
    kv = ctx.first(ARCH_KEY)
    if kv is not None and kv.vtype == STRING and not _in_arch_charset(kv.value):
        hit = _value_hit(kv, value=kv.value)
        if kv.value in known_architectures():  # command-r, nemotron_h: llama.cpp's own names
            hit.on_purpose(HYPHENATED_ARCHITECTURES)
        yield hit


@rule("META-ARCH-UNKNOWN")
def _arch_unknown(ctx: Context) -> Iterator[Hit]:
    kv = ctx.first(ARCH_KEY)
    if kv is not None and kv.vtype == STRING and kv.value not in known_architectures():
        yield _value_hit(kv, value=kv.value)


def _special_types(key: str) -> bool:
    """Keys whose type has a rule of its own (alignment, tokenizer arrays, split keys)."""
    return key == ALIGNMENT_KEY or key in TOKENIZER_ARRAYS or key in SPLIT_KEYS


@rule("META-KEY-TYPE")
def _key_type(ctx: Context) -> Iterator[Hit]:
    for kv, entry in registry_entries(ctx):
        if _special_types(kv.key):
            continue
        allowed = allowed_types(entry)
        if (kv.vtype, kv.item_type) not in allowed:
            yield _type_hit(kv, allowed)


@rule("META-TOKENIZER-TYPE")
def _tokenizer_type(ctx: Context) -> Iterator[Hit]:
    for key in TOKENIZER_ARRAYS:
        kv = ctx.first(key)
        if kv is None:
            continue
        allowed = allowed_types(lookup(key, None))
        if (kv.vtype, kv.item_type) not in allowed:
            yield Hit(
                kv.at("value_type"),
                f"{kv.path}.value_type",
                key=key,
                type=kv.type_label(),
                expected=type_label(allowed),
            )


@rule("META-SPLIT-TYPES")
def _split_types(ctx: Context) -> Iterator[Hit]:
    for key in SPLIT_KEYS:
        kv = ctx.first(key)
        if kv is None:
            continue
        allowed = allowed_types(lookup(key, None))
        if (kv.vtype, kv.item_type) not in allowed:
            yield _type_hit(kv, allowed)


def _documented_values(entry: dict) -> dict | None:
    values = entry.get("values")
    return values if isinstance(values, dict) else None


def _int_values(entry: dict) -> tuple[tuple[int, ...], bool]:
    """The integer values a registry entry documents, and whether they are every integer from the least to the
    greatest."""
    values = tuple(v for v in entry["values"] if isinstance(v, int))
    return values, bool(values) and len(set(values)) == max(values) - min(values) + 1


def _first_outside(data: np.ndarray, allowed: tuple[int, ...], is_range: bool) -> int | None:
    """Index of the first element of an integer array that is not in ``allowed`` (None: there is none).  Small
    non-negative values take one table lookup per element instead of a sort; a range holding the array's least
    and greatest element needs no pass beyond those two."""
    if not allowed:
        return 0
    lo, hi = int(data.min()), int(data.max())
    if is_range and min(allowed) <= lo and hi <= max(allowed):
        return None
    if min(allowed) >= 0 and max(allowed) < 4096:
        table = np.zeros(max(allowed) + 2, dtype=bool)
        table[list(allowed)] = True
        bad = ~table[data] if lo >= 0 and hi < len(table) else ~table[np.clip(data, 0, len(table) - 1)] | (data < 0)
    else:
        bad = ~np.isin(data, np.array(allowed, dtype=np.int64))
    return int(np.argmax(bad)) if bad.any() else None


def _values_text(entry: dict) -> str:
    """The values a registry entry documents, as a finding lists them."""
    return ", ".join(map(str, entry["values"]))


@rule("META-KEY-VALUE")
def _key_value(ctx: Context) -> Iterator[Hit]:
    for kv, entry in registry_entries(ctx):
        values = _documented_values(entry)
        if not values:
            continue
        expected = entry_fact(entry, _values_text)
        if kv.vtype == ARRAY:
            data = kv.value.data
            if isinstance(data, np.ndarray) and data.dtype.kind in "iu" and len(data):
                j = _first_outside(data, *entry_fact(entry, _int_values))
                if j is not None:
                    yield Hit(
                        kv.value_offset, f"{kv.path}.value.data[{j}]", key=kv.key, value=int(data[j]), expected=expected
                    )
            elif isinstance(data, StringList):  # judged on the bytes, value by value (no str per item)
                j = data.first_outside(v for v in values if isinstance(v, str))
                if j is not None:
                    yield Hit(
                        kv.value_offset, f"{kv.path}.value.data[{j}]", key=kv.key, value=data[j], expected=expected
                    )
            elif isinstance(data, list):
                for j, v in enumerate(data):
                    if isinstance(v, str) and v not in values:
                        yield Hit(kv.value_offset, f"{kv.path}.value.data[{j}]", key=kv.key, value=v, expected=expected)
                        break
        elif isinstance(kv.value, (str, int)) and not isinstance(kv.value, bool) and kv.value not in values:
            yield _value_hit(kv, value=kv.value, expected=expected)


def _quantized(ctx: Context) -> list:
    return [t for t in ctx.model_tensors if t.spec is not None and t.spec.kind == "quantized" and t.spec.is_current]


@rule("META-QV-MISSING")
def _qv_missing(ctx: Context) -> Iterator[Hit]:
    if ctx.kv_complete and ctx.first(QV_KEY) is None:
        quantized = _quantized(ctx)
        if quantized:
            yield Hit(None, "metadata_kv", count=len(quantized))


@rule("META-ARCH-KEYS")
def _arch_keys(ctx: Context) -> Iterator[Hit]:
    arch = file_architecture(ctx)
    if not ctx.kv_complete or arch not in documented_architectures():
        return
    present = {kv.key for kv in ctx.kvs}
    for entry, spellings in required_spellings(arch):
        if present.isdisjoint(spellings):
            hit = Hit(None, "metadata_kv", arch=arch, key=spellings[0])
            if entry["key"] in unwritten_keys():
                hit.on_purpose(UNWRITTEN_KEYS)
            yield hit


@rule("META-LLM-PLACEHOLDER")
def _llm_placeholder(ctx: Context) -> Iterator[Hit]:
    arch = file_architecture(ctx)
    if arch == "llm":
        return
    for kv in ctx.kvs:
        if kv.key.startswith("llm."):
            yield Hit(kv.offset, f"{kv.path}.key", key=kv.key, expected=(arch or "<architecture>") + kv.key[3:])


def _array_len(kv: KV | None) -> int | None:
    return len(kv.value.data) if kv is not None and kv.vtype == ARRAY else None


@rule("META-TOKENIZER-LEN")
def _tokenizer_len(ctx: Context) -> Iterator[Hit]:
    n = _array_len(ctx.first(TOKENS_KEY))
    if n is None:
        return
    for key in (keynames.TOKENIZER_GGML_SCORES, keynames.TOKENIZER_GGML_TOKEN_TYPE):
        kv = ctx.first(key)
        m = _array_len(kv)
        if m is not None and m != n:
            yield _value_hit(kv, length=m, expected=n)


@rule("META-TOKEN-ID")
def _token_id(ctx: Context) -> Iterator[Hit]:
    n = _array_len(ctx.first(TOKENS_KEY))
    if n is None:
        return
    for kv in ctx.kvs:
        if (
            kv.key.endswith("_token_id")
            and _TOKEN_ID.match(kv.key)
            and kv.vtype in _INTEGER_TYPES
            and int(kv.value) >= n
        ):
            yield _value_hit(kv, value=int(kv.value), expected=n)


@functools.lru_cache(maxsize=None)
def _file_types() -> dict[int, dict]:
    return {e["value"]: e for e in _spec.load_yaml("file_types.yaml")["file_types"]}


@rule("META-FILETYPE")
def _file_type(ctx: Context) -> Iterator[Hit]:
    kv = ctx.first(FILE_TYPE_KEY)
    if kv is None or kv.vtype not in _INTEGER_TYPES:
        return
    value = int(kv.value)
    entry = _file_types().get(value)
    if entry is None:
        yield _value_hit(kv, value=value, name="?", problem="is not a known file type")
        return
    if entry["status"] != "current":
        yield _value_hit(kv, value=value, name=entry["name"], problem=f"has status {entry['status']}")
        return
    if not ctx.ti_complete or not ctx.model_tensors or entry.get("tensor_type") is None:
        return
    want = entry["tensor_type"]
    typed = [t for t in ctx.model_tensors if t.spec is not None]
    if want == "F32" and entry["value"] == 0:
        other = next((t for t in typed if t.spec.name != want), None)
        if other is not None:
            yield _value_hit(
                kv, value=value, name=entry["name"], problem=f"but tensor {other.name!r} is {other.spec.name}"
            )
        return
    matrices = [t for t in typed if len(t.dims) >= 2]
    if matrices and not any(t.spec.name == want for t in matrices):
        yield _value_hit(
            kv, value=value, name=entry["name"], problem=f"but no tensor of two or more dimensions is {want}"
        )


@rule("META-SPLIT-RANGE")
def _split_range(ctx: Context) -> Iterator[Hit]:
    no, count = _int(ctx, keynames.SPLIT_NO), _int(ctx, keynames.SPLIT_COUNT)
    if count is None or splitset.role(no, count) == splitset.SINGLE:  # 0 or 1 shards: a whole file
        return
    kv = ctx.first(keynames.SPLIT_NO) or ctx.first(keynames.SPLIT_COUNT)
    if no is not None and not 0 <= no < count:
        yield Hit(kv.value_offset, f"{kv.path}.value", value=no, expected=count)


@rule("META-SPLIT-PARTIAL")
def _split_partial(ctx: Context) -> Iterator[Hit]:
    if not ctx.kv_complete:
        return
    present = [k for k in SPLIT_KEYS if ctx.first(k) is not None]
    if present:
        for key in SPLIT_KEYS:
            if key not in present:
                yield Hit(None, "metadata_kv", key=key, present=present[0])


@rule("META-SPLIT-TENSORS")
def _split_tensors(ctx: Context) -> Iterator[Hit]:
    expected = _int(ctx, keynames.SPLIT_TENSORS_COUNT)
    if expected is None or ctx.tensor_count is None:
        return
    n = ctx.tensor_count
    count = _int(ctx, keynames.SPLIT_COUNT)
    if n > expected or (count == 1 and n != expected):
        kv = ctx.first(keynames.SPLIT_TENSORS_COUNT)
        yield Hit(kv.value_offset, f"{kv.path}.value", value=n, expected=expected)
