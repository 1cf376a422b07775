"""The test of the design (issue #12): a field added to a copy of the spec - a hypothetical GGUF v4 whose tensor
info gains ``flags`` right after its name, so every later field moves - is read, built, checked and documented with no code change.

And issue #40: a version 4 and a value type FLOAT16 written only in a copy of spec/gguf.yaml reach demo, convert,
set, dump, check, load, the strategies, the suite, docs and export (the copy is put in effect for child processes
by ``GGUF_CONSTRUCT_SPEC_DIR``, since the value-type enum is made at import)."""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import gguf_construct as g
from gguf_construct.format import fieldtree, spec, structs
from gguf_construct.checker import check_buffer
from gguf_construct.format.constructs import BufferStream, FieldError
from gguf_construct.docgen import pictures, render_all
from gguf_construct.format.reader import align_offset

ROOT = Path(__file__).resolve().parent.parent
NEW_FIELD = {"id": "flags", "type": "u4", "doc": "Hypothetical v4 tensor flags."}


def _clear_caches() -> None:
    for cached in (
        spec.load_yaml,
        spec.primitives,
        spec.tensor_types,
        spec.tensor_type_by_id,
        structs.family,
        structs.field_spec,
        structs.value_types,
    ):
        cached.cache_clear()
    fieldtree._SPECS.clear()
    pictures.pictures.cache_clear()  # drawn from the spec in effect (a docs test after these must see the real one)


@pytest.fixture
def v4_spec(tmp_path, monkeypatch):
    """A copy of spec/ whose gguf.yaml declares version 4 and a new tensor-info field; in effect for one test."""
    copy = tmp_path / "spec"
    shutil.copytree(spec.spec_dir(), copy)
    gguf = yaml.safe_load((copy / "gguf.yaml").read_text())
    gguf["versions"].append(
        {"version": 4, "status": "current", "doc": "Hypothetical: tensor infos gain flags.", "doc_ref": "none"}
    )
    seq = gguf["types"]["tensor_info"]["seq"]
    seq.insert(1 + next(i for i, f in enumerate(seq) if f["id"] == "name"), dict(NEW_FIELD))
    (copy / "gguf.yaml").write_text(yaml.safe_dump(gguf, sort_keys=False))
    monkeypatch.setattr(spec, "spec_dir", lambda: copy)
    _clear_caches()
    yield copy
    monkeypatch.undo()
    _clear_caches()


@pytest.fixture
def v3_file():
    """A v3 file, its parsed head and where its data section starts, made with the real spec."""
    f = g.GGUFFile.new(version=3)
    f.metadata.set("general.architecture", "llama", "STRING")
    f.add_tensor("a", np.arange(64, dtype=np.float32).reshape(2, 32))
    f.add_tensor("b", np.ones(32, dtype=np.float32))
    data = f.to_bytes()
    v3 = structs.family(3, "little")
    tree = v3.compiled_head.parse_stream(BufferStream(data))
    return data, tree, align_offset(v3.sizeof("file_head", tree), 32)


def _as_v4(v3_file, flags: list[int], offset_shift: int = 0, type_id: int | None = None) -> bytes:
    """The same file in the hypothetical v4, built by the generated v4 family."""
    data, tree, data_start = v3_file
    tree = copy.deepcopy(tree)
    tree.header.version = 4
    for info, flag in zip(tree.tensor_infos, flags):
        info.flags = flag
    tree.tensor_infos[0].offset += offset_shift
    if type_id is not None:
        tree.tensor_infos[1].type = type_id
    head = structs.family(4, "little").types["file_head"].build(tree)
    return head + bytes(align_offset(len(head), 32) - len(head)) + data[data_start:]


