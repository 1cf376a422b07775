"""The field tree of the generated family: the located, tolerant read and the location of parsed records."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gguf_construct as g
from gguf_construct.format import structs
from gguf_construct.format.constructs import BufferStream
from gguf_construct.strategies import gguf_files

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def _family(data: bytes):
    version, byte_order = structs.detect(data[:8])
    return structs.family(version, byte_order)


def _spans(node):
    """(path, start, end) of every field; strings count as one field, and the elements of string arrays (which
    the read locates on demand) are listed."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append((n.path, n.start, n.end))
        if n.item_spans is not None:
            out += [(f"{n.path}[{i}]", int(a), int(b)) for i, (a, b) in enumerate(zip(*n.item_spans))]
        elif not (n.type == "gguf_string" and "len" in n.fields):  # a string: one field
            stack.extend(reversed(n.fields.values()))
    return out


def _check_contiguous(node):
    """Children lie back to back inside their parent and cover it exactly."""
    pos = node.start
    for child in node.fields.values():
        assert child.start == pos, (child.path, child.start, pos)
        _check_contiguous(child)
        pos = child.end
    if node.fields:
        assert pos == node.end, (node.path, pos, node.end)


@SETTINGS
@given(gguf_files(max_kv=4, max_tensors=3))
def test_read_of_a_valid_file_locates_every_field(file):
    data, _doc = file
    fam = _family(data)
    reading = fam.read("file_head", data)
    assert reading.problem is None
    _check_contiguous(reading.root)
    tree = fam.compiled_head.parse_stream(BufferStream(data))
    assert reading.end == len(fam.types["file_head"].build(tree))
    assert _spans(fam.locate("file_head", tree)) == _spans(reading.root)
    for i, kv in enumerate(tree.metadata_kv):
        node = reading.root[f"metadata_kv[{i}]"]
        assert node.path == f"metadata_kv[{i}]"
        for rel in ("key", "value_type", "value"):
            assert fam.offset_of("metadata_kv", kv, node.start, rel) == node[rel].start
        assert node.end - node.start == fam.sizeof("metadata_kv", kv)
    for i, ti in enumerate(tree.tensor_infos):
        node = reading.root[f"tensor_infos[{i}]"]
        for rel in ("n_dimensions", "type", "offset") + tuple(f"dimensions[{d}]" for d in range(len(ti.dimensions))):
            assert fam.offset_of("tensor_info", ti, node.start, rel) == node[rel].start, rel
        assert node["dimensions"].end - node["dimensions"].start == len(ti.dimensions) * fam.primitive_width("dim_t")


@SETTINGS
@given(gguf_files(max_kv=3, max_tensors=2), st.data())
def test_read_of_a_truncated_file_reports_one_problem_and_keeps_what_it_read(file, data):
    raw, _doc = file
    fam = _family(raw)
    whole = fam.read("file_head", raw).root
    cut = data.draw(st.integers(0, whole.end - 1))
    reading = fam.read("file_head", raw[:cut])
    p = reading.problem
    assert p is not None and reading.end is None
    assert 0 <= p.offset <= cut and p.path
    assert p.rule in {"HDR-MAGIC", "HDR-TRUNC", "HDR-COUNT", "KV-TRUNC", "TI-TRUNC", "STR-EOF", "ARR-EOF"}
    complete = [n for n in reading.root.walk() if n.end is not None and n.fields == {} and n is not reading.root]
    assert all(n.end <= cut for n in complete)
    assert {(n.path, n.start, n.end) for n in complete} <= {(n.path, n.start, n.end) for n in whole.walk()}


def test_problem_names_the_rule_the_field_breaks():
    fam = structs.family(3, "little")
    # a KV pair whose value type is unknown: the read stops at the value, the type is in the partial record
    key = b"a.b"
    record = len(key).to_bytes(8, "little") + key + (99).to_bytes(4, "little") + b"\0" * 8
    reading = fam.read("metadata_kv", record, 0, "metadata_kv[0]")
    assert reading.problem.rule == "KV-TYPE"
    assert reading.problem.path == "metadata_kv[0].value"
    assert reading.root["value_type"].value == 99 and reading.root["value_type"].start == 8 + len(key)
    assert reading.root["key"].value == "a.b"
    # an array claiming more elements than bytes remain
    arr = (4).to_bytes(4, "little") + (1000).to_bytes(8, "little") + b"\0" * 8
    record = len(key).to_bytes(8, "little") + key + (9).to_bytes(4, "little") + arr
    p = fam.read("metadata_kv", record, 0, "metadata_kv[0]").problem
    assert (p.rule, p.path, p.record["len"].value, p.record.start) == (
        "ARR-EOF",
        "metadata_kv[0].value.data",
        1000,
        8 + len(key) + 4,
    )


