"""Long STRING values stay bytes (issue #42): a value over ``reading.lazy_string_bytes`` of spec/gguf.yaml is a
LazyString over the mapped file; UTF-8, NUL and lengths are judged a chunk at a time (right across chunk edges);
every command holds a bounded chunk of it (tracemalloc, and the peak RSS of a child process); files round-trip
byte for byte.  No timings: benchmarks/bench_hostile.py has them.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gguf_construct
from gguf_construct.base.utf8stream import count_chars, decode_chunks, first_invalid_utf8, first_nul
from gguf_construct.commands.main import main
from gguf_construct.format.lazystring import CHUNK_BYTES, LAZY_STRING_BYTES, PREVIEW_CHARS, LazyString

STRING = 8
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _file(values: dict[str, bytes]) -> bytes:
    """A GGUF v3 file of STRING values, no tensors."""
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(values) + 1)
    for key, value in {"general.architecture": b"llama", **values}.items():
        out += struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", STRING)
        out += struct.pack("<Q", len(value)) + value
    return out


def _sparse_file(path, n: int) -> None:
    """general.architecture, then general.description of ``n`` zero bytes written as a hole."""
    key = b"general.description"
    head = _file({})
    with open(path, "wb") as fh:
        fh.write(head[:16] + struct.pack("<Q", 2) + head[24:])
        fh.write(struct.pack("<Q", len(key)) + key + struct.pack("<I", STRING) + struct.pack("<Q", n))
        fh.truncate(fh.tell() + n)


def _splits(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = sorted({min(len(data), c) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(edges, edges[1:])]


# -- judging in chunks -------------------------------------------------------------------------------------------
_TEXTISH = st.lists(
    st.sampled_from([b"a", b"\x00", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\xc3", b"\x80"]),
    max_size=40,
).map(b"".join)


@given(_TEXTISH, st.lists(st.integers(0, 200), max_size=6))
def test_chunked_judgement_agrees_with_one_decode_however_the_bytes_are_cut(data, cuts):
    chunks = _splits(data, cuts)
    try:
        data.decode("utf-8")
        want_bad = None
    except UnicodeDecodeError as exc:
        want_bad = exc.start
    assert first_invalid_utf8(chunks) == want_bad
    assert "".join(decode_chunks(chunks)) == data.decode("utf-8", "surrogateescape")
    assert count_chars(chunks) == len(data.decode("utf-8", "surrogateescape"))
    assert first_nul(chunks) == (data.find(b"\x00") if b"\x00" in data else None)


def test_a_sequence_cut_by_the_chunk_edge_is_valid_and_a_broken_one_is_found_where_it_starts():
    n = CHUNK_BYTES + 10
    valid = b"a" * (CHUNK_BYTES - 1) + "é".encode() + b"b" * 9  # é's two bytes on either side of the edge
    broken = b"a" * (CHUNK_BYTES - 1) + b"\xc3a" + b"b" * 9  # a lead byte whose continuation is missing
    for body, bad in ((valid, None), (broken, CHUNK_BYTES - 1)):
        value = LazyString(body, 0, n)
        assert value.first_invalid_utf8() == bad and value.valid_utf8 is (bad is None)
        assert "".join(value.iter_chunks()) == body.decode("utf-8", "surrogateescape")
    f = gguf_construct.load(_file({"general.description": broken}))
    assert isinstance(f.metadata["general.description"], LazyString)
    report = gguf_construct.check(_file({"general.description": broken}))
    utf8 = [x for x in report.findings if x.rule == "STR-UTF8"]
    assert len(utf8) == 1 and f"at byte {CHUNK_BYTES - 1}" in utf8[0].message
    assert not [x for x in gguf_construct.check(_file({"general.description": valid})).findings if x.rule == "STR-UTF8"]


def test_a_nul_past_the_first_chunk_is_found_at_its_byte():
    body = b"x" * (LAZY_STRING_BYTES + CHUNK_BYTES) + b"\x00" + b"y" * 5
    nul = [x for x in gguf_construct.check(_file({"general.description": body})).findings if x.rule == "STR-NUL"]
    assert len(nul) == 1 and f"position {LAZY_STRING_BYTES + CHUNK_BYTES}" in nul[0].message


# -- the value -------------------------------------------------------------------------------------------------
def test_values_over_the_spec_threshold_are_lazy_and_behave_as_their_str():
    text = ("ab€\udcff" * (LAZY_STRING_BYTES // 4 + 1))[:LAZY_STRING_BYTES]  # 1.5 bytes a character
    long_bytes = text.encode("utf-8", "surrogateescape")
    short = b"s" * LAZY_STRING_BYTES
    f = gguf_construct.load(_file({"general.description": long_bytes, "general.name": short}))
    assert type(f.metadata["general.name"]) is str  # at the threshold: a str
    value = f.metadata["general.description"]
    assert isinstance(value, LazyString) and value.nbytes == len(long_bytes) > LAZY_STRING_BYTES
    assert len(value) == len(text) and str(value) == text and value == text and not value != text
    assert value[:7] == text[:7] and value[3] == text[3] and value[5:9] == text[5:9] and value[-2:] == text[-2:]
    assert value.startswith("ab€") and value.endswith(text[-3:]) and not value.startswith("b")
    edge = CHUNK_BYTES - 2  # a needle across the first chunk's edge
    needle = long_bytes[edge : edge + 5].decode("utf-8", "surrogateescape")
    assert needle in value and "zzz" not in value
    assert value.find_bytes(long_bytes[edge : edge + 5]) == long_bytes.find(long_bytes[edge : edge + 5])
    again = gguf_construct.load(_file({"general.description": long_bytes})).metadata["general.description"]
    assert again == value and hash(again) == hash(value) and value != text[:-1] + "x"
    assert f.metadata.typed("general.description").to_python() == text
    assert value.preview(4) == text[:4] and repr(value).startswith("<LazyString of")


def test_round_trips_stay_byte_exact(tmp_path):
    body = bytes(range(256)) * (LAZY_STRING_BYTES // 256 + 3)
    data = _file({"general.description": body})
    f = gguf_construct.load(data)
    assert f.to_bytes() == data
    path = tmp_path / "big.gguf"
    f.convert(byte_order="big")
    f.save(path)
    back = gguf_construct.load(path)
    assert back.byte_order == "big" and back.metadata["general.description"] == f.metadata["general.description"]
    back.convert(byte_order="little")
    assert back.to_bytes() == data
    edited = gguf_construct.load(data)
    edited.metadata["general.name"] = "x"
    out = io.BytesIO()
    edited.write_to(out)
    again = gguf_construct.load(out.getvalue())
    assert again.metadata["general.description"].raw() == body and again.metadata["general.name"] == "x"


# -- bounded memory in every command -----------------------------------------------------------------------------
_COMMANDS = [
    ["check", "{p}"],
    ["check", "--format", "json", "{p}"],
    ["dump", "{p}"],
    ["dump", "--json", "{p}"],
    ["dump", "--full", "{p}"],
    ["dump", "--json", "--full", "{p}"],
    ["dump", "--markdown", "--full", "{p}"],
    ["dump", "--key", "general.description", "{p}"],
    ["diff", "{p}", "{p}"],
    ["hash", "{p}"],
    ["convert", "--byte-order", "big", "{p}", "{o}"],
]


def test_every_command_holds_a_bounded_chunk_of_a_long_value(tmp_path, monkeypatch):
    """A 48 MiB value (sparse): tracemalloc's peak stays far below it in each command (it was 1 to 6 times);
    the output goes to a file."""
    n = 48 << 20
    path, out, printed = tmp_path / "long.gguf", tmp_path / "out.gguf", tmp_path / "printed"
    _sparse_file(path, n)
    main(["check", str(path)])  # warm up the checker's own tables
    for argv in _COMMANDS:
        argv = [a.format(p=path, o=out) for a in argv]
        with open(printed, "w", encoding="utf-8") as stdout:
            monkeypatch.setattr(sys, "stdout", stdout)
            tracemalloc.start()
            try:
                main(argv)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
                monkeypatch.undo()
        assert peak < n / 6, (argv, peak / n)
        if argv[:2] == ["dump", "--json"]:
            entry = json.loads(printed.read_text(encoding="utf-8"))["metadata"][1]
            assert entry["value"] == "\x00" * len(entry["value"])
            assert len(entry["value"]) == (PREVIEW_CHARS if "truncated" in entry else n)
    assert os.path.getsize(out) == os.path.getsize(path)
    from gguf_construct.operations.sweep import sweep_one

    tracemalloc.start()
    try:
        row = sweep_one(str(path), summary=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n / 6 and row["architecture"] == "llama" and not row["error"], (peak / n, row["error"])


_RSS_CHILD = """
import sys, os
from gguf_construct.commands.main import main
sys.stdout = open(os.devnull, "w")
main(sys.argv[1:])
with open("/proc/self/status") as fh:
    print([int(x.split()[1]) for x in fh if x.startswith("VmHWM:")][0], file=sys.stderr)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peak RSS is read from /proc")
