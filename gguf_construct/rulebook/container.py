"""Predicates of the container rules that need more than the walk: header facts, keys, strings, arrays, bools,
alignment.  Arrays are checked vectorized (numpy for numbers and bools, one joined string for UTF-8)."""

from __future__ import annotations

import re
from typing import Iterator

import numpy as np

from .. import structs
from .._stringscan import scan_string_offsets
from ..constructs import encode_text
from ..reader import MAX_KEY_BYTES
from ..stringlist import StringList
from .keys import HYPHENATED_ARCHITECTURES, known_architectures, lookup, standard_namespaces
from .catalog import Hit, rule
from .walk import ALIGNMENT_KEY, ALIGNMENT_TYPE, ARRAY, BOOL, KV, STRING, Context, type_name

__all__ = ["LIMITS"]

# ggml's implementation limits (gguf.cpp GGUF_MAX_STRING_LENGTH, GGUF_MAX_ARRAY_ELEMENTS); tests lower them
LIMITS = {"string_bytes": 2**30, "array_elements": 2**30}

_VERSIONS = {v["version"]: v for v in structs.container_spec()["versions"]}
_CURRENT = structs.container_spec()["meta"]["current_version"]


# -- header ------------------------------------------------------------------------------------------------------
@rule("HDR-ENDIAN")
def _endian(ctx: Context) -> Iterator[Hit]:
    if ctx.byte_order == "big":
        yield Hit(4, "header.version", raw=ctx.raw_version)


@rule("HDR-BE-PRE-V3")
def _be_pre_v3(ctx: Context) -> Iterator[Hit]:
    if ctx.byte_order == "big" and ctx.version is not None and ctx.version < _CURRENT:
        yield Hit(4, "header.version", value=ctx.version)


@rule("HDR-V1-UNSUPPORTED")
def _v1(ctx: Context) -> Iterator[Hit]:
    if ctx.version is not None and _VERSIONS[ctx.version]["status"] == "obsolete":
        yield Hit(4, "header.version", value=ctx.version)


@rule("HDR-VER-LEGACY")
def _legacy_version(ctx: Context) -> Iterator[Hit]:
    if ctx.version is not None and ctx.version != _CURRENT:
        yield Hit(4, "header.version", value=ctx.version)


# -- keys --------------------------------------------------------------------------------------------------------
def _key_hit(kv: KV, **params) -> Hit:
    return Hit(kv.offset, f"{kv.path}.key", key=kv.key, index=kv.index, **params)


@rule("KV-KEY-EMPTY")
def _key_empty(ctx: Context) -> Iterator[Hit]:
    for kv in ctx.kvs:
        if not kv.key_bytes:
            yield _key_hit(kv)


@rule("KV-KEY-LEN")
def _key_len(ctx: Context) -> Iterator[Hit]:
    for kv in ctx.kvs:
        if len(kv.key_bytes) > MAX_KEY_BYTES:
            yield _key_hit(kv, length=len(kv.key_bytes))


@rule("KV-KEY-ASCII")
def _key_ascii(ctx: Context) -> Iterator[Hit]:
    for kv in ctx.kvs:
        if not kv.key_bytes.isascii():
            pos = next(i for i, b in enumerate(kv.key_bytes) if b >= 0x80)
            yield _key_hit(kv, byte=kv.key_bytes[pos], position=pos)


_SEGMENT_OK = re.compile(rb"[a-z0-9_\-\x80-\xff]*\Z")


@rule("KV-KEY-CHARSET")
def _key_charset(ctx: Context) -> Iterator[Hit]:
    for kv in ctx.kvs:
        for seg in kv.key_bytes.split(b"."):
            if not _SEGMENT_OK.match(seg):  # non-ASCII bytes are KV-KEY-ASCII's, '-' is KV-KEY-HYPHEN's
                yield _key_hit(kv, segment=seg.decode("utf-8", "backslashreplace"))
                break


@rule("KV-KEY-SEGMENT")
def _key_segment(ctx: Context) -> Iterator[Hit]:
    for kv in ctx.kvs:
        if kv.key_bytes and b"" in kv.key_bytes.split(b"."):
            yield _key_hit(kv)


@rule("KV-KEY-HYPHEN")
def _key_hyphen(ctx: Context) -> Iterator[Hit]:
    arch = ctx.scalar("general.architecture", STRING)
    prefix = f"{arch}.".encode() if isinstance(arch, str) and "-" in arch and arch in known_architectures() else None
    for kv in ctx.kvs:
        if b"-" in kv.key_bytes:
            hit = _key_hit(kv)
            if prefix and kv.key_bytes.startswith(prefix) and b"-" not in kv.key_bytes[len(prefix):]:
                hit.on_purpose(HYPHENATED_ARCHITECTURES)  # command-r.context_length, as llama.cpp writes it
            yield hit


