"""The suite's consumers that need nothing of ours: the JavaScript and C scoring scripts of readers/examples run
on a few cases of a written suite with our checker as the reader, and the files' names are safe to put on a
command line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gguf_construct.suite.cases import edge_cases
from gguf_construct.suite.manifest import cases_tsv, write_suite

ROOT = Path(__file__).resolve().parent.parent
PICK = ("edge/valid/four-dimensions.gguf", "edge/KV-KEY-LEN/key-65536-bytes.gguf", "edge/valid/alignment-8.gguf")


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    cases = [c for c in edge_cases() if c.path in PICK]
    assert len(cases) == 3
    manifest = write_suite(root, cases)
    return root, manifest


def test_index_matches_the_manifest(small_suite):
    root, manifest = small_suite
    assert (root / "cases.tsv").read_text() == cases_tsv(manifest)
    rows = [line.split("\t") for line in (root / "cases.tsv").read_text().splitlines()]
    assert rows[0] == ["file", "spec", "ggml", "llama.cpp"]
    assert [r[0] for r in rows[1:]] == [c["file"] for c in manifest["cases"]]


def test_file_names_are_safe_on_a_command_line():
    from gguf_construct.suite.cases import all_cases

    for case in all_cases():
        for path in case.files:
            assert re.fullmatch(r"[A-Za-z0-9._/-]+", path), path


def _reader(profile: str) -> list[str]:
    return [sys.executable, "-m", "gguf_construct", "check", "--no-config", "--profile", profile, "--fail-on", "error"]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_javascript_scoring_script(small_suite):
    root, _ = small_suite
    proc = subprocess.run(
        ["node", str(ROOT / "readers/examples/score.mjs"), str(root), "spec", *_reader("spec")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"pass": 3}


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_javascript_scoring_script_with_a_reader_module(small_suite, tmp_path):
    """A reader given as a module runs in the scoring process: it accepts by returning (values compared) and
    refuses by throwing."""
    root, manifest = small_suite
    accepted = {c["file"]: c for c in manifest["cases"] if c["expect"]["spec"] == "accept"}
    answers = {
        f: {"metadata": [{"key": m["key"], "value": m["value"]} for m in c["metadata"]]} for f, c in accepted.items()
    }
    first = sorted(answers)[0]
    answers[first]["metadata"][0]["value"] = "not what the file says"
    module = tmp_path / "reader.mjs"
    module.write_text(
        "const answers = " + json.dumps({str(root / f): a for f, a in answers.items()}) + ";\n"
        "export default (path) => { if (!(path in answers)) throw new Error('refused'); "
        "return answers[path]; };\n"
    )
    proc = subprocess.run(
        ["node", str(ROOT / "readers/examples/score.mjs"), str(root), "spec", str(module)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert json.loads(lines[-1]) == {"pass": len(manifest["cases"]) - 1, "wrong-values": 1}
    assert lines[0].startswith("wrong-values\t" + first)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_c_scoring_script(small_suite, tmp_path):
    root, _ = small_suite
    exe = tmp_path / "score"
    subprocess.run(["cc", "-o", str(exe), str(ROOT / "readers/examples/score.c")], check=True)
    reader = " ".join(_reader("ggml"))
    proc = subprocess.run([str(exe), str(root), "2", reader], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.stdout.strip().splitlines()[-1] == "3 passed, 0 failed", proc.stdout
    assert proc.returncode == 0


def test_reader_reproducers_are_what_their_generator_writes(tmp_path):
    """fuzz/findings/readers/ is written by fuzz/make_reader_findings.py, and its labels hold for our checker."""
    import importlib.util

    from gguf_construct import check

    spec = importlib.util.spec_from_file_location("make_reader_findings", ROOT / "fuzz/make_reader_findings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    manifest = module.write(str(tmp_path))
    committed = ROOT / "fuzz/findings/readers"
    assert (committed / "manifest.json").read_bytes() == (tmp_path / "manifest.json").read_bytes()
    for case in manifest["cases"]:
        assert (committed / case["file"]).read_bytes() == (tmp_path / case["file"]).read_bytes()
        for profile in ("spec", "ggml"):
            if case["expect"][profile] != "either":
                valid = check(str(tmp_path / case["file"]), profile=profile).valid
                assert valid == (case["expect"][profile] == "accept"), (case["file"], profile)


def test_upstream_reports_are_what_their_generator_writes(tmp_path):
    """fuzz/reports/ is written by fuzz/make_reports.py, names only committed reproducers, and the file each
    report embeds (base64 of gzip) is byte for byte the committed one."""
    import base64
    import gzip
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_reports", ROOT / "fuzz/make_reports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = module.write(str(tmp_path))
    committed = ROOT / "fuzz/reports"
    assert sorted(names) == sorted(p.name for p in committed.glob("*.md"))
    embedded = 0
    for name in names:
        text = (tmp_path / name).read_text()
        assert (committed / name).read_text() == text, name
        assert "Status: ready to file, not yet filed" in text
        for packed, file in re.findall(r"^echo '([A-Za-z0-9+/=]+)' \| base64 -d \| gunzip > (\S+)", text, re.M):
            data = gzip.decompress(base64.b64decode(packed))
            assert data == (ROOT / "fuzz/findings/readers" / file).read_bytes(), (name, file)
            embedded += 1
    assert embedded >= len(names) - 1  # every report but MLX's versions 0 and 4 (the suite's files) embeds one
