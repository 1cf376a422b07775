"""StringList, the lazy string array: it behaves as a list of str does, and reading, checking and saving a file
leave its strings as bytes."""

import copy
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gguf_construct as g
from gguf_construct.format.constructs import BufferStream, StringArray
from gguf_construct.format.stringlist import StringList

ITEM = st.one_of(
    st.text(max_size=5),
    st.text(alphabet="ab", max_size=3),  # repeats, so index/count/in find several
    st.binary(max_size=5).map(lambda b: b.decode("utf-8", "surrogateescape")),  # invalid UTF-8 and NUL bytes
    st.integers(120, 300).map(lambda n: "é" * n),  # lengths past one prefix byte
)
LAYOUTS = st.sampled_from([(8, "little"), (4, "little"), (8, "big"), (4, "big")])


def records(items, width, order):
    fmt = ("<" if order == "little" else ">") + ("I" if width == 4 else "Q")
    out = []
    for s in items:
        b = s.encode("utf-8", "surrogateescape")
        out.append(struct.pack(fmt, len(b)) + b)
    return b"".join(out)


def parsed(items, width, order, lead=b""):
    """The StringList a file read gives, over a buffer that starts ``lead`` bytes before the array."""
    stream = BufferStream(lead + records(items, width, order) + b"tail")
    stream.pos = len(lead)
    return StringArray(len(items), width, order)._parse(stream, None, "")


@st.composite
def lists(draw):
    items = draw(st.lists(ITEM, max_size=40))
    how = draw(st.sampled_from(["built", "parsed", "sliced"]))
    if how == "built":
        return items, StringList(items)
    width, order = draw(LAYOUTS)
    lead = draw(st.binary(max_size=9))
    if how == "parsed":
        return items, parsed(items, width, order, lead)
    extra = draw(st.lists(ITEM, max_size=5))
    whole = parsed(extra + items + extra, width, order, lead)
    return items, whole[len(extra) : len(extra) + len(items)]


@given(lists(), st.data())
def test_reads_as_the_list_of_str_it_equals(pair, data):
    items, sl = pair
    assert isinstance(sl, StringList)
    assert len(sl) == len(items) and bool(sl) == bool(items)
    assert list(sl) == items and sl.to_list() == items and type(sl.to_list()) is list  # noqa: E721
    assert list(reversed(sl)) == items[::-1]
    assert sl == items and items == sl and not (sl != items) and sl == StringList(items)
    assert repr(sl) == repr(items)
    for i in range(-len(items) - 2, len(items) + 2):
        if -len(items) <= i < len(items):
            assert sl[i] == items[i] and sl.raw(i) == items[i].encode("utf-8", "surrogateescape")
            assert sl[np.int64(i)] == items[i]
        else:
            with pytest.raises(IndexError):
                sl[i]
    with pytest.raises(TypeError):
        sl["0"]
    start, stop = data.draw(st.integers(-50, 50)), data.draw(st.integers(-50, 50))
    step = data.draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
    part = sl[start:stop:step]
    assert isinstance(part, StringList) and part == items[start:stop:step]
    assert part[1::2] == items[start:stop:step][1::2]
    assert part.invalid_utf8().tolist() == [i for i, s in enumerate(items[start:stop:step]) if not _utf8(s)]
    assert part.nul_items().tolist() == [i for i, s in enumerate(items[start:stop:step]) if "\0" in s]


@given(lists(), st.lists(ITEM, max_size=3))
def test_searching_as_a_list_does(pair, probes):
    items, sl = pair
    for value in items[:5] + probes + [None, 3, b"a", "\ud800"]:
        assert (value in sl) == (value in items)
        assert sl.count(value) == items.count(value)
        if value in items:
            assert sl.index(value) == items.index(value)
            first = items.index(value)
            assert sl.index(value, first + 1) == items.index(value, first + 1) if value in items[first + 1 :] else True
        else:
            with pytest.raises(ValueError):
                sl.index(value)
    if items:
        with pytest.raises(ValueError):
            sl.index(items[-1], 0, len(items) - 1) if items[-1] not in items[:-1] else sl.index("\0never", 0, 1)


