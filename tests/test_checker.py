"""The conformance checker: one crafted file per rule, profiles, no cascades, never raising, corpus, CLI."""

from __future__ import annotations

import argparse
import io
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings

import gguf_construct
from gguf_construct.breaking import crafting
from gguf_construct.checker import Report, check
from gguf_construct.commands.check import add_cli
from gguf_construct.rulebook import container
from gguf_construct.rulebook.catalog import across_files_rules, catalog, implemented, predicates, structural_rules
from gguf_construct.strategies import gguf_files

from conftest import corpus_files

CARRIER = crafting.carrier().to_bytes()


def _run(crafted: crafting.Crafted, tmp_path, profile: str = "spec", monkeypatch=None) -> list[Report]:
    if monkeypatch is not None:
        for k, v in crafted.limits.items():
            monkeypatch.setitem(container.LIMITS, k, v)
    files = crafted.files or {crafted.file_name: crafted.data}
    paths = []
    for name, data in files.items():
        p = tmp_path / name
        p.write_bytes(data)
        paths.append(str(p))
    return [check(p, profile=profile, data=crafted.check_data) for p in paths]


# -- the catalog and the registry ----------------------------------------------------------------------------------
def test_every_rule_is_implemented_and_has_a_crafted_file():
    missing = [rid for rid in catalog() if rid not in implemented()]
    assert not missing, f"rules without predicate or structural walk: {missing}"
    untested = [rid for rid in catalog() if not crafting.breakages_for(rid) and "dormant" not in catalog()[rid].raw]
    assert not untested, f"rules without a crafted file: {untested}"


def test_registry_names_only_catalog_rules():
    ids = set(catalog())
    assert {rid for rid, _ in predicates()} <= ids
    assert structural_rules() <= ids and across_files_rules() <= ids
    assert {r for b in crafting.BREAKAGES.values() for r in b.rules} <= ids


def test_carrier_draws_no_finding():
    for profile in ("spec", "ggml"):
        report = check(CARRIER, profile=profile, data=True)
        assert report.findings == [] and report.valid and not report.internal_errors
    gguf_construct.load(CARRIER)


# -- one crafted file per rule -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(crafting.BREAKAGES))
def test_crafted_file_fires_its_rules_and_no_unrelated_error(name, tmp_path, monkeypatch):
    crafted = crafting.craft(name)
    reports = _run(crafted, tmp_path, profile=crafted.profile, monkeypatch=monkeypatch)
    fired = {f.rule for r in reports for f in r.findings}
    errors = {f.rule for r in reports for f in r.errors()}
    assert crafted.rules <= fired, (crafted.rules - fired, [f for r in reports for f in r.findings])
    assert errors <= crafted.rules, [f for r in reports for f in r.errors()]
    for r in reports:
        assert not r.internal_errors, r.internal_errors
        for f in r.findings:
            assert "?>" not in f.message, f  # every template field was supplied
            assert f.offset is None or 0 <= f.offset <= max(
                len(d) for d in (crafted.files or {0: crafted.data}).values()
            )


def test_breakage_applies_to_other_valid_files():
    base = crafting.carrier(2, "big").to_bytes()
    for name, b in crafting.BREAKAGES.items():
        if b.needs_carrier:
            continue
        crafted = crafting.craft(name, base=base)
        report = check(crafted.data) if not crafted.files else None
        if report is not None and crafted.file_name == crafting.CARRIER_NAME and not crafted.limits:
            assert crafted.rules <= report.rules(), name


def test_offsets_point_at_the_broken_bytes():
    report = check(crafting.craft("bool-not-0-or-1").data)
    (f,) = [f for f in report.findings if f.rule == "KV-BOOL"]
    data = crafting.craft("bool-not-0-or-1").data
    assert data[f.offset] == 2 and f.path.endswith(".value")
    report = check(crafting.craft("alignment-24").data)
    (f,) = [f for f in report.findings if f.rule == "ALIGN-POW2"]
    assert int.from_bytes(crafting.craft("alignment-24").data[f.offset : f.offset + 4], "little") == 24


# -- profiles ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, rule",
    [
        ("alignment-24", "ALIGN-POW2"),
        ("nested-array", "ARR-NESTED"),
        ("tensor-name-64", "TI-NAME-64"),
        ("reversed-data", "DATA-ORDER"),
        ("version-1", "HDR-V1-UNSUPPORTED"),
        ("big-endian", "HDR-ENDIAN"),
    ],
)
def test_ggml_only_restrictions_are_errors_under_ggml(name, rule, tmp_path):
    crafted = crafting.craft(name)
    spec_report = _run(crafted, tmp_path)[0]
    ggml_report = _run(crafted, tmp_path, profile="ggml")[0]
    assert spec_report.valid and rule in spec_report.rules()
    assert not ggml_report.valid and rule in {f.rule for f in ggml_report.errors()}


