"""Predicates of the container rules that need more than the walk: header facts, keys, strings, arrays, bools,
alignment.  Arrays are checked vectorized (numpy for numbers and bools, one joined string for UTF-8)."""

from __future__ import annotations

import functools
import operator
import re
from itertools import repeat
from typing import Any, Iterator

import numpy as np

from ..format import structs
from ..base.stringscan import scan_string_offsets
from ..format.constructs import InnerArrays, encode_text
from ..format.reader import MAX_KEY_BYTES
from ..format.lazystring import LazyString
from ..format.stringlist import StringList
from .keys import (
    HYPHENATED_ARCHITECTURES,
    file_architecture,
    known_architectures,
    registry_entries,
    standard_namespaces,
)
from .catalog import Hit, rule, shown_hits
from .walk import ALIGNMENT_KEY, ALIGNMENT_TYPE, ARRAY, BOOL, KV, STRING, Context, type_name

__all__ = ["LIMITS"]

# ggml's implementation limits (gguf.cpp GGUF_MAX_STRING_LENGTH, GGUF_MAX_ARRAY_ELEMENTS); tests lower them
LIMITS = {"string_bytes": 2**30, "array_elements": 2**30}

_VERSIONS = {v["version"]: v for v in structs.container_spec()["versions"]}
_CURRENT = structs.current_version()


# -- header ------------------------------------------------------------------------------------------------------
@rule("HDR-ENDIAN")
def _endian(ctx: Context) -> Iterator[Hit]:
    if ctx.byte_order is not None and ctx.byte_order != structs.BYTE_ORDERS[0]:  # not the spec's default order
        yield Hit(4, "header.version", raw=ctx.raw_version)


@rule("HDR-BE-PRE-V3")
def _be_pre_v3(ctx: Context) -> Iterator[Hit]:
    since = structs.byte_order(ctx.byte_order).since if ctx.byte_order is not None else 1
    if ctx.version is not None and ctx.version < since:  # the byte order is newer than the version (spec: since)
        yield Hit(4, "header.version", value=ctx.version, since=since)


@rule("HDR-V1-UNSUPPORTED")
def _v1(ctx: Context) -> Iterator[Hit]:
    if ctx.version is not None and _VERSIONS[ctx.version]["status"] == "obsolete":
        yield Hit(4, "header.version", value=ctx.version)


@rule("HDR-VER-LEGACY")
def _legacy_version(ctx: Context) -> Iterator[Hit]:
    if ctx.version is not None and structs.version_status(ctx.version) != "current":
        yield Hit(4, "header.version", value=ctx.version, current=_CURRENT)


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


def _key_text(ctx: Context) -> bytes:
    """Every key's bytes, each between NUL bytes (once per file): the key rules first ask all keys at once, in one
    search at C speed, whether there is anything to find, and look at each pair only when there may be.  A key
    holding a NUL only sends a rule to that closer look."""
    return ctx.derived("key_text", lambda c: b"\0" + b"\0".join(kv.key_bytes for kv in c.kvs) + b"\0")


@rule("KV-KEY-ASCII")
def _key_ascii(ctx: Context) -> Iterator[Hit]:
    if _key_text(ctx).isascii():
        return
    for kv in ctx.kvs:
        if not kv.key_bytes.isascii():
            pos = next(i for i, b in enumerate(kv.key_bytes) if b >= 0x80)
            yield _key_hit(kv, byte=kv.key_bytes[pos], position=pos)


_SEGMENT_OK = re.compile(rb"[a-z0-9_\-\x80-\xff]*\Z")
_KEY_CHARSET = bytes(b for b in range(256) if _SEGMENT_OK.match(bytes([b])) or b == ord("."))  # bytes of keys
_NOT_DOT_OR_NUL = bytes(b for b in range(256) if b not in b".\0")


@rule("KV-KEY-CHARSET")
def _key_charset(ctx: Context) -> Iterator[Hit]:
    if len(_key_text(ctx).translate(None, _KEY_CHARSET)) == len(ctx.kvs) + 1:  # nothing left but the NULs
        return
    for kv in ctx.kvs:
        for seg in kv.key_bytes.split(b"."):
            if not _SEGMENT_OK.match(seg):  # non-ASCII bytes are KV-KEY-ASCII's, '-' is KV-KEY-HYPHEN's
                yield _key_hit(kv, segment=seg.decode("utf-8", "backslashreplace"))
                break


