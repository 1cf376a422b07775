"""Predicates of the container rules that need more than the walk: header facts, keys, strings, arrays, bools,
alignment.  Arrays are checked vectorized (numpy for numbers and bools, one joined string for UTF-8)."""

from __future__ import annotations

import functools
import operator
import re
from itertools import compress, repeat
from typing import Any, Callable, Iterator

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
from .catalog import Hit, capped, first_of_each, hits_at, rule, shown_hits
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


class _KeyColumns:
    """Every key of a file as columns (once per file): the keys joined into one byte array, each key's start and
    length in it, so that a key rule finds the keys it judges with a few array operations, whichever and however
    many they are, and looks at a key in Python only to word a finding."""

    def __init__(self, ctx: Context):
        self.lengths = np.fromiter(map(len, map(operator.attrgetter("key_bytes"), ctx.kvs)), np.int64, len(ctx.kvs))
        # one byte between keys; keys are located by start and length, so a key holding that byte is no problem
        self.text = np.frombuffer(_key_text(ctx), dtype=np.uint8)[1:-1] if ctx.kvs else np.zeros(0, np.uint8)
        self.starts = np.cumsum(self.lengths + 1) - (self.lengths + 1)
        # each key's first byte (the separator's for an empty key)
        self.first_bytes = np.frombuffer(_key_text(ctx), dtype=np.uint8)[self.starts + 1] if ctx.kvs else self.text

    def key_of(self, positions: np.ndarray) -> np.ndarray:
        """The index of the key each position of :attr:`text` is in (-1 for a separator)."""
        keys = np.searchsorted(self.starts, positions, side="right") - 1
        return np.where(positions - self.starts[keys] < self.lengths[keys], keys, -1)

    def per_key(self, byteset: bytes) -> np.ndarray:
        """How many bytes of ``byteset`` each key holds."""
        lut = np.zeros(256, dtype=bool)
        lut[list(byteset)] = True
        keys = self.key_of(np.flatnonzero(lut[self.text]))
        return np.bincount(keys[keys >= 0], minlength=len(self.lengths))

    def byte_at(self, offsets: np.ndarray, byte: int) -> np.ndarray:
        """Whether each key holds ``byte`` at ``offsets`` (one per key; negative counts from the end)."""
        at = np.where(offsets < 0, self.lengths + offsets, offsets)
        inside = (at >= 0) & (at < self.lengths)
        out = np.zeros(len(self.lengths), dtype=bool)
        out[inside] = self.text[self.starts[inside] + at[inside]] == byte
        return out

    def starting_with(self, prefix: bytes) -> np.ndarray:
        """Whether each key starts with ``prefix`` (byte by byte, over the keys that matched so far)."""
        if not prefix:
            return np.ones(len(self.lengths), dtype=bool)
        keys = np.flatnonzero((self.first_bytes == prefix[0]) & (self.lengths >= len(prefix)))
        for k, byte in enumerate(prefix[1:], 1):
            keys = keys[self.text[self.starts[keys] + k] == byte]
        out = np.zeros(len(self.lengths), dtype=bool)
        out[keys] = True
        return out


def _key_columns(ctx: Context) -> _KeyColumns:
    return ctx.derived("key_columns", _KeyColumns)


def _key_hits(ctx: Context, mask: np.ndarray, make: Callable[..., Hit] | None = None) -> Iterator[Hit]:
    """``make(kv)`` (default: the plain key hit) for the KV pairs where ``mask`` is set, in file order: the first
    ones one by one, the rest as one repeat hit (:func:`~.catalog.hits_at`)."""
    kvs = ctx.kvs
    build = make or _key_hit
    return hits_at(ctx.cache, np.flatnonzero(mask), lambda i: build(kvs[i]))


@rule("KV-KEY-EMPTY")
def _key_empty(ctx: Context) -> Iterator[Hit]:
    return _key_hits(ctx, _key_columns(ctx).lengths == 0)


@rule("KV-KEY-LEN")
def _key_len(ctx: Context) -> Iterator[Hit]:
    return _key_hits(ctx, _key_columns(ctx).lengths > MAX_KEY_BYTES, lambda kv: _key_hit(kv, length=len(kv.key_bytes)))


