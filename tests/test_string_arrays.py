"""The bulk string-array reader is exact for every mix of lengths and contents."""

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gguf_construct as g
from gguf_construct.format.constructs import BufferStream, StringArray, decode_text
from gguf_construct.format.stringlist import StringList

PIECES = st.one_of(
    st.text(max_size=6),
    st.binary(max_size=6),  # invalid UTF-8 and NUL bytes
    st.just(b"\0" * 9),  # a payload that looks like a length prefix
    st.integers(250, 700).map(lambda n: "x" * n),  # long strings break the short-string fast path
    st.just(""),
)


def encode(items, width, order):
    fmt = ("<" if order == "little" else ">") + ("I" if width == 4 else "Q")
    out = []
    for s in items:
        b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s
        out.append(struct.pack(fmt, len(b)) + b)
    return b"".join(out)


@given(
    st.lists(PIECES, max_size=300),
    st.sampled_from([(4, "little"), (8, "little"), (8, "big"), (4, "big")]),
    st.binary(max_size=12),
)
def test_string_array_scan_is_exact(items, layout, trailer):
    width, order = layout
    data = encode(items, width, order) + trailer
    parsed = StringArray(len(items), width, order).parse_stream(BufferStream(data))
    expected = [s if isinstance(s, str) else decode_text(s) for s in items]
    assert parsed == expected


def test_many_short_strings_with_interruptions():
    rng = np.random.default_rng(1)
    items = []
    for i in range(5000):
        n = int(rng.integers(0, 20)) if i % 997 else 300
        items.append(bytes(rng.integers(97, 123, n, dtype=np.uint8)).decode())
    for width, order in [(8, "little"), (8, "big"), (4, "little")]:
        data = encode(items, width, order)
        assert StringArray(len(items), width, order).parse_stream(BufferStream(data)) == items


@pytest.mark.parametrize("cut", [1, 5, 9, 100])
def test_truncated_string_array(cut):
    items = ["abc"] * 100
    data = encode(items, 8, "little")[:-cut]
    with pytest.raises(Exception) as info:
        StringArray(len(items), 8, "little").parse_stream(BufferStream(data))
    assert getattr(info.value, "rule", None) in ("STR-EOF", "ARR-EOF")


def test_token_list_round_trips_through_a_file():
    tokens = ["<s>", "", "a\0b", "\udcff", "é" * 300] + [f"t{i}" for i in range(1000)]
    f = g.GGUFFile.new()
    f.metadata.set("tokenizer.ggml.tokens", tokens, "ARRAY", "STRING")
    back = g.load(f.to_bytes())
    assert back.metadata["tokenizer.ggml.tokens"] == tokens


@given(st.lists(PIECES, max_size=12), st.sampled_from([4, 8]), st.sampled_from(["little", "big"]))
def test_the_parse_says_which_strings_are_invalid_utf8_or_hold_nul(items, width, order):
    """StringArray decides, when it reads the array, exactly which strings are not valid UTF-8 and which hold a
    NUL (the checker's STR-UTF8 and STR-NUL take that as their answer)."""
    data = encode(items, width, order)
    got = StringArray(len(items), width, order)._parse(BufferStream(data), None, "")
    raw = [s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s for s in items]
    assert isinstance(got, StringList)
    assert got.invalid_utf8().tolist() == [i for i, b in enumerate(raw) if not _valid(b)]
    assert got.nul_items().tolist() == [i for i, b in enumerate(raw) if b"\0" in b]
    assert got.valid_utf8 == all(_valid(b) for b in raw)
    assert got.has_nul == any(b"\0" in b for b in raw)
    assert got == [decode_text(b) for b in raw]
    assert [got.raw(i) for i in range(len(got))] == raw
    assert bytes(got.encode(width, order)) == data


def _valid(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@given(
    st.lists(PIECES, max_size=120),
    st.sampled_from([(4, "little"), (8, "little"), (8, "big"), (4, "big")]),
    st.sampled_from([24, 64, 301, 1024]),
)
def test_the_scan_is_exact_at_every_window_boundary(items, layout, window):
    """Windows far smaller than the strings: records straddle window ends and long strings sit inside them."""
    from gguf_construct.base import stringscan as _stringscan

    width, order = layout
    data = encode(items, width, order) + b"\0" * 9
    saved = _stringscan._WINDOW
    _stringscan._WINDOW = window
    try:
        parsed = StringArray(len(items), width, order).parse_stream(BufferStream(data))
    finally:
        _stringscan._WINDOW = saved
    assert parsed == [s if isinstance(s, str) else decode_text(s) for s in items]