@rule("KV-KEY-FLAT")
def _key_flat(ctx: Context) -> Iterator[Hit]:
    for kv in ctx.kvs:
        if kv.key_bytes and b"." not in kv.key_bytes:
            yield _key_hit(kv)


@rule("KV-KEY-DUP")
def _key_dup(ctx: Context) -> Iterator[Hit]:
    first: dict[bytes, int] = {}
    for kv in ctx.kvs:
        if kv.key_bytes in first:
            yield _key_hit(kv, first_index=first[kv.key_bytes])
        else:
            first[kv.key_bytes] = kv.index


@rule("KV-NAMESPACE")
def _namespace(ctx: Context) -> Iterator[Hit]:
    arch = ctx.scalar("general.architecture", STRING)
    reserved = standard_namespaces()
    for kv in ctx.kvs:
        if kv.key.split(".")[0] in reserved and lookup(kv.key, arch) is None:
            yield _key_hit(kv)


# -- value types -------------------------------------------------------------------------------------------------
def _arrays(value, path: str, depth: int = 1) -> Iterator[tuple[object, str, int]]:
    """Every array inside an ARRAY value (the value itself first) with its path and nesting depth."""
    yield value, path, depth
    if value.type == ARRAY:
        for j, inner in enumerate(value.data):
            yield from _arrays(inner, f"{path}.data[{j}]", depth + 1)


def _array_kvs(ctx: Context) -> Iterator[KV]:
    return (kv for kv in ctx.kvs if kv.vtype == ARRAY)


@rule("KV-TYPE-V1")
def _type_v1(ctx: Context) -> Iterator[Hit]:
    if ctx.version is None:
        return
    vts = structs.value_types()
    for kv in ctx.kvs:
        used = [kv.vtype] + ([a.type for a, _, _ in _arrays(kv.value, "")] if kv.vtype == ARRAY else [])
        for vt in used:
            if vts[vt].get("since", 1) > ctx.version:
                yield Hit(kv.at("value_type"), f"{kv.path}.value_type", key=kv.key, type=type_name(vt))
                break


@rule("KV-BOOL")
def _bool(ctx: Context) -> Iterator[Hit]:
    for kv in ctx.kvs:
        if kv.vtype == BOOL:
            if int(kv.value) not in (0, 1):
                yield Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, value=int(kv.value))
        elif kv.vtype == ARRAY:
            for arr, path, depth in _arrays(kv.value, f"{kv.path}.value"):
                if arr.type != BOOL or not len(arr.data):
                    continue
                raw = np.asarray(arr.data).view(np.uint8)
                for j in np.flatnonzero(raw > 1).tolist():
                    off = kv.at(f"value.data[{j}]") if depth == 1 else kv.value_offset
                    yield Hit(off, f"{path}.data[{j}]", key=kv.key, value=int(raw[j]))


@rule("ARR-NESTED")
def _nested(ctx: Context) -> Iterator[Hit]:
    for kv in _array_kvs(ctx):
        if kv.value.type == ARRAY:
            yield Hit(kv.value_offset, f"{kv.path}.value", key=kv.key)


@rule("ARR-DEPTH")
def _depth(ctx: Context) -> Iterator[Hit]:
    for kv in _array_kvs(ctx):
        depth = max(d for _, _, d in _arrays(kv.value, ""))
        if depth > 2:
            yield Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, depth=depth)


@rule("ARR-MAXLEN")
def _arr_maxlen(ctx: Context) -> Iterator[Hit]:
    for kv in _array_kvs(ctx):
        for arr, path, _ in _arrays(kv.value, f"{kv.path}.value"):
            if len(arr.data) > LIMITS["array_elements"]:
                yield Hit(kv.value_offset, path, key=kv.key, length=len(arr.data))


# -- strings -----------------------------------------------------------------------------------------------------
def _bad_utf8(s: str) -> str | None:
    """Why ``s`` (decoded with surrogateescape) is not valid UTF-8, or None when it is."""
    if s.isascii():
        return None
    try:
        s.encode("utf-8")
        return None
    except UnicodeEncodeError:
        pass
    try:
        encode_text(s).decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{exc.reason} at byte {exc.start}"
    return "invalid byte sequence"  # pragma: no cover - surrogates always fail the strict decode


def _scalar_strings(ctx: Context) -> Iterator[tuple[int, str, str, int]]:
    """(offset of the length field, path, text, length width) of every key, string value and tensor name."""
    strw = ctx.family.primitive_width("strlen_t") if ctx.family else 8
    for kv in ctx.kvs:
        yield kv.offset, f"{kv.path}.key", kv.key, strw
        if kv.vtype == STRING:
            yield kv.value_offset, f"{kv.path}.value", kv.value, strw
    for t in ctx.tensors:
        yield t.offset, f"{t.path}.name", t.name, strw