def test_a_new_tensor_info_field_is_read_built_checked_and_documented(v3_file, v4_spec, tmp_path):
    v4 = _as_v4(v3_file, [7, 9])
    fam = structs.family(4, "little")

    # read: the located, tolerant read finds the field, its value and its place
    reading = fam.read("file_head", v4)
    assert reading.problem is None
    flags = [reading.root[f"tensor_infos[{i}].flags"] for i in range(2)]
    assert [f.value for f in flags] == [7, 9]
    assert all(f.end - f.start == 4 for f in flags)
    assert reading.root["tensor_infos[0].n_dimensions"].start == flags[0].end
    assert reading.root["tensor_infos[0].name"].end == flags[0].start

    # load: the file model reads the v4 file; tensors are where they were
    loaded = g.load(v4)
    assert loaded.version == 4
    assert [t.name for t in loaded.tensors] == ["a", "b"]
    assert np.array_equal(loaded.tensors[0].numpy(), np.arange(64, dtype=np.float32).reshape(2, 32))

    # check: a valid file is valid, and a misaligned offset is reported at the offset field, after the new one
    assert not [f for f in check_buffer(v4).findings if f.severity == "error"]
    bad = _as_v4(v3_file, [7, 9], offset_shift=4)
    found = [f for f in check_buffer(bad).findings if f.rule == "TI-OFFSET-ALIGN"]
    assert [(f.offset, f.path) for f in found] == [
        (fam.read("file_head", bad).root["tensor_infos[0].offset"].start, "tensor_infos[0].offset")
    ]
    bad_type = _as_v4(v3_file, [7, 9], type_id=99)
    found = [(f.rule, f.offset, f.path) for f in check_buffer(bad_type).findings if f.rule == "TI-TYPE"]
    assert found == [
        ("TI-TYPE", fam.read("file_head", bad_type).root["tensor_infos[1].type"].start, "tensor_infos[1].type")
    ]
    # a file cut inside the new field: the walk names the field
    cut = v4[: flags[1].start + 2]
    trunc = [f for f in check_buffer(cut).findings if f.rule == "TI-TRUNC"]
    assert [(f.offset, f.path) for f in trunc] == [(flags[1].start, "tensor_infos[1].flags")]

    # layout: the family's symbolic layout places the field after the name and moves the later ones by its width
    lay = fam.layout("tensor_info")
    assert (str(lay["flags"].offset), str(lay["flags"].size)) == ("8 + name.len", "4")
    assert str(lay["n_dimensions"].offset) == "12 + name.len"
    info = reading.root["tensor_infos[1]"]
    assert lay["offset"].offset.evaluate(lambda p: info.find(p).value) == info["offset"].start - info.start

    # docs: the format page documents the field with the layout's offsets, and version 4
    pages = render_all(tmp_path / "docs")
    fmt = next(text for path, text in pages.items() if path.name == "format.md")
    row = next(line for line in fmt.splitlines() if 'id="field-tensor_info-flags"' in line)
    assert "Hypothetical v4 tensor flags." in row and "`u4`" in fmt
    assert "| 8 + name.len | 4 |" in row and "| 4 + name.len | 4 |" in row  # v2-v4 and v1 columns
    row = next(line for line in fmt.splitlines() if 'id="field-tensor_info-offset"' in line)
    assert f"| {lay['offset'].offset} | 8 |" in row
    assert 'id="version-4"' in fmt


def test_the_real_spec_is_back_after_the_extension(v4_spec):
    pass


def test_without_the_extension_no_flags_field():
    assert all(f["id"] != "flags" for f in structs.container_spec()["types"]["tensor_info"]["seq"])
    assert 4 not in structs.versions()


STRIDES = {
    "id": "strides",
    "type": "dim_t",
    "repeat": "n_dimensions",
    "breaks": {"count": "TI-STRIDES"},
    "doc": "Hypothetical v4 strides, one per dimension.",
}


