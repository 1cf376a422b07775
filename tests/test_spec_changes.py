"""Spec changes nobody has made yet (issue #40): each is an edit of a copy of spec/ only, and every part that
should follow it does, with no code edit.

One copy of spec/ for the module holds all of them at once:

- a version 4 whose layout differs (string lengths are u32 again, and the header ends with a field ``flags`` new
  in v4) and that is now current, v3 becoming legacy;
- value types of each kind: FLOAT16 (id 13, f2, new in v4) and INT16B (id 14, a second signed 16-bit integer
  encoded by a primitive of its own, available since v1);
- a ggml tensor type Q3_0 (id 43, block 32, 14 bytes) with no codec;
- two keys in spec/keys.yaml with their types (one with the {arch} placeholder);
- two rules in spec/rules.yaml declared by a ``key_check`` alone (a value range and a key type).

The value-type enum is made at import, so each test runs the package in a child process with
``GGUF_CONSTRUCT_SPEC_DIR`` pointing at the copy (one process per test, several commands in it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from gguf_construct.format import spec

ROOT = Path(__file__).resolve().parent.parent

VALUE_TYPES = [
    {
        "id": 13,
        "name": "FLOAT16",
        "c_name": "GGUF_METADATA_VALUE_TYPE_FLOAT16",
        "kind": "float",
        "encoding": "f2",
        "since": 4,
        "doc": "Hypothetical IEEE 754 binary16 value.",
    },
    {
        "id": 14,
        "name": "INT16B",
        "c_name": "GGUF_METADATA_VALUE_TYPE_INT16B",
        "kind": "integer",
        "encoding": "i2b",
        "since": 1,
        "doc": "Hypothetical second signed 16-bit integer, with a primitive of its own.",
    },
]
HEADER_FIELD = {"id": "flags", "type": "u4", "since": 4, "default": 0, "doc": "Hypothetical v4 header flags."}
PRIMITIVE = {"id": "i2b", "struct": "h", "size": 2, "numpy": "i2", "doc": "Hypothetical signed 16-bit encoding."}
TENSOR_TYPE = {
    "id": 43,
    "name": "Q3_0",
    "c_name": "GGML_TYPE_Q3_0",
    "status": "current",
    "kind": "quantized",
    "in_gguf_md": False,
    "block_size": 32,
    "type_size": 14,
    "imatrix": "ignored",
    "doc": "Hypothetical 3-bit quantization with one fp16 scale per 32 weights.",
    "doc_ref": "none",
    "fields": [
        {"id": "d", "type": "f2", "doc": "Block scale."},
        {"id": "qs", "type": "u1", "count": 12, "doc": "Packed 3-bit values."},
    ],
}
KEYS = [
    {
        "key": "general.license.spdx",
        "type": "STRING",
        "required": False,
        "section": "general",
        "doc": "Hypothetical SPDX identifier of the license.",
        "doc_ref": "none",
    },
    {
        "key": "{arch}.attention.window_length",
        "type": "UINT32",
        "required": False,
        "section": "attention",
        "doc": "Hypothetical attention window.",
        "doc_ref": "none",
    },
]
_RULE = {"source": "none", "doc_ref": "none", "c_reader": "no", "gguf_py": "no", "adversarial": []}
RULES = [
    dict(
        _RULE,
        id="META-CTX-RANGE",
        severity="warning",
        profiles={"spec": "warning", "ggml": "warning"},
        title="Context length out of range",
        doc="Hypothetical: the training context length is between 1 and 2^20.",
        message="key {key!r} = {value} is outside {expected}",
        applies_to=["metadata_kv.value"],
        key_check={"key": "{arch}.context_length", "min": 1, "max": 1048576},
    ),
    dict(
        _RULE,
        id="META-NAME-TYPE",
        severity="info",
        profiles={"spec": "info", "ggml": "info"},
        title="Name is not a string",
        doc="Hypothetical: general.name is a STRING.",
        message="key {key!r} has type {type}, expected {expected}",
        applies_to=["metadata_kv.value_type"],
        key_check={"key": "general.name", "types": ["STRING"]},
    ),
]


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _gguf(g: dict) -> None:
    for v in g["versions"]:
        if v["status"] == "current":
            v["status"] = "legacy"
    g["versions"].append(
        {"version": 4, "status": "current", "doc": "Hypothetical: u32 string lengths again.", "doc_ref": "none"}
    )
    g["aliases"]["strlen_t"]["cases"] = {1: "u4", 4: "u4", "_": "u8"}
    g["types"]["header"]["seq"].append(dict(HEADER_FIELD))
    g["primitives"].append(dict(PRIMITIVE))
    g["value_types"].extend(dict(vt) for vt in VALUE_TYPES)


@pytest.fixture(scope="module")
def changed_spec(tmp_path_factory) -> Path:
    """The copy of spec/ with every change of this module."""
    copy = tmp_path_factory.mktemp("spec-changes") / "spec"
    shutil.copytree(spec.spec_dir(), copy)
    _edit(copy / "gguf.yaml", _gguf)
    (copy / "tensor_types" / "43_q3_0.yaml").write_text(yaml.safe_dump(TENSOR_TYPE, sort_keys=False))
    _edit(copy / "keys.yaml", lambda k: k["keys"].extend(dict(e) for e in KEYS))
    _edit(copy / "rules.yaml", lambda r: r["rules"].extend(dict(e) for e in RULES))
    return copy


def _python(spec_copy: Path, script: str, cwd: Path) -> str:
    """Run ``script`` with the package pointed at ``spec_copy``; its stdout (it must exit 0)."""
    env = dict(os.environ, GGUF_CONSTRUCT_SPEC_DIR=str(spec_copy), PYTHONPATH=str(ROOT))
    prelude = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from gguf_construct.commands.main import main

        def cli(*args, rc=0):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    got = main(list(args))
                except SystemExit as exc:
                    got = exc.code
            assert (got or 0) == rc, (args, got, out.getvalue()[-2000:], err.getvalue()[-2000:])
            return out.getvalue() + err.getvalue()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def _answers(out: str) -> dict:
    """The ``RESULT {json}`` line a child script prints."""
    return json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT ") :])


def test_new_value_types_of_each_kind(changed_spec, tmp_path):
    out = _python(
        changed_spec,
        """
        import os
        import gguf_construct as g
        r = {}
        demo = cli("demo", "--out", "demo")
        r["demo_v4"] = "ok   v4 little" in demo and "ok   v4 big" in demo and "FAIL" not in demo
        # demo writes a value and an array of every value type its version has, by the spec's kind and since
        v1 = g.load("demo/demo-v1-little.gguf")
        v4 = g.load("demo/demo-v4-big.gguf")
        r["demo_v1_types"] = sorted({v.type.name for _, v in v1.metadata.typed_items()} | {v.item_type.name for _, v in v1.metadata.typed_items() if v.item_type is not None})
        r["demo_v4_half"] = v4.metadata.typed("demo.types.float16").type.name, v4.metadata["demo.types.float16_array"].tolist()
        r["demo_v1_int16b"] = v1.metadata["demo.types.int16b_array"].tolist()
        # set parses an INT16B by its kind (integer) in a v1 file, range-checked by its encoding; dump shows it
        cli("set", "demo/demo-v1-little.gguf", "t.small", "-300", "--type", "INT16B")
        r["too_big"] = "INT16B" in cli("set", "demo/demo-v1-little.gguf", "t.small", "70000", "--type", "INT16B", rc=2)
        dumped = json.loads(cli("dump", "--json", "demo/demo-v1-little.gguf"))["metadata"]
        r["dump"] = next((kv["type"], kv["value"]) for kv in dumped if kv["key"] == "t.small")
        report = json.loads(cli("check", "demo/demo-v1-little.gguf", "--format", "json", "--fail-on", "never"))[0]
        r["v1_type_findings"] = sorted({f["rule"] for f in report["findings"] if "TYPE" in f["rule"]})
        # save refuses a value type newer than the file's version (FLOAT16 in v3), naming the key; no file is left
        f = g.GGUFFile.new(version=3)
        f.metadata.set("t.half", 0.5, "FLOAT16")
        try:
            f.save("half-v3.gguf")
            r["save"] = "saved"
        except g.GGUFError as exc:
            r["save"] = [str(exc), exc.rule, os.path.exists("half-v3.gguf")]
        f.convert(version=4)
        f.save("half-v4.gguf")
        r["v4_back"] = g.load("half-v4.gguf").metadata.typed("t.half").value
        # an array of arrays whose inner arrays hold FLOAT16, read back (inner arrays located in bulk, their types
        # read as a column): converting it to v3 is refused too, naming the key
        import numpy as np
        from gguf_construct.format.values import GGUFValue
        from gguf_construct.format.constructs import InnerArrays
        T = g.GGUFValueType
        inner = GGUFValue(T.ARRAY, np.array([0.5, 1.0], dtype=np.float16), T.FLOAT16)
        del f.metadata["t.half"]
        f.metadata["t.nested"] = GGUFValue(T.ARRAY, [inner] * 3000, T.ARRAY)
        f.save("nested-v4.gguf")
        back = g.load("nested-v4.gguf")
        r["nested_bulk"] = isinstance(back.metadata.typed("t.nested").value, InnerArrays)
        try:
            back.convert(version=3)
            r["nested"] = "converted"
        except g.GGUFError as exc:
            r["nested"] = [str(exc), exc.rule]
        print("RESULT " + json.dumps(r))
        """,
        tmp_path,
    )
    r = _answers(out)
    assert r["demo_v4"], out
    assert "INT16B" in r["demo_v1_types"] and "FLOAT16" not in r["demo_v1_types"]
    assert r["demo_v4_half"] == ["FLOAT16", [1.5, -0.25, 0.0]]
    assert r["demo_v1_int16b"] == [32767, -32768, 1]
    assert r["too_big"]
    assert r["dump"] == ["INT16B", -300]
    assert "KV-TYPE-VERSION" not in r["v1_type_findings"]  # INT16B is there since v1
    message, rule_id, left = r["save"]
    assert "'t.half'" in message and "FLOAT16" in message and "v4" in message
    assert rule_id == "KV-TYPE-VERSION" and not left
    assert r["v4_back"] == 0.5
    assert r["nested_bulk"] and "'t.nested'" in r["nested"][0] and "FLOAT16" in r["nested"][0]
    assert r["nested"][1] == "KV-TYPE-VERSION"


def test_a_version_with_another_layout(changed_spec, tmp_path):
    out = _python(
        changed_spec,
        """
        import collections, struct
        import gguf_construct as g
        from gguf_construct.format import structs
        r = {}
        cli("demo", "--out", "demo")
        data = open("demo/demo-v4-little.gguf", "rb").read()
        # v4: the header keeps u64 counts and gains flags (written as its default), the first key's length is a u32
        r["flags"], key_len = struct.unpack_from("<II", data, 24)
        r["first_key"] = data[32 : 32 + key_len].decode()
        flagged = data[:24] + struct.pack("<I", 7) + data[28:]  # a v4 file with flags set: read, kept, written back
        r["flags_kept"] = g.load(flagged).to_bytes() == flagged
        v3 = open("demo/demo-v3-little.gguf", "rb").read()
        r["v3_first_key"] = v3[32 : 32 + struct.unpack_from("<Q", v3, 24)[0]].decode()
        r["widths"] = {v: structs.family(v, "little").primitive_width("strlen_t") for v in (1, 2, 3, 4)}
        f = g.load("demo/demo-v4-big.gguf")
        r["load"] = [f.version, f.byte_order, f.metadata["general.architecture"], len(f.tensors)]
        report = json.loads(cli("check", "demo/demo-v4-little.gguf", "--format", "json", "--fail-on", "never"))[0]
        r["check"] = [report["valid"], report["version"], sorted(f["rule"] for f in report["findings"] if f["rule"].startswith("HDR"))]
        r["dump"] = json.loads(cli("dump", "--json", "demo/demo-v4-little.gguf"))["version"]
        cli("convert", "demo/demo-v3-little.gguf", "up.gguf", "--version", "4")
        cli("convert", "up.gguf", "down.gguf", "--version", "3")
        r["convert"] = [open("down.gguf", "rb").read() == open("demo/demo-v3-little.gguf", "rb").read(), g.load("up.gguf").version]
        # strategies draw v4 files the reader reads back
        from hypothesis import HealthCheck, given, settings
        from gguf_construct.strategies import gguf_files
        seen = collections.Counter()
        @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(gguf_files(max_tensors=1))
        def files(sample):
            blob, doc = sample
            seen[doc.version] += 1
            assert g.load(blob).version == doc.version
        files()
        r["drawn"] = sorted(seen)
        cli("docs", "--out", "docs")
        fmt = open("docs/format.md", encoding="utf-8").read()
        flags_row = next(line for line in fmt.splitlines() if 'id="field-header-flags"' in line)
        r["docs"] = 'id="version-4"' in fmt and "Since v4" in flags_row and "| — | — |" in flags_row
        ksy = cli("export", "ksy")
        r["ksy"] = "4: u4" in ksy and "_root.version >= 4" in ksy and "gguf_version >= 4" in cli("export", "hexpat")
        print("RESULT " + json.dumps(r))
        """,
        tmp_path,
    )
    r = _answers(out)
    assert r["first_key"] == r["v3_first_key"] == "general.architecture" and r["flags"] == 0
    assert r["flags_kept"]
    assert r["widths"] == {"1": 4, "2": 8, "3": 8, "4": 4}
    assert r["load"] == [4, "big", "llama", 10]
    valid, version, hdr = r["check"]
    assert valid and version == 4 and hdr == []  # v4 is current: no legacy-version finding
    assert r["dump"] == 4
    assert r["convert"] == [True, 4]
    assert 4 in r["drawn"]
    assert r["docs"] and r["ksy"]


def test_version_rules_follow_the_version_list(changed_spec, tmp_path):
    """v3 is legacy once v4 is current; big-endian files are still fine from v3 on (the byte order's since)."""
    out = _python(
        changed_spec,
        """
        from gguf_construct.suite import cases
        r = {}
        cli("demo", "--out", "demo")
        for name in ("v3-big", "v2-big", "v4-big"):
            report = json.loads(cli("check", f"demo/demo-{name}.gguf", "--format", "json", "--fail-on", "never"))[0]
            r[name] = {f["rule"]: f["message"] for f in report["findings"] if f["rule"].startswith("HDR")}
        r["suite"] = {c.path: sorted(c.rules) for c in cases.value_cases() if c.path.endswith("/INT16B.gguf")}
        print("RESULT " + json.dumps(r))
        """,
        tmp_path,
    )
    r = _answers(out)
    assert set(r["v3-big"]) == {"HDR-ENDIAN", "HDR-VER-LEGACY"}
    assert r["v3-big"]["HDR-VER-LEGACY"] == "GGUF version 3 is superseded by version 4"
    assert set(r["v2-big"]) == {"HDR-ENDIAN", "HDR-VER-LEGACY", "HDR-BE-PRE-V3"}
    assert r["v2-big"]["HDR-BE-PRE-V3"].endswith("big-endian files start with version 3")
    assert set(r["v4-big"]) == {"HDR-ENDIAN"}
    suite = r["suite"]
    assert "HDR-BE-PRE-V3" not in suite["values/v3-be/INT16B.gguf"]
    assert "HDR-VER-LEGACY" in suite["values/v3-le/INT16B.gguf"]
    assert "HDR-VER-LEGACY" not in suite["values/v4-be/INT16B.gguf"]
    assert "HDR-BE-PRE-V3" in suite["values/v2-be/INT16B.gguf"]


def test_the_suite_cases_of_the_changed_spec_keep_their_rules(changed_spec, tmp_path):
    """Every value-type and tensor-type case of the suite, made under the changed spec: the checker finds the rules
    the case says it breaks and gives the verdict the catalog predicts under each profile."""
    out = _python(
        changed_spec,
        """
        from gguf_construct.checker import check_buffer
        from gguf_construct.suite import cases
        from gguf_construct.suite.expect import outcome
        wrong, paths = [], []
        for case in [*cases.value_cases(), *cases.tensor_type_cases()]:
            paths.append(case.path)
            for profile in ("spec", "ggml"):
                report = check_buffer(case.data, profile=profile, data=True)
                found = {f.rule for f in report.findings}
                expected, _ = outcome(case.rules, profile)
                if not set(case.rules) <= found or (expected != "either" and report.valid != (expected == "accept")):
                    wrong.append([case.path, profile, sorted(case.rules), sorted(found), expected])
        print("RESULT " + json.dumps({"wrong": wrong, "paths": paths}))
        """,
        tmp_path,
    )
    r = _answers(out)
    assert r["wrong"] == []
    assert {"values/v4-le/FLOAT16.gguf", "values/v1-be/INT16B.gguf", "tensor-types/be/Q3_0.gguf"} <= set(r["paths"])


def test_a_tensor_type_without_a_codec(changed_spec, tmp_path):
    out = _python(
        changed_spec,
        """
        import gguf_construct as g
        from gguf_construct.arch.loader import TensorMeta
        from gguf_construct.arch.memory import estimate
        from gguf_construct.arch.expect import expect
        from gguf_construct.arch.synth import minimal_model_parts
        r = {}
        f = g.GGUFFile.new(version=4)
        f.metadata.set("general.architecture", "llama", "STRING")
        f.add_tensor("blk.0.ffn_up.weight", bytes(14 * 4), "Q3_0", shape=(64, 2))
        f.save("q3.gguf")
        report = json.loads(cli("check", "q3.gguf", "--data", "--format", "json", "--fail-on", "never"))[0]
        r["check"] = [report["valid"], sorted({x["rule"] for x in report["findings"] if x["rule"].startswith(("TI", "DATA"))})]
        bad = g.GGUFFile.new()
        try:
            bad.add_tensor("short", bytes(14 * 3), "Q3_0", shape=(64, 2))
            r["size"] = "accepted"
        except ValueError as exc:
            r["size"] = str(exc)
        r["dump"] = [line.split() for line in cli("dump", "q3.gguf").splitlines() if "ffn_up" in line][0]
        t = g.load("q3.gguf").tensors[0]
        r["nbytes"] = t.nbytes
        try:
            t.numpy()
            r["decode"] = "decoded"
        except NotImplementedError as exc:
            r["decode"] = str(exc)
        meta, tensors = minimal_model_parts("llama")
        q3 = {n: TensorMeta(n, t.ne, 43) if len(t.ne) == 2 and t.ne[0] % 32 == 0 else t for n, t in tensors.items()}
        e0, e1 = estimate(meta, tensors, 0), estimate(meta, q3, 0)
        sizes = {0: (1, 4), 43: (32, 14)}
        def nbytes(t):
            n = 1
            for d in t.ne:
                n *= d
            block, size = sizes[t.type]
            return n // block * size
        r["estimate"] = [e1.model_bytes, sum(nbytes(t) for t in q3.values()), e0.model_bytes]
        r["expect"] = [p for p in expect(meta, q3).problems]
        cli("docs", "--out", "docs")
        r["docs"] = "`Q3_0`" in open("docs/tensor-types.md", encoding="utf-8").read()
        r["export"] = "Q3_0" in cli("export", "ksy") and "Q3_0" in cli("export", "hexpat")
        print("RESULT " + json.dumps(r))
        """,
        tmp_path,
    )
    r = _answers(out)
    assert r["check"] == [True, ["TI-TYPE-NEW"]]
    assert "needs 56" in r["size"]
    assert r["dump"][:2] == ["blk.0.ffn_up.weight", "Q3_0"] and r["dump"][-1] == "56" and r["nbytes"] == 56
    assert r["decode"] == "no decoder for ggml type Q3_0"
    got, computed, f32 = r["estimate"]
    assert got == computed < f32
    assert r["expect"] == []
    assert r["docs"] and r["export"]


def test_a_new_key_and_rules_declared_in_the_spec(changed_spec, tmp_path):
    out = _python(
        changed_spec,
        """
        import gguf_construct as g
        from gguf_construct.docgen.keynames import keynames_source
        r = {}
        f = g.GGUFFile.new()
        f.metadata.set("general.architecture", "llama", "STRING")
        f.metadata.set("general.name", 7, "UINT32")
        f.metadata.set("general.license.spdx", 5, "UINT32")
        f.metadata.set("llama.attention.window_length", "wide", "STRING")
        f.metadata.set("llama.context_length", 0, "UINT32")
        f.save("k.gguf")
        report = json.loads(cli("check", "k.gguf", "--format", "json", "--fail-on", "never"))[0]
        r["findings"] = sorted([x["rule"], x["path"], x["message"]] for x in report["findings"] if x["rule"] in ("META-KEY-TYPE", "META-CTX-RANGE", "META-NAME-TYPE"))
        cli("set", "k.gguf", "general.license.spdx", "MIT")
        cli("set", "k.gguf", "llama.attention.window_length", "4096")
        cli("set", "k.gguf", "llama.context_length", "4096")
        cli("set", "k.gguf", "general.name", "tiny", "--type", "STRING")
        report = json.loads(cli("check", "k.gguf", "--format", "json", "--fail-on", "never"))[0]
        r["fixed"] = sorted(x["rule"] for x in report["findings"] if x["rule"] in ("META-KEY-TYPE", "META-CTX-RANGE", "META-NAME-TYPE"))
        r["types"] = {kv["key"]: kv["type"] for kv in json.loads(cli("dump", "--json", "k.gguf"))["metadata"]}
        source = keynames_source()
        r["keynames"] = ['GENERAL_LICENSE_SPDX = "general.license.spdx"' in source, 'ARCH_ATTENTION_WINDOW_LENGTH = "{arch}.attention.window_length"' in source]
        r["explain"] = cli("rule", "META-CTX-RANGE")
        cli("docs", "--out", "docs")
        rules_md = open("docs/rules.md", encoding="utf-8").read()
        r["docs"] = ["general.license.spdx" in open("docs/keys.md", encoding="utf-8").read(), "META-CTX-RANGE" in rules_md and "Checks that general.name has type STRING" in rules_md]
        print("RESULT " + json.dumps(r))
        """,
        tmp_path,
    )
    r = _answers(out)
    assert r["findings"] == [
        [
            "META-CTX-RANGE",
            "metadata_kv[4].value",
            "key 'llama.context_length' = 0 is outside 1 to 1048576",
        ],
        ["META-KEY-TYPE", "metadata_kv[1].value_type", "key 'general.name' has type UINT32, expected STRING"],
        [
            "META-KEY-TYPE",
            "metadata_kv[2].value_type",
            "key 'general.license.spdx' has type UINT32, expected STRING",
        ],
        [
            "META-KEY-TYPE",
            "metadata_kv[3].value_type",
            "key 'llama.attention.window_length' has type STRING, expected UINT32",
        ],
        ["META-NAME-TYPE", "metadata_kv[1].value_type", "key 'general.name' has type UINT32, expected STRING"],
    ]
    assert r["fixed"] == []
    assert r["types"]["general.license.spdx"] == "STRING" and r["types"]["llama.attention.window_length"] == "UINT32"
    assert r["keynames"] == [True, True]
    assert "Context length out of range" in r["explain"] and "1 and 2^20" in r["explain"]
    assert "checks      {arch}.context_length is 1 to 1048576" in r["explain"]
    assert r["docs"] == [True, True]
