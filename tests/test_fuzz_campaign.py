"""The coverage-guided campaigns: the spec-aware mutator, crash signatures, the docs page, and a smoke run of each
built target (seconds; skipped when fuzz/build_targets.sh has not been run or clang is missing)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from gguf_construct.breaking.models import minimal_model
from gguf_construct.fuzzing import campaign, specmutator
from gguf_construct.rulebook import read_head

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def model() -> bytes:
    return minimal_model("llama").to_bytes()


def test_every_kind_edits_one_thing_and_the_file_still_splits(model):
    rng = random.Random(7)
    p = specmutator.parse(model)
    assert p is not None and p.arch == "llama"
    made = set()
    for kind, edit in specmutator.KINDS.items():
        for _ in range(20):
            raw = p.raw.copy()
            label = edit(p, raw, rng)
            if label is None:
                continue
            out = specmutator._to_bytes(raw)
            assert out != model, label
            made.add(kind)
            if kind in ("key", "tensor", "alignment"):  # edits by meaning keep the file readable
                assert read_head(out).head_complete, label
            break
    assert made == set(specmutator.KINDS)


def test_unedited_file_is_written_back_byte_exact(model):
    p = specmutator.parse(model)
    assert specmutator._to_bytes(p.raw.copy()) == model


def test_tensor_kind_adds_what_the_loader_asks_for(model):
    from gguf_construct.arch.expect import expect

    p = specmutator.parse(model)
    raw = p.raw.copy()
    raw.tensors = [t for t in raw.tensors if t.name != b"output_norm.weight"]
    raw.relayout()
    cut = specmutator.parse(specmutator._to_bytes(raw))
    assert any(e.status == "missing" for e in expect(*cut.model).tensors)
    added = set()
    for seed in range(8):
        raw2 = cut.raw.copy()
        assert specmutator.m_tensor(cut, raw2, random.Random(seed)) in ("tensor.expected", "tensor.reshaped")
        added |= {t.name for t in raw2.tensors} - {t.name for t in cut.raw.tensors}
    assert b"output_norm.weight" in added  # the one required tensor missing


def test_mutate_respects_max_size_and_refuses_what_it_cannot_split(model):
    rng = random.Random(3)
    assert specmutator.mutate(b"not a gguf file", rng) is None
    for _ in range(30):
        out = specmutator.mutate(model, rng, max_size=len(model) + 4096)
        assert out is None or len(out) <= len(model) + 4096


def test_crossover_splices_fields_of_two_files(model):
    other = minimal_model("gpt2").to_bytes()
    outs = {specmutator.crossover(model, other, random.Random(s)) for s in range(12)}
    outs.discard(None)
    assert outs and all(read_head(o).head_complete for o in outs)
    assert any(b"gpt2" in o for o in outs)


def test_libfuzzer_entry_points_return_bytes_or_none(model):
    specmutator.setup("ggml")
    got = [specmutator.libfuzzer_mutate(model, 1 << 20, seed) for seed in range(20)]
    assert any(isinstance(g, bytes) for g in got) and any(g is None for g in got)


ASAN = """==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1 at pc 0x2
    #0 0x55 in __asan_memcpy (/bin/x+0x1)
    #1 0x56 in gguf_reader::read(std::string&) const /tmp/w/vendor/llama.cpp/ggml/src/gguf.cpp:300:9
    #2 0x57 in gguf_init_from_reader(gguf_reader const&, gguf_init_params) /tmp/w/vendor/llama.cpp/ggml/src/gguf.cpp:560:20
    #3 0x58 in gguf_init_from_buffer /tmp/w/vendor/llama.cpp/ggml/src/gguf.cpp:1014:12
    #4 0x59 in LLVMFuzzerTestOneInput /repo/fuzz/harness/ggml_reader.cpp:80:5