def _string_arrays(ctx: Context) -> Iterator[tuple[KV, StringList, str, bool]]:
    """(kv, items, path, top level) of every non-empty string array, nested ones included."""
    for kv in _array_kvs(ctx):
        for arr, path, depth in _arrays(kv.value, f"{kv.path}.value"):
            if arr.type == STRING and len(arr.data):
                data = arr.data if isinstance(arr.data, StringList) else StringList(arr.data)
                yield kv, data, path, depth == 1


def _element_offsets(ctx: Context, kv: KV, count: int):
    strw = ctx.family.primitive_width("strlen_t")
    starts, _, _ = scan_string_offsets(ctx.buf, kv.at("value.data"), count, strw, ctx.byte_order)
    return starts - strw


@rule("STR-UTF8")
def _utf8(ctx: Context) -> Iterator[Hit]:
    for off, path, text, _ in _scalar_strings(ctx):
        reason = _bad_utf8(text)
        if reason:
            yield Hit(off, path, offset=off, reason=reason)
    for kv, items, path, top in _string_arrays(ctx):
        if items.valid_utf8:  # decided when the array was read (see StringList)
            continue
        bad = [(j, _bad_utf8(items[j])) for j in items.invalid_utf8().tolist()]
        offsets = _element_offsets(ctx, kv, len(items)) if top else None
        for j, reason in bad:
            off = int(offsets[j]) if offsets is not None else kv.value_offset
            yield Hit(off, f"{path}.data[{j}]", offset=off, reason=reason)


@rule("STR-NUL")
def _nul(ctx: Context) -> Iterator[Hit]:
    for off, path, text, _ in _scalar_strings(ctx):
        pos = text.find("\x00")
        if pos >= 0:
            yield Hit(off, path, offset=off, position=len(encode_text(text[:pos])))
    for kv, items, path, top in _string_arrays(ctx):
        if not items.has_nul:  # decided when the array was read (see StringList)
            continue
        offsets = _element_offsets(ctx, kv, len(items)) if top else None
        for j in items.nul_items().tolist():
            off = int(offsets[j]) if offsets is not None else kv.value_offset
            yield Hit(off, f"{path}.data[{j}]", offset=off, position=items.raw(j).find(b"\x00"))


@rule("STR-MAXLEN")
def _str_maxlen(ctx: Context) -> Iterator[Hit]:
    limit = LIMITS["string_bytes"]
    for off, path, text, _ in _scalar_strings(ctx):
        if len(text) > limit // 4 and len(encode_text(text)) > limit:
            yield Hit(off, path, offset=off, length=len(encode_text(text)))
    for kv, items, path, _ in _string_arrays(ctx):
        if kv.end - kv.value_offset <= limit:
            continue
        lengths = items.lengths()
        for j in np.flatnonzero(lengths > limit).tolist():
            yield Hit(kv.value_offset, f"{path}.data[{j}]", offset=kv.value_offset, length=int(lengths[j]))


# -- alignment ---------------------------------------------------------------------------------------------------
def _alignment_kv(ctx: Context) -> KV | None:
    return ctx.first(ALIGNMENT_KEY)


@rule("ALIGN-TYPE")
def _align_type(ctx: Context) -> Iterator[Hit]:
    kv = _alignment_kv(ctx)
    if kv is not None and kv.vtype != ALIGNMENT_TYPE:
        yield Hit(kv.at("value_type"), f"{kv.path}.value_type", type=kv.type_label())


def _alignment_value(ctx: Context) -> tuple[KV, int] | None:
    kv = _alignment_kv(ctx)
    if kv is None or kv.vtype != ALIGNMENT_TYPE:
        return None
    return kv, int(kv.value)


@rule("ALIGN-ZERO")
def _align_zero(ctx: Context) -> Iterator[Hit]:
    got = _alignment_value(ctx)
    if got and got[1] == 0:
        yield Hit(got[0].value_offset, f"{got[0].path}.value")


@rule("ALIGN-MULT8")
def _align_mult8(ctx: Context) -> Iterator[Hit]:
    got = _alignment_value(ctx)
    if got and got[1] and got[1] % 8:
        yield Hit(got[0].value_offset, f"{got[0].path}.value", value=got[1])


@rule("ALIGN-POW2")
def _align_pow2(ctx: Context) -> Iterator[Hit]:
    got = _alignment_value(ctx)
    if got and got[1] and got[1] & (got[1] - 1):
        yield Hit(got[0].value_offset, f"{got[0].path}.value", value=got[1])


@rule("ALIGN-DEFAULT")
def _align_default(ctx: Context) -> Iterator[Hit]:
    if ctx.kv_complete and _alignment_kv(ctx) is None:
        yield Hit(None, "metadata_kv")
