"""Bounded cost on hostile shapes (issue #42), at small sizes: the Python-level work of reading a string array
does not grow with its item count whatever the lengths, the scan stays exact on the shapes that defeat its fast
path, and memory stays within a bound per item (tracemalloc).  No timings: benchmarks/bench_hostile.py has them.
"""

from __future__ import annotations

import json
import struct
import tracemalloc

import numpy as np
import pytest

import gguf_construct
from gguf_construct.base import stringscan
from gguf_construct.base.stringscan import scan_string_offsets
from gguf_construct.base.stringwalk import chain_by_doubling, walk_compiled
from gguf_construct.commands.main import main
from gguf_construct.format.spec import byte_order
from gguf_construct.format.stringlist import StringList
from callcount import count_calls

STRING, ARRAY = 8, 9

LE = byte_order("little").struct  # the struct prefix scan_string_offsets takes


def _records(lengths: np.ndarray, rng: np.random.Generator, zeros: float = 0.0) -> bytes:
    """8-byte little-endian string records of these lengths, payloads of letters with some zero bytes."""
    out = bytearray()
    for n in lengths.tolist():
        payload = rng.integers(97, 123, n).astype(np.uint8)
        payload[rng.random(n) < zeros] = 0
        out += struct.pack("<Q", n) + payload.tobytes()
    return bytes(out)