def _key_text(ctx: Context) -> bytes:
    """Every key's bytes, each between NUL bytes (once per file): the key rules first ask all keys at once, in one
    search at C speed, whether there is anything to find, and then find the keys with :class:`_KeyColumns`."""
    return ctx.derived("key_text", lambda c: b"\0" + b"\0".join(map(operator.attrgetter("key_bytes"), c.kvs)) + b"\0")


_NON_ASCII = bytes(range(0x80, 0x100))


@rule("KV-KEY-ASCII")
def _key_ascii(ctx: Context) -> Iterator[Hit]:
    if _key_text(ctx).isascii():
        return iter(())

    def make(kv: KV) -> Hit:
        pos = next(i for i, b in enumerate(kv.key_bytes) if b >= 0x80)
        return _key_hit(kv, byte=kv.key_bytes[pos], position=pos)

    return _key_hits(ctx, _key_columns(ctx).per_key(_NON_ASCII) > 0, make)


_SEGMENT_OK = re.compile(rb"[a-z0-9_\-\x80-\xff]*\Z")
_KEY_CHARSET = bytes(b for b in range(256) if _SEGMENT_OK.match(bytes([b])) or b == ord("."))  # bytes of keys
_NOT_KEY_CHARSET = bytes(b for b in range(256) if b not in _KEY_CHARSET)
_NOT_DOT_OR_NUL = bytes(b for b in range(256) if b not in b".\0")


@rule("KV-KEY-CHARSET")
def _key_charset(ctx: Context) -> Iterator[Hit]:
    if len(_key_text(ctx).translate(None, _KEY_CHARSET)) == len(ctx.kvs) + 1:  # nothing left but the NULs
        return iter(())

    def make(kv: KV) -> Hit:  # a key holding a byte outside the charset has a segment that fails
        seg = next(seg for seg in kv.key_bytes.split(b".") if not _SEGMENT_OK.match(seg))
        return _key_hit(kv, segment=seg.decode("utf-8", "backslashreplace"))

    # non-ASCII bytes are KV-KEY-ASCII's, '-' is KV-KEY-HYPHEN's
    return _key_hits(ctx, _key_columns(ctx).per_key(_NOT_KEY_CHARSET) > 0, make)


@rule("KV-KEY-SEGMENT")
def _key_segment(ctx: Context) -> Iterator[Hit]:
    text = _key_text(ctx)
    if not (b".." in text or b"\0." in text or b".\0" in text):
        return iter(())
    cols = _key_columns(ctx)
    dot = ord(".")
    pairs = cols.key_of(np.flatnonzero((cols.text[:-1] == dot) & (cols.text[1:] == dot)))
    doubled = np.zeros(len(cols.lengths), dtype=bool)
    doubled[pairs[pairs >= 0]] = True  # a separator is no dot: both dots of a pair are in one key
    zeros = np.zeros(len(cols.lengths), dtype=np.int64)
    return _key_hits(ctx, doubled | cols.byte_at(zeros, dot) | cols.byte_at(zeros - 1, dot))


@rule("KV-KEY-HYPHEN")
def _key_hyphen(ctx: Context) -> Iterator[Hit]:
    if b"-" not in _key_text(ctx):
        return
    arch = file_architecture(ctx)
    prefix = f"{arch}.".encode() if arch and "-" in arch and arch in known_architectures() else None
    cols = _key_columns(ctx)
    hyphens = cols.per_key(b"-")
    # command-r.context_length, as llama.cpp writes it: the architecture's own hyphens and no other
    purpose = cols.starting_with(prefix) & (hyphens == prefix.count(b"-")) if prefix else np.zeros_like(hyphens > 0)
    yield from _key_hits(ctx, (hyphens > 0) & ~purpose)
    yield from _key_hits(ctx, purpose, lambda kv: _key_hit(kv).on_purpose(HYPHENATED_ARCHITECTURES))