@rule("KV-KEY-SEGMENT")
def _key_segment(ctx: Context) -> Iterator[Hit]:
    text = _key_text(ctx)
    if not (b".." in text or b"\0." in text or b".\0" in text):
        return
    for kv in ctx.kvs:
        key = kv.key_bytes
        if key and (b".." in key or key[:1] == b"." or key[-1:] == b"."):
            yield _key_hit(kv)


@rule("KV-KEY-HYPHEN")
def _key_hyphen(ctx: Context) -> Iterator[Hit]:
    if b"-" not in _key_text(ctx):
        return
    arch = file_architecture(ctx)
    prefix = f"{arch}.".encode() if arch and "-" in arch and arch in known_architectures() else None
    for kv in ctx.kvs:
        if b"-" in kv.key_bytes:
            hit = _key_hit(kv)
            if prefix and kv.key_bytes.startswith(prefix) and b"-" not in kv.key_bytes[len(prefix) :]:
                hit.on_purpose(HYPHENATED_ARCHITECTURES)  # command-r.context_length, as llama.cpp writes it
            yield hit


@rule("KV-KEY-FLAT")
def _key_flat(ctx: Context) -> Iterator[Hit]:
    if b"\0\0" not in _key_text(ctx).translate(None, _NOT_DOT_OR_NUL):  # no key without a dot
        return
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
    reserved = standard_namespaces()
    known = {kv.index for kv, _ in registry_entries(ctx)}
    for kv in ctx.kvs:
        if kv.index not in known and kv.key.partition(".")[0] in reserved:
            yield _key_hit(kv)


# -- value types -------------------------------------------------------------------------------------------------
def _arrays(value, path: str, depth: int = 1) -> Iterator[tuple[object, str, int]]:
    """Every array inside an ARRAY value (the value itself first) with its path and nesting depth."""
    yield value, path, depth
    if value.type == ARRAY:
        data = value.data
        for j in _told_apart(data) if isinstance(data, InnerArrays) else range(len(data)):
            yield from _arrays(data[j], f"{path}.data[{j}]", depth + 1)


def _told_apart(inner: InnerArrays) -> list[int]:
    """The inner arrays (read in bulk: none holds arrays) that a rule over arrays can tell apart, from their
    headers alone: the first of each element type, every non-empty BOOL or STRING one (their items are judged)
    and every one longer than the limit; the others would add nothing to any finding."""
    told: dict[int, int] = {}  # element type -> its first inner array
    judged: set[int] = set()
    for first, types, counts in inner.headers():
        found, firsts = np.unique(types, return_index=True)
        for t, j in zip(found.tolist(), firsts.tolist()):
            told.setdefault(t, first + j)
        mask = ((types == BOOL) | (types == STRING)) & (counts > 0) | (counts > LIMITS["array_elements"])
        judged.update((np.flatnonzero(mask) + first).tolist())
    return sorted(judged.union(told.values()))


def _array_kvs(ctx: Context) -> Iterator[KV]:
    return (kv for kv in ctx.kvs if kv.vtype == ARRAY)


def _value_types(ctx: Context) -> set[int]:
    """The value types of the file's KV pairs (once per file)."""
    return ctx.derived("value_types", lambda c: {kv.vtype for kv in c.kvs})


def _array_entries(ctx: Context) -> list[tuple[KV, Any, str, int]]:
    """(kv, array, path, depth) of every array of the metadata, nested ones after their parent (once per file)."""
    return ctx.derived(
        "arrays", lambda c: [(kv, *entry) for kv in _array_kvs(c) for entry in _arrays(kv.value, f"{kv.path}.value")]
    )


_LATER_TYPE_RULE = "KV-TYPE-VERSION"  # what a value type newer than the file breaks, unless it names another


@functools.lru_cache(maxsize=None)
def _types_after(version: int, rule_id: str) -> frozenset[int]:
    """Value types a file of ``version`` cannot have (their ``since`` is later) whose ``before_since`` rule, as
    spec/gguf.yaml declares it, is ``rule_id``."""
    return frozenset(
        vt
        for vt, spec in structs.value_types().items()
        if spec.get("since", 1) > version and spec.get("before_since", _LATER_TYPE_RULE) == rule_id
    )


def later_type_rule(type_id: int, version: int) -> str | None:
    """The rule a file of ``version`` holding value type ``type_id`` breaks because the type is newer than the
    version (None when the version has it)."""
    for rule_id in {_LATER_TYPE_RULE, *(vt.get("before_since") for vt in structs.value_types().values())} - {None}:
        if int(type_id) in _types_after(version, rule_id):
            return rule_id
    return None


