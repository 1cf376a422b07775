"""KV pairs whose value is an array read in bulk (issue #42): a run of KV records of every value kind (scalars,
strings, arrays of every primitive type and of strings, of any count) is located by base/recordscan.py and read by
rulebook/records.py into the same values, ends and findings as the generated parser reads record by record, in
v1/v2/v3 files of both byte orders, with numba and with numpy only; an array of arrays among them is read one by
one without sending the records after it one by one; and reading many array records takes no Python call per
record in the scan and columns, a few per record in load and check.  No timings: benchmarks/bench_hostile.py has
them.
"""

from __future__ import annotations

import importlib
import struct
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import gguf_construct
from gguf_construct.base import recordscan
from gguf_construct.checker import check
from gguf_construct.format.stringlist import StringList
from gguf_construct.rulebook import read_head, records
from callcount import count_calls

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_hostile  # noqa: E402 - the benchmark's writers of hostile shapes

walk_module = importlib.import_module("gguf_construct.rulebook.walk")

ARRAY, STRING = 9, 8
PRIMS = {0: "u1", 1: "i1", 2: "u2", 3: "i2", 4: "u4", 5: "i4", 6: "f4", 7: "u1", 10: "u8", 11: "i8", 12: "f8"}
TEXTS = st.binary(max_size=6).map(lambda b: bytes(b"a\x00\xff\xc3\xa9z"[x % 6] for x in b))  # NULs, bad UTF-8


def _encode(version: int, order: str, kvs: list) -> bytes:
    """A GGUF head (no tensors) of ``kvs``: (value type, value) with a value of bytes (STRING), a number, or
    (element type, elements) for an ARRAY (elements: bytes, numbers, or (type, elements) for arrays of arrays)."""
    n = "I" if version == 1 else "Q"

    def text(b: bytes) -> bytes:
        return struct.pack(order + n, len(b)) + b

    def value(vtype: int, v) -> bytes:
        if vtype == STRING:
            return text(v)
        if vtype == ARRAY:
            item, items = v
            return struct.pack(order + "I" + n, item, len(items)) + b"".join(value(item, x) for x in items)
        return np.array([v], dtype=np.dtype(PRIMS[vtype]).newbyteorder(order)).tobytes()

    out = [b"GGUF", struct.pack(order + "I" + n + n, version, 0, len(kvs))]
    for i, (vtype, v) in enumerate(kvs):
        out += [text(b"k.%d" % i), struct.pack(order + "I", vtype), value(vtype, v)]
    return b"".join(out)


def _numbers(vtype: int):
    return st.integers(0, 1) if vtype == 7 else st.integers(0, 127)


@st.composite
def _kv(draw, types: list[int]):
    kind = draw(st.sampled_from(["scalar", "string", "array", "strings", "many strings", "more strings", "nested"]))
    if kind == "scalar":
        vtype = draw(st.sampled_from(types))
        return vtype, draw(st.integers(0, 255) if vtype == 7 else _numbers(vtype))
    if kind == "string":
        return STRING, draw(TEXTS)
    if kind == "array":
        item = draw(st.sampled_from(types))
        return ARRAY, (item, draw(st.lists(_numbers(item), max_size=20)))
    if kind == "more strings":  # around the strings string_runs follows together
        count = draw(st.integers(recordscan._RUN_ROUNDS, recordscan._RUN_ROUNDS + 2))
        return ARRAY, (STRING, [draw(TEXTS)] * count)
    if kind in ("strings", "many strings"):
        size = (0, 5) if kind == "strings" else (16, 40)
        return ARRAY, (STRING, draw(st.lists(TEXTS, min_size=size[0], max_size=size[1])))
    inner = st.sampled_from([(0, [1, 2]), (STRING, [b"a", b""]), (5, []), (ARRAY, [(0, [1])])])  # the last: depth 3
    return ARRAY, (ARRAY, draw(st.lists(inner, max_size=3)))


@st.composite
def heads(draw, little_v3: bool = False):
    """A head of 64 to 90 KV pairs of every value kind (at least 64: the walk reads such runs in bulk), in a
    drawn version and byte order (``little_v3``: v3 little-endian), sometimes cut short."""
    version = 3 if little_v3 else draw(st.sampled_from([1, 2, 3]))
    order = draw(st.sampled_from(["<", ">"])) if version == 3 and not little_v3 else "<"
    types = list(PRIMS)  # 64-bit types in a v1 file too (a finding each, read alike)
    kvs = draw(st.lists(_kv(types), min_size=64, max_size=90))
    data = _encode(version, order, kvs)
    return data[: len(data) - draw(st.sampled_from([0, 0, 0, 1, 7, 30]))]