@pytest.fixture
def v4_strides_spec(tmp_path, monkeypatch):
    """A copy of spec/ whose version 4 tensor infos gain ``strides`` after the dimensions, declared to break a
    rule of its own (TI-STRIDES, added to the copy's catalog) when its count cannot be met."""
    copy = tmp_path / "spec"
    shutil.copytree(spec.spec_dir(), copy)
    gguf = yaml.safe_load((copy / "gguf.yaml").read_text())
    gguf["versions"].append({"version": 4, "status": "current", "doc": "Hypothetical: strides.", "doc_ref": "none"})
    seq = gguf["types"]["tensor_info"]["seq"]
    seq.insert(1 + next(i for i, f in enumerate(seq) if f["id"] == "dimensions"), dict(STRIDES))
    (copy / "gguf.yaml").write_text(yaml.safe_dump(gguf, sort_keys=False))
    rules = yaml.safe_load((copy / "rules.yaml").read_text())
    trunc = next(r for r in rules["rules"] if r["id"] == "TI-TRUNC")
    rules["rules"].append(
        dict(
            trunc,
            id="TI-STRIDES",
            title="Strides past the end",
            doc="The strides of a tensor info must fit in the file.",
        )
    )
    (copy / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
    monkeypatch.setattr(spec, "spec_dir", lambda: copy)
    _clear_caches()
    yield copy
    monkeypatch.undo()
    _clear_caches()


def test_a_new_field_breaks_the_rule_declared_with_it_in_both_reads(v4_strides_spec, tmp_path):
    fam = structs.family(4, "little")
    info = {"name": "t", "n_dimensions": 3, "dimensions": [32, 2, 1], "strides": [1, 32], "type": 0, "offset": 0}
    raw, node = fam.build("tensor_info", info, "tensor_infos[0]")
    assert (node["strides"].start, node["strides"].end) == (node["dimensions"].end, node["dimensions"].end + 16)
    cut = raw[: node["strides"].start + 12]  # three strides announced, room for one and a half
    # the tolerant read
    p = fam.read("tensor_info", cut, 0, "tensor_infos[0]").problem
    assert (p.rule, p.path, p.offset) == ("TI-STRIDES", "tensor_infos[0].strides", node["strides"].start)
    # the compiled read
    with pytest.raises(FieldError) as info_:
        fam.compiled_types["tensor_info"].parse_stream(BufferStream(cut))
    assert info_.value.rule == "TI-STRIDES"
    # the field before it keeps its own declaration
    short = raw[: node["dimensions"].start + 8]
    assert fam.read("tensor_info", short, 0, "tensor_infos[0]").problem.rule == "ARR-EOF"
    # and the format page says what the new field breaks
    fmt = next(text for path, text in render_all(tmp_path / "docs").items() if path.name == "format.md")
    row = next(line for line in fmt.splitlines() if 'id="field-tensor_info-strides"' in line)
    assert "breaks [`TI-STRIDES`](rules.md#rule-ti-strides)" in row


# -- issue #40: a new version and a new value type, written only in a copy of spec/, reach every part ---------------
FLOAT16 = {
    "id": 13,
    "name": "FLOAT16",
    "c_name": "GGUF_METADATA_VALUE_TYPE_FLOAT16",
    "kind": "float",
    "encoding": "f2",
    "since": 4,
    "doc": "Hypothetical IEEE 754 binary16 value.",
}


@pytest.fixture(scope="module")
def v4_float16_spec(tmp_path_factory):
    """A copy of spec/ with a version 4 (the layout of v3, now current) and a value type 13 FLOAT16 (f2, since 4):
    edits of gguf.yaml alone."""
    copy = tmp_path_factory.mktemp("spec40") / "spec"
    shutil.copytree(spec.spec_dir(), copy)
    gguf = yaml.safe_load((copy / "gguf.yaml").read_text())
    gguf["versions"].append(
        {"version": 4, "status": "current", "doc": "Hypothetical: adds FLOAT16.", "doc_ref": "none"}
    )
    gguf["value_types"].append(dict(FLOAT16))
    (copy / "gguf.yaml").write_text(yaml.safe_dump(gguf, sort_keys=False))
    return copy


def _run(spec_copy, *args: str, cwd=None, check_rc: int | None = 0) -> subprocess.CompletedProcess:
    """The command line (or ``python -c`` when args start with "-c") with the package pointed at ``spec_copy``."""
    env = dict(os.environ, GGUF_CONSTRUCT_SPEC_DIR=str(spec_copy), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "gguf_construct", *args]
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if check_rc is not None:
        assert done.returncode == check_rc, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done


def test_a_spec_only_version_and_value_type_reach_every_command(v4_float16_spec, tmp_path):
    run = functools.partial(_run, v4_float16_spec)
    # demo: every version and byte order round-trips, v4 among them
    out = run("demo", "--out", str(tmp_path / "demo")).stdout
    assert "ok   v4 little" in out and "ok   v4 big" in out
    v4, v3 = tmp_path / "demo" / "demo-v4-little.gguf", tmp_path / "demo" / "demo-v3-little.gguf"
    # set parses a FLOAT16 by its kind (float), scalar and array items; dump shows it
    run("set", str(v4), "test.half", "1.5", "--type", "FLOAT16")
    run("set", str(v4), "test.halves", "[0.5, -2]", "--type", "ARRAY", "--item-type", "FLOAT16")
    dumped = json.loads(run("dump", "--json", str(v4)).stdout)["metadata"]
    values = {kv["key"]: kv for kv in dumped}
    assert values["test.half"]["type"] == "FLOAT16" and values["test.half"]["value"] == 1.5
    assert values["test.halves"]["item_type"] == "FLOAT16" and values["test.halves"]["value"] == [0.5, -2.0]
    # check: the v4 file is valid; convert --version takes 3 and 4, and the v3 copy holding FLOAT16 is reported
    # (KV-TYPE-VERSION, by the spec's since) and refused by load
    report = json.loads(run("check", str(v4), "--format", "json", "--fail-on", "never").stdout)
    assert report[0]["valid"] and report[0]["version"] == 4, report[0]
    refused = run("convert", str(v4), str(tmp_path / "back.gguf"), "--version", "3", check_rc=None)
    assert refused.returncode != 0 and "FLOAT16" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "back.gguf").exists()
    data = v4.read_bytes()  # v4 has the layout of v3: the same bytes with version word 3 are a v3 file
    (tmp_path / "back.gguf").write_bytes(data[:4] + (3).to_bytes(4, "little") + data[8:])
    bad = json.loads(run("check", str(tmp_path / "back.gguf"), "--format", "json", "--fail-on", "never").stdout)
    later = [f for f in bad[0]["findings"] if f["rule"] == "KV-TYPE-VERSION"]
    halves = {i for i, kv in enumerate(dumped) if "FLOAT16" in (kv["type"], kv.get("item_type"))}
    assert len(halves) >= 4  # demo's own FLOAT16 value and array, and the two set above
    assert {f["path"] for f in later} == {f"metadata_kv[{i}].value_type" for i in halves}, later
    assert "v3" in later[0]["message"] and "v4" in later[0]["message"]
    refused = run("dump", str(tmp_path / "back.gguf"), check_rc=None)
    assert refused.returncode != 0 and "FLOAT16" in refused.stderr and "Traceback" not in refused.stderr
    run("convert", str(v3), str(tmp_path / "up.gguf"), "--version", "4")
    # docs and export know version 4 and FLOAT16
    run("docs", "--out", str(tmp_path / "docs"))
    assert 'id="version-4"' in (tmp_path / "docs" / "format.md").read_text()
    assert "FLOAT16" in (tmp_path / "docs" / "values.md").read_text()
    assert (
        "version-4" in (tmp_path / "docs" / "pictures" / "versions.svg").read_text()
        or "v4" in (tmp_path / "docs" / "pictures" / "versions.svg").read_text()
    )
    assert "FLOAT16" in run("export", "ksy").stdout
    assert "4" in run("export", "hexpat").stdout.split("versions", 1)[1].split("\n", 1)[0]


