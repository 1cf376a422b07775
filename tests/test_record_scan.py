"""KV pairs and tensor infos read in bulk (issue #42): base/recordscan.py locates runs of records exactly, with
numba and with numpy only; the walk reads the same records, values and findings in bulk as record by record; the
tensor rules computed as arrays find what their loops find; and the Python-level work of reading many records does
not grow per record in the scan, and stays a few calls per record in load and check.  No timings:
benchmarks/bench_hostile.py has them.
"""

from __future__ import annotations

import struct
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import gguf_construct
from gguf_construct.base import recordscan
from gguf_construct.base.recordscan import STOP, STRING_BODY, scan_records
from gguf_construct.checker import check
from gguf_construct.rulebook import read_head, records, tensors as tensor_rules
from gguf_construct.strategies import gguf_files, invalid_gguf_files
from callcount import count_calls

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_hostile  # noqa: E402 - the benchmark's writers of hostile shapes

# value-type sizes as a KV record table would give them: 0-7, 10-12 scalars, 8 a string, 9 (arrays) stops
SIZES = np.array([1, 1, 2, 2, 4, 4, 4, 1, STRING_BODY, STOP, 8, 8, 8], dtype=np.int64)


@pytest.fixture(params=["compiled", "numpy"])
def scan_mode(request, monkeypatch):
    """The scan with the compiled walk (skipped without numba) or with numpy's pointer doubling only."""
    if request.param == "compiled":
        pytest.importorskip("numba")
        monkeypatch.setattr(recordscan, "COMPILED_FROM", 0)  # small runs too
    else:
        monkeypatch.setattr(recordscan, "_kernel", lambda: None)
    return request.param


def _reference(buf: bytes, pos: int, count: int, width: int, sizes: np.ndarray) -> tuple[list[int], int]:
    """The record-by-record walk the scan must agree with (little-endian, 4-byte selector)."""
    fmt = {4: "<I", 8: "<Q"}[width]
    starts = []
    for _ in range(count):
        if pos + width > len(buf):
            break
        (n,) = struct.unpack_from(fmt, buf, pos)
        p = pos + width + n
        if p + 4 > len(buf):
            break
        (sel,) = struct.unpack_from("<I", buf, p)
        p += 4
        if sel >= len(sizes) or sizes[sel] == STOP:
            break
        body = int(sizes[sel])
        if body == STRING_BODY:
            if p + width > len(buf):
                break
            body = width + struct.unpack_from(fmt, buf, p)[0]
        if p + body > len(buf):
            break
        starts.append(pos)
        pos = p + body
    return starts, pos


def _records(rng: np.random.Generator, n: int, width: int, stop_every: int = 0) -> bytes:
    """``n`` KV-shaped records: keys of 0-40 bytes (some of 300, some holding zero bytes), every value type."""
    fmt = {4: "<I", 8: "<Q"}[width]
    out = bytearray()
    for i in range(n):
        klen = int(rng.choice([0, 1, 3, 10, 40, 300], p=[0.1, 0.1, 0.3, 0.3, 0.18, 0.02]))
        key = rng.integers(0, 3, klen).astype(np.uint8).tobytes()  # zero bytes too: candidates everywhere
        sel = 9 if stop_every and i % stop_every == stop_every - 1 else int(rng.choice([0, 1, 2, 4, 6, 7, 8, 10, 12]))
        out += struct.pack(fmt, klen) + key + struct.pack("<I", sel)
        if sel == 8:
            slen = int(rng.integers(0, 20))
            out += struct.pack(fmt, slen) + rng.integers(0, 3, slen).astype(np.uint8).tobytes()
        elif sel != 9:
            out += rng.integers(0, 256, int(SIZES[sel])).astype(np.uint8).tobytes()
    return bytes(out)


@pytest.mark.parametrize("width", [4, 8])
@pytest.mark.parametrize("n", [1, 50, 20_000])
def test_scan_finds_every_record_a_walk_finds(scan_mode, width, n):
    rng = np.random.default_rng(n + width)
    data = b"xyz" + _records(rng, n, width)
    starts, end = scan_records(data, 3, n, width, True, 4, SIZES)
    want, want_end = _reference(data, 3, n, width, SIZES)
    assert starts.tolist() == want and end == want_end and len(want) == n


@pytest.mark.parametrize("cut", [1, 5, 9, 13])
def test_scan_stops_before_a_record_it_cannot_read_in_bulk(scan_mode, cut):
    rng = np.random.default_rng(cut)
    data = _records(rng, 3000, 8, stop_every=1000)  # an ARRAY record every 1000
    starts, end = scan_records(data, 0, 3000, 8, True, 4, SIZES)
    want, want_end = _reference(data, 0, 3000, 8, SIZES)
    assert starts.tolist() == want and end == want_end and len(want) == 999
    short = data[: len(data) - cut]  # the last record cut short: every record before it, and no further
    got = scan_records(short, 0, 3000, 8, True, 4, SIZES)
    assert (got[0].tolist(), got[1]) == _reference(short, 0, 3000, 8, SIZES)


def _snapshot(buf: bytes):
    ctx = read_head(memoryview(buf))
    kvs = [
        (k.index, k.offset, k.key, k.key_bytes, k.vtype, repr(k.value) if k.vtype != 9 else None, k.end)
        for k in ctx.kvs
    ]
    infos = [
        (t.index, t.offset, t.name, t.name_bytes, t.dims, t.type, t.data_offset, t.end, t.nbytes) for t in ctx.tensors
    ]
    hits = [(r, h.offset, h.path, sorted(map(str, h.params.items()))) for r, h in ctx.hits]
    offsets = [kv.at("value") for kv in ctx.kvs] + [t.at("offset") for t in ctx.tensors]
    return kvs, infos, hits, offsets, ctx.head_end, ctx.data_start