@rule("KV-KEY-FLAT")
def _key_flat(ctx: Context) -> Iterator[Hit]:
    if b"\0\0" not in _key_text(ctx).translate(None, _NOT_DOT_OR_NUL):  # no key without a dot
        return iter(())
    cols = _key_columns(ctx)
    return _key_hits(ctx, (cols.lengths > 0) & (cols.per_key(b".") == 0))


@rule("KV-KEY-DUP")
def _key_dup(ctx: Context) -> Iterator[Hit]:
    kvs = ctx.kvs
    firsts = first_of_each(list(map(operator.attrgetter("key_bytes"), kvs)))
    return hits_at(
        ctx.cache,
        np.flatnonzero(firsts != np.arange(len(kvs))),
        lambda i: _key_hit(kvs[i], first_index=kvs[int(firsts[i])].index),
    )


@rule("KV-NAMESPACE")
def _namespace(ctx: Context) -> Iterator[Hit]:
    cols = _key_columns(ctx)
    dotted = np.zeros(len(cols.lengths), dtype=bool)
    for ns in standard_namespaces():  # a key whose first segment is a standard namespace
        name = ns.encode()
        at = np.full(len(cols.lengths), len(name), dtype=np.int64)
        dotted |= cols.starting_with(name) & ((cols.lengths == len(name)) | cols.byte_at(at, ord(".")))
    if not dotted.any():
        return iter(())
    entries = registry_entries(ctx)
    known = np.fromiter(map(operator.attrgetter("index"), map(operator.itemgetter(0), entries)), np.int64, len(entries))
    indices = np.fromiter(map(operator.attrgetter("index"), ctx.kvs), dtype=np.int64, count=len(ctx.kvs))
    return _key_hits(ctx, dotted & ~np.isin(indices, known))


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


def _vtypes(ctx: Context) -> np.ndarray:
    """The value type of each KV pair (int64, once per file)."""
    return ctx.derived(
        "vtypes", lambda c: np.fromiter(map(operator.attrgetter("vtype"), c.kvs), dtype=np.int64, count=len(c.kvs))
    )


def _value_types(ctx: Context) -> set[int]:
    """The value types of the file's KV pairs (once per file)."""
    return ctx.derived("value_types", lambda c: set(np.unique(_vtypes(c)).tolist()))


class _TopArrays:
    """The ARRAY values of the KV pairs as columns (once per file): their pairs, element types and lengths, found
    in C loops, so that the array rules look at an array in Python only when it may break one of them."""

    def __init__(self, ctx: Context):
        self.positions = np.flatnonzero(_vtypes(ctx) == ARRAY)  # in ctx.kvs
        self.kvs: list[KV] = list(map(ctx.kvs.__getitem__, self.positions.tolist()))
        self.values = list(map(operator.attrgetter("value"), self.kvs))
        n = len(self.values)
        # parsed arrays are construct Containers, dicts: read by key, in C (their attributes are a Python call),
        # their length from the count read before the items
        if all(issubclass(t, dict) for t in set(map(type, self.values))):
            self.data = operator.itemgetter("data")
            self.types = np.fromiter(map(operator.itemgetter("type"), self.values), dtype=np.int64, count=n)
            self.lengths = np.fromiter(map(operator.itemgetter("len"), self.values), dtype=np.int64, count=n)
        else:
            self.data = operator.attrgetter("data")
            self.types = np.fromiter(map(operator.attrgetter("type"), self.values), dtype=np.int64, count=n)
            self.lengths = np.fromiter(map(len, map(self.data, self.values)), dtype=np.int64, count=n)

    def raw_bytes(self, which: np.ndarray) -> np.ndarray:
        """The items of the arrays ``which`` (of one-byte items, such as BOOL) joined, as uint8."""
        if not len(which):
            return np.zeros(0, dtype=np.uint8)
        items = map(self.data, map(self.values.__getitem__, which.tolist()))
        return np.concatenate(list(map(operator.methodcaller("view", np.uint8), map(np.asarray, items))))

    def judged(self, version: int | None) -> np.ndarray:
        """Where an array may break an array or string rule other than KV-BOOL (which judges the BOOL arrays of the
        pairs in bulk): non-empty STRING arrays (their items are judged), arrays of arrays, arrays longer than the
        limit, element types newer than ``version``."""
        types, lengths = self.types, self.lengths
        newer = [
            vt for vt, spec in structs.value_types().items() if version is not None and spec.get("since", 1) > version
        ]
        return (
            (types == STRING) & (lengths > 0)
            | (types == ARRAY)
            | (lengths > LIMITS["array_elements"])
            | np.isin(types, newer)
        )