API_PROBE = """
import collections, sys
from hypothesis import HealthCheck, given, settings, strategies as st
from gguf_construct import load
from gguf_construct.format.enums import GGUFValueType
from gguf_construct.strategies import documents, gguf_files, metadata_values
from gguf_construct.suite import cases

seen = collections.Counter()

@settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(gguf_files(max_tensors=1))
def files(sample):
    data, doc = sample
    seen["v%d" % doc.version] += 1
    assert load(data).version == doc.version

@settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(metadata_values(version=4))
def values(v):
    seen[v.type.name] += 1
    if v.item_type is not None:
        seen[v.item_type.name] += 1

files()
values()
suite = {c.path for c in cases.value_cases()}
print(seen["v4"] > 0, seen["FLOAT16"] > 0, "values/v4-le/FLOAT16.gguf" in suite, "values/v3-be/FLOAT16.gguf" in suite)
rules = {c.path: c.rules for c in cases.value_cases()}
print("KV-TYPE-VERSION" in rules["values/v3-le/FLOAT16.gguf"], "KV-TYPE-VERSION" not in rules["values/v4-le/FLOAT16.gguf"])
"""


def test_a_spec_only_version_and_value_type_reach_strategies_and_the_suite(v4_float16_spec):
    out = _run(v4_float16_spec, "-c", API_PROBE).stdout.split()
    assert out == ["True"] * 6, out