@pytest.mark.parametrize(
    "name, rule",
    [
        ("bool-not-0-or-1", "KV-BOOL"),
        ("key-upper-case", "KV-KEY-CHARSET"),
        ("invalid-utf8", "STR-UTF8"),
        ("alignment-4", "ALIGN-MULT8"),
    ],
)
def test_spec_errors_that_ggml_accepts_are_warnings_under_ggml(name, rule):
    data = crafting.craft(name).data
    assert not check(data).valid
    report = check(data, profile="ggml")
    assert report.valid and rule in report.rules()


def test_severities_come_from_the_catalog():
    report = check(crafting.craft("alignment-24").data, profile="ggml")
    for f in report.findings:
        assert f.severity == catalog()[f.rule].profiles["ggml"]


# -- going on after problems ---------------------------------------------------------------------------------------
def test_unparseable_kv_yields_one_finding():
    raw = crafting.carrier()
    raw.kvs.insert(5, crafting.RawKV(b"test.bad", 77, b"\0" * 8))
    report = check(raw.to_bytes())
    assert [f.rule for f in report.errors()] == ["KV-TYPE"]
    assert report.errors()[0].path == "metadata_kv[5].value_type"
    assert not any(f.rule.startswith(("TI-", "DATA-")) for f in report.findings)


def test_many_problems_are_all_reported():
    raw = crafting.carrier()
    raw.set_raw("tokenizer.ggml.add_bos_token", "BOOL", b"\x07")
    raw.set("test.Bad", "UINT8", 1)
    raw.kvs.append(crafting.RawKV(b"general.name", 8, raw.value_bytes("STRING", "again")))
    raw.tensors[-1].type = 5
    raw.tensors[0].name = b"n" * 70
    report = check(raw.to_bytes())
    assert {"KV-BOOL", "KV-KEY-CHARSET", "KV-KEY-DUP", "TI-TYPE", "TI-NAME-LEN"} <= {f.rule for f in report.errors()}


def test_empty_array_with_bad_type_does_not_stop_the_walk():
    report = check(crafting.craft("empty-array-bad-type").data)
    assert report.rules() == {"ARR-TYPE"}  # the tensors after it were read and found fine


def test_never_raises_on_mutated_files():
    rng = np.random.default_rng(1234)
    for i in range(300):
        data = bytearray(CARRIER)
        if i % 3 == 0:
            data = data[: int(rng.integers(0, len(data)))]
        else:
            for pos in rng.integers(0, len(data), size=int(rng.integers(1, 6))):
                data[pos] = int(rng.integers(0, 256))
        report = check(bytes(data), profile="ggml" if i % 2 else "spec", data=True)
        assert isinstance(report, Report)
        assert not report.internal_errors, (i, report.internal_errors)


@settings(max_examples=40, deadline=None)
@given(gguf_files(max_tensors=2))
def test_generated_valid_files_have_no_error(sample):
    data, _ = sample
    report = check(data, data=True)
    assert report.valid, report.errors()
    assert not report.internal_errors


# -- the corpus ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_files_have_no_error(path):
    report = check(path)
    assert report.valid, report.errors()
    assert not report.internal_errors
    assert report.version in (1, 2, 3) and report.byte_order == "little"


# -- Python API ----------------------------------------------------------------------------------------------------
def test_sources_path_bytes_and_file_object(tmp_path):
    p = tmp_path / crafting.CARRIER_NAME
    p.write_bytes(CARRIER)
    for source in (str(p), p, CARRIER, bytearray(CARRIER), memoryview(CARRIER), io.BytesIO(CARRIER)):
        report = gguf_construct.check(source)
        assert report.valid and report.version == 3 and report.byte_order == "little"
    with open(p, "rb") as fh:
        assert gguf_construct.check(fh).file == str(p)
    assert gguf_construct.check(str(p)).file == str(p)


def test_bad_profile_is_a_usage_error():
    with pytest.raises(ValueError):
        check(CARRIER, profile="nope")


# -- command line --------------------------------------------------------------------------------------------------
def _cli(capsys, *argv):
    parser = argparse.ArgumentParser(prog="gguf-construct")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["check", *argv])
    rc = args.func(args)
    out, err = capsys.readouterr()
    return rc, out, err


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_cli_exit_codes(tmp_path, capsys):
    good = _write(tmp_path, crafting.CARRIER_NAME, CARRIER)
    bad = _write(tmp_path, "Bad-1B-v1.0-Q4_0.gguf", crafting.craft("bool-not-0-or-1").data)
    warn = _write(tmp_path, "Warn-1B-v1.0-Q4_0.gguf", crafting.craft("reversed-data").data)
    assert _cli(capsys, good)[0] == 0
    rc, out, _ = _cli(capsys, bad)
    assert rc == 1 and "KV-BOOL" in out and "INVALID" in out
    assert _cli(capsys, warn)[0] == 0
    assert _cli(capsys, warn, "--fail-on", "warning")[0] == 1
    assert _cli(capsys, warn, "--profile", "ggml")[0] == 1
    assert _cli(capsys, str(tmp_path / "missing.gguf"))[0] == 2
    with pytest.raises(SystemExit) as exc:
        _cli(capsys, good, "--format", "xml")
    assert exc.value.code == 2