"""


def test_signature_keeps_the_first_frames_inside_ggml():
    rec = campaign.parse_report(ASAN)
    assert rec["kind"] == "asan" and rec["message"].startswith("heap-buffer-overflow")
    assert rec["signature"].startswith("gguf_reader::read@gguf.cpp:300 <- gguf_init_from_reader@gguf.cpp:560")
    assert "LLVMFuzzerTestOneInput" not in rec["signature"]
    assert campaign.parse_report("GGUF_HARNESS: abort() called\n")["kind"] == "abort"


def test_docs_page_renders_a_recorded_campaign(tmp_path, monkeypatch):
    from gguf_construct.docgen.pages import fuzzing

    run = {
        "arm": "spec",
        "run": 0,
        "edges": 120,
        "execs": 50,
        "series": [[1.0, 100, 0, 3], [9.0, 120, 0, 4]],
        "crashes": [],
        "aborts": [{"kind": "abort", "signature": "f@gguf.cpp:1", "message": "GGML_ASSERT(x)"}],
        "coverage": {"ggml/src/gguf.cpp": {"regions": [10, 20], "lines": [30, 40], "branches": [1, 2]}},
    }
    other = dict(
        run,
        arm="bytes",
        edges=60,
        coverage={"ggml/src/gguf.cpp": {"regions": [5, 20], "lines": [9, 40], "branches": [1, 2]}},
        aborts=[],
    )
    rec = {
        "target": "ggml",
        "doc": "d",
        "focus": ["ggml/src/gguf.cpp"],
        "arms": ["spec", "bytes"],
        "budget_cpu_s": 10,
        "seeds": 3,
        "started": "now",
        "runs": [run, other],
        "oracle": {},
        "unreached": {},
    }
    (tmp_path / "ggml.json").write_text(json.dumps(rec))
    monkeypatch.setattr(fuzzing, "_folder", lambda: tmp_path)
    text = fuzzing._sec_campaigns(None)
    assert "2.00x" in text and "GGML_ASSERT(x)" in text
    svg = fuzzing.plots()["fuzzing-ggml.svg"]
    assert svg.count("<polyline") == 2


# -- smoke runs of the built targets -----------------------------------------------------------------------------------
BIN = campaign.DEFAULT_BIN


def _need(binary: str) -> Path:
    if shutil.which("clang-14") is None and shutil.which("clang") is None:
        pytest.skip("clang is not installed (sh fuzz/build_targets.sh installs it)")
    path = BIN / binary
    if not path.exists():
        pytest.skip(f"{path} is not built (run sh fuzz/build_targets.sh)")
    return path


@pytest.mark.parametrize(
    "binary,arm",
    [
        ("ggml_reader", "bytes"),
        ("ggml_reader_spec", "spec"),
        ("llama_loader", "bytes"),
        ("llama_loader_spec", "spec"),
        ("llama_loader", "ossfuzz"),
    ],
)
def test_smoke_run_of_each_target(binary, arm, tmp_path, model):
    exe = _need(binary)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "llama").write_bytes(model)
    (corpus / "empty").write_bytes(b"GGUF\x03\0\0\0" + bytes(16))
    env = campaign.runtime_env(arm, {"GGUF_HARNESS_ABORT_DIR": str(tmp_path)})
    proc = subprocess.run(
        [
            str(exe),
            str(corpus),
            "-runs=40",
            "-max_len=65536",
            "-timeout=20",
            "-seed=1",
            f"-artifact_prefix={tmp_path}/",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "INITED" in proc.stderr and "Done 40 runs" in proc.stderr


def test_harness_prints_the_verdicts_of_every_read_path(tmp_path, model):
    _need("ggml_reader")  # skips with the reason when the target is not built
    seed = tmp_path / "m.gguf"
    seed.write_bytes(model)
    got = campaign.verdicts(campaign.TARGETS["ggml"], "bytes", [seed], BIN)
    assert got[str(seed)] == {"buffer.no_alloc": True, "buffer.alloc": True, "file.no_alloc": True, "file.alloc": True}


def test_coverage_guided_reports_embed_their_committed_reproducers():
    import base64
    import gzip
    import re

    reports = sorted((ROOT / "fuzz/reports/cov").glob("*.md"))
    assert reports
    embedded = 0
    for report in reports:
        text = report.read_text()
        assert "Status: ready to file, not yet filed" in text
        for packed, file in re.findall(r"^echo '([A-Za-z0-9+/=]+)' \| base64 -d \| gunzip > (\S+)", text, re.M):
            assert gzip.decompress(base64.b64decode(packed)) == (ROOT / "fuzz/findings/cov" / file).read_bytes()
            embedded += 1
    assert embedded == len(list((ROOT / "fuzz/findings/cov").glob("*.gguf")))  # every reproducer is in a report


def test_a_fuzzer_that_stops_using_cpu_is_killed_and_recorded(tmp_path, monkeypatch):
    """A deadlocked fuzzer (asleep, no CPU tick) would never reach its CPU budget: it is killed after
    STALL_SECONDS of wall time, recorded as a stall and restarted; after MAX_STALLS the run ends."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ggml_reader"
    fake.write_text("#!/bin/sh\nexec sleep 600\n")
    fake.chmod(0o755)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "a").write_bytes(b"GGUF")
    monkeypatch.setattr(campaign, "STALL_SECONDS", 1.0)
    result = campaign.run_arm(campaign.TARGETS["ggml"], "bytes", seeds, tmp_path / "work", 5.0, bin_dir=bin_dir)
    stalls = [c for c in result.crashes if c.get("kind") == "stall"]
    assert len(stalls) == result.restarts == campaign.MAX_STALLS and result.cpu < 5.0
