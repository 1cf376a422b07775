"""Files where every record breaks a rule (issue #42): findings of one rule past spec/rules.yaml's
``findings_per_rule`` are counted, not kept; the rules that judge every record find them with array operations,
so neither the Python-level calls nor the memory of ``check`` and ``load`` grow with the number of findings.
Counted (tests/callcount.py) and measured with tracemalloc, never timed: benchmarks/bench_hostile.py has times.
"""

from __future__ import annotations

import importlib
import json
import struct
import tracemalloc

import pytest

from gguf_construct import GGUFError, load
from gguf_construct.checker import check
from gguf_construct.checker.formats import render_report_text
from gguf_construct.format import spec as _spec
from gguf_construct.rulebook import read_head
from callcount import count_calls

catalog = importlib.import_module("gguf_construct.rulebook.catalog")  # the package's name ``catalog`` is a function

U8, U32, BOOL, STRING, ARRAY = 0, 4, 7, 8, 9
F32, Q4_0 = 0, 2
LIMIT = 10  # the spec's limit, lowered for these tests (kept_per_rule reads it through catalog.findings_per_rule)


@pytest.fixture
def low_limit(monkeypatch):
    monkeypatch.setattr(catalog, "findings_per_rule", lambda: LIMIT)


def _str(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _kv(key: bytes, vtype: int, value: bytes) -> bytes:
    return _str(key) + struct.pack("<I", vtype) + value


ARCH = _kv(b"general.architecture", STRING, _str(b"llama"))


def _file(kvs: list[bytes], infos: list[bytes] = (), data: int = 0) -> bytes:
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kvs) + 1) + ARCH + b"".join(kvs) + b"".join(infos)
    return head + bytes(-len(head) % 32 + data)


def _info(name: bytes, dims: tuple[int, ...], ttype: int, offset: int) -> bytes:
    return _str(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ttype, offset)


def _tensors(n: int, *, name=lambda i: b"t%06d" % i, dims=(256,), ttype=F32, offset=lambda i: 1024 * i) -> bytes:
    return _file([], [_info(name(i), dims, ttype, offset(i)) for i in range(n)], data=1024 * n)


def _nested_one() -> bytes:
    """An ARRAY holding one ARRAY[UINT8] of one item."""
    return struct.pack("<IQ", ARRAY, 1) + struct.pack("<IQ", U8, 1) + b"\1"