def _top_arrays(ctx: Context) -> _TopArrays:
    return ctx.derived("top_arrays", _TopArrays)


def _array_entries(ctx: Context) -> list[tuple[KV, Any, str, int]]:
    """(kv, array, path, depth) of every array of the metadata that may break an array or string rule
    (:meth:`_TopArrays.judged`), nested ones after their parent (once per file); the others (numbers of the
    version's types, within the limit) can break none."""

    def build(c: Context) -> list[tuple[KV, Any, str, int]]:
        top = _top_arrays(c)
        judged = compress(top.kvs, top.judged(c.version).tolist())
        return [(kv, *entry) for kv in judged for entry in _arrays(kv.value, f"{kv.path}.value")]

    return ctx.derived("arrays", build)


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


def _later_types(ctx: Context, rule_id: str) -> tuple[np.ndarray, Callable[[int], tuple[KV, int]]]:
    """Where in ``ctx.kvs`` the KV pairs are that use, as their value or an array's element type, a value type the
    file's version does not have and that breaks ``rule_id``, found with array operations; and a function of such
    a place giving the pair and that type (the first such type of the pair)."""
    kvs = ctx.kvs
    later = _types_after(ctx.version, rule_id) if ctx.version is not None else frozenset()
    if not later:
        return np.zeros(0, dtype=np.int64), lambda i: (kvs[i], 0)
    in_arrays: dict[int, list[int]] = {}
    for kv, arr, _, _ in _array_entries(ctx):
        in_arrays.setdefault(kv.index, []).append(arr.type)
    late_at = np.isin(_vtypes(ctx), list(later))  # the pair's own type, then its arrays' element types
    with_arrays = [index for index, types in in_arrays.items() if later.intersection(types)]
    late_at[np.asarray(_kv_positions(ctx, with_arrays), dtype=np.int64)] = True

    def pair(i: int) -> tuple[KV, int]:
        kv = kvs[i]
        return kv, next(vt for vt in [kv.vtype, *in_arrays.get(kv.index, ())] if vt in later)

    return np.flatnonzero(late_at), pair


@rule("KV-TYPE-V1")
def _type_v1(ctx: Context) -> Iterator[Hit]:
    def make(kv: KV, late: int) -> Hit:
        return Hit(kv.at("value_type"), f"{kv.path}.value_type", key=kv.key, type=type_name(late))

    return _later_type_hits(ctx, "KV-TYPE-V1", make)


def _later_type_hits(ctx: Context, rule_id: str, make: Callable[[KV, int], Hit]) -> Iterator[Hit]:
    """The hits of :func:`_later_types`: the first ones one by one, the rest as one repeat hit."""
    where, pair = _later_types(ctx, rule_id)
    return hits_at(ctx.cache, where, lambda i: make(*pair(i)))


@rule(_LATER_TYPE_RULE)
def _type_version(ctx: Context) -> Iterator[Hit]:
    def make(kv: KV, late: int) -> Hit:
        return Hit(
            kv.at("value_type"),
            f"{kv.path}.value_type",
            key=kv.key,
            type=type_name(late),
            version=ctx.version,
            since=structs.value_types()[late]["since"],
        )

    return _later_type_hits(ctx, _LATER_TYPE_RULE, make)


