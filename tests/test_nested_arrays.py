"""Arrays of arrays read at bounded cost (issue #42): base/arrayscan.py locates inner arrays exactly, with numba and
without; an array of arrays read in bulk holds 8 bytes an inner array (:class:`InnerArrays`) and gives the values,
the findings and the written bytes of the item-by-item parse; the Python-level calls and the memory of ``load`` do
not grow per inner array.  No timings: benchmarks/bench_hostile.py has them.
"""

from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, strategies as st

import gguf_construct
from gguf_construct.base import arrayscan
from gguf_construct.checker import check
from gguf_construct.format.constructs import CheckedArray, InnerArrays
from callcount import count_calls


@pytest.fixture(params=["compiled", "python"])
def scan_mode(request, monkeypatch):
    """The scan with the compiled walk (skipped without numba) or with the struct loop only."""
    if request.param == "compiled":
        pytest.importorskip("numba")
        monkeypatch.setattr(arrayscan, "COMPILED_FROM", 0)  # small runs too
    else:
        monkeypatch.setattr(arrayscan, "_kernel", lambda: None)
    return request.param


def _s(text: str, order: str = "<") -> bytes:
    b = text.encode()
    return struct.pack(order + "Q", len(b)) + b


_NUMERIC = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}


def _inner(order: str, vtype: int, items) -> bytes:
    """One inner array (type, count, elements) of GGUF v3 in byte order ``order``."""
    head = struct.pack(order + "IQ", vtype, len(items))
    if vtype == 8:
        return head + b"".join(_s(t, order) for t in items)
    if vtype == 9:  # items: a list of (vtype, items) pairs one level down
        return head + b"".join(_inner(order, t, sub) for t, sub in items)
    return head + b"".join(struct.pack(order + _NUMERIC[vtype], x) for x in items)


def _file(order: str, inners: list, cut: int = 0, outer_type: int = 9) -> bytes:
    kv = _s("general.architecture", order) + struct.pack(order + "I", 8) + _s("llama", order)
    kv += _s("nested", order) + struct.pack(order + "I", 9) + struct.pack(order + "IQ", outer_type, len(inners))
    kv += b"".join(_inner(order, t, items) for t, items in inners)
    data = b"GGUF" + struct.pack(order + "IQQ", 3, 0, 2) + kv
    return data[: len(data) - cut] if cut else data


def _leaf():
    small = st.integers(0, 200)
    return st.one_of(
        st.tuples(st.sampled_from([0, 1, 7]), st.lists(st.integers(0, 100), max_size=4)),
        st.tuples(st.sampled_from([4, 5, 10]), st.lists(small, max_size=4)),
        st.tuples(st.just(8), st.lists(st.text(max_size=5), max_size=3)),
    )


_inner_arrays = st.lists(
    st.one_of(_leaf(), st.tuples(st.just(9), st.lists(_leaf(), max_size=3))), min_size=1, max_size=12
)


def _findings(data: bytes) -> list[tuple]:
    return [(f.rule, f.offset, f.path, f.message) for f in check(data, max_per_rule=None).findings]


def _loaded(data: bytes):
    try:
        f = gguf_construct.load(data)
    except gguf_construct.GGUFError as exc:
        return ("refused", str(exc))
    return [(k, v.to_python() if hasattr(v, "to_python") else v) for k, v in f.metadata.typed_items()]


@given(_inner_arrays, st.sampled_from("<>"), st.integers(0, 12), st.sampled_from([None, 13, 99]))
def test_in_bulk_finds_what_the_item_by_item_parse_finds(inners, order, cut, bad_type):
    """Valid and broken arrays of arrays (cut short, an unknown inner type): the findings and loaded values are
    those of the item-by-item parse, under both walks."""
    if bad_type is not None:
        inners = [*inners[:-1], (bad_type, [])]
    data = _file(order, inners, cut)
    compiled = arrayscan._kernel() is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(arrayscan, "_kernel", lambda: None)
        bulk = (_findings(data), _loaded(data))
        mp.undo()
        if compiled:
            mp.setattr(arrayscan, "COMPILED_FROM", 0)
            assert (_findings(data), _loaded(data)) == bulk
        mp.setattr(CheckedArray, "in_bulk", lambda self, stream, count: None)
        assert (_findings(data), _loaded(data)) == bulk