# rule (/ variant) -> (writer of a file of n records, how many findings of the rule it has)
SHAPES = {
    "KV-KEY-DUP": (lambda n: _file([_kv(b"x.dup", U32, b"\1\0\0\0")] * n), lambda n: n - 1),
    "KV-BOOL": (lambda n: _file([_kv(b"x.k%06d" % i, BOOL, b"\5") for i in range(n)]), lambda n: n),
    "KV-KEY-HYPHEN": (lambda n: _file([_kv(b"x.k-%06d" % i, U8, b"\1") for i in range(n)]), lambda n: n),
    "KV-KEY-ASCII": (lambda n: _file([_kv(b"x.\xff%06d" % i, U8, b"\1") for i in range(n)]), lambda n: n),
    "STR-UTF8": (lambda n: _file([_kv(b"x.\xff%06d" % i, U8, b"\1") for i in range(n)]), lambda n: n),
    "KV-KEY-CHARSET": (lambda n: _file([_kv(b"x.K%06d" % i, U8, b"\1") for i in range(n)]), lambda n: n),
    "KV-KEY-SEGMENT": (lambda n: _file([_kv(b"x..%06d" % i, U8, b"\1") for i in range(n)]), lambda n: n),
    "KV-KEY-FLAT": (lambda n: _file([_kv(b"k%06d" % i, U8, b"\1") for i in range(n)]), lambda n: n),
    "KV-NAMESPACE": (lambda n: _file([_kv(b"general.zz%06d" % i, U8, b"\1") for i in range(n)]), lambda n: n),
    "STR-NUL": (lambda n: _file([_kv(b"x.k%06d" % i, STRING, _str(b"a\0b")) for i in range(n)]), lambda n: n),
    "TI-NAME-DUP": (lambda n: _tensors(n, name=lambda i: b"same"), lambda n: n - 1),
    "TI-NAME-LEN": (lambda n: _tensors(n, name=lambda i: b"n" * 64 + b"%06d" % i), lambda n: n),
    "TI-OFFSET-ALIGN": (lambda n: _tensors(n, offset=lambda i: 1024 * i + 1), lambda n: n),
    "TI-TYPE": (lambda n: _tensors(n, ttype=200), lambda n: n),
    "TI-BLOCK": (lambda n: _tensors(n, dims=(16,), ttype=Q4_0), lambda n: n),
    "TI-DIM-ZERO": (lambda n: _tensors(n, dims=(256, 0)), lambda n: n),
    "DATA-OVERLAP": (lambda n: _tensors(n, offset=lambda i: 0), lambda n: n - 1),
    "DATA-ORDER": (lambda n: _tensors(n, offset=lambda i: 1024 * (n - 1 - i)), lambda n: n),
    "KV-BOOL/arrays": (
        lambda n: _file([_kv(b"x.k%06d" % i, ARRAY, struct.pack("<IQ", BOOL, 1) + b"\5") for i in range(n)]),
        lambda n: n,
    ),
    "ARR-NESTED": (lambda n: _file([_kv(b"x.k%06d" % i, ARRAY, _nested_one()) for i in range(n)]), lambda n: n),
    # offsets past int64 sums: the same rules over Python ints in object arrays
    "DATA-BOUNDS": (lambda n: _tensors(n, offset=lambda i: 2**63 + 1024 * i), lambda n: n),
    "DATA-OVERLAP/huge": (lambda n: _tensors(n, offset=lambda i: 2**64 - 1024), lambda n: n - 1),
    "DATA-ORDER/huge": (lambda n: _tensors(n, offset=lambda i: 2**63 + 1024 * (n - 1 - i)), lambda n: n),
}
SMALL, LARGE = 200, 800  # records (more than 64: the walk reads them in bulk, as it reads big files)


def _judging_calls(data: bytes, rule: str) -> int:
    """Python-level calls of checking ``data`` for ``rule`` (rule IDs or prefixes, comma-separated) beyond those of reading its head (the walk's own cost
    per record is not this test's subject)."""
    view = memoryview(data)
    select = rule.split(",")
    check(data, select=select)  # warm the caches
    return count_calls(lambda: check(data, select=select)) - count_calls(lambda: read_head(view))


def _judging_peak(data: bytes, rule: str) -> int:
    """Peak bytes traced while checking ``data`` for ``rule`` beyond the peak of reading its head."""
    view = memoryview(data)
    peaks = []
    for run in (lambda: read_head(view), lambda: check(data, select=[rule])):
        tracemalloc.start()
        run()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return peaks[1] - peaks[0]


def test_the_limit_is_a_fact_of_the_spec():
    declared = _spec.load_yaml("rules.yaml")["meta"]["findings_per_rule"]
    assert catalog.findings_per_rule() == declared >= 100
    assert catalog.kept_per_rule(None) == catalog.kept_per_rule(0) == declared
    assert catalog.kept_per_rule(5) == 5 and catalog.kept_per_rule(declared + 1) == declared


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_record_breaking_a_rule_is_counted_and_the_limit_kept(shape, low_limit):
    write, expected = SHAPES[shape]
    rule = shape.split("/")[0]  # a rule, or a rule / a variant of its shape
    report = check(write(SMALL), select=[rule], max_per_rule=None)
    assert report.counts[rule] == expected(SMALL)
    listed = [f for f in report.findings if f.rule == rule]
    assert len(listed) == LIMIT and sum(f.count for f in listed) == LIMIT
    assert report.omitted()[rule] == expected(SMALL) - LIMIT
    assert report.to_dict()["omitted"][rule] == expected(SMALL) - LIMIT
    fewer = check(write(SMALL), select=[rule], max_per_rule=3)
    assert [f for f in fewer.findings if f.rule == rule] == listed[:3] and fewer.counts == report.counts


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_first_findings_do_not_depend_on_the_limit(shape, monkeypatch):
    """With the spec's own limit (above the record count) every finding is listed; lowered, the same first ones."""
    write, expected = SHAPES[shape]
    rule = shape.split("/")[0]  # a rule, or a rule / a variant of its shape
    data = write(SMALL)
    whole = [f for f in check(data, select=[rule]).findings if f.rule == rule]
    assert len(whole) == expected(SMALL)
    monkeypatch.setattr(catalog, "findings_per_rule", lambda: LIMIT)
    assert [f for f in check(data, select=[rule]).findings if f.rule == rule] == whole[:LIMIT]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_judging_work_does_not_grow_with_the_findings(shape, low_limit):
    write, _ = SHAPES[shape]
    rule = shape.split("/")[0]  # a rule, or a rule / a variant of its shape
    small, large = _judging_calls(write(SMALL), rule), _judging_calls(write(LARGE), rule)
    assert large <= small * 1.1 + 50, (small, large)


