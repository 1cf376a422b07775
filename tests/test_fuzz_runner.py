"""The differential runner: targets, oracle comparison, classification, minimisation, reports, CLI."""

import importlib.util
import json
import os
import sys
import textwrap

import pytest

from gguf_construct.commands.main import main
from gguf_construct.fuzzing.minimize import ddmin
from gguf_construct.fuzzing.oracle import compare, expect
from gguf_construct.fuzzing.runner import run
from gguf_construct.fuzzing.samples import generate
from gguf_construct.fuzzing.targets import CmdTarget, PythonTarget, make_target

HERE = os.path.dirname(os.path.abspath(__file__))


def _module(tmp_path, body: str) -> str:
    (tmp_path / "fuzzmods").mkdir(exist_ok=True)
    (tmp_path / "fuzzmods" / "__init__.py").write_text("")
    (tmp_path / "fuzzmods" / "reader.py").write_text(textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    os.environ["PYTHONPATH"] = str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return "fuzzmods.reader"


def test_our_own_reader_agrees_with_the_oracle(tmp_path):
    mod = _module(
        tmp_path,
        """
        import gguf_construct as g
        from gguf_construct.filemodel.dump import file_summary

        def read(path):
            if not g.check(path).valid:
                raise ValueError("invalid")
            return file_summary(g.load(path), full=True)
    """,
    )
    results = run(
        PythonTarget(f"{mod}:read", timeout=20), count=60, seed=5, out_dir=str(tmp_path / "out"), progress=False
    )
    assert results.generated == 60 and not results.findings, results.table()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["generated"] == 60 and summary["findings"] == []


def test_every_class_is_found_and_minimised(tmp_path):
    mod = _module(
        tmp_path,
        """
        import time

        def read(path):
            data = open(path, "rb").read()
            if data[:4] != b"GGUF":
                return {}                      # accepts anything that is not GGUF: false accepts
            if len(data) == 24:
                raise IndexError("boom")       # crash
            if len(data) < 24:
                raise ValueError("short")
            if data[4:8] == bytes([0, 0, 0, 1]):
                time.sleep(5)                  # hang (big-endian v1 only)
            if data[4] == 2:
                raise ValueError("no v2")      # false rejects
            return {"metadata": [{"key": "invented.key", "type": "UINT8", "value": 1}]}  # value mismatch
    """,
    )
    results = run(
        PythonTarget(f"{mod}:read", timeout=0.5),
        count=100,
        seed=2,
        out_dir=str(tmp_path / "out"),
        progress=False,
        max_minimize=8,
    )
    kinds = {f.kind for f in results.findings.values()}
    assert {"false_accept", "false_reject", "hang", "value_mismatch"} <= kinds, results.table()
    minimized = [f for f in results.findings.values() if f.minimized is not None]
    first = list(results.findings.values())[:8]
    assert len(minimized) == sum(1 for f in first if f.kind != "hang")  # a hang is not minimised (one timeout)
    for f in minimized:
        assert len(f.minimized) <= f.size
        assert (tmp_path / "out" / f.file).read_bytes() == f.minimized
    assert sum(len(f.minimized) for f in minimized) < sum(f.size for f in minimized)
    # a non-GGUF magic is accepted by this reader: the reproducer shrinks to the magic alone
    assert ddmin(b"GGUG" + bytes(60), lambda d: d[:4] != b"GGUF" and len(d) >= 4 and d[:3] == b"GGU") == b"GGU\0"


def test_cmd_target_exit_codes_and_json(tmp_path):
    script = tmp_path / "reader.sh"
    script.write_text(
        '#!/bin/sh\ncase "$1" in *ok*) echo \'{"metadata": []}\'; exit 0;; *seg*) kill -SEGV $$;;'
        " *slow*) sleep 5;; esac\nexit 3\n"
    )
    script.chmod(0o755)
    t = CmdTarget(f"{script} {{file}}", timeout=0.5)
    assert t.run("x-ok").status == "accept" and t.run("x-ok").summary == {"metadata": []}
    assert t.run("x-bad").status == "reject"
    out = t.run("x-seg")
    assert out.status == "crash" and "SIGSEGV" in out.detail
    assert t.run("x-slow").status == "hang"


def test_python_worker_survives_crashes_and_memory_limit(tmp_path):
    mod = _module(
        tmp_path,
        """
        import os

        def read(path):
            if "kill" in path:
                os.kill(os.getpid(), 9)
            if "big" in path:
                return len(bytearray(8 << 30))
            if "dict" in path:
                return {"metadata": [{"key": "a.b", "type": "FLOAT32", "value": float("nan")}]}
            raise ValueError("nope")
    """,
    )
    t = PythonTarget(f"{mod}:read", timeout=20, memory=1 << 30)
    try:
        assert t.run("p-kill").status == "crash"
        out = t.run("p-big")
        assert out.status == "crash" and "MemoryError" in out.detail
        assert t.run("p-x").status == "reject"
        assert t.run("p-dict").summary["metadata"][0]["value"] == "nan"
    finally:
        t.close()


def test_compare_reports_each_kind_of_difference():
    ours = {
        "metadata": [
            {"key": "a.b", "type": "UINT32", "value": 3},
            {"key": "a.f", "type": "FLOAT32", "value": "nan"},
            {"key": "a.s", "type": "ARRAY", "item_type": "STRING", "length": 2, "value": ["x", "y"]},
        ],
        "tensors": [{"name": "w", "type": "Q4_0", "shape": [32, 2], "offset": 0, "nbytes": 36}],
    }
    same = {
        "metadata": [
            {"key": "a.b", "type": 4, "value": 3},
            {"key": "a.f", "type": "FLOAT32", "value": "NaN"},
            {"key": "a.s", "type": "ARRAY", "item_type": 8, "value": ["x", "y"]},
        ],
        "tensors": [{"name": "w", "type": 2, "shape": [32, 2], "offset": 0}],
    }
    assert compare(ours, same) == []
    other = {
        "metadata": [
            {"key": "a.b", "type": "INT32", "value": 3},
            {"key": "a.s", "type": "ARRAY", "item_type": "STRING", "value": ["x"]},
            {"key": "new.k", "type": "UINT8", "value": 1},
        ],
        "tensors": [{"name": "w", "type": "Q4_0", "shape": [32, 3], "offset": 32}],
    }
    whats = {(d["what"], d["where"]) for d in compare(ours, other)}
    assert whats == {
        ("type", "a.b"),
        ("key", "a.f"),
        ("value", "a.s"),
        ("key", "new.k"),
        ("tensor shape", "w"),
        ("tensor offset", "w"),
    }


def test_generate_is_reproducible():
    a = [s.data for _, s in zip(range(15), generate(9))]
    b = [s.data for _, s in zip(range(15), generate(9))]
    assert a == b


def test_ddmin_finds_the_needle():
    data = bytes(range(200))
    assert ddmin(data, lambda d: 77 in d and 150 in d) == bytes([77, 150])


def test_oracle_values_for_valid_files():
    for _, s in zip(range(10), generate(1, valid_share=1.0)):
        exp = expect(s.data)
        assert exp.valid and exp.summary is not None


def test_unknown_target_is_a_usage_error(capsys):
    assert main(["fuzz", "--target", "nope", "--count", "1"]) == 2
    with pytest.raises(ValueError):
        make_target("rust:thing")


@pytest.mark.skipif(importlib.util.find_spec("gguf") is None, reason="gguf-py not installed")
def test_cli_against_gguf_py(tmp_path, capsys):
    rc = main(
        [
            "fuzz",
            "--target",
            "gguf-py",
            "--count",
            "40",
            "--seed",
            "3",
            "--timeout",
            "2",
            "--out",
            str(tmp_path),
            "--no-minimize",
        ]
    )
    out = capsys.readouterr().out
    assert rc in (0, 1) and "false accepts" in out and (tmp_path / "summary.json").exists()


def test_ggml_target_needs_a_library(tmp_path):
    with pytest.raises(ValueError, match="libggml-base"):
        make_target(f"ggml:{tmp_path / 'missing.so'}")


_GGML_LIB = os.environ.get("GGUF_CONSTRUCT_GGML_LIB")


@pytest.mark.skipif(not _GGML_LIB, reason="set GGUF_CONSTRUCT_GGML_LIB to a libggml-base to run ggml's reader")
def test_ggml_target_agrees_with_the_ggml_profile(tmp_path, capsys):
    """ggml's own reader against the ggml profile: no false accepts or rejects on seeded files (aborts inside ggml
    and embedded-NUL strings are ggml's own findings)."""
    rc = main(
        [
            "fuzz",
            "--target",
            f"ggml:{_GGML_LIB}",
            "--profile",
            "ggml",
            "--count",
            "200",
            "--seed",
            "5",
            "--out",
            str(tmp_path),
            "--no-minimize",
        ]
    )
    capsys.readouterr()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc in (0, 1)
    assert summary["per_class"].get("false_accept", 0) == 0 and summary["per_class"].get("false_reject", 0) == 0


def test_a_file_in_the_current_folder_named_like_a_library_module_does_not_break_a_target(tmp_path, monkeypatch):
    # ntpath imports ``nt`` when it can (Windows); a stray nt.py where the fuzzer runs used to be imported by
    # every worker, which then never answered
    (tmp_path / "nt.py").write_text("raise SystemExit('a stray nt.py was imported')\n")
    (tmp_path / "mytarget.py").write_text("import ntpath\n\ndef read(path):\n    raise ValueError('no')\n")
    monkeypatch.chdir(tmp_path)
    target = PythonTarget("mytarget:read", timeout=20)  # found in the current folder, after everything else
    try:
        target.start()
        assert target.run(str(tmp_path / "x.gguf")).status == "reject"
    finally:
        target.close()