def test_cli_ggml_profile_says_why(tmp_path, capsys):
    p = _write(tmp_path, "x.gguf", crafting.craft("alignment-24").data)
    rc, out, _ = _cli(capsys, p, "--profile", "ggml")
    assert rc == 1 and "would reject" in out and "ALIGN-POW2" in out
    rc, out, _ = _cli(capsys, _write(tmp_path, crafting.CARRIER_NAME, CARRIER), "--profile", "ggml")
    assert rc == 0 and "would accept" in out


def test_cli_json_shape(tmp_path, capsys):
    sub = tmp_path / "sub"
    sub.mkdir()
    _write(sub, crafting.CARRIER_NAME, CARRIER)
    _write(tmp_path, "b.gguf", crafting.craft("duplicate-key").data)
    rc, out, _ = _cli(capsys, str(tmp_path), "--format", "json", "--jobs", "2")
    doc = json.loads(out)
    assert rc == 1 and len(doc) == 2
    for entry in doc:
        assert set(entry) - {"notes"} == {"file", "valid", "version", "byte_order", "findings", "counts"}
        assert all(isinstance(n, str) for n in entry.get("notes", []))
        for f in entry["findings"]:
            assert set(f) == {"rule", "severity", "message", "offset", "path", "count"}
    by_name = {e["file"].rsplit("/", 1)[-1]: e for e in doc}
    assert by_name[crafting.CARRIER_NAME]["valid"] is True
    assert by_name["b.gguf"]["valid"] is False
    assert any(f["rule"] == "KV-KEY-DUP" and f["severity"] == "error" for f in by_name["b.gguf"]["findings"])


def test_cli_sarif_shape(tmp_path, capsys):
    p = _write(tmp_path, "b.gguf", crafting.craft("duplicate-key").data)
    rc, out, _ = _cli(capsys, p, "--format", "sarif")
    log = json.loads(out)
    assert rc == 1 and log["version"] == "2.1.0" and "$schema" in log
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(catalog())
    assert all(r["help"]["text"] and r["shortDescription"]["text"] for r in rules)
    results = run["results"]
    dup = next(r for r in results if r["ruleId"] == "KV-KEY-DUP")
    assert dup["level"] == "error" and rules[dup["ruleIndex"]]["id"] == "KV-KEY-DUP"
    region = dup["locations"][0]["physicalLocation"]["region"]
    assert isinstance(region["byteOffset"], int)
    assert {r["level"] for r in results} <= {"error", "warning", "note"}


def test_cli_checks_shard_sets_together(tmp_path, capsys):
    crafted = crafting.craft("tensor-in-two-shards")
    for name, data in crafted.files.items():
        _write(tmp_path, name, data)
    first = sorted(crafted.files)[0]
    rc, out, _ = _cli(capsys, str(tmp_path / first), "--format", "json")  # the sibling is found on disk
    doc = json.loads(out)
    assert [os.path.basename(e["file"]) for e in doc] == sorted(crafted.files)  # the files, no set pseudo-file
    assert [f["rule"] for f in doc[0]["findings"] if f["rule"].startswith("META-SPLIT")] == ["META-SPLIT-DUP"]
    assert not [f for f in doc[1]["findings"] if f["rule"].startswith("META-SPLIT")]  # checked as a member


def test_cli_prints_invalid_utf8_in_any_locale(tmp_path):
    """Keys and strings of invalid UTF-8 (read losslessly with surrogateescape) print as JSON \\udcXX escapes and as
    backslash escapes in text, even where stdout is strict UTF-8 or ASCII (found by fuzzing the CLI)."""
    import os
    import subprocess
    import sys

    f = gguf_construct.GGUFFile.new()
    f.metadata.set("general.architecture", "llama", "STRING")
    f.metadata.set("test.bad", "ab\udc80cd", "STRING")
    f.metadata.set("test.wide", "x\U0001f600", "STRING")
    path = tmp_path / "bad.gguf"
    f.save(path)
    for encoding in ("utf-8:strict", "ascii:strict"):
        env = dict(os.environ, PYTHONIOENCODING=encoding)
        for args, parse in (
            (["dump", "--json"], True),
            (["check", "--format", "sarif"], True),
            (["dump"], False),
            (["check"], False),
        ):
            run = subprocess.run(
                [sys.executable, "-m", "gguf_construct", *args, str(path)], capture_output=True, env=env
            )
            assert b"Traceback" not in run.stderr and run.returncode in (0, 1), (encoding, args, run.stderr)
            if parse:
                doc = json.loads(run.stdout.decode("utf-8"))
                if args[0] == "dump":
                    values = {m["key"]: m["value"] for m in doc["metadata"]}
                    assert values["test.bad"] == "ab\udc80cd" and values["test.wide"] == "x\U0001f600"