def _plain(value):
    """A KV's value as comparable data: an array's type, count and data (numpy: dtype and bytes; StringList: its
    items' bytes and what it judged of them)."""
    if not hasattr(value, "keys"):
        return type(value).__name__, repr(value)
    data = value["data"]
    if isinstance(data, np.ndarray):
        shown = (data.dtype.str, data.tobytes(), data.flags.writeable)
    elif isinstance(data, StringList):
        shown = (
            [data.raw(i) for i in range(len(data))],
            data.invalid_utf8().tolist(),
            data.nul_items().tolist(),
            data.encode(),
        )
    else:
        shown = (type(data).__name__, len(data))
    return value["type"], value["len"], shown


def _snapshot(buf: bytes):
    ctx = read_head(memoryview(buf))
    kvs = [(k.index, k.offset, k.key, k.key_bytes, k.vtype, _plain(k.value), k.end, k.at("value")) for k in ctx.kvs]
    hits = [(r, h.offset, h.path, sorted(map(str, h.params.items()))) for r, h in ctx.hits]
    return kvs, hits, ctx.kv_complete


def _bulk_records(buf: bytes) -> int:
    return sum(kv.tree is None for kv in read_head(memoryview(buf)).kvs)


@given(heads())
def test_array_records_read_in_bulk_are_those_the_parser_reads(data):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(records, "kv_shape", lambda *a: None)
        want = _snapshot(data)  # the generated parser, record by record
    assert _snapshot(data) == want  # numpy's doubling (runs this small never load numba)
    if recordscan._kernel() is not None:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(recordscan, "COMPILED_FROM", 0)
            assert _snapshot(data) == want  # the compiled walk


@pytest.mark.parametrize("shape", ["mixed_kvs", "mixed_kvs_be", "mixed_kvs_v1", "prim_arrays", "many_strarrays_long"])
def test_loaded_values_and_bytes_are_those_of_the_parser(shape, tmp_path, monkeypatch):
    path = tmp_path / "f.gguf"
    getattr(bench_hostile, f"write_{shape}")(str(path), 40_000)
    data = path.read_bytes()
    assert _bulk_records(data) > 0.9 * len(read_head(memoryview(data)).kvs)  # arrays of arrays: one by one
    bulk = gguf_construct.load(data)
    assert bulk.to_bytes() == data
    with monkeypatch.context() as mp:
        mp.setattr(records, "kv_shape", lambda *a: None)
        parsed = gguf_construct.load(data)
    assert list(bulk.metadata.typed_items()) == list(parsed.metadata.typed_items())
    for (_, a), (_, b) in zip(bulk.metadata.typed_items(), parsed.metadata.typed_items()):
        assert type(a.value) is type(b.value) and a.item_type == b.item_type
        if isinstance(a.value, np.ndarray):
            assert a.value.dtype == b.value.dtype


def test_an_array_of_arrays_sends_only_itself_one_by_one():
    """One array of arrays every 40 records: the walk parses it and reads the run after it in bulk again."""
    body = [(4, 1)] * 39 + [(ARRAY, (ARRAY, [(0, [1])]))]
    data = _encode(3, "<", body * 50)
    kvs = read_head(memoryview(data)).kvs
    one_by_one = [kv.index for kv in kvs if kv.tree is not None]
    assert len(kvs) == 2000 and len(one_by_one) < 2000 // 40 + 2 * 64, one_by_one


@pytest.mark.parametrize("mode", ["compiled", "numpy"])
@pytest.mark.parametrize("shape", ["many_arrays", "many_strarrays", "prim_arrays", "many_strarrays_long"])
def test_locating_and_reading_array_records_makes_no_parse_per_record(shape, mode, monkeypatch, tmp_path):
    """The scan and the columns of 5x the records: a handful of Python-level calls per window, chunk or value
    type, none per numeric array, a StringList's making per string array (about 6 calls)."""
    if mode == "compiled":
        pytest.importorskip("numba")
        monkeypatch.setattr(recordscan, "COMPILED_FROM", 0)
    else:
        monkeypatch.setattr(recordscan, "_kernel", lambda: None)
    calls, counts = [], []
    for size in (200_000, 1_000_000):
        path = tmp_path / f"{shape}-{size}.gguf"
        getattr(bench_hostile, f"write_{shape}")(str(path), size)
        data = path.read_bytes()
        kvs = read_head(memoryview(data)).kvs
        first, n = kvs[1].offset, len(kvs) - 1
        kind = records.kv_shape(3, "little")
        assert kind is not None

        def read(data=data, first=first, n=n, kind=kind):
            starts, _ = records.scan(data, first, n, kind)
            assert len(starts) == n
            records.kv_columns(data, starts, kind)

        read()
        calls.append(count_calls(read))
        counts.append(n)
    grown = (calls[1] - calls[0]) / (counts[1] - counts[0])
    per_record = {"many_arrays": 0.3, "prim_arrays": 0.3}.get(shape, 8)
    assert grown <= per_record, (calls, counts)