@rule("KV-BOOL")
def _bool(ctx: Context) -> Iterator[Hit]:
    top = _top_arrays(ctx)
    nested: dict[int, list[tuple[np.ndarray, str, np.ndarray]]] = {}  # kv index -> BOOL arrays in arrays, bad items
    for kv, arr, path, depth in _array_entries(ctx):
        if depth > 1 and arr.type == BOOL and len(arr.data):
            raw = np.asarray(arr.data).view(np.uint8)
            bad = np.flatnonzero(raw > 1)
            if len(bad):
                nested.setdefault(kv.index, []).append((raw, path, bad))
    arrays = np.flatnonzero((top.types == BOOL) & (top.lengths > 0))
    if not nested and not len(arrays) and BOOL not in _value_types(ctx):
        return iter(())
    kvs = ctx.kvs
    scalars = np.flatnonzero(_vtypes(ctx) == BOOL)
    picked = list(map(kvs.__getitem__, scalars.tolist()))
    values = np.fromiter(map(int, map(operator.attrgetter("value"), picked)), dtype=np.int64, count=len(picked))
    bad_scalars = scalars[(values != 0) & (values != 1)]  # positions in ctx.kvs
    # the items of the pairs' BOOL arrays, all at once
    raw = top.raw_bytes(arrays)
    lengths = top.lengths[arrays]
    firsts = np.cumsum(lengths) - lengths
    bad_items = np.flatnonzero(raw > 1)
    owner = np.searchsorted(firsts, bad_items, side="right") - 1
    # in file order: a pair, then its items (a BOOL pair's own value first: item -1)
    places = np.concatenate([bad_scalars, top.positions[arrays][owner]])
    items = np.concatenate([np.full(len(bad_scalars), -1), bad_items - firsts[owner]])
    read = np.concatenate([np.zeros(len(bad_scalars), dtype=np.uint8), raw[bad_items]])
    order = np.lexsort((items, places))
    in_arrays = sorted(zip(_kv_positions(ctx, sorted(nested)), sorted(nested)))
    total = len(places) + sum(len(bad) for found in nested.values() for *_, bad in found)

    def nested_hits(position: int, index: int) -> Iterator[Hit]:
        kv = kvs[position]
        for values_read, path, bad in nested[index]:
            for j in bad.tolist():
                yield Hit(kv.value_offset, f"{path}.data[{j}]", key=kv.key, value=int(values_read[j]))

    def in_file_order() -> Iterator[Hit]:  # made only as far as they are kept
        n = 0
        for k in order.tolist():
            p, j = int(places[k]), int(items[k])
            while n < len(in_arrays) and in_arrays[n][0] < p:
                yield from nested_hits(*in_arrays[n])
                n += 1
            kv = kvs[p]
            if j < 0:
                yield _bool_hit(kv)
            else:
                yield Hit(kv.at(f"value.data[{j}]"), f"{kv.path}.value.data[{j}]", key=kv.key, value=int(read[k]))
        for position, index in in_arrays[n:]:
            yield from nested_hits(position, index)

    return capped(ctx.cache, in_file_order(), total)


def _bool_hit(kv: KV) -> Hit:
    return Hit(kv.value_offset, f"{kv.path}.value", key=kv.key, value=int(kv.value))


def _kv_positions(ctx: Context, indices: list[int]) -> list[int]:
    """Where the KV pairs of these indices are in ``ctx.kvs`` (a pair the walk could not read has no place)."""
    if not indices:
        return []
    column = np.fromiter(map(operator.attrgetter("index"), ctx.kvs), dtype=np.int64, count=len(ctx.kvs))
    return np.searchsorted(column, np.asarray(indices, dtype=np.int64)).tolist()


@rule("ARR-NESTED")
def _nested(ctx: Context) -> Iterator[Hit]:
    top = _top_arrays(ctx)
    return hits_at(
        ctx.cache,
        np.flatnonzero(top.types == ARRAY),
        lambda i: Hit(top.kvs[i].value_offset, f"{top.kvs[i].path}.value", key=top.kvs[i].key),
    )


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


_SURROGATE = re.compile("[\ud800-\udfff]")  # what a str decoded with surrogateescape holds for bytes not UTF-8