def _shape(kind: str, n: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    if kind == "empty":
        return bytes(8 * n)
    if kind == "alternating":  # an empty string, then a letter: every letter is followed by candidates
        return (struct.pack("<Q", 0) + struct.pack("<Q", 1) + b"a") * (n // 2)
    if kind == "zeros-in-payloads":
        return _records(rng.integers(0, 6, n), rng, zeros=0.5)
    if kind == "long-in-a-row":  # strings of 256 bytes or more are never candidates
        return _records(rng.integers(256, 300, n), rng)
    raise ValueError(kind)


def _reference(buf: bytes, count: int) -> tuple[np.ndarray, int]:
    pos, starts = 0, []
    for _ in range(count):
        (n,) = struct.unpack_from("<Q", buf, pos)
        starts.append(pos + 8)
        pos += 8 + n
    return np.array(starts, dtype=np.int64), pos


@pytest.fixture(params=["compiled", "doubling"])
def walk_mode(request, monkeypatch):
    """The scan with the compiled walk (skipped without numba) or with numpy's pointer doubling only."""
    if request.param == "compiled":
        pytest.importorskip("numba")
    else:
        monkeypatch.setattr(stringscan, "walk_compiled", lambda *args: None)
    return request.param


KINDS = ["empty", "alternating", "zeros-in-payloads", "long-in-a-row"]


@pytest.mark.parametrize("kind", KINDS)
def test_scan_is_exact_on_shapes_that_defeat_the_candidate_scan(kind, walk_mode):
    for n, seed in ((3000, 1), (40_000, 2)):
        data = _shape(kind, n, seed)  # n records (n is even: the alternating shape has n too)
        buf = b"pad" + data + b"tail"
        starts, ends, end = scan_string_offsets(buf, 3, n, 8, LE)
        want, want_end = _reference(data, n)
        assert end == want_end + 3
        assert np.array_equal(starts, want + 3)
        assert np.array_equal(ends, np.append(want[1:] - 8, want_end) + 3)


@pytest.mark.parametrize("kind", KINDS)
def test_scan_reports_the_first_record_that_does_not_fit(kind, walk_mode):
    data = _shape(kind, 5000, 3)
    want, end = _reference(data, 5000)
    cut = data + struct.pack("<Q", 9) + b"abc"  # one more record whose payload runs past the end
    with pytest.raises(IndexError) as info:
        scan_string_offsets(cut, 0, len(want) + 1, 8, LE)
    assert info.value.args == (len(want), end, 9)
    with pytest.raises(IndexError) as info:
        scan_string_offsets(data + b"\x01\x02", 0, len(want) + 1, 8, LE)  # a cut-off length
    assert info.value.args == (len(want), end, None)


@pytest.mark.parametrize("kind", KINDS)
def test_scan_calls_do_not_grow_with_the_item_count(kind, walk_mode):
    """Ten times the items: Python-level calls grow with the windows scanned (bytes), never per item (the
    doubling fallback takes a few rounds per window, the compiled walk none)."""
    scan_string_offsets(_shape(kind, 4000), 0, 4000, 8, LE)  # compile / warm up
    small, big = 20_000, 200_000
    calls = []
    for n in (small, big):
        data = _shape(kind, n)
        calls.append(count_calls(lambda: scan_string_offsets(data, 0, n, 8, LE), quiet_gc=False))
    windows = len(_shape(kind, big)) // stringscan._WINDOW + 1
    per_window = 40 if walk_mode == "compiled" else 400
    assert calls[1] < 2 * calls[0] + per_window * windows, calls
    assert calls[1] < big // 4, calls


def _gguf_with(key: str, vtype: int, body: bytes, item_type: int | None = None, count: int = 0) -> bytes:
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    kb = key.encode()
    rec = struct.pack("<Q", len(kb)) + kb + struct.pack("<I", vtype)
    if vtype == ARRAY:
        rec += struct.pack("<IQ", item_type, count)
    return head + rec + body


def test_loading_empty_strings_keeps_python_work_flat_and_memory_per_item(tmp_path, walk_mode):
    """load of N empty strings: calls grow with the bytes only (a few per window or MiB, never per item),
    tracemalloc peak within 40 bytes per item plus 1 MiB, and 8 bytes per item plus 1 MiB kept (each string's
    start: it ends where the next record starts)."""
    paths = {}
    for n in (30_000, 300_000):
        paths[n] = tmp_path / f"empty-{n}.gguf"
        paths[n].write_bytes(_gguf_with("tokenizer.ggml.tokens", ARRAY, bytes(8 * n), STRING, n))
    gguf_construct.load(paths[30_000]).close()  # warm up: specs, structs, compiled walk
    calls = [count_calls(lambda p=paths[n]: gguf_construct.load(p).close(), quiet_gc=False) for n in (30_000, 300_000)]
    megabytes = 8 * 300_000 / 2**20
    assert calls[1] < calls[0] + (60 if walk_mode == "compiled" else 400) * (megabytes * 4 + 1), calls
    tracemalloc.start()
    try:
        f = gguf_construct.load(paths[300_000])
        tokens = f.metadata["tokenizer.ggml.tokens"]
        assert len(tokens) == 300_000 and tokens[123_456] == "" and tokens.valid_utf8 and not tokens.has_nul
        kept, peak = tracemalloc.get_traced_memory()
        f.close()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 300_000 + (1 << 20), peak / 300_000
    assert kept < 8 * 300_000 + (1 << 20), kept / 300_000


def _long_string_file(tmp_path, n: int):
    path = tmp_path / "long.gguf"
    body = struct.pack("<Q", n) + b"ab\x00" * (n // 3) + b"z" * (n % 3)
    path.write_bytes(_gguf_with("general.description", STRING, body))
    return path


def test_a_long_string_costs_one_copy_at_most(tmp_path):
    """check and dump of a 6 MiB STRING value: tracemalloc peak under 1.5 times the value (it was 3 to 6)."""
    n = 6 << 20
    path = _long_string_file(tmp_path, n)
    main(["check", str(path)])  # warm up the checker's own tables
    for argv in (["check", str(path)], ["dump", str(path)], ["dump", "--json", str(path)]):
        tracemalloc.start()
        try:
            main(argv)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1.5 * n, (argv, peak / n)


def test_dump_shows_a_preview_of_a_long_string_and_its_length(tmp_path, capsys):
    n = 300_000
    path = _long_string_file(tmp_path, n)
    main(["dump", str(path)])
    line = next(x for x in capsys.readouterr().out.splitlines() if "general.description" in x)
    assert len(line) < 300 and line.endswith(f"... ({n} characters)")
    main(["dump", "--json", str(path)])
    entry = json.loads(capsys.readouterr().out)["metadata"][0]
    assert entry["truncated"] is True and entry["length"] == n and len(entry["value"]) == 1 << 16
    main(["dump", "--json", "--full", str(path)])
    entry = json.loads(capsys.readouterr().out)["metadata"][0]
    assert "truncated" not in entry and len(entry["value"]) == n


def test_doubling_and_compiled_walk_agree():
    """The two exact fallbacks give the same chain over a window of mixed records."""
    rng = np.random.default_rng(7)
    data = _records(rng.choice([0, 0, 1, 2, 300], 3000), rng, zeros=0.3)
    win = np.frombuffer(data, dtype=np.uint8)
    chain = chain_by_doubling(win, 8, True, 10**9)
    want, _ = _reference(data, 3000)
    assert np.array_equal(chain, want[: len(chain)] - 8) and len(chain) >= 2999
    starts = np.empty(3000, dtype=np.int64)
    walked = walk_compiled(data, 0, 3000, 8, True, starts)
    if walked is not None:
        done, end, problem = walked
        assert done == 3000 and problem == 0 and end == len(data) and np.array_equal(starts, want)


def test_first_nul_positions_match_the_items_bytes():
    """StringList.first_nul (used by STR-NUL on arrays) agrees with each item's bytes."""
    rng = np.random.default_rng(11)
    data = _records(rng.integers(0, 40, 5000), rng, zeros=0.05)
    starts, ends, _ = scan_string_offsets(data, 0, 5000, 8, LE)
    items = StringList.from_records(data, starts, ends, 8, "little")
    found = items.nul_items()
    assert len(found) > 100
    want = [items.raw(j).find(b"\x00") for j in found.tolist()]
    assert items.first_nul(found).tolist() == want


def test_check_makes_bounded_hits_over_many_offending_items_and_counts_them_all(tmp_path):
    """50,000 tokens holding a NUL: check keeps max_per_rule findings and counts every one; without a cap it keeps
    the spec's findings_per_rule; the first findings are the same either way."""
    from gguf_construct.checker import check
    from gguf_construct.rulebook.catalog import findings_per_rule

    n = 50_000
    data = (struct.pack("<Q", 2) + b"a\x00") * n
    path = tmp_path / "nul.gguf"
    path.write_bytes(_gguf_with("tokenizer.ggml.tokens", ARRAY, data, STRING, n))
    capped, whole = check(str(path), max_per_rule=10), check(str(path), max_per_rule=None)
    assert capped.counts["STR-NUL"] == whole.counts["STR-NUL"] == n
    nul = [f for f in capped.findings if f.rule == "STR-NUL"]
    assert len(nul) == 10 and nul == [f for f in whole.findings if f.rule == "STR-NUL"][:10]
    assert sum(f.rule == "STR-NUL" for f in whole.findings) == min(n, findings_per_rule())


def test_released_pages_read_back_unchanged_and_private_maps_are_left_alone(tmp_path):
    """base.pages.release: a read-only map reads the same bytes after its pages go back; a copy-on-write map
    keeps its changes (release does nothing to a writable view)."""
    import mmap

    from gguf_construct.base.pages import release

    path = tmp_path / "pages.bin"
    data = np.random.default_rng(5).integers(0, 256, 4 << 20).astype(np.uint8).tobytes()
    path.write_bytes(data)
    with open(path, "rb") as fh:
        ro = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(ro)
        assert bytes(view[100:200]) == data[100:200]
        release(view, 0, len(data))
        assert bytes(view) == data
        view.release()
        ro.close()
        cow = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        view = memoryview(cow)
        view[0:4] = b"GGUF"
        release(view, 0, len(data))
        assert bytes(view[0:4]) == b"GGUF"
        view.release()
        cow.close()


def _token_list(n: int, extra: bytes = b"") -> StringList:
    """``n`` distinct 7-byte tokens (then ``extra``'s records), read as a file's array is."""
    data = b"".join(struct.pack("<Q", 7) + b"t%06x" % i for i in range(n)) + extra
    count = n + (len(extra) // 15)
    starts, end = stringscan.scan_string_starts(data, 0, count, 8, LE)
    return StringList.from_records(data, starts, end, 8, "little")


def test_duplicate_check_calls_grow_with_the_bytes_not_the_items():
    """StringList.all_distinct over 20k and 200k distinct tokens: the calls grow by a few per run of about a MiB
    (32k items at most), never per item; a repeated token is found."""
    lists = {n: _token_list(n) for n in (20_000, 200_000)}
    assert lists[20_000].all_distinct()
    calls = [count_calls(lambda sl=lists[n]: sl.all_distinct(), quiet_gc=False) for n in (20_000, 200_000)]
    runs = 200_000 // (4 * 8192) + 1
    assert calls[1] < calls[0] + 100 * runs, calls
    assert not _token_list(200_000, struct.pack("<Q", 7) + b"t%06x" % 123_456).all_distinct()