def _later_types(ctx: Context, rule_id: str) -> Iterator[tuple[KV, int]]:
    """(kv, type) of each KV pair using, as its value or an array's element type, a value type the file's version
    does not have and that breaks ``rule_id`` (the first such type of the pair)."""
    if ctx.version is None:
        return
    later = _types_after(ctx.version, rule_id)
    if not later:
        return
    in_arrays: dict[int, list[int]] = {}
    for kv, arr, _, _ in _array_entries(ctx):
        in_arrays.setdefault(kv.index, []).append(arr.type)
    for kv in ctx.kvs:
        used = [kv.vtype, *in_arrays.get(kv.index, ())]
        late = next((vt for vt in used if vt in later), None)
        if late is not None:
            yield kv, late


@rule("KV-TYPE-V1")
def _type_v1(ctx: Context) -> Iterator[Hit]:
    for kv, late in _later_types(ctx, "KV-TYPE-V1"):
        yield Hit(kv.at("value_type"), f"{kv.path}.value_type", key=kv.key, type=type_name(late))


@rule(_LATER_TYPE_RULE)
def _type_version(ctx: Context) -> Iterator[Hit]:
    for kv, late in _later_types(ctx, _LATER_TYPE_RULE):
        yield Hit(
            kv.at("value_type"),
            f"{kv.path}.value_type",
            key=kv.key,
            type=type_name(late),
            version=ctx.version,
            since=structs.value_types()[late]["since"],
        )


@rule("KV-BOOL")
def _bool(ctx: Context) -> Iterator[Hit]:
    bool_arrays: dict[int, list[tuple[Any, str, int]]] = {}
    for kv, arr, path, depth in _array_entries(ctx):
        if arr.type == BOOL and len(arr.data):
            bool_arrays.setdefault(kv.index, []).append((arr, path, depth))
    if not bool_arrays and BOOL not in _value_types(ctx):
        return
    for kv in ctx.kvs:
        if kv.vtype == BOOL and int(kv.value) not in (0, 1):
            yield Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, value=int(kv.value))
        for arr, path, depth in bool_arrays.get(kv.index, ()):
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
    deepest: dict[int, tuple[KV, int]] = {}
    for kv, _, _, depth in _array_entries(ctx):
        if depth > 2 and depth > deepest.get(kv.index, (kv, 0))[1]:
            deepest[kv.index] = (kv, depth)
    for kv, depth in deepest.values():
        yield Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, depth=depth)


@rule("ARR-MAXLEN")
def _arr_maxlen(ctx: Context) -> Iterator[Hit]:
    for kv, arr, path, _ in _array_entries(ctx):
        if len(arr.data) > LIMITS["array_elements"]:
            yield Hit(kv.value_offset, path, key=kv.key, length=len(arr.data))


# -- strings -----------------------------------------------------------------------------------------------------
def _bad_utf8(s: "str | LazyString") -> str | None:
    """Why ``s`` (decoded with surrogateescape) is not valid UTF-8, or None when it is (a long value is judged a
    chunk at a time, and only the bytes of the sequence found are decoded to say why)."""
    if isinstance(s, LazyString):
        at = s.first_invalid_utf8()
        if at is None:
            return None
        try:
            bytes(next(s.raw_chunks(4, at), b"")).decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"{exc.reason} at byte {at}"
        return f"invalid byte sequence at byte {at}"  # pragma: no cover - the sequence at ``at`` fails
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


class _ScalarStrings:
    """Every key, string value and tensor name of a file as (record, field, text), with what the string rules
    ask of all of them at once: are they all ASCII, does any hold a NUL, how long is the longest."""

    def __init__(self, ctx: Context):
        self.items: list[tuple[Any, str, str]] = []
        for kv in ctx.kvs:
            self.items.append((kv, "key", kv.key))
            if kv.vtype == STRING:
                self.items.append((kv, "value", kv.value))
        self.items.extend((t, "name", t.name) for t in ctx.tensors)
        texts = [text for _, _, text in self.items]
        if any(isinstance(text, LazyString) for text in texts):
            # item by item (a joined copy would double the memory of a long value); a LazyString a chunk at a time
            self.ascii = all(text.isascii() for text in texts)
            self.has_nul = any(text.has_nul if isinstance(text, LazyString) else "\x00" in text for text in texts)
            self.longest = max(
                (text.nbytes if isinstance(text, LazyString) else len(text) for text in texts), default=0
            )
        else:  # plain strs: in C loops
            self.ascii = all(map(str.isascii, texts))
            self.has_nul = any(map(operator.contains, texts, repeat("\x00")))
            self.longest = max(map(len, texts), default=0)

    @staticmethod
    def where(record: Any, field_name: str) -> tuple[int, str]:
        """(offset of the string's length field, field path) of one item."""
        off = record.value_offset if field_name == "value" else record.offset
        return off, f"{record.path}.{field_name}"


