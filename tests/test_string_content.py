"""String arrays of any content at the same cost per byte (issue #42): which items are not valid UTF-8 or hold a NUL
is decided exactly whatever the items hold (invalid bytes, lone continuation bytes, sequences cut at an item's end,
overlong encodings, encoded surrogates, NUL bytes, characters of 1 to 4 bytes, long items), and the Python-level
work of deciding it does not grow with the number of invalid items.  No timings: benchmarks/bench_hostile.py has
them (shapes bad-utf8-tokens, content-tokens, content-merges, content-array, long-bad-items, dup-tokens).
"""

from __future__ import annotations

import struct
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gguf_construct
from gguf_construct.base.utf8items import invalid_strings, wrong_bytes
from gguf_construct.format import stringlist
from gguf_construct.format.constructs import BufferStream, StringArray
from gguf_construct.format.stringlist import StringList
from callcount import count_calls

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_hostile  # noqa: E402 - the benchmark's content pool

STRING, ARRAY = 8, 9

POOL = bench_hostile.CONTENT_POOL  # one of each kind of content nobody tuned for (the benchmark's shapes draw from it)
ITEMS = st.lists(st.one_of(st.sampled_from(POOL), st.binary(max_size=6)), max_size=30)


def _valid(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _records(items: list[bytes], width: int = 8, order: str = "<") -> bytes:
    code = order + ("Q" if width == 8 else "I")
    return b"".join(struct.pack(code, len(b)) + b for b in items)


def _parsed(items: list[bytes], width: int = 8, order: str = "little") -> StringList:
    stream = BufferStream(b"\x01\x02" + _records(items, width, "<" if order == "little" else ">") + b"tail")
    stream.pos = 2
    return StringArray(len(items), width, order)._parse(stream, None, "")


@settings(max_examples=60)
@given(ITEMS)
def test_invalid_strings_names_exactly_the_items_a_strict_decode_rejects(items):
    region, heads = b"", []
    for b in items:
        region += b"\x05\x00\x00"  # ASCII separators, as a length prefix with its high bytes zeroed is
        heads.append(len(region))
        region += b
    got = invalid_strings(memoryview(region), np.array(heads, dtype=np.int64)).tolist()
    assert got == [k for k, b in enumerate(items) if not _valid(b)]


def test_wrong_bytes_agree_with_the_strict_decoder_on_every_pair_and_chosen_quadruples():
    """invalid_strings (and so wrong_bytes): exhaustive over two bytes, and over four bytes drawn from the values
    at the edges of UTF-8's ranges."""
    pairs = np.array([[a, b] for a in range(256) for b in range(256)], dtype=np.uint8)
    edges = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF]
    edges += [0xF0, 0xF1, 0xF4, 0xF5, 0xFF]
    grid = np.array(np.meshgrid(*[edges] * 4)).reshape(4, -1).T.astype(np.uint8)
    for rows in (pairs, grid):
        n, width = rows.shape
        region = np.zeros((n, width + 3), dtype=np.uint8)  # each row after three ASCII bytes, judged at once
        region[:, 3:] = rows
        heads = np.arange(n, dtype=np.int64) * (width + 3) + 3
        got = invalid_strings(region.tobytes(), heads)
        assert got.tolist() == [k for k, row in enumerate(rows.tolist()) if not _valid(bytes(row))]


@settings(max_examples=60)
@given(st.binary(max_size=40))
def test_wrong_bytes_are_none_exactly_when_the_bytes_are_utf8(data):
    assert (not wrong_bytes(np.frombuffer(data, dtype=np.uint8)).any()) == _valid(data)


@settings(max_examples=60)
@given(ITEMS, st.sampled_from([(8, "little"), (4, "big")]))
def test_a_parsed_list_judges_every_kind_of_content_as_item_by_item_decoding_does(items, layout):
    sl = _parsed(items, *layout)
    assert sl.invalid_utf8().tolist() == [k for k, b in enumerate(items) if not _valid(b)]
    assert sl.nul_items().tolist() == [k for k, b in enumerate(items) if b"\x00" in b]
    assert sl.to_list() == [b.decode("utf-8", "surrogateescape") for b in items]
    assert [sl.raw(k) for k in range(len(items))] == items


