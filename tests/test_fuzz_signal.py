"""The differential fuzzer gives signal, not noise (#13): only files the target claims to read, findings grouped by
cause, details and crash locations from the minimised reproducer, clean output folders, no .hypothesis/ left
behind, progress in logs, one timeout per hang."""

from __future__ import annotations

import json
import os

import pytest

from gguf_construct.format import structs
from gguf_construct.commands.main import main
from gguf_construct.fuzzing.oracle import expect
from gguf_construct.fuzzing.report import Disagreement, OutDirError, Results, prepare_out
from gguf_construct.fuzzing.runner import carriers, generate, normalize, run, signature, supported
from gguf_construct.fuzzing.targets import Outcome, Target


def _pool(**kw):
    return carriers(7, 30, **kw)


class FakeTarget(Target):
    """A reader in-process: ``decide(data) -> Outcome``; counts its runs."""

    name = "fake"

    def __init__(self, decide):
        self.decide = decide
        self.runs = 0

    def run(self, path: str) -> Outcome:
        self.runs += 1
        with open(path, "rb") as fh:
            return self.decide(fh.read())


def _family(data: bytes):
    return structs.detect(data[:8]) if len(data) >= 8 and data[:4] == b"GGUF" else (None, None)


def _v3_little_reader(data: bytes) -> Outcome:
    """Agrees with the spec on v3 little-endian files and rejects everything else."""
    if _family(data) != (3, "little"):
        return Outcome("reject", detail=f"unsupported version at byte {len(data)}")
    return Outcome("accept" if expect(data, "spec").valid else "reject", detail="invalid")


def test_only_files_the_target_reads_are_generated():
    stream = generate(3, versions=[3], byte_orders=["little"])
    for _ in range(150):
        data = next(stream).data
        version, order = _family(data)
        assert version not in (1, 2) and (order in (None, "little") or version not in (1, 2, 3)), (version, order)
    assert supported(b"GGUF" + (3).to_bytes(4, "little"), [3], ["little"])
    assert not supported(b"GGUF" + (2).to_bytes(4, "little"), [3], ["little"])
    assert not supported(b"GGUF" + (3).to_bytes(4, "big"), [3], ["little"])
    assert supported(b"GGUF" + (9).to_bytes(4, "little"), [3], ["little"])  # every reader must reject v9


def test_a_v3_little_reader_has_no_false_rejects_when_it_says_so():
    everything = run(FakeTarget(_v3_little_reader), count=120, seed=4, minimize=False, progress=False)
    assert everything.per_class["false_reject"] > 0
    told = run(
        FakeTarget(_v3_little_reader),
        count=120,
        seed=4,
        minimize=False,
        progress=False,
        versions=[3],
        byte_orders=["little"],
    )
    assert told.per_class["false_reject"] == 0, told.table()


def test_cli_validates_the_supported_lists(capsys):
    assert main(["fuzz", "--target", "cmd:true", "--count", "1", "--versions", "3,7"]) == 2
    assert "versions" in capsys.readouterr().err
    assert main(["fuzz", "--target", "cmd:true", "--count", "1", "--byte-orders", "middle"]) == 2
    assert main(["fuzz", "--target", "cmd:true", "--count", "1", "--types", "Q4_0,NOPE"]) == 2
    assert "NOPE" in capsys.readouterr().err


def test_tensor_types_restrict_the_carriers():
    pool = _pool(tensor_types=["F32"], versions=[3], byte_orders=["big"])
    assert any(doc.tensors for doc in pool)
    for doc in pool:
        assert (doc.version, doc.byte_order) == (3, "big")
        assert all(gtype.name == "F32" for _, gtype, _, _ in doc.tensors)


def test_signatures_do_not_split_by_values_inside_messages():
    a = normalize("bad byte b'\\xff' at offset 0x1c (key 'a.b')")
    assert a == normalize("bad byte b'\\x00' at offset 0x2f0 (key 'zzz')")
    assert normalize("tensor 'x' has 7 dims") == normalize("tensor 'yy' has 12 dims")
    assert normalize("unknown type 33") != normalize("unknown key")
    exp = expect(b"GGUF", "spec")
    s1 = signature("false_reject", exp, Outcome("reject", detail="bad value \\xfe at 17"), [])
    s2 = signature("false_reject", exp, Outcome("reject", detail="bad value \\x01 at 230"), [])
    assert s1 == s2
    tb = {"traceback": 'File "/lib/reader.py", line 219, in read\nIndexError: x'}
    e1, e2 = expect(b"GGUF", "spec"), expect(b"GGML" + bytes(20), "spec")
    assert e1.rules != e2.rules
    c1 = signature("crash", e1, Outcome("crash", detail="IndexError: index 3 out of range", extra=tb), [])
    c2 = signature("crash", e2, Outcome("crash", detail="IndexError: index 70 out of range", extra=tb), [])
    assert c1 == c2 == "crash:IndexError@reader.py:219"  # one place in the target, one finding