def _one_by_one(monkeypatch):
    monkeypatch.setattr(records, "kv_shape", lambda *a: None)
    monkeypatch.setattr(records, "tensor_info_shape", lambda *a: None)


@given(st.one_of(gguf_files(max_kv=8, max_tensors=4).map(lambda f: f[0]), invalid_gguf_files().map(lambda f: f[0])))
def test_the_walk_in_bulk_reads_what_the_walk_record_by_record_reads(data):
    bulk = _snapshot(data)  # numpy's doubling (runs this small never load numba)
    with pytest.MonkeyPatch.context() as mp:
        if recordscan._kernel() is not None:
            mp.setattr(recordscan, "COMPILED_FROM", 0)
            assert _snapshot(data) == bulk  # the compiled walk
        _one_by_one(mp)
        assert _snapshot(data) == bulk  # the generated parser, record by record


def _tensor_file(rng: np.random.Generator, n: int) -> bytes:
    """A GGUF v3 file of ``n`` F32/Q4_0 tensor infos with offsets that overlap, leave gaps, lose alignment or run
    past the end, and a data section of random bytes with zero runs."""
    recs = bytearray()
    for i in range(n):
        name = f"t.{i}".encode()
        gtype = int(rng.choice([0, 2]))  # F32, Q4_0 (a block of 32)
        ne0 = int(rng.choice([1, 7, 32, 64])) if gtype == 0 or i == n - 2 else int(rng.choice([32, 64]))
        offset = int(rng.choice([32 * i, 32 * i + 3, 32 * max(0, i - 1), 16 * i, 0]))
        recs += struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, ne0, gtype, offset)
    head = b"GGUF" + struct.pack("<IQQ", 3, n, 0) + bytes(recs)
    head += bytes(-len(head) % 32)
    body = rng.integers(0, 256, 32 * n + 40).astype(np.uint8)
    body[rng.random(len(body)) < 0.7] = 0
    return head + body[: len(body) - int(rng.integers(0, 60))].tobytes()


@pytest.mark.parametrize("seed", range(6))
def test_tensor_rules_as_arrays_find_what_their_loops_find(seed, monkeypatch):
    data = _tensor_file(np.random.default_rng(seed), 300)
    findings = [(f.rule, f.offset, f.path, f.message) for f in check(data, max_per_rule=None).findings]
    assert {"DATA-OVERLAP", "DATA-ORDER", "DATA-PAD-ZERO", "TI-OFFSET-ALIGN"} <= {f[0] for f in findings}
    monkeypatch.setattr(tensor_rules.TensorTable, "ends", lambda self: None)  # every rule by its loop
    assert [(f.rule, f.offset, f.path, f.message) for f in check(data, max_per_rule=None).findings] == findings


@pytest.mark.parametrize("shape", ["many_kvs", "many_tensors"])
def test_locating_and_reading_the_records_makes_no_call_per_record(shape, scan_mode, tmp_path):
    """The scan and the columns of 10x the records: the same Python-level calls (a handful per window or
    value type), none per record."""
    calls = []
    for size in (100_000, 1_000_000):
        path = tmp_path / f"{shape}-{size}.gguf"
        n = getattr(bench_hostile, f"write_{shape}")(str(path), size)
        data = path.read_bytes()
        ctx = read_head(memoryview(data))  # where the run starts: after the first record (general.architecture)
        first = ctx.kvs[1].offset if shape == "many_kvs" else ctx.tensors[0].offset
        kind = records.kv_shape(3, "little") if shape == "many_kvs" else records.tensor_info_shape(3, "little")
        columns = records.kv_columns if shape == "many_kvs" else records.tensor_info_columns
        assert kind is not None

        def read(data=data, first=first, n=n, kind=kind, columns=columns):
            starts, _ = records.scan(data, first, n, kind)
            assert len(starts) == n
            columns(data, starts, kind)

        read()
        calls.append(count_calls(read))
    windows = 1_000_000 // recordscan._WINDOW + 1
    per_window = 0 if scan_mode == "compiled" else 250  # numpy: a jump table and log2(records) rounds a window
    assert calls[1] <= calls[0] + per_window * windows, calls
    assert calls[1] < 1_000_000 // 26 // 5, calls  # far fewer than the records (26 bytes or more each)


@pytest.mark.parametrize(("shape", "load_calls", "check_calls"), [("many_kvs", 8, 14), ("many_tensors", 10, 6)])
def test_load_and_check_of_many_records_take_a_few_calls_per_record(shape, load_calls, check_calls, tmp_path):
    """Python-level calls per added record: about 48 (KV) and 82 (tensor info) for load, 63 and 101 for check
    when each record went through the generated parser; what is left is the objects of the API (a KV and a
    GGUFValue, a TensorInfo and a Tensor) and the key rules that look at each key."""
    per = {}
    for size in (200_000, 1_000_000):
        path = tmp_path / f"{shape}-{size}.gguf"
        n = getattr(bench_hostile, f"write_{shape}")(str(path), size)
        gguf_construct.load(path).close()
        check(path)
        per[n] = (count_calls(lambda: gguf_construct.load(path).close()), count_calls(lambda: check(path)))
    (n0, (l0, c0)), (n1, (l1, c1)) = per.items()
    assert (l1 - l0) / (n1 - n0) <= load_calls, per
    assert (c1 - c0) / (n1 - n0) <= check_calls, per