@given(lists(), st.lists(ITEM, max_size=5))
def test_operators_and_protocols_as_a_list(pair, other):
    items, sl = pair
    assert (sl < other) == (items < other) and (sl <= other) == (items <= other)
    assert (sl > other) == (items > other) and (sl >= other) == (items >= other)
    assert sl + other == items + other and other + sl == other + items and sl + sl == items + items
    assert sl * 2 == items * 2 and 2 * sl == 2 * items
    assert sl != tuple(items) or not items and sl != ()  # a list never equals a tuple
    with pytest.raises(TypeError):
        hash(sl)
    with pytest.raises(TypeError):
        sl[0] = "x"  # immutable
    assert not hasattr(sl, "append")
    back = pickle.loads(pickle.dumps(sl))
    assert isinstance(back, StringList) and back == items
    assert back.invalid_utf8().tolist() == sl.invalid_utf8().tolist()
    assert copy.deepcopy(sl) == items and copy.copy(sl) == items
    assert sl.all_distinct() == (len(set(items)) == len(items))
    assert sl.lengths().tolist() == [len(s.encode("utf-8", "surrogateescape")) for s in items]


@given(lists(), LAYOUTS)
def test_encodes_the_records_of_any_layout(pair, layout):
    items, sl = pair
    assert bytes(sl.encode(*layout)) == records(items, *layout)


def test_only_str_goes_in():
    with pytest.raises(TypeError, match="str"):
        StringList(["a", 1])


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8", "surrogateescape").decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


# -- in the file model -------------------------------------------------------------------------------------------
def _file(tokens):
    f = g.GGUFFile.new()
    f.metadata.set("general.architecture", "llama", "STRING")
    f.metadata.set("tokenizer.ggml.tokens", tokens, "ARRAY", "STRING")
    return f.to_bytes()


def test_metadata_gives_a_stringlist_and_assignment_makes_one():
    tokens = ["<s>", "a\0b", "\udcff", ""] + [f"t{i}" for i in range(100)]
    f = g.load(_file(tokens))
    got = f.metadata["tokenizer.ggml.tokens"]
    assert isinstance(got, StringList) and got == tokens
    assert got.nul_items().tolist() == [1] and got.invalid_utf8().tolist() == [2]
    assert f.metadata.typed("tokenizer.ggml.tokens").to_python() == tokens
    f.metadata["tokenizer.ggml.tokens"] = ["x", "y"]
    assert isinstance(f.metadata["tokenizer.ggml.tokens"], StringList)
    assert g.load(f.to_bytes()).metadata["tokenizer.ggml.tokens"] == ["x", "y"]


def test_save_and_check_leave_the_strings_as_bytes(monkeypatch):
    tokens = [f"tok{i}é" for i in range(3000)] + ["bad\udcff", "nul\0"]
    data = _file(tokens)
    f = g.load(data)
    f.metadata["general.name"] = "renamed"

    def refuse(*args, **kwargs):
        raise AssertionError("a string was decoded")

    monkeypatch.setattr(StringList, "__getitem__", refuse)
    monkeypatch.setattr(StringList, "__iter__", refuse)
    monkeypatch.setattr(StringList, "to_list", refuse)
    out = f.to_bytes()
    monkeypatch.undo()
    assert g.load(out).metadata["tokenizer.ggml.tokens"] == tokens
    assert g.load(out).metadata["general.name"] == "renamed"
    f2 = g.GGUFFile.new(version=3, byte_order="big")
    f2.metadata.set("tokenizer.ggml.tokens", f.metadata["tokenizer.ggml.tokens"], "ARRAY", "STRING")
    assert g.load(f2.to_bytes()).metadata["tokenizer.ggml.tokens"] == tokens


def test_checker_findings_for_invalid_and_nul_items():
    tokens = ["ok", "bad\udcff", "fine", "nul\0x", "é\udcc3"]
    report = g.check(_file(tokens))
    paths = {(f.rule, f.path.rsplit(".", 1)[-1]) for f in report.findings if f.rule in ("STR-UTF8", "STR-NUL")}
    assert paths == {("STR-UTF8", "data[1]"), ("STR-UTF8", "data[4]"), ("STR-NUL", "data[3]")}
    nul = next(f for f in report.findings if f.rule == "STR-NUL")
    assert nul.offset is not None


@settings(max_examples=30)
@given(st.lists(ITEM, min_size=1, max_size=30))
def test_an_unchanged_file_saves_byte_identically(tokens):
    data = _file(tokens)
    assert g.load(data).to_bytes() == data


@given(st.lists(ITEM, max_size=30))
def test_all_distinct_is_exact_when_every_hash_meets(items):
    import gguf_construct.format.stringlist as module

    real = module._hash_items
    module._hash_items = lambda payload, lengths, weights: np.zeros(len(lengths), dtype=np.uint64)
    try:
        assert StringList(items).all_distinct() == (len(set(items)) == len(items))
    finally:
        module._hash_items = real