def test_arrays_that_break_nothing_cost_no_python_each():
    """KV pairs each an ARRAY[UINT8] of one item: the array and string rules look at none of them in Python."""

    def write(n: int) -> bytes:
        return _file([_kv(b"x.k%06d" % i, ARRAY, struct.pack("<IQ", U8, 1) + b"\1") for i in range(n)])

    rules = "KV-BOOL,ARR,STR,KV-TYPE"
    small, large = _judging_calls(write(SMALL), rules), _judging_calls(write(LARGE), rules)
    assert large <= small * 1.1 + 50, (small, large)
    assert not check(write(SMALL), select=rules.split(",")).findings


@pytest.mark.parametrize("rule", ["KV-KEY-DUP", "KV-BOOL", "KV-KEY-HYPHEN", "DATA-OVERLAP", "TI-NAME-LEN"])
def test_judging_memory_does_not_grow_with_the_findings(rule, low_limit):
    """Beyond the head, a few column bytes per record at most: no finding, hit or message per record (each of
    those is hundreds of bytes)."""
    write, _ = SHAPES[rule]
    small, large = _judging_peak(write(SMALL), rule), _judging_peak(write(LARGE), rule)
    assert large - small <= 64 * (LARGE - SMALL), (small, large)


def test_text_and_json_say_how_many_more(low_limit):
    report = check(SHAPES["KV-BOOL"][0](SMALL), select=["KV-BOOL"], max_per_rule=None)
    text = render_report_text(report)
    assert f"... and {SMALL - LIMIT} more (counted, not kept: at most {LIMIT} findings" in text
    assert json.loads(json.dumps(report.to_dict()))["omitted"] == {"KV-BOOL": SMALL - LIMIT}
    assert not report.valid  # a BOOL of 5 is an error under spec: the exit status does not depend on the limit


def test_on_purpose_deviations_count_every_record(low_limit):
    """command-r's hyphenated keys, as llama.cpp writes them: one finding under spec counting all of them."""
    kvs = [_kv(b"general.architecture", STRING, _str(b"command-r"))]
    kvs += [_kv(b"command-r.k%06d" % i, U8, b"\1") for i in range(SMALL)]
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
    data += bytes(-len(data) % 32)
    report = check(data, select=["KV-KEY-HYPHEN"])
    (finding,) = report.findings
    assert finding.count == report.counts["KV-KEY-HYPHEN"] == SMALL
    assert "more like it" in finding.message


@pytest.mark.parametrize("rule", ["KV-KEY-DUP", "TI-NAME-DUP"])
def test_load_refuses_with_the_first_finding_and_a_bounded_list(rule, low_limit):
    write, _ = SHAPES[rule]
    for n in (SMALL, LARGE):
        with pytest.raises(GGUFError) as info:
            load(write(n))
        assert info.value.rule == rule and len(info.value.findings) == LIMIT
        first = check(write(n), select=[rule]).findings[0]
        assert (info.value.offset, info.value.path) == (first.offset, first.path)

    def refused(data: bytes) -> int:
        def run() -> None:
            try:
                load(data)
            except GGUFError:
                pass

        run()
        return count_calls(run) - count_calls(lambda: read_head(memoryview(data)))

    assert refused(write(LARGE)) <= refused(write(SMALL)) * 1.1 + 50
