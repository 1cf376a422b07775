"""Which rule a field that cannot be read breaks is declared once, with the field, in spec/gguf.yaml (``breaks``),
and the compiled read, the tolerant located read and the bootstrap all take it from there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gguf_construct.format import fieldrules, structs
from gguf_construct.format.constructs import BufferStream, FieldError
from gguf_construct.format.reader import bootstrap
from gguf_construct.rulebook.catalog import catalog, structural_rules
from gguf_construct.strategies import gguf_files

PACKAGE = Path(__file__).resolve().parent.parent / "gguf_construct"
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
KEY = {"key": "a.b"}


def test_every_declared_rule_is_a_structural_refusal_of_the_catalog():
    declared = fieldrules.declarations()
    assert {(w, f) for w, f, _ in declared} >= {
        ("header", "truncated"),
        ("header.magic", "mismatch"),
        ("metadata_kv.value", "selector"),
        ("gguf_array.data", "count"),
    }
    for where, failure, rule in declared:
        assert failure in fieldrules.TYPE_FAILURES + fieldrules.FIELD_FAILURES, (where, failure)
        assert (failure in fieldrules.TYPE_FAILURES) == ("." not in where), (where, failure)
        assert rule in catalog(), (where, rule)
        assert catalog()[rule].raw.get("load") == "refuse", (where, rule)
    # each failure is declared where it can happen: a count on a repeat, a selector on a switch ...
    needs = {
        "count": "repeat",
        "selector": "switch_on",
        "mismatch": "contents",
        "invalid": "valid",
        "nesting": "switch_on",
    }
    for where, failure, _rule in declared:
        if "." in where:
            assert needs[failure] in structs.field_spec(*where.split(".")), (where, failure)
    # every rule a read stops with is one the structural walk reports
    assert {rule for where, failure, rule in declared if failure != "invalid"} <= structural_rules()


def test_a_type_without_a_declaration_takes_the_rule_of_its_holders():
    # gguf_array declares no truncated rule: it is only ever a metadata value
    assert "breaks" not in structs.container_spec()["types"]["gguf_array"]
    assert fieldrules.truncated_rule("gguf_array") == fieldrules.truncated_rule("metadata_kv") == "KV-TRUNC"
    assert fieldrules.truncated_rule("file_head") is None
    # a count without a declaration breaks its record's truncated rule; one with a declaration, that one
    assert fieldrules.field_rule("tensor_info", "dimensions", "count") == "ARR-EOF"
    assert fieldrules.nesting_rule("metadata_kv") == "ARR-TOO-DEEP"
    with pytest.raises(ValueError):
        fieldrules.field_rule("header", "magic", "truncated")


def _compiled_rule(fam, type_name: str, data: bytes) -> str | None:
    with pytest.raises(Exception) as info:
        fam.compiled_types[type_name].parse_stream(BufferStream(data))
    return info.value.rule if isinstance(info.value, FieldError) else None


BROKEN = [  # (type, value, cut: bytes to drop from the end, the field that fails, (type, field, failure))
    ("metadata_kv", dict(KEY, value_type=8, value={"len": 10**6, "data": b"short"}), 0, "value", "STR-EOF"),
    (
        "metadata_kv",
        dict(KEY, value_type=9, value={"type": 4, "len": 1000, "data": [1, 2]}),
        0,
        "value.data",
        ("gguf_array", "data", "count"),
    ),
    (
        "metadata_kv",
        dict(KEY, value_type=9, value={"type": 8, "len": 1000, "data": [b"x"]}),
        0,
        "value.data",
        ("gguf_array", "data", "count"),
    ),
    (
        "metadata_kv",
        dict(KEY, value_type=9, value={"type": 8, "data": [b"a", {"len": 99, "data": b"b"}]}),
        0,
        "value.data[1]",
        "STR-EOF",
    ),
    ("metadata_kv", dict(KEY, value_type=99, value=b"\0" * 8), 0, "value", ("metadata_kv", "value", "selector")),
    (
        "metadata_kv",
        dict(KEY, value_type=9, value={"type": 77, "len": 2, "data": [b"\1" * 4]}),
        0,
        "value.data",
        ("gguf_array", "data", "selector"),
    ),
    ("metadata_kv", dict(KEY, value_type=6, value=1.5), 2, "value", "KV-TRUNC"),
    (
        "tensor_info",
        {"name": "t", "n_dimensions": 3, "dimensions": [1], "type": 0, "offset": 0},
        10,
        "dimensions",
        ("tensor_info", "dimensions", "count"),
    ),
    (
        "tensor_info",
        {"name": {"len": 70, "data": b"t"}, "dimensions": [1], "type": 0, "offset": 0},
        0,
        "name",
        "STR-EOF",
    ),
    (
        "file_head",
        {"header": {"version": 3, "metadata_kv_count": 1000}, "metadata_kv": [], "tensor_infos": []},
        0,
        "metadata_kv",
        ("file_head", "metadata_kv", "count"),
    ),
]


@pytest.mark.parametrize("version,byte_order", [(2, "little"), (3, "big")])
@pytest.mark.parametrize(
    "type_name,value,cut,where,expected", BROKEN, ids=[f"{b[0]}-{b[3]}-{i}" for i, b in enumerate(BROKEN)]
)
def test_both_reads_name_the_rule_the_spec_declares(version, byte_order, type_name, value, cut, where, expected):
    fam = structs.family(version, byte_order)
    if type_name == "file_head":
        value = dict(value, header=dict(value["header"], version=version))
    rule = expected if isinstance(expected, str) else fieldrules.field_rule(*expected)
    data, node = fam.build(type_name, value, "r")
    data = data[: len(data) - cut]
    p = fam.read(type_name, data, 0, "r").problem
    assert (p.rule, p.path) == (rule, node[where].path)
    assert _compiled_rule(fam, type_name, data) == rule


@pytest.mark.parametrize(
    "data,rule,path",
    [
        (b"GG", "header", "header.magic"),
        (b"GGUX\3\0\0\0", "header.magic", "header.magic"),
        (b"GGUF\3\0", "header", "header.version"),
        (b"GGUF\7\0\0\0" + bytes(16), "header.version", "header.version"),
    ],
)
def test_the_bootstrap_names_the_rule_the_spec_declares(data, rule, path):
    boot = bootstrap(data)
    expected = (
        fieldrules.truncated_rule(rule)
        if "." not in rule
        else fieldrules.field_rule(*rule.split("."), "mismatch" if rule.endswith("magic") else "invalid")
    )
    assert (boot.rule, boot.path) == (expected, path)


@SETTINGS
@given(gguf_files(max_kv=4, max_tensors=2), st.data())
def test_a_cut_file_fails_under_one_rule_in_both_reads(file, data):
    raw, _doc = file
    version, byte_order = structs.detect(raw[:8])
    fam = structs.family(version, byte_order)
    end = fam.read("file_head", raw).end
    cut = raw[: data.draw(st.integers(0, end - 1))]
    problem = fam.read("file_head", cut).problem
    assert problem is not None
    try:
        fam.compiled_head.parse_stream(BufferStream(cut))
    except FieldError as exc:  # where the compiled read names a rule, it is the tolerant read's
        assert exc.rule == problem.rule
    except Exception:  # noqa: BLE001 - a plain short read of a fixed-size field names none
        pass
    else:
        raise AssertionError("the compiled read accepted a cut file")


READS = [
    "format/constructs.py",
    "format/structs.py",
    "format/fieldtree.py",
    "format/fieldlayout.py",
    "format/reader.py",
    "format/containerspec.py",
    "format/fieldrules.py",
]


@pytest.mark.parametrize("name", READS)
def test_no_read_names_a_rule_itself(name):
    """No rule ID as a string in the code of the reads (docstrings and comments may mention one)."""
    rule_id = re.compile(r"^[A-Z]+(-[A-Z0-9]+)+$")
    tree = ast.parse((PACKAGE / name).read_text())
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    named = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in docstrings
        and rule_id.match(n.value)
    ]
    assert named == []


def test_a_construct_made_without_a_rule_takes_the_spec_rule_of_what_it_stands_for():
    from gguf_construct.format.constructs import Float32Field, GGUFString, NumericArray, StringArray

    assert GGUFString(8, "little").rule == fieldrules.truncated_rule("gguf_string")
    assert StringArray(1, 8, "little").rule == fieldrules.field_rule("gguf_array", "data", "count")
    assert StringArray(1, 8, "little").element_rule == fieldrules.truncated_rule("gguf_string")
    assert NumericArray(1, "<u4").rule == fieldrules.field_rule("tensor_info", "dimensions", "count")
    assert Float32Field("little").rule == fieldrules.truncated_rule("metadata_kv")  # f4 is only ever a value
    assert fieldrules.default_rule("u4") is None  # header, KV and tensor-info fields: no one rule
    assert GGUFString(8, "little", rule="X-Y").rule == "X-Y"