@given(inners=_inner_arrays, order=st.sampled_from("<>"))
def test_round_trip_is_byte_exact(inners, order, tmp_path_factory):
    data = _file(order, inners)
    out = tmp_path_factory.mktemp("rt") / "out.gguf"
    f = gguf_construct.load(data)
    value = f.metadata.typed_items()
    nested = dict(value)["nested"]
    assert isinstance(nested.value, InnerArrays) or any(t == 9 for t, _ in inners)
    f.save(out)
    assert out.read_bytes() == data


def test_scan_stops_before_what_it_cannot_read(scan_mode):
    """An unknown type, an array of arrays, a count or string past the end: the run stops before that array."""
    good = _inner("<", 0, [1, 2]) + _inner("<", 8, ["ab", ""])
    sizes = np.array([1, 1, 2, 2, 4, 4, 4, 1, arrayscan.STRING_ITEMS, arrayscan.STOP, 8, 8, 8])
    for tail in (
        struct.pack("<IQ", 13, 0),
        _inner("<", 9, [(0, [1])]),
        struct.pack("<IQ", 4, 5),
        struct.pack("<IQ", 8, 1) + struct.pack("<Q", 9) + b"x",
    ):
        buf = good + tail
        starts, end = arrayscan.scan_arrays(buf, 0, 3, 4, 8, 8, True, sizes)
        assert starts.tolist() == [0, len(_inner("<", 0, [1, 2]))]
        assert end == len(good)


def test_values_behave_as_lists():
    inners = [(0, [1, 2]), (8, ["a", "bc"]), (5, [])]
    f = gguf_construct.load(_file("<", inners))
    nested = dict(f.metadata.typed_items())["nested"]
    assert isinstance(nested.value, InnerArrays)
    assert len(nested) == 3
    assert nested.value[1].to_python() == ["a", "bc"]
    assert nested.value[-1].to_python() == []
    assert [v.to_python() for v in nested.value[:2]] == [[1, 2], ["a", "bc"]]
    assert nested.to_python() == [[1, 2], ["a", "bc"], []]
    with pytest.raises(IndexError):
        nested.value[3]
    again = dict(gguf_construct.load(_file("<", inners)).metadata.typed_items())["nested"]
    assert again == nested
    assert nested.value == list(nested.value)
    assert nested.value.item_types().tolist() == [0, 8, 5]
    assert nested.value.item_counts().tolist() == [2, 2, 0]


def _wide(n: int, vtype: int = 0, items: int = 0) -> bytes:
    body = struct.pack("<IQ", vtype, items) + struct.pack("<" + _NUMERIC[vtype], 7) * items
    kv = _s("wide") + struct.pack("<IIQ", 9, 9, n) + body * n
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv


@pytest.mark.parametrize("items", [0, 3])
def test_load_makes_no_call_per_inner_array(items, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(arrayscan, "COMPILED_FROM", 0)
    calls = []
    for n in (20_000, 200_000):
        data = _wide(n, 0, items)
        gguf_construct.load(data).close()
        calls.append(count_calls(lambda data=data: gguf_construct.load(data).close()))
    assert calls[1] - calls[0] < 1000, calls  # 180,000 more inner arrays: no more calls to speak of


def test_load_of_200k_inner_arrays_keeps_about_8_bytes_each():
    data = _wide(200_000, 4, 2)
    gguf_construct.load(data).close()
    tracemalloc.start()
    try:
        f = gguf_construct.load(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(dict(f.metadata.typed_items())["wide"]) == 200_000
    assert peak < 16 * 200_000 + (4 << 20), peak  # was about 1 KB an inner array (a GGUFValue and its array each)