class _ScalarStrings:
    """Every key, string value and tensor name of a file as columns in file order (record, field, text), with
    what the string rules ask of all of them at once, each answered in C loops over the columns: which are not
    valid UTF-8, which hold a NUL, which may be too long.  A long value (a LazyString) is judged on its own, a
    chunk at a time."""

    def __init__(self, ctx: Context):
        kvs, tensors = ctx.kvs, ctx.tensors
        n = len(kvs)
        valued = np.flatnonzero(_vtypes(ctx) == STRING)
        value_kvs = list(map(kvs.__getitem__, valued.tolist()))
        records = kvs + value_kvs + tensors
        fields = ["key"] * n + ["value"] * len(value_kvs) + ["name"] * len(tensors)
        texts = list(map(operator.attrgetter("key"), kvs))
        texts += map(operator.attrgetter("value"), value_kvs)
        texts += map(operator.attrgetter("name"), tensors)
        # a key, then its value when it is a string, then the tensor names
        order = np.concatenate([np.arange(n) * 2, valued * 2 + 1, 2 * n + np.arange(len(tensors))])
        perm = np.argsort(order, kind="stable").tolist()
        self.records = list(map(records.__getitem__, perm))
        self.fields = list(map(fields.__getitem__, perm))
        self.texts: list[str | LazyString] = list(map(texts.__getitem__, perm))
        kinds = list(map(type, self.texts))
        self.lazy = np.flatnonzero(np.fromiter(map(operator.is_, kinds, repeat(LazyString)), bool, len(kinds)))
        self.plain = self.texts
        if len(self.lazy):  # the columns of plain strs: a long value stands there as an empty one
            self.plain = list(self.texts)
            for i in self.lazy.tolist():
                self.plain[i] = ""
        count = len(self.texts)
        self.non_ascii = np.flatnonzero(~np.fromiter(map(str.isascii, self.plain), bool, count))
        self.lengths = np.fromiter(map(len, self.plain), np.int64, count)
        self.ascii = not len(self.non_ascii) and all(self.texts[i].isascii() for i in self.lazy.tolist())
        plain_nul = map(operator.contains, self.plain, repeat("\x00"))
        lazy_nul = [i for i in self.lazy.tolist() if self.texts[i].has_nul]  # type: ignore[union-attr]
        self.nul = np.union1d(np.flatnonzero(np.fromiter(plain_nul, bool, count)), np.asarray(lazy_nul, np.int64))
        self.has_nul = bool(len(self.nul))
        lazy_bytes = [self.texts[i].nbytes for i in self.lazy.tolist()]  # type: ignore[union-attr]
        self.longest = max([int(self.lengths.max(initial=0)), *lazy_bytes])

    @property
    def items(self) -> list[tuple[Any, str, "str | LazyString"]]:
        """(record, field, text) of every string, in file order."""
        return list(zip(self.records, self.fields, self.texts))

    def invalid_utf8(self) -> np.ndarray:
        """Indices of the strings that are not valid UTF-8, in file order."""
        plain = self.non_ascii
        found = map(_SURROGATE.search, map(self.plain.__getitem__, plain.tolist()))
        bad = plain[np.fromiter(map(operator.is_not, found, repeat(None)), bool, len(plain))]
        lazy = [i for i in self.lazy.tolist() if self.texts[i].first_invalid_utf8() is not None]  # type: ignore[union-attr]
        return np.union1d(bad, np.asarray(lazy, dtype=np.int64)).astype(np.int64)

    def nul_items(self) -> np.ndarray:
        """Indices of the strings holding a NUL, in file order."""
        return self.nul.astype(np.int64)

    def where(self, i: int) -> tuple[int, str]:
        """(offset of the string's length field, field path) of string ``i``."""
        record, field_name = self.records[i], self.fields[i]
        off = record.value_offset if field_name == "value" else record.offset
        return off, f"{record.path}.{field_name}"


def _encoded_length(text: "str | LazyString") -> int:
    """Bytes of a string as the file holds it."""
    return text.nbytes if isinstance(text, LazyString) else len(encode_text(text))


def _scalar_strings(ctx: Context) -> _ScalarStrings:
    return ctx.derived("scalar_strings", _ScalarStrings)


def _string_arrays(ctx: Context) -> Iterator[tuple[KV, StringList, str, bool]]:
    """(kv, items, path, top level) of every non-empty string array, nested ones included."""
    for kv, arr, path, depth in _array_entries(ctx):
        if arr.type == STRING and len(arr.data):
            data = arr.data if isinstance(arr.data, StringList) else StringList(arr.data)
            yield kv, data, path, depth == 1


