"""Structural mutations: break a valid :class:`~gguf_construct.breaking.rawfile.RawFile` in one named way.

Each mutation edits fields of the raw model (never random bytes) and declares, next to the edit, what the concrete
edit it made is for: an :class:`~gguf_construct.breaking.intent.Intent` with the rules it breaks (a conformance
checker must report each) and the rules it may also cause as a known side effect.  The declarations are data of
the edits (the bad keys, alignments, magics and size overflows carry their rules; a truncation declares the rule
of the field it cuts in), not a model of the rules: the tests check them against the checker from both sides.  The
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

from ..format.enums import GGMLType
from ..format.reader import MAX_DIMS
from ..format.reader import MAX_KEY_BYTES as MAX_KEY
from ..format.reader import MAX_NAME_BYTES as MAX_NAME
from ..format import keynames, structs
from ..format.spec import primitives, tensor_type_by_id
from ..rulebook.container import later_type_rule
from .intent import DATA, DATA_LAYOUT, TENSOR_INFOS, Bytes, Intent
from .rawfile import (
    ALIGNMENT_KEY,
    ARRAY,
    BOOL,
    LEGACY_MAGICS,
    SCALAR_FORMATS,
    STRING,
    UINT32,
    VT,
    Arr,
    RawFile,
    WRITE_LIMIT,
    RawKV,
    RawTI,
    Str,
    align,
    marks_at,
)

__all__ = ["Pick", "RandomPick", "HypothesisPick", "Skip", "Mutation", "MUTATIONS", "mutations_for", "Intent"]


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


# phases: mutations of records first, then of tensor offsets (after every re-layout), then of the data section's
# bytes, then of the header and the file's end (counts and cuts that depend on the final size)
RECORDS, OFFSETS, DATA_BYTES, FILE = 0, 1, 2, 3


@dataclass(frozen=True)
class Mutation:
    """A named way to break a file: ``edit`` makes one concrete edit and returns its declared :class:`Intent`;
    ``targets`` are every rule any of its edits declares it breaks (what ``rules=`` filters aim at)."""

    name: str
    targets: frozenset
    edit: Callable[[RawFile, "Pick"], Intent]
    phase: int = RECORDS

    @property
    def late(self) -> bool:
        """Mutations that depend on the final layout (counts, truncation) go after the others."""
        return self.phase >= DATA_BYTES

    def apply(self, raw: RawFile, pick: Pick) -> Intent:
        """Edit ``raw`` in place; record the edit's intent on ``raw.intents`` and return it (:class:`Skip` when
        the mutation does not apply to this file)."""
        intent = replace(self.edit(raw, pick), by=self.name)
        if not intent.breaks <= self.targets:
            raise AssertionError(f"{self.name} declares {sorted(intent.breaks - self.targets)} outside its targets")
        raw.intents.append(intent)
        return intent


# -- helpers ---------------------------------------------------------------------------------------------------
_BAD_UTF8 = [
    b"\x80",
    b"\xc0\xaf",
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
    b"\xff",
    b"\xfe",
    b"a\xbfz",
]
_SCALAR_TYPES = sorted(SCALAR_FORMATS)
F32, I8, I64, Q4_0, Q4_K = (int(GGMLType[n]) for n in ("F32", "I8", "I64", "Q4_0", "Q4_K"))
_CURRENT = [i for i, t in sorted(tensor_type_by_id().items()) if t.is_current]
_REMOVED = [i for i, t in sorted(tensor_type_by_id().items()) if not t.is_current]
_QUANT = [i for i in _CURRENT if tensor_type_by_id()[i].block_size > 1]

# side effects on the data section of an edit that changes a tensor's byte size (its bytes stay as written)
SHRUNK = frozenset({"DATA-PAD-ZERO", "DATA-ORDER", "DATA-TRAILING-BYTES"})  # old bytes now lie in its padding
GROWN = frozenset({"DATA-OVERLAP", "DATA-ORDER"})  # it now reaches over the tensors after it


def _max_len(raw: RawFile) -> int:
    return 2 ** (8 * raw.wide) - 1


def _touched(raw: RawFile) -> set[int]:
    return {id(o) for i in raw.intents for o in i.touches}


def _untouched(raw: RawFile, records: list) -> list:
    """The records no earlier breakage of this file edited (a breakage works on a record of its own)."""
    done = _touched(raw)
    return [r for r in records if id(r) not in done]


def _field(raw: RawFile, path: str) -> Bytes:
    """The byte range of a header field."""
    m = next(m for m in raw.encode()[1] if m.path == path)
    return Bytes(m.start, m.end)


def _key_of(kv: RawKV) -> bytes:
    return kv.key.data if isinstance(kv.key, Str) else kv.key


def _fresh_key(raw: RawFile, pick: Pick) -> bytes:
    existing = {_key_of(k) for k in raw.kvs}
    key = b"fuzz.k" + str(pick.integer(0, 99)).encode()
    while key in existing:
        key += b"_" + str(len(existing)).encode()
    return key


def _insert_kv(raw: RawFile, pick: Pick, kv: RawKV) -> RawKV:
    raw.kvs.insert(pick.integer(0, len(raw.kvs)), kv)
    raw.relayout()
    return kv


def _scalar_value(vtype: int, pick: Pick):
    if structs.value_kind(vtype) == "float":
        big = 1e30 if primitives()[structs.value_types()[vtype]["encoding"]].size >= 4 else 1e4  # fits the type
        return pick.choice([0.0, -1.5, big, float("inf")])
    if vtype == BOOL:
        return pick.integer(0, 1)
    return pick.integer(0, 100)


def _random_array(pick: Pick, depth: int, version: int) -> Arr:
    """An array nested exactly ``depth`` levels deep."""
    types = [t for t in _SCALAR_TYPES if t in structs.value_types_in(version)] + [STRING]
    if depth > 1:
        return Arr(ARRAY, [_random_array(pick, depth - 1, version) for _ in range(pick.integer(1, 2))])
    item = pick.choice(types)
    n = pick.integer(0, 3)
    if item == STRING:
        return Arr(item, [b"s%d" % i for i in range(n)])
    return Arr(item, [_scalar_value(item, pick) for _ in range(n)])


def _tensor(raw: RawFile, pick: Pick) -> RawTI:
    """A tensor of the file no other breakage edited."""
    free = _untouched(raw, raw.tensors)
    if not free:
        raise Skip
    return free[pick.integer(0, len(free) - 1)]


def _new_tensor(raw: RawFile, dims: list[int]) -> RawTI:
    """Append an F32 tensor of shape ``dims`` with a name no other tensor has."""
    written = [u.offset + len(u.blob) for u in raw.tensors if u.offset + len(u.blob) <= WRITE_LIMIT]
    t = RawTI(
        b"fuzz.weight.%d" % len(raw.tensors),
        list(dims),
        F32,
        align(max(written, default=0), raw.alignment),
        bytes(4 * _product(dims)),
    )
    raw.tensors.append(t)  # after the others, which keep their offsets (an offset edit may have moved them)
    return t


def _ensure_tensor(raw: RawFile, pick: Pick) -> RawTI:
    """A tensor of the file no other breakage edited; one small F32 tensor is added when there is none."""
    if not _untouched(raw, raw.tensors):
        _new_tensor(raw, [pick.choice([1, 4, 8])])
    return _tensor(raw, pick)


def _product(dims: Iterable[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _block_rule(gtype: int, ne0: int) -> frozenset:
    """TI-BLOCK when a row of ``ne0`` elements is not a whole number of the type's blocks (the edit's own row)."""
    block = tensor_type_by_id()[gtype].block_size
    return frozenset({"TI-BLOCK"}) if ne0 % block else frozenset()


# -- header ----------------------------------------------------------------------------------------------------
_MAGICS = [(m, {"HDR-MAGIC"}) for m in (b"GGUG", b"FUGG", b"gguf", b"\0\0\0\0", b"GGU\0")] + [
    (m, {"HDR-MAGIC", "HDR-MAGIC-LEGACY"}) for m in sorted(LEGACY_MAGICS)
]


def m_magic(raw: RawFile, pick: Pick) -> Intent:
    raw.magic, rules = pick.aimed(_MAGICS, lambda o: o[1])
    at = _field(raw, "header.magic")
    return Intent(rules, at=at, stops=at, touches=("magic",))


def m_version(raw: RawFile, pick: Pick) -> Intent:
    raw.raw_version = pick.choice([0, 4, 5, 0xFFFFFFFF, 0x00030003, 0x00010000, 0x04000000, 0x7FFFFFFF])
    at = _field(raw, "header.version")
    return Intent({"HDR-VERSION"}, at=at, stops=at, touches=("version",))


def _counts_room(raw: RawFile) -> tuple[int, int]:
    data, _, _ = raw.encode(with_marks=False)
    fam = raw.family
    return len(data) - fam.min_sizes["header"], len(raw.kvs) * fam.min_sizes["metadata_kv"]


def _count_intent(raw: RawFile, name: str) -> Intent:
    """HDR-COUNT, checked once the whole header is read: a KV count that cannot be met ends reading at the header,
    a tensor count at the tensor infos."""
    at = Bytes(0, raw.family.min_sizes["header"])
    return Intent({"HDR-COUNT"}, at=at, stops=at if name == "metadata_kv_count" else TENSOR_INFOS, touches=(name,))


def m_count(raw: RawFile, pick: Pick) -> Intent:
    name = pick.choice(["tensor_count", "metadata_kv_count"])
    remaining, kv_need = _counts_room(raw)
    w, fam = raw.wide, raw.family
    if name == "metadata_kv_count":
        unsat = remaining // fam.min_sizes["metadata_kv"] + 1
    else:
        unsat = max(0, remaining - kv_need) // fam.min_sizes["tensor_info"] + 1
    big = [2**63, 2**64 - 1, 2**62, 2**40] if w == 8 else [2**32 - 1, 2**31]
    value = pick.choice(big + [unsat])
    if value == unsat:
        value += pick.integer(0, 3)
    value = min(value, _max_len(raw))
    raw.swapped_counts = raw.swapped_counts - {name}
    if name == "tensor_count":
        raw.n_tensors = value
    else:
        raw.n_kv = value
    return _count_intent(raw, name)


def m_mixed_order(raw: RawFile, pick: Pick) -> Intent:
    fields = [n for n, c in (("tensor_count", len(raw.tensors)), ("metadata_kv_count", len(raw.kvs))) if c]
    if not fields or raw.n_tensors is not None or raw.n_kv is not None:
        raise Skip
    name = pick.choice(fields)
    raw.swapped_counts = raw.swapped_counts | {name}  # a small count byte-swapped is beyond any file's records
    return _count_intent(raw, name)


# -- key/value records -----------------------------------------------------------------------------------------
def m_kv_type(raw: RawFile, pick: Pick) -> Intent:
    bad = pick.choice([13, 14, 100, 0xFFFF, 0x80000000, 0xFFFFFFFF])
    payload = bytes(pick.integer(0, 8))
    free = _untouched(raw, raw.kvs)
    if free and pick.boolean():
        kv = free[pick.integer(0, len(free) - 1)]
        kv.vtype, kv.value = bad, payload
        raw.relayout()
    else:
        kv = _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), bad, payload))
    return Intent({"KV-TYPE"}, at=kv, stops=kv, touches=(kv,))


def m_bool(raw: RawFile, pick: Pick) -> Intent:
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
    return Intent({"KV-BOOL"} | ({"ARR-NESTED"} if where == "nested" else set()), at=kv, touches=(kv,))


def m_dup_key(raw: RawFile, pick: Pick) -> Intent:
    free = _untouched(raw, raw.kvs)
    if free and pick.boolean():
        src = free[pick.integer(0, len(free) - 1)]
        copy = RawKV(src.key, src.vtype, src.value)
        raw.kvs.insert(pick.integer(raw.kvs.index(src) + 1, len(raw.kvs)), copy)
        raw.relayout()
        return Intent({"KV-KEY-DUP"}, at=copy, touches=(copy,))
    key = pick.choice([_fresh_key(raw, pick), keynames.GENERAL_ARCHITECTURE.encode(), ALIGNMENT_KEY])
    if key == ALIGNMENT_KEY and any(_key_of(k) == ALIGNMENT_KEY for k in raw.kvs):
        raise Skip
    vt, val = (UINT32, raw.alignment) if key == ALIGNMENT_KEY else (STRING, b"llama")
    first = _insert_kv(raw, pick, RawKV(key, vt, val))
    second = RawKV(key, vt, val)
    raw.kvs.insert(pick.integer(raw.kvs.index(first) + 1, len(raw.kvs)), second)
    raw.relayout()
    return Intent({"KV-KEY-DUP"}, at=second, touches=(first, second))


# each bad key with the key rules it breaks
_BAD_KEYS = [
    (b"", {"KV-KEY-EMPTY"}),
    (b"Test.Upper", {"KV-KEY-CHARSET"}),
    (b"test..x", {"KV-KEY-SEGMENT"}),
    (b".test.x", {"KV-KEY-SEGMENT"}),
    (b"test.x.", {"KV-KEY-SEGMENT"}),
    (b"test.a b", {"KV-KEY-CHARSET"}),
    (b"test.a/b", {"KV-KEY-CHARSET"}),
    (b"test.\x01", {"KV-KEY-CHARSET"}),
    (b"test.\xc3\xa9", {"KV-KEY-ASCII"}),  # UTF-8, but not ASCII
    (b"test.a-b", {"KV-KEY-HYPHEN"}),
    (b"flat", {"KV-KEY-FLAT"}),
    (b"TEST", {"KV-KEY-CHARSET", "KV-KEY-FLAT"}),
    (b"test.tab\t", {"KV-KEY-CHARSET"}),
    (b"test. ", {"KV-KEY-CHARSET"}),
    (b".", {"KV-KEY-SEGMENT"}),
    (b"long." + b"a" * (MAX_KEY - 4), {"KV-KEY-LEN"}),
    (b"test." + b"x" * (MAX_KEY - 4), {"KV-KEY-LEN"}),
]


def m_key_syntax(raw: RawFile, pick: Pick) -> Intent:
    key, rules = pick.aimed(_BAD_KEYS, lambda o: o[1])
    kv = _insert_kv(raw, pick, RawKV(key, UINT32, 1))
    return Intent(rules, {"KV-KEY-DUP"}, at=kv, touches=(kv,))  # may: another breakage wrote the same key


def m_bad_utf8(raw: RawFile, pick: Pick) -> Intent:
    bad = pick.choice(_BAD_UTF8)
    where = pick.choice(["value", "key", "array", "name"])
    text = b"ab" + bad + b"cd" if pick.boolean() else bad
    if where == "name":
        t = _ensure_tensor(raw, pick)
        t.name = text
        raw.relayout()
        return Intent({"STR-UTF8"}, {"TI-NAME-DUP"}, at=t, touches=(t,))  # may: a second one got the same name
    if where == "key":  # every bad sequence has a byte >= 0x80
        kv = _insert_kv(raw, pick, RawKV(b"test." + text, UINT32, 7))  # may: a second one wrote the same key
        return Intent({"STR-UTF8", "KV-KEY-ASCII"}, {"KV-KEY-DUP"}, at=kv, touches=(kv,))
    if where == "array":
        kv = RawKV(_fresh_key(raw, pick), ARRAY, Arr(STRING, [b"ok", text, b""][: pick.integer(2, 3)]))
    else:
        kv = RawKV(_fresh_key(raw, pick), STRING, text)
    _insert_kv(raw, pick, kv)
    return Intent({"STR-UTF8"}, at=kv, touches=(kv,))


def m_nul(raw: RawFile, pick: Pick) -> Intent:
    text = pick.choice([b"abc\0def", b"\0", b"x\0"])
    if pick.boolean():
        kv = RawKV(_fresh_key(raw, pick), STRING, text)
    else:
        kv = RawKV(_fresh_key(raw, pick), ARRAY, Arr(STRING, [b"a", text]))
    _insert_kv(raw, pick, kv)
    return Intent({"STR-NUL"}, at=kv, touches=(kv,))


def m_string_eof(raw: RawFile, pick: Pick) -> Intent:
    big = [2**64 - 1, 2**63, 2**62, 2**40] if raw.wide == 8 else [2**32 - 1, 2**31, 2**31 + 5]
    where = pick.choice(["key", "value", "name"])
    length = pick.choice(big)
    free_kvs, free_tensors = _untouched(raw, raw.kvs), _untouched(raw, raw.tensors)
    if where == "name" and free_tensors:
        record = free_tensors[pick.integer(0, len(free_tensors) - 1)]
        record.name = Str(record.name if isinstance(record.name, bytes) else record.name.data, length)
    elif where == "key" and free_kvs:
        record = free_kvs[pick.integer(0, len(free_kvs) - 1)]
        record.key = Str(_key_of(record), length)
    else:
        record = _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), STRING, Str(b"abc", length)))
    raw.relayout()
    return Intent({"STR-EOF"}, at=record, stops=record, touches=(record,))


def m_array_type(raw: RawFile, pick: Pick) -> Intent:
    bad = pick.choice([13, 100, 0xFFFFFFFF, 0x80000000])
    items = [] if pick.boolean() else [bytes(pick.integer(0, 4))]
    arr = Arr(bad, items)
    nested = pick.boolean()
    if nested:
        arr = Arr(ARRAY, [arr])
    kv = _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, arr))
    # an empty top-level array of a bad type has a known length: reading goes on after it
    resumes = not items and not nested
    return Intent({"ARR-TYPE"}, at=kv, stops=None if resumes else kv, touches=(kv,))


def m_array_bomb(raw: RawFile, pick: Pick) -> Intent:
    big = [2**63, 2**64 - 1, 2**62, 2**60, 2**40] if raw.wide == 8 else [2**32 - 1, 2**31, 2**30]
    wide_float = VT["FLOAT64"] if VT["FLOAT64"] in structs.value_types_in(raw.version) else VT["INT32"]
    item = pick.choice([VT["UINT8"], VT["UINT32"], wide_float, STRING, ARRAY])
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
    kv = _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, arr))
    return Intent({"ARR-EOF"}, at=kv, stops=kv, touches=(kv,))


def m_nested(raw: RawFile, pick: Pick) -> Intent:
    depth = pick.integer(2, 12)
    if not pick.integer(0, 5):
        arr, depth = Arr(ARRAY, []), 1  # an empty array of arrays: nested, one level deep
    else:
        arr = _random_array(pick, depth, raw.version)
    kv = _insert_kv(raw, pick, RawKV(_fresh_key(raw, pick), ARRAY, arr))
    return Intent({"ARR-NESTED"} | ({"ARR-DEPTH"} if depth > 2 else set()), at=kv, touches=(kv,))


def m_v1_types(raw: RawFile, pick: Pick) -> Intent:
    """A number of a value type newer than the file's version (v1's 64-bit types; any later type the spec adds),
    breaking the rule the spec names for it (``before_since``)."""
    have = structs.value_types_in(raw.version)
    later = [t for t in structs.types_of_kind("integer", "float") if t not in have]
    if not later:
        raise Skip
    vt = pick.choice(later)
    if pick.boolean():
        kv = RawKV(_fresh_key(raw, pick), vt, 5)
    else:
        kv = RawKV(_fresh_key(raw, pick), ARRAY, Arr(vt, [1, 2]))
    _insert_kv(raw, pick, kv)
    return Intent({later_type_rule(vt, raw.version) or "KV-TYPE-VERSION"}, at=kv, touches=(kv,))


_M8, _P2 = "ALIGN-MULT8", "ALIGN-POW2"
# UINT32 alignments with the alignment rules each breaks (8 ... 256 are valid: the file stays correct)
_ALIGNMENTS = [
    (0, {"ALIGN-ZERO"}),
    (1, {_M8}),
    (2, {_M8}),
    (4, {_M8}),
    (7, {_M8, _P2}),
    (12, {_M8, _P2}),
    (24, {_P2}),
    (40, {_P2}),
    (48, {_P2}),
    (96, {_P2}),
    (8, set()),
    (16, set()),
    (64, set()),
    (256, set()),
]
# alignments too large for any tensor to follow (offered to files without tensors): a tensor another breakage adds
# later starts beyond the end of the file (DATA-START) and no other rule of the data section is checked
_HUGE_ALIGNMENTS = [(0xFFFFFFFF, {_M8, _P2, "SEC-ALIGN-HUGE"}), (2**31, {"SEC-ALIGN-HUGE"}), (2**20 + 8, {_P2})]
_WRONG_ALIGNMENT_TYPES = [
    (VT["INT32"], 32),
    (VT["UINT16"], 32),
    (VT["UINT8"], 8),
    (STRING, b"32"),
    (ARRAY, Arr(UINT32, [32])),
    (VT["FLOAT32"], 32.0),
    (VT["UINT64"], 32),
]


def m_alignment(raw: RawFile, pick: Pick) -> Intent:
    u32 = [(UINT32, v, r, False) for v, r in _ALIGNMENTS]
    u32 += [(UINT32, v, r, True) for v, r in _HUGE_ALIGNMENTS if not raw.tensors]
    wrong = [
        (vt, v, {"ALIGN-TYPE"}, False) for vt, v in _WRONG_ALIGNMENT_TYPES if vt in structs.value_types_in(raw.version)
    ]
    kind = pick.kind({"u32": frozenset().union(*(o[2] for o in u32)), "wrong": frozenset({"ALIGN-TYPE"})})
    vt, v, rules, huge = pick.aimed(u32 if kind == "u32" else wrong, lambda o: o[2])
    first = next((kv for kv in raw.kvs if _key_of(kv) == ALIGNMENT_KEY), None)
    if first is not None:
        if id(first) in _touched(raw):
            raise Skip
        first.vtype, first.value = vt, v
    else:
        first = RawKV(ALIGNMENT_KEY, vt, v)
        raw.kvs.insert(pick.integer(0, len(raw.kvs)), first)
    raw.relayout()
    if huge:
        return Intent(rules, {"DATA-START"}, at=first, masks=DATA_LAYOUT, touches=(first,))
    return Intent(rules, at=first, touches=(first,))


# -- tensor infos ----------------------------------------------------------------------------------------------
def _resized(rules, t: RawTI, side_effects: frozenset = frozenset(), at=None) -> Intent:
    """The intent of an edit of a tensor's shape or type: its bytes no longer match its size, which interferes
    with any rule of the data section another breakage aims at."""
    return Intent(rules, side_effects, at=t if at is None else at, masks=DATA_LAYOUT, touches=(t,))


def m_ndims(raw: RawFile, pick: Pick) -> Intent:
    t = _ensure_tensor(raw, pick)
    kind = pick.kind(
        {"five": frozenset({"TI-NDIMS"}), "huge": frozenset({"TI-NDIMS"}), "zero": frozenset({"TI-NDIMS-ZERO"})}
    )
    if kind == "five":  # more dimensions of 1: same element count; reading may stop at the bad count
        t.dims = list(t.dims) + [1] * (pick.integer(MAX_DIMS + 1, 2 * MAX_DIMS) - len(t.dims))
        raw.relayout()
        return Intent({"TI-NDIMS"}, at=t, stops=t, touches=(t,))
    if kind == "huge":  # more dimensions than the file has bytes for
        t.n_dims = pick.choice([0xFFFFFFFF, 0x80000000, 2**28])
        raw.relayout()
        return Intent({"TI-NDIMS"}, at=t, stops=t, touches=(t,))
    t.dims = []  # one element
    raw.relayout()
    return _resized({"TI-NDIMS-ZERO"} | _block_rule(t.type, 1), t, SHRUNK)


def m_dims(raw: RawFile, pick: Pick) -> Intent:
    t = _ensure_tensor(raw, pick)
    if not t.dims:
        raise Skip
    axis = pick.integer(0, len(t.dims) - 1)
    others = _product(t.dims[:axis] + t.dims[axis + 1 :])
    row = _block_rule(t.type, 2**32 - 1) if axis == 0 else frozenset()
    # each value with the rules it breaks, from the edit alone: the new dimension, the others' product, the row
    values = [
        (0, {"TI-DIM-ZERO"}, SHRUNK),
        (2**32 - 1, row or {"DATA-BOUNDS"}, frozenset() if row else GROWN),
    ]  # an odd row, or a huge tensor
    if raw.wide == 8:
        values += [
            (2**64 - 1, {"TI-DIM-RANGE"}, frozenset()),
            (2**63, {"TI-DIM-RANGE"}, frozenset()),
            (2**32, {"DATA-BOUNDS"}, GROWN),
        ]
        if others >= 2:
            values.append((2**63 - 1, {"TI-NELEM-OVERFLOW"}, frozenset({"TI-BLOCK"})))  # an odd row, too
    v, rules, side = pick.aimed(values, lambda o: o[1])
    t.dims = t.dims[:axis] + [v] + t.dims[axis + 1 :]
    return _resized(rules, t, side, at=DATA if "DATA-BOUNDS" in rules else t)


# shapes and types with the size rule each breaks: element count or byte size past 2^63 / 2^64, or a size that is
# defined but far beyond the file
_OVERFLOWS = [
    ([2**32, 2**32], F32, {"TI-NELEM-OVERFLOW"}),
    ([2**63 - 1, 2], I8, {"TI-NELEM-OVERFLOW"}),
    ([2**31, 2**31, 2**31], F32, {"TI-NELEM-OVERFLOW"}),
    ([2**32 - 1] * 3, F32, {"TI-NELEM-OVERFLOW"}),
    ([2**62], F32, {"TI-NBYTES-OVERFLOW"}),
    ([2**61], I64, {"TI-NBYTES-OVERFLOW"}),
    ([2**31, 2**30], I64, {"TI-NBYTES-OVERFLOW"}),
    ([2**31, 2**31], F32, {"TI-NBYTES-OVERFLOW"}),
    ([2**40], F32, {"DATA-BOUNDS"}),
    ([256 * 2**20, 2**20], Q4_K, {"DATA-BOUNDS"}),
    ([2**30], F32, {"DATA-BOUNDS"}),
]


def m_overflow(raw: RawFile, pick: Pick) -> Intent:
    t = _ensure_tensor(raw, pick)
    fits = [o for o in _OVERFLOWS if max(o[0]) < 2 ** (8 * raw.wide)]
    dims, gtype, rules = pick.aimed(fits, lambda o: o[2])
    t.dims, t.type = list(dims), gtype
    if "DATA-BOUNDS" in rules:
        return _resized(rules, t, GROWN, at=DATA)
    return _resized(rules, t)


def m_tensor_type(raw: RawFile, pick: Pick) -> Intent:
    t = _ensure_tensor(raw, pick)
    t.type = pick.choice(
        _REMOVED + [max(tensor_type_by_id()) + 1, max(tensor_type_by_id()) + 2, 1000, 0x7FFFFFFF, 0xFFFFFFFF]
    )
    return _resized({"TI-TYPE"}, t)


def m_block(raw: RawFile, pick: Pick) -> Intent:
    t = _ensure_tensor(raw, pick)
    if pick.integer(0, 3) == 0:
        t.type, t.dims = Q4_0, [16, 2]  # 32 elements in all, but a row is half a block
    else:
        gtype = pick.choice(_QUANT)
        block = tensor_type_by_id()[gtype].block_size
        t.type = gtype
        t.dims = [block * pick.integer(0, 2) + pick.integer(1, block - 1)] + list(t.dims[1:])
    return _resized({"TI-BLOCK"}, t)


def m_name(raw: RawFile, pick: Pick) -> Intent:
    kind = pick.kind(
        {
            "long": frozenset({"TI-NAME-LEN"}),
            "64": frozenset({"TI-NAME-64"}),
            "empty": frozenset({"TI-NAME-EMPTY"}),
            "dup": frozenset({"TI-NAME-DUP"}),
        }
    )
    t = _ensure_tensor(raw, pick)
    if kind == "dup":
        others = [u for u in _untouched(raw, raw.tensors) if u is not t]
        if others:
            other = pick.choice(others)
            other.name = t.name
        else:
            other = RawTI(t.name, [4], F32, 0, bytes(16))
            raw.tensors.append(other)
        raw.relayout()
        return Intent({"TI-NAME-DUP"}, at=(t, other), touches=(t, other))
    if kind == "long":
        t.name = b"n" * pick.choice([MAX_NAME + 1, MAX_NAME + 2, 100, 1000])
        rules = {"TI-NAME-LEN"}
    elif kind == "64":
        t.name = b"x" * MAX_NAME
        rules = {"TI-NAME-64"}
    else:
        t.name = b""
        rules = {"TI-NAME-EMPTY"}
    raw.relayout()
    return Intent(rules, {"TI-NAME-DUP"}, at=t, touches=(t,))  # may: a second breakage chose the same name


_OFFSET_KINDS = {
    "misalign": frozenset({"TI-OFFSET-ALIGN"}),
    "huge": frozenset({"DATA-BOUNDS", "TI-OFFSET-ALIGN"}),
    "overlap": frozenset({"DATA-OVERLAP"}),
    "reverse": frozenset({"DATA-ORDER"}),
    "gap": frozenset({"DATA-ORDER"}),
}


def _moved(rules, touched, side_effects=frozenset(), at=DATA) -> Intent:
    """The intent of an edit of tensor offsets: the data moved, which interferes with any other data-section rule."""
    return Intent(rules, side_effects, at=at, masks=DATA_LAYOUT, touches=tuple(touched))


def m_offset(raw: RawFile, pick: Pick) -> Intent:
    kind = pick.kind(_OFFSET_KINDS)
    a = raw.alignment
    if kind == "reverse":
        if len(raw.tensors) < 2 or not any(t.blob for t in raw.tensors) or _touched(raw) & set(map(id, raw.tensors)):
            raise Skip
        pos = 0
        for t in reversed(raw.tensors):
            t.offset = pos
            pos = align(pos + len(t.blob), a)
        return _moved({"DATA-ORDER"}, raw.tensors)
    if kind == "overlap":
        return _overlap(raw, pick, a)
    t = _ensure_tensor(raw, pick)
    if kind == "misalign":
        if a == 1:
            raise Skip
        t.offset += pick.integer(1, a - 1)  # it now runs into its padding or the next tensor
        return _moved({"TI-OFFSET-ALIGN"}, [t], {"DATA-ORDER", "DATA-OVERLAP", "DATA-PAD-ZERO"}, at=t)
    if kind == "huge":
        t.offset = pick.choice([2**40, 2**64 - 1, 2**64 - 32, 2**63, 2**32, 2**64 - a])
        rules = {"DATA-BOUNDS"} | ({"TI-OFFSET-ALIGN"} if t.offset % a else set())
        return _moved(rules, [t], {"DATA-ORDER", "DATA-OVERLAP"})  # overlap: another tensor moved as far
    i = raw.tensors.index(t)  # a gap before t: every tensor from t on moves
    moved = raw.tensors[i:]
    if _touched(raw) & set(map(id, moved)):
        raise Skip
    gap = a * pick.integer(1, 3)
    for u in moved:
        u.offset += gap
    return _moved({"DATA-ORDER"}, moved)


def _overlap(raw: RawFile, pick: Pick, a: int) -> Intent:
    """Move one tensor's data to start inside another's (at an aligned offset within it)."""
    holders = [u for u in raw.tensors if u.blob]
    while len(holders) < 2 or not _untouched(raw, holders):
        holders.append(_new_tensor(raw, [8]))
    mover = pick.choice(_untouched(raw, holders))
    host = pick.choice([u for u in holders if u is not mover])
    mover.offset = host.offset + a * pick.integer(0, (len(host.blob) - 1) // a)
    return _moved({"DATA-OVERLAP"}, [mover], {"DATA-ORDER", "DATA-PAD-ZERO"})  # its bytes may spill into padding


_DATA_KINDS = {
    "pad": frozenset({"DATA-PAD-ZERO"}),
    "tail": frozenset({"DATA-TRAILING-BYTES"}),
    "short": frozenset({"DATA-BOUNDS"}),
    "headless": frozenset({"DATA-START"}),
    "unpadded": frozenset({"DATA-TRAILING-PAD"}),
}


def m_data(raw: RawFile, pick: Pick) -> Intent:
    kind = pick.kind(_DATA_KINDS)
    layout = raw.layout()
    start = align(layout.head_end, raw.alignment)
    if kind == "tail":
        if raw.tensors:
            raw.tail += bytes([pick.integer(0, 255)]) * pick.integer(1, 70)
        else:  # no data section: zero padding up to where it would start, then the trailing bytes
            if start - layout.head_end > 4096 or raw.tail:
                raise Skip
            raw.tail = bytes(start - layout.head_end) + bytes([pick.integer(0, 255)]) * pick.integer(1, 70)
        return Intent({"DATA-TRAILING-BYTES"}, at=Bytes(layout.data_end, layout.size + len(raw.tail)))
    if not raw.tensors or raw.truncate is not None:
        raise Skip
    if kind == "pad":
        raw.pad_byte = pick.integer(1, 255)
        if start > layout.head_end:
            return Intent({"DATA-PAD-ZERO"}, at=Bytes(layout.head_end, start), touches=("padding",))
        return Intent(set(), {"DATA-PAD-ZERO"}, touches=("padding",))  # only padding between tensors, if any
    last = start + max((t.offset + len(t.blob) for t in raw.tensors), default=0)
    lo, hi, rule = {
        "headless": (layout.head_end, start, "DATA-START"),  # the file ends before the data starts
        "short": (start, last, "DATA-BOUNDS"),  # ... inside a tensor's bytes
        "unpadded": (last, layout.data_end, "DATA-TRAILING-PAD"),
    }[kind]  # ... in the final padding
    if not lo < hi or hi > layout.data_end:
        raise Skip
    raw.truncate = cut = pick.integer(lo, hi - 1)
    return Intent({rule}, at=Bytes(cut, cut + 1), stops=Bytes(cut, cut + 1))


def _cut_rules(raw: RawFile, cut: int, m) -> tuple[frozenset, int]:
    """(rules, where reading stops) of a file cut at ``cut`` inside field ``m``: the field's rule, unless a count
    read before it asks for more bytes than are left (an array's count: ARR-EOF; a header count: HDR-COUNT)."""
    fam = raw.family
    hsize = fam.min_sizes["header"]
    rule = m.rule
    if any(cut - offset < need for offset, need in m.prechecks if cut >= offset):
        rule = "ARR-EOF"
    if cut < hsize:
        return frozenset({rule}), cut
    n_kv = 2**63 if "metadata_kv_count" in raw.swapped_counts else len(raw.kvs) if raw.n_kv is None else raw.n_kv
    n_ti = (
        2**63 if "tensor_count" in raw.swapped_counts else len(raw.tensors) if raw.n_tensors is None else raw.n_tensors
    )
    kv_need = n_kv * fam.min_sizes["metadata_kv"]
    if n_kv >= 2**63 or kv_need > cut - hsize:
        return frozenset({"HDR-COUNT"}), hsize
    if n_ti >= 2**63 or n_ti * fam.min_sizes["tensor_info"] > cut - hsize - kv_need:
        in_kvs = m.path.startswith("metadata_kv")
        return frozenset({"HDR-COUNT", rule} if in_kvs else {"HDR-COUNT"}), min(cut, raw.layout().tensor_infos)
    return frozenset({rule}), cut


# what a cut can break: a cut inside the value of a bad type is left to the breakage that wrote that type
_CUT_RULES = frozenset(
    {
        "HDR-TRUNC",
        "HDR-COUNT",
        "KV-TRUNC",
        "STR-EOF",
        "ARR-EOF",
        "TI-TRUNC",
        "DATA-START",
        "DATA-BOUNDS",
        "DATA-TRAILING-PAD",
    }
)


def m_truncate(raw: RawFile, pick: Pick) -> Intent:
    if raw.truncate is not None:
        raise Skip
    data, marks, _ = raw.encode()
    marks = [m for m in marks if m.rule in _CUT_RULES]
    if len(data) < 2:
        raise Skip
    kind = pick.choice(["boundary", "inside", "any"])
    if kind == "boundary":
        m = pick.aimed([m for m in marks if m.start < len(data)], lambda m: _cut_rules(raw, m.start, m)[0])
        cut = m.start
    elif kind == "inside":
        m = pick.aimed([m for m in marks if m.end - m.start > 1], lambda m: (m.rule,))
        cut = pick.integer(m.start + 1, m.end - 1)
    else:
        cut = pick.integer(0, len(data) - 1)
        m = marks_at(marks, cut)
        if m is None:  # in trailing bytes or a value of a bad type
            raise Skip
    rules, stop = _cut_rules(raw, cut, m)
    raw.truncate = cut
    return Intent(rules, at=Bytes(stop, stop + 1), stops=Bytes(stop, stop + 1))


MUTATIONS: tuple[Mutation, ...] = tuple(
    Mutation(n, frozenset(r), f, p)
    for n, r, f, p in [
        ("magic", {"HDR-MAGIC", "HDR-MAGIC-LEGACY"}, m_magic, FILE),
        ("version", {"HDR-VERSION"}, m_version, FILE),
        ("count", {"HDR-COUNT"}, m_count, FILE),
        ("mixed-byte-order", {"HDR-COUNT"}, m_mixed_order, FILE),
        ("value-type", {"KV-TYPE"}, m_kv_type, RECORDS),
        ("bool", {"KV-BOOL", "ARR-NESTED"}, m_bool, RECORDS),
        ("duplicate-key", {"KV-KEY-DUP"}, m_dup_key, RECORDS),
        ("key-syntax", frozenset().union(*(r for _, r in _BAD_KEYS)), m_key_syntax, RECORDS),
        ("bad-utf8", {"STR-UTF8", "KV-KEY-ASCII"}, m_bad_utf8, RECORDS),
        ("nul", {"STR-NUL"}, m_nul, RECORDS),
        ("string-eof", {"STR-EOF"}, m_string_eof, RECORDS),
        ("array-type", {"ARR-TYPE"}, m_array_type, RECORDS),
        ("array-bomb", {"ARR-EOF"}, m_array_bomb, RECORDS),
        ("nested", {"ARR-NESTED", "ARR-DEPTH"}, m_nested, RECORDS),
        ("v1-64bit-type", {"KV-TYPE-V1"}, m_v1_types, RECORDS),
        ("alignment", {"ALIGN-TYPE", "ALIGN-ZERO", _M8, _P2, "SEC-ALIGN-HUGE"}, m_alignment, RECORDS),
        ("n-dims", {"TI-NDIMS", "TI-NDIMS-ZERO", "TI-BLOCK"}, m_ndims, RECORDS),
        ("dims", {"TI-DIM-RANGE", "TI-DIM-ZERO", "TI-NELEM-OVERFLOW", "TI-BLOCK", "DATA-BOUNDS"}, m_dims, RECORDS),
        ("size-overflow", {"TI-NELEM-OVERFLOW", "TI-NBYTES-OVERFLOW", "DATA-BOUNDS"}, m_overflow, RECORDS),
        ("tensor-type", {"TI-TYPE"}, m_tensor_type, RECORDS),
        ("block", {"TI-BLOCK"}, m_block, RECORDS),
        ("tensor-name", {"TI-NAME-LEN", "TI-NAME-64", "TI-NAME-EMPTY", "TI-NAME-DUP"}, m_name, RECORDS),
        ("offset", frozenset().union(*_OFFSET_KINDS.values()), m_offset, OFFSETS),
        ("data", frozenset().union(*_DATA_KINDS.values()), m_data, DATA_BYTES),
        ("truncate", _CUT_RULES, m_truncate, FILE),
    ]
)


def mutations_for(rules: Iterable[str] | None) -> list[Mutation]:
    """Mutations that aim at any of ``rules`` (all when None)."""
    if rules is None:
        return list(MUTATIONS)
    wanted = set(rules)
    unknown = wanted - set().union(*(m.targets for m in MUTATIONS))
    if unknown:
        raise ValueError(f"no mutation produces {sorted(unknown)}")
    return [m for m in MUTATIONS if m.targets & wanted]