@SETTINGS
@given(gguf_files(max_kv=4, max_tensors=3))
def test_build_of_a_parsed_head_is_the_file_and_writes_where_the_read_reads(file):
    data, _doc = file
    fam = _family(data)
    tree = fam.compiled_head.parse_stream(BufferStream(data))
    built, node = fam.build("file_head", tree)
    assert built == data[: len(built)]
    assert _spans(node) == _spans(fam.read("file_head", data).root)


def test_string_arrays_are_located_element_by_element():
    f = g.GGUFFile.new(version=2, byte_order="big")
    f.metadata.set("x.tokens", ["ab", "", "c\u00e9"], "ARRAY", "STRING")
    data = f.to_bytes()
    fam = _family(data)
    tree = fam.compiled_head.parse_stream(BufferStream(data))
    read = fam.read("file_head", data).root
    built = fam.build("file_head", tree)[1]
    assert _spans(read) == _spans(fam.locate("file_head", tree)) == _spans(built)
    last = read["metadata_kv[0].value.data[2]"]
    assert (last.value, last.end - last.start) == ("c\u00e9", fam.primitive_width("strlen_t") + 3)


KEY = {"key": "a.b"}


def test_build_derives_counts_and_lengths_left_out():
    fam = structs.family(2, "big")
    value = {
        "header": {"magic": None, "version": 2},
        "metadata_kv": [
            dict(KEY, value_type=8, value="hello"),
            dict(KEY, value_type=9, value={"type": 4, "data": [1, 2, 3]}),
        ],
        "tensor_infos": [{"name": "t", "dimensions": [32, 2], "type": 0, "offset": 0}],
    }
    data, node = fam.build("file_head", value)
    tree = fam.compiled_head.parse_stream(BufferStream(data))
    assert (tree.header.metadata_kv_count, tree.header.tensor_count) == (2, 1)
    assert tree.metadata_kv[0].value == "hello" and list(tree.metadata_kv[1].value.data) == [1, 2, 3]
    assert tree.tensor_infos[0].n_dimensions == 2 and list(tree.tensor_infos[0].dimensions) == [32, 2]
    assert node["metadata_kv[1].value.len"].value == 3


def test_build_writes_impossible_values_and_the_read_finds_them_where_they_were_written():
    fam = structs.family(3, "little")
    cases = [  # (record, where the read must stop, rule)
        (dict(KEY, value_type=8, value={"len": 10**6, "data": b"short"}), "value", "STR-EOF"),
        (dict(KEY, value_type=9, value={"type": 4, "len": 1000, "data": [1, 2]}), "value.data", "ARR-EOF"),
        (dict(KEY, value_type=99, value=b"\0" * 8), "value", "KV-TYPE"),
        (
            dict(KEY, value_type=9, value={"type": 77, "len": 2, "data": [b"\1" * 4, b"\2" * 4]}),
            "value.data",
            "ARR-TYPE",
        ),
        (dict(KEY, value_type=4, value=-1), None, None),  # wraps to 0xFFFFFFFF: a valid UINT32
    ]
    for record, where, rule in cases:
        data, node = fam.build("metadata_kv", record, "metadata_kv[0]")
        p = fam.read("metadata_kv", data, 0, "metadata_kv[0]").problem
        if rule is None:
            assert p is None
            continue
        assert (p.rule, p.path, p.offset) == (rule, node[where].path, node[where].start), record
    raw, node = fam.build("tensor_info", {"name": "t", "n_dimensions": 9, "dimensions": [1, 2], "type": 0, "offset": 3})
    assert node["n_dimensions"].value == 9 and node["dimensions"].end - node["dimensions"].start == 16
    p = fam.read("tensor_info", raw, 0, "tensor_infos[0]").problem  # 9 dimensions announced, 2 written
    assert (p.rule, p.path, p.offset) == ("ARR-EOF", "tensor_infos[0].dimensions", node["dimensions"].start)