def _string_array_problems(ctx: Context) -> tuple[list, list, list]:
    """The string arrays (as :func:`_string_arrays` gives them) that may break STR-UTF8 (invalid UTF-8, judged when
    read), STR-NUL (a NUL byte) and STR-MAXLEN (a record longer than one string may be), found in one pass over the
    string arrays for the three rules (once per file: millions of small arrays cost one step each, not three)."""

    def build(c: Context) -> tuple[list, list, list]:
        limit = LIMITS["string_bytes"]
        invalid, nul, long = [], [], []
        for entry in _string_arrays(c):
            kv, items = entry[0], entry[1]
            if not items.valid_utf8:
                invalid.append(entry)
            if items.has_nul:
                nul.append(entry)
            if kv.end - kv.offset > limit:
                long.append(entry)
        return invalid, nul, long

    return ctx.derived("string_array_problems", build)


def _element_offsets(ctx: Context, kv: KV, count: int):
    strw = ctx.family.primitive_width("strlen_t")
    starts, _, _ = scan_string_offsets(
        ctx.buf, kv.at("value.data"), count, strw, structs.byte_order(ctx.byte_order).struct
    )
    return starts - strw


@rule("STR-UTF8")
def _utf8(ctx: Context) -> Iterator[Hit]:
    strings = _scalar_strings(ctx)
    bad = np.zeros(0, dtype=np.int64) if strings.ascii else strings.invalid_utf8()

    def make(i: int) -> Hit:
        off, path = strings.where(i)
        return Hit(off, path, offset=off, reason=_bad_utf8(strings.texts[i]))

    yield from hits_at(ctx.cache, bad, make)
    emitted = shown_hits(ctx.cache, 0, len(bad))
    for kv, items, path, top in _string_array_problems(ctx)[0]:  # judged when read (see StringList)
        invalid = items.invalid_utf8()
        shown = shown_hits(ctx.cache, emitted, len(invalid))
        emitted += shown
        offsets = _element_offsets(ctx, kv, len(items)) if top and shown else None  # none shown: one repeat hit
        for k, j in enumerate(invalid[: shown + 1].tolist()):
            off = int(offsets[j]) if offsets is not None else kv.value_offset
            hit = Hit(off, f"{path}.data[{j}]", offset=off, reason=_bad_utf8(items[j]))
            if k == shown:
                hit.repeat = len(invalid) - shown
            yield hit


@rule("STR-NUL")
def _nul(ctx: Context) -> Iterator[Hit]:
    strings = _scalar_strings(ctx)
    found = strings.nul_items()

    def make(i: int) -> Hit:
        text = strings.texts[i]
        off, path = strings.where(i)
        if isinstance(text, LazyString):
            return Hit(off, path, offset=off, position=text.first_nul())  # a byte position already
        return Hit(off, path, offset=off, position=len(encode_text(text[: text.find("\x00")])))

    yield from hits_at(ctx.cache, found, make)
    emitted = shown_hits(ctx.cache, 0, len(found))
    for kv, items, path, top in _string_array_problems(ctx)[1]:  # judged when read (see StringList)
        found = items.nul_items()
        shown = shown_hits(ctx.cache, emitted, len(found))
        emitted += shown
        offsets = _element_offsets(ctx, kv, len(items)) if top and shown else None  # none shown: one repeat hit
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
    if strings.longest > limit // 4:
        # a str of more than limit / 4 characters may be longer than the limit in bytes (4 bytes per character)
        maybe = np.union1d(np.flatnonzero(strings.lengths > limit // 4), strings.lazy).astype(np.int64).tolist()
        sizes = {i: _encoded_length(strings.texts[i]) for i in maybe}
        over = np.asarray([i for i in maybe if sizes[i] > limit], dtype=np.int64)

        def make(i: int) -> Hit:
            off, path = strings.where(i)
            return Hit(off, path, offset=off, length=sizes[i])

        yield from hits_at(ctx.cache, over, make)
    for kv, items, path, _ in _string_array_problems(ctx)[2]:  # records longer than one string may be
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