def test_items_longer_than_a_run_are_judged_in_chunks(monkeypatch):
    """Items over the run size (here 64 bytes) are judged a chunk at a time: an invalid byte or a NUL in any
    chunk, and a sequence cut between two chunks, are found as in one decode."""
    monkeypatch.setattr(stringlist, "_ASSESS_BYTES", 64)
    cut = "é€😀".encode() * 30  # sequences cut at every chunk boundary, all valid
    items = [
        cut,
        b"a" * 200 + b"\xff",
        b"x" * 130 + b"\x00",
        b"\xed\xa0\x80" * 50,
        b"ok",
        "😀".encode() * 40 + b"\xf0\x9f",
        b"\xc0\xaf",
        b"z" * 300,
    ]
    sl = _parsed(items)
    assert sl.invalid_utf8().tolist() == [1, 3, 5, 6]
    assert sl.nul_items().tolist() == [2]


def _gguf(key: str, items: list[bytes]) -> bytes:
    kb = key.encode()
    return (
        b"GGUF"
        + struct.pack("<IQQ", 3, 0, 1)
        + struct.pack("<Q", len(kb))
        + kb
        + struct.pack("<IIQ", ARRAY, STRING, len(items))
        + _records(items)
    )


@pytest.mark.parametrize("key", ["tokenizer.ggml.tokens", "tokenizer.ggml.merges", "x.strings"])
@pytest.mark.parametrize("kind", [[b"\xff"], [b"\x80", b"a\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"a\x00b"]])
def test_loading_invalid_items_keeps_python_work_flat(tmp_path, key, kind):
    """load of N items that are all invalid UTF-8 (one bad item each: it was one failed decode, a copy of the rest
    of the run and a lookup per item): the calls grow with the bytes only, and the findings are all there."""
    paths = {}
    for n in (20_000, 200_000):
        paths[n] = tmp_path / f"bad-{n}.gguf"
        paths[n].write_bytes(_gguf(key, [kind[k % len(kind)] for k in range(n)]))
    gguf_construct.load(paths[20_000]).close()  # warm up
    calls = [count_calls(lambda p=paths[n]: gguf_construct.load(p).close(), quiet_gc=False) for n in paths]
    megabytes = paths[200_000].stat().st_size / 2**20
    assert calls[1] < calls[0] + 400 * (megabytes + 1), calls
    f = gguf_construct.load(paths[200_000])
    items = f.metadata[key]
    bad = [k for k in range(200_000) if not _valid(kind[k % len(kind)])]
    assert items.invalid_utf8().tolist() == bad
    f.close()


def test_judging_invalid_items_holds_a_bounded_run(tmp_path):
    """tracemalloc peak of loading 300,000 invalid one-byte items: the kept starts (8 bytes an item) and the
    findings (8 bytes an invalid item) plus a run's temporaries, not a str per item."""
    n = 300_000
    path = tmp_path / "bad.gguf"
    path.write_bytes(_gguf("tokenizer.ggml.tokens", [b"\xff"] * n))
    gguf_construct.load(path).close()
    tracemalloc.start()
    try:
        f = gguf_construct.load(path)
        tokens = f.metadata["tokenizer.ggml.tokens"]
        assert len(tokens.invalid_utf8()) == n
        kept, peak = tracemalloc.get_traced_memory()
        f.close()
    finally:
        tracemalloc.stop()
    assert peak < 40 * n + (24 << 20), peak / n


TOKENS = st.lists(
    st.sampled_from(["a", "b", "", "[EMPTY_0]", "[EMPTY_1]", "[EMPTY_3]", "[EMPTY_03]", "[EMPTY_]", "é", "\udcff"]),
    max_size=12,
)


def _first_repeat_by_set(tokens, rename=None, skip_empty=False):
    seen = set()
    for i, word in enumerate(tokens):
        if skip_empty and not word:
            continue
        word = word or (rename.format(i=i) if rename else word)
        if word in seen:
            return i
        seen.add(word)
    return None


@settings(max_examples=60)
@given(TOKENS)
def test_first_repeat_and_renamed_tokens_agree_with_a_set(tokens):
    from gguf_construct.format.tokenrepeats import first_repeated_token

    sl = StringList(tokens)
    assert sl.first_repeat() == _first_repeat_by_set(tokens)
    assert sl.first_repeat(skip_empty=True) == _first_repeat_by_set(tokens, skip_empty=True)
    assert first_repeated_token(sl, "[EMPTY_{i}]") == _first_repeat_by_set(tokens, "[EMPTY_{i}]")


def test_first_repeat_is_exact_when_every_hash_collides(monkeypatch):
    """Keys that all meet (a hash that collides on everything) leave the answer exact: candidates are compared."""
    monkeypatch.setattr(stringlist, "_hash_items", lambda payload, lengths, w: np.zeros(len(lengths), np.uint64))
    items = ["x", "y", "z", "w", "y", "x"]
    assert StringList(items).first_repeat() == 4
    assert StringList(items[:4]).first_repeat() is None


def test_a_repeat_at_the_end_of_a_vocabulary_costs_no_step_per_token(tmp_path):
    """The llama.cpp profile's unique-token check on N distinct tokens whose last repeats the first, or is empty:
    it was a str and a set entry per token; the calls now grow by runs of tokens, and the finding is the same."""
    from gguf_construct.format.tokenrepeats import first_repeated_token

    calls = []
    for n in (20_000, 200_000):
        for last in (b"t0", b""):
            tokens = _parsed([b"t%d" % k for k in range(n - 1)] + [last])
            want = n - 1 if last else None
            assert first_repeated_token(tokens, "[EMPTY_{i}]") == want
            calls.append(count_calls(lambda t=tokens: first_repeated_token(t, "[EMPTY_{i}]")))
    # a few dozen calls per run of 32,768 tokens (StringList._runs); a step per token would add 180,000
    assert calls[2] < calls[0] + 2_000 and calls[3] < calls[1] + 2_000, calls


@settings(max_examples=60)
@given(TOKENS, st.sets(st.sampled_from(["a", "b", "", "é", "\udcff", "z"])))
def test_first_outside_is_the_first_item_not_among_the_values(tokens, values):
    want = next((j for j, v in enumerate(tokens) if v not in values), None)
    assert StringList(tokens).first_outside(values) == want


def test_a_documented_value_rule_over_a_long_string_array_names_the_first_outsider(tmp_path, capsys):
    """META-KEY-VALUE on tokenizer.ggml.model written as ARRAY[STRING] of 100,001 items (it stepped through every
    item in Python): the same finding, the first item that is no documented value."""
    import json

    from gguf_construct.commands.main import main

    items = [b"llama"] * 100_000 + [b"bogus\xff", b"gpt2"]
    path = tmp_path / "model-array.gguf"
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    path.write_bytes(head + _gguf("tokenizer.ggml.model", items)[len(head) :])
    main(["check", "--format", "json", str(path)])
    found = [f for f in json.loads(capsys.readouterr().out)[0]["findings"] if f["rule"] == "META-KEY-VALUE"]
    assert [f["path"] for f in found] == ["metadata_kv[0].value.data[100000]"]
    assert "'bogus\\udcff'" in found[0]["message"]


def test_decoding_items_that_hold_nul_takes_no_step_per_item():
    """to_list of items holding NUL bytes (they were decoded one by one): a free ASCII byte separates them in
    one decode per run; a run whose items hold every ASCII byte is split in halves; same strs as item by item."""
    every_ascii = bytes(range(128))
    calls = []
    for n in (16_384, 163_840):
        items = [b"a\x00b", b"\x00", "é\x00".encode(), b"\xff\x00"] * (n // 4)
        sl = _parsed(items)
        assert sl.to_list() == [b.decode("utf-8", "surrogateescape") for b in items]
        calls.append(count_calls(sl.to_list))
    assert calls[1] < calls[0] * 10 and calls[1] < 163_840 // 20, calls  # a few dozen calls per run of 8,192
    mixed = [every_ascii, b"x\x00"] * 64
    assert _parsed(mixed).to_list() == [b.decode() for b in mixed]


def test_finding_a_repeat_holds_8_bytes_a_token():
    """first_repeat over N tokens whose last repeats the first: the tracemalloc peak grows by 8 bytes a token (the
    sorted keys; a run's hashing temporaries do not grow with N), not by a str and a set entry (over 100 bytes)."""
    peaks = []
    for n in (30_000, 300_000):
        tokens = _parsed([b"t%07d" % k for k in range(n - 1)] + [b"t0000000"])
        tokens.first_repeat()  # warm up
        tracemalloc.start()
        try:
            assert tokens.first_repeat() == n - 1
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] - peaks[0] < 12 * 270_000, peaks


@settings(max_examples=60)
@given(st.lists(st.booleans(), max_size=30), st.slices(30))
def test_slices_keep_exactly_their_invalid_and_nul_marks(marks, sl):
    """A slice's marks (found by bisection in the whole list's, so that slicing a list with millions of invalid
    items a run at a time costs each run its own marks) are those of its items."""
    items = [b"\xff" if m else b"ok" for m in marks]
    whole = _parsed([b + (b"\x00" if k % 2 else b"") for k, b in enumerate(items)])
    part = whole[sl]
    picked = list(range(len(items)))[sl]
    assert part.invalid_utf8().tolist() == [k for k, i in enumerate(picked) if marks[i]]
    assert part.nul_items().tolist() == [k for k, i in enumerate(picked) if i % 2]
