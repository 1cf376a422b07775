"""Structural mutations: break a valid :class:`~gguf_construct.breaking.rawfile.RawFile` in one named way.

Each mutation edits fields of the raw model (never random bytes), so that the labelling oracle
(:func:`~gguf_construct.breaking.rawfile.expected_rules`) knows exactly which rules the result breaks.  The
malformation classes are those of the project's adversarial-input notes: bad magic and versions, impossible
counts, mixed byte order, string and array lengths past the end (and wrapping), bad value/element/tensor types,
bools that are not 0/1, bad UTF-8 and NULs, key syntax, duplicate keys and names, nesting, alignment abuse,
n_dims and dimension overflows, element/byte-size overflow, rows that are not block multiples, misaligned,
huge, overlapping or reordered offsets, short data, padding and trailing bytes, and truncation at every field
boundary.

Mutations draw their choices through a :class:`Pick` so that the same code runs under Hypothesis (shrinkable)
and from a seeded :class:`random.Random` (fast, for the fuzz runner).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from ..spec import tensor_type_by_id
from .rawfile import (ALIGNMENT_KEY, ARRAY, BOOL, SCALAR_FORMATS, STRING, UINT32, VT, Arr, RawFile, RawKV, RawTI,
                      Str, align, alignment_rules, key_rules, tensor_rules)

__all__ = ["Pick", "RandomPick", "HypothesisPick", "Skip", "Mutation", "MUTATIONS", "mutations_for"]


class Skip(Exception):
    """The mutation does not apply to this carrier file (e.g. it has no tensors)."""


class Pick:
    """Where a mutation's choices come from.

    ``wanted``: rule IDs the caller is after (None: any).  A mutation with several kinds of breakage draws its
    kind with :meth:`aimed` (or :meth:`kind`), which keeps to the options aimed at a wanted rule.
    """

    def __init__(self, wanted: Sequence[str] | None = None):
        self.wanted = None if wanted is None else frozenset(wanted)

    def aimed(self, options: Sequence, rules_of: Callable[[Any], Iterable[str]]):
        """One of ``options``; when rules are wanted, one whose ``rules_of(option)`` has a wanted rule (if any
        option has)."""
        if self.wanted is not None:
            options = [o for o in options if self.wanted.intersection(rules_of(o))] or options
        return self.choice(options)

    def kind(self, kinds: dict[str, frozenset]):
        """One key of ``kinds`` (kind -> the rules it aims at), see :meth:`aimed`."""
        return self.aimed(list(kinds), kinds.__getitem__)

    def choice(self, seq: Sequence):  # pragma: no cover - interface
        """One element of ``seq``."""
        raise NotImplementedError

    def integer(self, lo: int, hi: int) -> int:  # pragma: no cover - interface
        """An integer in [lo, hi]."""
        raise NotImplementedError

    def boolean(self) -> bool:
        """True or False."""
        return bool(self.integer(0, 1))


class RandomPick(Pick):
    """Choices from a :class:`random.Random`."""

    def __init__(self, rng: random.Random, wanted: Sequence[str] | None = None):
        super().__init__(wanted)
        self.rng = rng

    def choice(self, seq: Sequence):
        """One element of ``seq``."""
        return seq[self.rng.randrange(len(seq))]

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return self.rng.randint(lo, hi)


class HypothesisPick(Pick):
    """Choices drawn by Hypothesis (so failing examples shrink)."""

    def __init__(self, draw, wanted: Sequence[str] | None = None):
        from hypothesis import strategies as st

        super().__init__(wanted)
        self.draw = draw
        self.st = st

    def choice(self, seq: Sequence):
        """One element of ``seq``."""
        return self.draw(self.st.sampled_from(list(seq)))

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return self.draw(self.st.integers(lo, hi))


@dataclass(frozen=True)
class Mutation:
    """A named way to break a file, and the rules it aims at (the oracle decides what actually breaks)."""

    name: str
    targets: frozenset
    apply: Callable[[RawFile, Pick], None]

    @property
    def late(self) -> bool:
        """Mutations that depend on the final layout (counts, truncation) go after the others."""
        return self.name in _LATE


_LATE = frozenset({"count", "mixed-byte-order", "truncate", "data", "magic", "version"})


# -- helpers ---------------------------------------------------------------------------------------------------
_BAD_UTF8 = [b"\x80", b"\xc0\xaf", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xff",
             b"\xfe", b"a\xbfz"]
_SCALAR_TYPES = sorted(SCALAR_FORMATS)


def _max_len(raw: RawFile) -> int:
    return 2 ** (8 * raw.wide) - 1


def _fresh_key(raw: RawFile, pick: Pick) -> bytes:
    existing = {k.key.data if isinstance(k.key, Str) else k.key for k in raw.kvs}
    while True:
        key = b"fuzz.k" + str(pick.integer(0, 99)).encode()
        if key not in existing:
            return key
        existing.discard(key)
        key += b"_" + str(len(existing)).encode()
        if key not in existing:
            return key


def _insert_kv(raw: RawFile, pick: Pick, kv: RawKV) -> int:
    i = pick.integer(0, len(raw.kvs))
    raw.kvs.insert(i, kv)
    raw.relayout()
    return i


def _append_last(raw: RawFile, kv: RawKV) -> None:
    raw.kvs.append(kv)
    raw.relayout()


def _scalar_value(vtype: int, pick: Pick):
    fmt = SCALAR_FORMATS[vtype]
    if fmt in "fd":
        return pick.choice([0.0, -1.5, 1e30, float("inf")])
    if vtype == BOOL:
        return pick.integer(0, 1)
    return pick.integer(0, 100)


def _random_array(pick: Pick, depth: int, version: int) -> Arr:
    types = [t for t in _SCALAR_TYPES if version > 1 or t < 10] + [STRING]
    if depth > 1:
        return Arr(ARRAY, [_random_array(pick, depth - 1, version) for _ in range(pick.integer(1, 2))])
    item = pick.choice(types)
    n = pick.integer(0, 3)
    if item == STRING:
        return Arr(item, [b"s%d" % i for i in range(n)])
    return Arr(item, [_scalar_value(item, pick) for _ in range(n)])


def _tensor(raw: RawFile, pick: Pick) -> RawTI:
    if not raw.tensors:
        raise Skip
    return raw.tensors[pick.integer(0, len(raw.tensors) - 1)]


def _ensure_tensor(raw: RawFile, pick: Pick) -> RawTI:
    """A tensor of the file; one small F32 tensor is added when there is none."""
    if not raw.tensors:
        raw.tensors.append(RawTI(b"fuzz.weight", [pick.choice([1, 4, 8])], VT_F32, 0,
                                 bytes(4 * 8)[:0]))
        t = raw.tensors[0]
        t.blob = bytes(4 * t.dims[0])
        raw.relayout()
    return _tensor(raw, pick)


VT_F32 = 0  # ggml type F32
_CURRENT = [i for i, t in sorted(tensor_type_by_id().items()) if t.is_current]
_REMOVED = [i for i, t in sorted(tensor_type_by_id().items()) if not t.is_current]
_QUANT = [i for i in _CURRENT if tensor_type_by_id()[i].block_size > 1]


# -- header ----------------------------------------------------------------------------------------------------
def m_magic(raw: RawFile, pick: Pick) -> None:
    raw.magic = pick.choice([b"GGUG", b"FUGG", b"gguf", b"\0\0\0\0", b"GGU\0", b"lmgg", b"fmgg", b"tjgg"])


def m_version(raw: RawFile, pick: Pick) -> None:
    raw.raw_version = pick.choice([0, 4, 5, 0xFFFFFFFF, 0x00030003, 0x00010000, 0x04000000, 0x7FFFFFFF])


def _counts_room(raw: RawFile) -> tuple[int, int]:
    data, _, _ = raw.encode(with_marks=False)
    w = raw.wide
    return len(data) - 8 - 2 * w, len(raw.kvs) * (w + 5)


def m_count(raw: RawFile, pick: Pick) -> None:
    name = pick.choice(["tensor_count", "metadata_kv_count"])
    remaining, kv_need = _counts_room(raw)
    w = raw.wide
    if name == "metadata_kv_count":
        unsat = remaining // (w + 5) + 1
    else:
        unsat = max(0, remaining - kv_need) // (w + 16) + 1
    big = [2**63, 2**64 - 1, 2**62, 2**40] if w == 8 else [2**32 - 1, 2**31]
    value = pick.choice(big + [unsat])
    if value == unsat:
        value += pick.integer(0, 3)
    value = min(value, _max_len(raw))
    raw.swapped_counts = frozenset()
    if name == "tensor_count":
        raw.n_tensors = value
    else:
        raw.n_kv = value


def m_mixed_order(raw: RawFile, pick: Pick) -> None:
    fields = [n for n, c in (("tensor_count", len(raw.tensors)), ("metadata_kv_count", len(raw.kvs))) if c]
    if not fields or raw.n_tensors is not None or raw.n_kv is not None:
        raise Skip
    raw.swapped_counts = frozenset({pick.choice(fields)})


# -- key/value records -----------------------------------------------------------------------------------------
def m_kv_type(raw: RawFile, pick: Pick) -> None:
    bad = pick.choice([13, 14, 100, 0xFFFF, 0x80000000, 0xFFFFFFFF])
    payload = bytes(pick.integer(0, 8))
    if raw.kvs and pick.boolean():
        kv = raw.kvs[pick.integer(0, len(raw.kvs) - 1)]
        kv.vtype, kv.value = bad, payload
        raw.relayout()
    else:
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), bad, payload))


def m_bool(raw: RawFile, pick: Pick) -> None:
    value = pick.choice([2, 3, 7, 0x80, 0xFF])
    where = pick.choice(["scalar", "array", "nested"])
    if where == "scalar":
        kv = RawKV(_fresh_key(raw, pick), BOOL, value)
    else:
        items = [pick.integer(0, 1) for _ in range(pick.integer(0, 3))]
        items.insert(pick.integer(0, len(items)), value)
        arr = Arr(BOOL, items)
        kv = RawKV(_fresh_key(raw, pick), ARRAY, arr if where == "array" else Arr(ARRAY, [arr]))
    _insert_kv(raw, pick, kv)


def m_dup_key(raw: RawFile, pick: Pick) -> None:
    if raw.kvs and pick.boolean():
        i = pick.integer(0, len(raw.kvs) - 1)
        src = raw.kvs[i]
        copy = RawKV(src.key, src.vtype, src.value)
        raw.kvs.insert(pick.integer(i + 1, len(raw.kvs)), copy)
        raw.relayout()
    else:
        key = pick.choice([_fresh_key(raw, pick), b"general.architecture", ALIGNMENT_KEY])
        if key == ALIGNMENT_KEY and any(k.key == ALIGNMENT_KEY for k in raw.kvs):
            raise Skip
        vt, val = (UINT32, raw.alignment()) if key == ALIGNMENT_KEY else (STRING, b"llama")
        i = _insert_kv(raw, pick, RawKV(key, vt, val))
        raw.kvs.insert(pick.integer(i + 1, len(raw.kvs)), RawKV(key, vt, val))
        raw.relayout()


_BAD_KEYS = [b"", b"Test.Upper", b"test..x", b".test.x", b"test.x.", b"test.a b", b"test.a/b", b"test.\x01",
             b"test.\xc3\xa9", b"test.a-b", b"flat", b"TEST", b"test.tab\t", b"test. ", b"."]


def m_key_syntax(raw: RawFile, pick: Pick) -> None:
    key = pick.aimed(_BAD_KEYS + [b"long." + b"a" * 65531, b"test." + b"x" * 65531], key_rules)
    _insert_kv(raw, pick, RawKV(key, UINT32, 1))


def m_bad_utf8(raw: RawFile, pick: Pick) -> None:
    bad = pick.choice(_BAD_UTF8)
    where = pick.choice(["value", "key", "array", "name"])
    text = b"ab" + bad + b"cd" if pick.boolean() else bad
    if where == "name":
        t = _ensure_tensor(raw, pick)
        t.name = text
        raw.relayout()
    elif where == "key":
        _insert_kv(raw, pick, RawKV(b"test." + text, UINT32, 7))
    elif where == "array":
        items = [b"ok", text, b""][: pick.integer(2, 3)]
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, Arr(STRING, items)))
    else:
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), STRING, text))


def m_nul(raw: RawFile, pick: Pick) -> None:
    text = pick.choice([b"abc\0def", b"\0", b"x\0"])
    if pick.boolean():
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), STRING, text))
    else:
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, Arr(STRING, [b"a", text])))


def m_string_eof(raw: RawFile, pick: Pick) -> None:
    big = [2**64 - 1, 2**63, 2**62, 2**40] if raw.wide == 8 else [2**32 - 1, 2**31, 2**31 + 5]
    where = pick.choice(["key", "value", "name", "last"])
    length = pick.choice(big)
    if where == "last":
        if raw.tensors:
            raise Skip
        data, _, _ = raw.encode(with_marks=False)
        kv = RawKV(_fresh_key(raw, pick), STRING, Str(b"tail", 0))
        _append_last(raw, kv)
        body = b"tail"[: pick.integer(0, 4)]
        extra = pick.integer(1, 9)
        kv.value = Str(body, len(body) + extra)  # the string would end just past the end of the file
        return
    if where == "name":
        t = _tensor(raw, pick)
        t.name = Str(t.name if isinstance(t.name, bytes) else t.name.data, length)
    elif where == "key" and raw.kvs:
        kv = raw.kvs[pick.integer(0, len(raw.kvs) - 1)]
        kv.key = Str(kv.key if isinstance(kv.key, bytes) else kv.key.data, length)
    else:
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), STRING, Str(b"abc", length)))
    raw.relayout()


def m_array_type(raw: RawFile, pick: Pick) -> None:
    bad = pick.choice([13, 100, 0xFFFFFFFF, 0x80000000])
    items = [] if pick.boolean() else [bytes(pick.integer(0, 4))]
    arr = Arr(bad, items)
    if pick.boolean():
        arr = Arr(ARRAY, [arr])
    _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, arr))


def m_array_bomb(raw: RawFile, pick: Pick) -> None:
    big = [2**63, 2**64 - 1, 2**62, 2**60, 2**40] if raw.wide == 8 else [2**32 - 1, 2**31, 2**30]
    item = pick.choice([VT["UINT8"], VT["UINT32"], VT["FLOAT64"] if raw.version > 1 else VT["INT32"], STRING,
                        ARRAY])
    n = pick.integer(0, 3)
    if item == STRING:
        items = [b"x" * j for j in range(n)]
    elif item == ARRAY:
        items = [Arr(VT["UINT8"], [1])] * n
    else:
        items = [1] * n
    arr = Arr(item, items, pick.choice(big))
    if pick.boolean():
        arr = Arr(ARRAY, [arr])
    _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, arr))


def m_nested(raw: RawFile, pick: Pick) -> None:
    depth = pick.integer(2, 12)
    arr = _random_array(pick, depth, raw.version) if pick.integer(0, 5) else Arr(ARRAY, [])
    _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, arr))


def m_v1_types(raw: RawFile, pick: Pick) -> None:
    if raw.version != 1:
        raise Skip
    vt = pick.choice([VT["UINT64"], VT["INT64"], VT["FLOAT64"]])
    if pick.boolean():
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), vt, 5))
    else:
        _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, Arr(vt, [1, 2])))


def m_alignment(raw: RawFile, pick: Pick) -> None:
    small = [0, 1, 2, 4, 7, 12, 24, 40, 48, 96, 8, 16, 64, 256]
    values = [(UINT32, v) for v in small + ([0xFFFFFFFF, 2**31, 2**20 + 8] if not raw.tensors else [])]
    wrong = [(VT["INT32"], 32), (VT["UINT16"], 32), (VT["UINT8"], 8), (STRING, b"32"), (ARRAY, Arr(UINT32, [32])),
             (VT["FLOAT32"], 32.0)] + ([(VT["UINT64"], 32)] if raw.version > 1 else [])
    kind = pick.kind({"u32": frozenset().union(*(alignment_rules(*o) for o in values)),
                      "wrong": frozenset({"ALIGN-TYPE"})})
    vt, v = pick.aimed(values if kind == "u32" else wrong, lambda o: alignment_rules(*o))
    first = next((kv for kv in raw.kvs if kv.key == ALIGNMENT_KEY), None)
    if first is not None:
        first.vtype, first.value = vt, v
    else:
        raw.kvs.insert(pick.integer(0, len(raw.kvs)), RawKV(ALIGNMENT_KEY, vt, v))
    raw.relayout()


# -- tensor infos ----------------------------------------------------------------------------------------------
def m_ndims(raw: RawFile, pick: Pick) -> None:
    t = _ensure_tensor(raw, pick)
    kind = pick.kind({"five": frozenset({"TI-NDIMS"}), "huge": frozenset({"TI-NDIMS"}),
                      "zero": frozenset({"TI-NDIMS-ZERO"})})
    if kind == "five":
        t.dims = list(t.dims) + [1] * (pick.integer(5, 8) - len(t.dims))
    elif kind == "huge":
        t.n_dims = pick.choice([0xFFFFFFFF, 0x80000000, 2**28])
    else:
        t.dims = []
    raw.relayout()


def m_dims(raw: RawFile, pick: Pick) -> None:
    t = _ensure_tensor(raw, pick)
    values = [0, 2**32 - 1] + ([2**64 - 1, 2**63, 2**63 - 1, 2**32] if raw.wide == 8 else [])
    axis = pick.integer(0, len(t.dims) - 1) if t.dims else None
    if axis is None:
        raise Skip

    def with_value(v: int) -> list[int]:
        return t.dims[:axis] + [v] + t.dims[axis + 1:]

    t.dims = with_value(pick.aimed(values, lambda v: tensor_rules(replace(t, dims=with_value(v)),
                                                                   raw.alignment())))


_OVERFLOWS = [([2**32, 2**32], 0), ([2**63 - 1, 2], 24), ([2**31, 2**31, 2**31], 0), ([4, 2**30 - 1, 2**30 + 1, 1], 0),
              ([2**61], 27), ([2**40], 0), ([2**31, 2**30], 27), ([2**31, 2**31], 0), ([2**32 - 1] * 3, 0),
              ([256 * 2**20, 2**20], 12), ([2**30], 0)]


def m_overflow(raw: RawFile, pick: Pick) -> None:
    t = _ensure_tensor(raw, pick)
    fits = [(d, ty) for d, ty in _OVERFLOWS if max(d) < 2 ** (8 * raw.wide)]
    dims, gtype = pick.aimed(fits, lambda f: tensor_rules(replace(t, dims=list(f[0]), type=f[1]),
                                                          raw.alignment()))
    t.dims, t.type = list(dims), gtype


def m_tensor_type(raw: RawFile, pick: Pick) -> None:
    t = _ensure_tensor(raw, pick)
    t.type = pick.choice(_REMOVED + [43, 44, 100, 1000, 0x7FFFFFFF, 0xFFFFFFFF])


def m_block(raw: RawFile, pick: Pick) -> None:
    t = _ensure_tensor(raw, pick)
    if pick.integer(0, 3) == 0:
        t.type, t.dims = 2, [16, 2]  # Q4_0 [16, 2]: 32 elements in all, but a row is half a block
        return
    gtype = pick.choice(_QUANT)
    block = tensor_type_by_id()[gtype].block_size
    t.type = gtype
    t.dims = [block * pick.integer(0, 2) + pick.integer(1, block - 1)] + list(t.dims[1:])


def m_name(raw: RawFile, pick: Pick) -> None:
    kind = pick.kind({"long": frozenset({"TI-NAME-LEN"}), "64": frozenset({"TI-NAME-64"}),
                      "empty": frozenset({"TI-NAME-EMPTY"}), "dup": frozenset({"TI-NAME-DUP"})})
    t = _ensure_tensor(raw, pick)
    if kind == "long":
        t.name = b"n" * pick.choice([65, 66, 100, 1000])
    elif kind == "64":
        t.name = b"x" * 64
    elif kind == "empty":
        t.name = b""
    else:
        if len(raw.tensors) < 2:
            raw.tensors.append(RawTI(t.name, [4], VT_F32, 0, bytes(16)))
        else:
            other = raw.tensors[pick.integer(0, len(raw.tensors) - 1)]
            other.name = t.name if other is not t else other.name
            if other is t:
                raw.tensors[(raw.tensors.index(t) + 1) % len(raw.tensors)].name = t.name
    raw.relayout()


_OFFSET_KINDS = {
    "misalign": frozenset({"TI-OFFSET-ALIGN"}),
    "huge": frozenset({"DATA-BOUNDS"}),
    "overlap": frozenset({"DATA-OVERLAP"}),
    "reverse": frozenset({"DATA-ORDER"}),
    "gap": frozenset({"DATA-ORDER", "DATA-BOUNDS"}),
}


def m_offset(raw: RawFile, pick: Pick) -> None:
    t = _ensure_tensor(raw, pick)
    a = raw.alignment()
    kind = pick.kind(_OFFSET_KINDS)
    if kind == "misalign":
        t.offset += pick.integer(1, a - 1) if a > 1 else 1
    elif kind == "huge":
        t.offset = pick.choice([2**40, 2**64 - 1, 2**64 - 32, 2**63, 2**32, 2**64 - a])
    elif kind == "overlap":
        _overlap(raw, pick, a)
    elif kind == "reverse":
        pos = 0
        for t in reversed(raw.tensors):
            t.offset = pos
            pos = align(pos + len(t.blob), a)
    else:
        i = raw.tensors.index(t)
        gap = a * pick.integer(1, 3)
        for u in raw.tensors[i:]:
            u.offset += gap


def _overlap(raw: RawFile, pick: Pick, a: int) -> None:
    """Move one tensor's data to start inside another's (at an aligned offset within it)."""
    holders = [u for u in raw.tensors if u.blob]
    if len(raw.tensors) < 2 or not holders:
        raw.tensors.append(RawTI(b"fuzz.other", [8], VT_F32, 0, bytes(32)))
        raw.relayout()
        holders = [u for u in raw.tensors if u.blob]
    host = pick.choice(holders)
    mover = pick.choice([u for u in raw.tensors if u is not host and u.blob] or
                        [u for u in raw.tensors if u is not host])
    mover.offset = host.offset + a * pick.integer(0, (len(host.blob) - 1) // a)


_DATA_KINDS = {
    "pad": frozenset({"DATA-PAD-ZERO"}),
    "tail": frozenset({"DATA-TRAILING-BYTES"}),
    "short": frozenset({"DATA-BOUNDS"}),
    "headless": frozenset({"DATA-START"}),
    "unpadded": frozenset({"DATA-TRAILING-PAD"}),
}


def m_data(raw: RawFile, pick: Pick) -> None:
    kind = pick.kind(_DATA_KINDS)
    if kind == "pad":
        raw.pad_byte = pick.integer(1, 255)
    elif kind == "tail":
        raw.tail = bytes([pick.integer(0, 255)]) * pick.integer(1, 70)
    else:
        if not raw.tensors:
            raise Skip
        data, _, head_end = raw.encode(with_marks=False)
        end = len(data) - len(raw.tail)
        start = align(head_end, raw.alignment())
        if kind == "headless":  # the file ends before the data section starts
            if not head_end < start:
                raise Skip
            raw.truncate = pick.integer(head_end, start - 1)
            return
        if kind == "short":
            if not start < len(data):
                raise Skip
            raw.truncate = pick.integer(start, len(data) - 1)
            return
        last = start + max(t.offset + len(t.blob) for t in raw.tensors)
        if not last < end:
            raise Skip
        raw.truncate = pick.integer(last, end - 1)  # the data ends without its final padding


def m_truncate(raw: RawFile, pick: Pick) -> None:
    data, marks, _ = raw.encode()
    if len(data) < 2:
        raise Skip
    kind = pick.choice(["boundary", "inside", "any"])
    if kind == "boundary":
        cut = pick.aimed([m for m in marks if m.start < len(data)], lambda m: (m.rule,)).start
    elif kind == "inside":
        m = pick.aimed([m for m in marks if m.end - m.start > 1], lambda m: (m.rule,))
        cut = pick.integer(m.start + 1, m.end - 1)
    else:
        cut = pick.integer(0, len(data) - 1)
    raw.truncate = cut


MUTATIONS: tuple[Mutation, ...] = tuple(Mutation(n, frozenset(r), f) for n, r, f in [
    ("magic", {"HDR-MAGIC"}, m_magic),
    ("version", {"HDR-VERSION"}, m_version),
    ("count", {"HDR-COUNT"}, m_count),
    ("mixed-byte-order", {"HDR-COUNT"}, m_mixed_order),
    ("value-type", {"KV-TYPE"}, m_kv_type),
    ("bool", {"KV-BOOL"}, m_bool),
    ("duplicate-key", {"KV-KEY-DUP"}, m_dup_key),
    ("key-syntax", {"KV-KEY-EMPTY", "KV-KEY-LEN", "KV-KEY-ASCII", "KV-KEY-CHARSET", "KV-KEY-SEGMENT",
                    "KV-KEY-HYPHEN", "KV-KEY-FLAT", "STR-UTF8"}, m_key_syntax),
    ("bad-utf8", {"STR-UTF8", "KV-KEY-ASCII"}, m_bad_utf8),
    ("nul", {"STR-NUL"}, m_nul),
    ("string-eof", {"STR-EOF"}, m_string_eof),
    ("array-type", {"ARR-TYPE"}, m_array_type),
    ("array-bomb", {"ARR-EOF"}, m_array_bomb),
    ("nested", {"ARR-NESTED", "ARR-DEPTH"}, m_nested),
    ("v1-64bit-type", {"KV-TYPE-V1"}, m_v1_types),
    ("alignment", {"ALIGN-TYPE", "ALIGN-ZERO", "ALIGN-MULT8", "ALIGN-POW2"}, m_alignment),
    ("n-dims", {"TI-NDIMS", "TI-NDIMS-ZERO"}, m_ndims),
    ("dims", {"TI-DIM-RANGE", "TI-DIM-ZERO", "TI-NELEM-OVERFLOW"}, m_dims),
    ("size-overflow", {"TI-NELEM-OVERFLOW", "TI-NBYTES-OVERFLOW", "DATA-BOUNDS"}, m_overflow),
    ("tensor-type", {"TI-TYPE"}, m_tensor_type),
    ("block", {"TI-BLOCK"}, m_block),
    ("tensor-name", {"TI-NAME-LEN", "TI-NAME-64", "TI-NAME-EMPTY", "TI-NAME-DUP"}, m_name),
    ("offset", frozenset().union(*_OFFSET_KINDS.values()), m_offset),
    ("data", frozenset().union(*_DATA_KINDS.values()), m_data),
    ("truncate", {"HDR-TRUNC", "HDR-COUNT", "KV-TRUNC", "STR-EOF", "ARR-EOF", "TI-TRUNC", "DATA-START",
                  "DATA-BOUNDS", "DATA-TRAILING-PAD"}, m_truncate),
])


def mutations_for(rules: Sequence[str] | None) -> list[Mutation]:
    """Mutations that aim at any of ``rules`` (all when None)."""
    if rules is None:
        return list(MUTATIONS)
    wanted = set(rules)
    unknown = wanted - set().union(*(m.targets for m in MUTATIONS))
    if unknown:
        raise ValueError(f"no mutation produces {sorted(unknown)}")
    return [m for m in MUTATIONS if m.targets & wanted]