def test_crash_location_and_detail_come_from_the_minimised_reproducer(tmp_path):
    tb = (
        'Traceback (most recent call last):\n  File "/x/gguf_construct/fuzzing/worker.py", line 70, in main\n'
        '  File "/home/u/myreader.py", line {line}, in parse\nIndexError: x'
    )

    def decide(data):
        if _family(data)[0] == 3 and len(data) > 40:
            return Outcome(
                "crash", detail=f"IndexError: read past {len(data)} bytes", extra={"traceback": tb.format(line=42)}
            )
        return Outcome("accept" if expect(data, "spec").valid else "reject", detail="no")

    results = run(FakeTarget(decide), count=40, seed=1, progress=False, out_dir=str(tmp_path / "out"))
    crashes = [f for f in results.findings.values() if f.kind == "crash"]
    assert crashes
    for f in crashes:
        assert f.location == "myreader.py:42" and "@myreader.py:42" in f.signature
        assert f.minimized is not None and len(f.minimized) < f.size
        assert f"read past {len(f.minimized)} bytes" in f.detail  # measured on the reproducer
        assert not f.file.startswith("crash-crash")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert all(f["location"] == "myreader.py:42" for f in summary["findings"] if f["kind"] == "crash")


def test_a_hang_costs_one_run_and_a_hanging_candidate_ends_the_minimisation():
    def decide(data):
        if _family(data)[0] == 2:
            return Outcome("hang", detail="no answer after 10 s")
        return Outcome("accept" if expect(data, "spec").valid else "reject", detail="no")

    target = FakeTarget(decide)
    results = run(target, count=80, seed=6, progress=False)
    hangs = [f for f in results.findings.values() if f.kind == "hang"]
    assert hangs and all(f.minimized is None for f in hangs)
    assert target.runs == 80  # no minimisation run for any hang (no other disagreement in this reader)

    calls_after_hang = []

    def decide2(data):
        if len(data) < 60:  # every small candidate hangs
            calls_after_hang.append(len(data))
            return Outcome("hang", detail="no answer")
        if _family(data)[0] == 3:
            return Outcome("crash", detail="Boom: x")
        return Outcome("accept" if expect(data, "spec").valid else "reject", detail="no")

    run(FakeTarget(decide2), count=30, seed=2, progress=False, max_minimize=1)
    assert 0 < len(calls_after_hang) <= 31  # at most one hang inside the one minimisation


def _results_with(kind="false_reject", sig="false_reject:bad #", data=b"GGUF1234"):
    r = Results("fake", "spec", 0)
    r.add(Disagreement(kind, sig, "detail", [], "valid", len(data), data))
    return r


def test_out_folder_is_cleaned_or_refused(tmp_path):
    out = tmp_path / "out"
    _results_with().write(str(out))
    first = sorted(os.listdir(out))
    assert "summary.json" in first and len(first) == 2
    assert not first[0].startswith("false_reject-false_reject")
    _results_with(data=b"GGUF5678").write(str(out))  # an earlier run's output is replaced, not mixed in
    second = sorted(os.listdir(out))
    assert len(second) == 2 and second != first
    (out / "mine.gguf").write_bytes(b"x")
    with pytest.raises(OutDirError, match="mine.gguf"):
        prepare_out(str(out))
    assert (out / "mine.gguf").exists()
    assert main(["fuzz", "--target", "cmd:true", "--count", "1", "--out", str(out)]) == 2


def test_no_hypothesis_folder_is_left_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert len(carriers(11, 5)) == 5
    assert not (tmp_path / ".hypothesis").exists()


def test_progress_lines_when_stderr_is_not_a_terminal(capsys):
    run(
        FakeTarget(lambda d: Outcome("accept" if expect(d, "spec").valid else "reject")),
        count=20,
        seed=3,
        minimize=False,
    )
    err = capsys.readouterr().err
    assert "fuzz: 20/20 files" in err and "\r" not in err
    assert err.count("\n") >= 5