@pytest.mark.parametrize("shape", ["many_arrays", "many_strarrays", "mixed_kvs"])
def test_load_and_check_of_many_array_records_take_a_few_calls_per_record(shape, tmp_path):
    """Python-level calls per added record of load and check: the API's objects (a KV, a GGUFValue, an array's
    data: a StringList is made in Python) and, for check, the array rules of rulebook/container.py, which look at
    each array in Python (measured: load 7, 12 and 14, check 25, 60 and 31 for the three shapes; 79, 138 and 78,
    86, 175 and 93 when each array record went through the generated parser)."""
    per = {}
    for size in (200_000, 1_000_000):
        path = tmp_path / f"{shape}-{size}.gguf"
        getattr(bench_hostile, f"write_{shape}")(str(path), size)
        n = len(read_head(memoryview(path.read_bytes())).kvs)
        gguf_construct.load(path).close()
        check(path)
        per[n] = (count_calls(lambda: gguf_construct.load(path).close()), count_calls(lambda: check(path)))
    (n0, (l0, c0)), (n1, (l1, c1)) = per.items()
    assert (l1 - l0) / (n1 - n0) <= 16, per
    assert (c1 - c0) / (n1 - n0) <= 64, per


def test_a_value_the_bulk_read_cannot_take_is_reported_as_the_parser_reports_it():
    """A string array whose last string runs past the end, an unknown element type, a count past the bytes."""
    good = [(4, 1)] * 70
    for bad in (
        struct.pack("<IIQ", ARRAY, STRING, 3) + struct.pack("<Q", 1) + b"a" + struct.pack("<Q", 900),
        struct.pack("<IIQ", ARRAY, 99, 0),
        struct.pack("<IIQ", ARRAY, 4, 2**40),
    ):
        data = _encode(3, "<", good) + struct.pack("<Q", 3) + b"bad" + bad
        data = data[:16] + struct.pack("<Q", 71) + data[24:]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(records, "kv_shape", lambda *a: None)
            want = _snapshot(data)
        assert _snapshot(data) == want and want[1], want


def _reference_scan(buf: bytes, pos: int, count: int, shape: records.RecordShape) -> tuple[list[int], int]:
    """The record-by-record walk scan_records must agree with (little-endian v3 widths: 8-byte lengths and
    counts, 4-byte selectors), arrays of arrays one level down."""
    arrays = shape.arrays
    assert arrays is not None
    items, sizes = arrays.items.tolist(), shape.sizes.tolist()

    def u(at: int, w: int) -> int | None:
        return int.from_bytes(buf[at : at + w], "little") if at + w <= len(buf) else None

    def array_end(p: int, depth: int) -> int | None:
        it, c = u(p, 4), u(p + 4, 8)
        if it is None or c is None or it >= len(items):
            return None
        q, item = p + 12, items[it]
        if item == recordscan.ARRAY_ITEMS and depth == 1:
            for _ in range(c):
                end = array_end(q, 2)
                if end is None:
                    return None
                q = end
            return q
        if item == recordscan.STRING_BODY:
            for _ in range(c):
                n = u(q, 8)
                if n is None or q + 8 + n > len(buf):
                    return None
                q += 8 + n
            return q
        return q + c * item if item > 0 and q + c * item <= len(buf) else None

    starts = []
    for _ in range(count):
        n = u(pos, 8)
        sel = None if n is None else u(pos + 8 + n, 4)
        if sel is None or sel >= len(sizes) or sizes[sel] == recordscan.STOP:
            break
        p = pos + 12 + n
        body = sizes[sel]
        if body == recordscan.STRING_BODY:
            m = u(p, 8)
            end = None if m is None or p + 8 + m > len(buf) else p + 8 + m
        elif body == recordscan.ARRAY_BODY:
            end = array_end(p, 1)
        else:
            end = p + body if p + body <= len(buf) else None
        if end is None:
            break
        starts.append(pos)
        pos = end
    return starts, pos


@pytest.mark.parametrize("mode", ["compiled", "numpy"])
@given(heads(little_v3=True), st.binary(max_size=40), st.integers(0, 2**32))
def test_the_scan_follows_array_records_as_a_walk_does(mode, data, junk, seed):
    """Drawn heads with bytes flipped and junk appended: the scan finds exactly the records a walk finds."""
    if mode == "compiled" and recordscan._kernel() is None:
        pytest.skip("numba is not installed")
    if len(data) < 24:
        return
    rng = np.random.default_rng(seed)
    buf = bytearray(data + junk)
    for at in rng.integers(24, len(buf), 3):
        buf[int(at)] ^= int(rng.integers(1, 256))
    shape = records.kv_shape(3, "little")
    assert shape is not None
    with pytest.MonkeyPatch.context() as mp:
        if mode == "compiled":
            mp.setattr(recordscan, "COMPILED_FROM", 0)
        else:
            mp.setattr(recordscan, "_kernel", lambda: None)
        starts, end = records.scan(bytes(buf), 24, 100, shape)
    assert (starts.tolist(), end) == _reference_scan(bytes(buf), 24, 100, shape)