def _scalar_strings(ctx: Context) -> _ScalarStrings:
    return ctx.derived("scalar_strings", _ScalarStrings)


def _string_arrays(ctx: Context) -> Iterator[tuple[KV, StringList, str, bool]]:
    """(kv, items, path, top level) of every non-empty string array, nested ones included."""
    for kv, arr, path, depth in _array_entries(ctx):
        if arr.type == STRING and len(arr.data):
            data = arr.data if isinstance(arr.data, StringList) else StringList(arr.data)
            yield kv, data, path, depth == 1


def _element_offsets(ctx: Context, kv: KV, count: int):
    strw = ctx.family.primitive_width("strlen_t")
    starts, _, _ = scan_string_offsets(
        ctx.buf, kv.at("value.data"), count, strw, structs.byte_order(ctx.byte_order).struct
    )
    return starts - strw


@rule("STR-UTF8")
def _utf8(ctx: Context) -> Iterator[Hit]:
    strings = _scalar_strings(ctx)
    emitted = 0
    for record, field_name, text in [] if strings.ascii else strings.items:
        reason = _bad_utf8(text)
        if reason:
            off, path = strings.where(record, field_name)
            emitted += 1
            yield Hit(off, path, offset=off, reason=reason)
    for kv, items, path, top in _string_arrays(ctx):
        if items.valid_utf8:  # decided when the array was read (see StringList)
            continue
        invalid = items.invalid_utf8()
        shown = shown_hits(ctx.cache, emitted, len(invalid))
        emitted += shown
        offsets = _element_offsets(ctx, kv, len(items)) if top else None
        for k, j in enumerate(invalid[: shown + 1].tolist()):
            off = int(offsets[j]) if offsets is not None else kv.value_offset
            hit = Hit(off, f"{path}.data[{j}]", offset=off, reason=_bad_utf8(items[j]))
            if k == shown:
                hit.repeat = len(invalid) - shown
            yield hit


@rule("STR-NUL")
def _nul(ctx: Context) -> Iterator[Hit]:
    strings = _scalar_strings(ctx)
    emitted = 0
    for record, field_name, text in strings.items if strings.has_nul else []:
        if isinstance(text, LazyString):
            pos = text.first_nul()  # a byte position already
            if pos is not None:
                off, path = strings.where(record, field_name)
                emitted += 1
                yield Hit(off, path, offset=off, position=pos)
            continue
        pos = text.find("\x00")
        if pos >= 0:
            off, path = strings.where(record, field_name)
            emitted += 1
            yield Hit(off, path, offset=off, position=len(encode_text(text[:pos])))
    for kv, items, path, top in _string_arrays(ctx):
        if not items.has_nul:  # decided when the array was read (see StringList)
            continue
        offsets = _element_offsets(ctx, kv, len(items)) if top else None
        found = items.nul_items()
        shown = shown_hits(ctx.cache, emitted, len(found))
        emitted += shown
        picked = found[: shown + 1]  # one more: the first of those a repeat hit stands for
        where = offsets[picked].tolist() if offsets is not None else [kv.value_offset] * len(picked)
        for k, (j, off, pos) in enumerate(zip(picked.tolist(), where, items.first_nul(picked).tolist())):
            hit = Hit(off, f"{path}.data[{j}]", offset=off, position=pos)
            if k == shown:
                hit.repeat = len(found) - shown
            yield hit


@rule("STR-MAXLEN")
def _str_maxlen(ctx: Context) -> Iterator[Hit]:
    limit = LIMITS["string_bytes"]
    strings = _scalar_strings(ctx)
    for record, field_name, text in strings.items if strings.longest > limit // 4 else []:
        if isinstance(text, LazyString):
            n = text.nbytes
        else:
            n = len(encode_text(text)) if len(text) > limit // 4 else 0
        if n > limit:
            off, path = strings.where(record, field_name)
            yield Hit(off, path, offset=off, length=n)
    for kv, items, path, _ in _string_arrays(ctx):
        if kv.end - kv.offset <= limit:  # the whole record is shorter than one string may be
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