def test_peak_rss_of_check_and_dump_full_does_not_follow_the_value(tmp_path):
    """The resident peak of a child process (mapped pages included) on a 64 MiB value against a tiny file's:
    within 16 MiB of it."""
    small, big = tmp_path / "small.gguf", tmp_path / "big.gguf"
    _sparse_file(small, 16)
    _sparse_file(big, 64 << 20)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for argv in (["check"], ["dump", "--full"]):
        peaks = []
        for path in (small, big):
            run = subprocess.run(
                [sys.executable, "-c", _RSS_CHILD, *argv, str(path)], capture_output=True, text=True, env=env
            )
            peaks.append(int(run.stderr.strip().splitlines()[-1]) * 1024)
        assert peaks[1] - peaks[0] < 16 << 20, (argv, [p >> 20 for p in peaks])


# -- string arrays: bounded rules and writes -------------------------------------------------------------------
def test_duplicates_and_writes_of_a_string_array_with_long_items_are_exact():
    from gguf_construct.format.stringlist import StringList

    long = "x" * 5000  # over the inline hash length: hashed and written a chunk at a time
    assert not StringList([long, "b", "", long]).all_distinct()
    assert StringList([long, long[:-1] + "y", "b", ""]).all_distinct()
    assert not StringList(["a", "b", "a"]).all_distinct() and StringList(["a", "b"]).all_distinct()
    assert StringList(["a", ""]).has_empty() and not StringList(["a", long]).has_empty()
    items = StringList(["", long, "é", long + "z", "q" * 3])
    for width, order in ((8, "little"), (8, "big"), (4, "little"), (4, "big")):
        assert b"".join(bytes(c) for c in items.encode_chunks(width, order)) == bytes(items.encode(width, order))


def test_a_string_array_converted_to_the_other_byte_order_round_trips(tmp_path):
    tokens = ["", "a", "x" * 5000, "é", "\x00b"] * 50
    f = gguf_construct.GGUFFile.new()
    f.metadata["tokenizer.ggml.tokens"] = tokens
    data = f.to_bytes()
    loaded = gguf_construct.load(data)
    loaded.convert(byte_order="big")
    big = gguf_construct.load(loaded.to_bytes())
    assert big.metadata["tokenizer.ggml.tokens"].to_list() == tokens
    big.convert(byte_order="little")
    assert big.to_bytes() == data
