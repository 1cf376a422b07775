"""Depth in llama.cpp's loader (issue #39): seeds that load all the way, the spec-aware mutations that keep a model
loadable while changing one hyperparameter or flipping one key, coverage per file over time, and the seed screen
(seconds; the screen's test is skipped when fuzz/build_targets.sh has not been run)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from gguf_construct.arch import model_spec
from gguf_construct.arch.expect import expect
from gguf_construct.breaking.models import minimal_model
from gguf_construct.fuzzing import campaign, seedmodels, specmutator
from gguf_construct.rulebook import read_head

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small() -> bytes:
    meta, tensors = seedmodels.small_model("llama")
    from gguf_construct.breaking.models import build_model_file

    return build_model_file(meta, tensors).to_bytes()


def test_small_model_is_complete_and_smaller_than_the_minimal_one(small):
    p = specmutator.parse(small)
    assert p is not None and expect(*p.model).loads
    assert len(small) < len(minimal_model("llama").to_bytes()) / 3


def test_a_vocabulary_of_every_tokenizer_model_and_pre_tokenizer():
    vocab = model_spec()["vocab"]
    made = dict(seedmodels.vocab_models())
    bpe_pre = {label.split("-", 1)[1] for label in made if label.startswith("gpt2-")}
    assert bpe_pre == set(vocab["bpe_pre"])
    others = {m for m in vocab["models"] if m != "gpt2"}
    assert others <= set(made)
    for label in ("llama", "bert", "t5", "rwkv", "plamo2", "none", "gpt2-qwen2"):
        p = specmutator.parse(made[label])
        assert p is not None and p.arch == "llama", label
        assert expect(*p.model).loads, label  # the replayed full load accepts it
    # PLaMo-2 needs a byte token for each of the 256 bytes (spec/model.yaml byte_token_pattern)
    tokens = specmutator.parse(made["plamo2"]).model[0]["tokenizer.ggml.tokens"].value
    assert {f"<0x{b:02X}>" for b in range(256)} <= set(tokens)


def test_fit_changes_one_hyperparameter_and_mostly_keeps_the_model_loadable(small):
    p = specmutator.parse(small)
    loads = changed = 0
    for seed in range(16):
        raw = p.raw.copy()
        label = specmutator.m_fit(p, raw, random.Random(seed))
        assert label in ("fit.refit", "fit.value")
        out = specmutator.parse(specmutator._to_bytes(raw))
        meta = out.model[0]
        diff = [k for k in meta if k in p.model[0] and repr(meta[k].value) != repr(p.model[0][k].value)]
        diff += [k for k in meta if k not in p.model[0]]
        assert len(diff) <= 1
        changed += bool(diff)
        loads += expect(*out.model).loads
    assert changed >= 8 and loads >= 8


def test_flip_sets_a_value_the_spec_enumerates_or_turns_a_bool_over(small):
    p = specmutator.parse(small)
    enumerated = specmutator._enumerated()
    seen = set()
    for seed in range(30):
        raw = p.raw.copy()
        label = specmutator.m_flip(p, raw, random.Random(seed))
        seen.add(label)
        meta = specmutator.parse(specmutator._to_bytes(raw)).model[0]
        if label == "flip.enum":
            hits = [
                k
                for k, values in enumerated.items()
                if k.replace("{arch}", "llama") in meta
                and meta[k.replace("{arch}", "llama")].value in [str(v) if isinstance(v, str) else v for v in values]
            ]
            assert hits
    assert seen == {"flip.bool", "flip.enum"}


def test_array_writes_a_per_layer_array_of_a_key_the_loader_reads_as_one(small):
    p = specmutator.parse(small)
    keys = specmutator._array_keys()
    assert "{arch}.attention.head_count" in keys
    got = set()
    for seed in range(12):
        raw = p.raw.copy()
        assert specmutator.m_array(p, raw, random.Random(seed)) == "array.hparam"
        ctx = read_head(specmutator._to_bytes(raw))
        got |= {kv.key for kv in ctx.kvs if kv.vtype == 9 and kv.key.startswith("llama.")}
    assert any(k.replace("llama", "{arch}", 1) in keys for k in got)


def test_docs_plot_coverage_per_file_over_time(tmp_path, monkeypatch):
    from gguf_construct.docgen.pages import fuzzing

    def run(arm: str, values: list[int]) -> dict:
        return {
            "arm": arm,
            "run": 0,
            "edges": values[-1],
            "execs": 5,
            "series": [[1.0, values[0], 0, 1], [9.0, values[-1], 0, 2]],
            "crashes": [],
            "aborts": [],
            "coverage": {"a.cpp": {"regions": [values[-1], 100]}, "b.cpp": {"regions": [1, 10]}},
            "coverage_over_time": [
                {"cpu_s": t, "files": {"a.cpp": {"regions": [v, 100]}, "b.cpp": {"regions": [1, 10]}}}
                for t, v in zip((0, 5, 10), values)
            ],
        }

    rec = {
        "target": "llama",
        "doc": "d",
        "focus": ["a.cpp", "b.cpp"],
        "arms": ["spec", "bytes"],
        "budget_cpu_s": 10,
        "seeds": 3,
        "started": "now",
        "runs": [run("spec", [10, 30, 40]), run("bytes", [10, 12, 20])],
        "oracle": {},
        "unreached": {},
        "reach": {
            "union": {
                "files": {"all": {"covered": 41, "not taken": 9, "off the load path": 50, "uncalled": 10}},
                "top": [{"kind": "off the load path", "file": "a.cpp", "function": "create_memory", "regions": 50}],
                "off_path": ["create_memory"],
            }
        },
    }
    (tmp_path / "llama.json").write_text(json.dumps(rec))
    monkeypatch.setattr(fuzzing, "_folder", lambda: tmp_path)
    got = fuzzing.over_time(rec)
    assert got["spec"]["a.cpp"] == [(0, 10), (5, 30), (10, 40)]
    assert got["spec"]["focus"][-1] == (10, 41)
    text = fuzzing._sec_campaigns(None)
    assert "fuzzing-llama-files.svg" in text and "10 CPU s" in text
    assert "| all arms, all runs | all focus files | 41 | 9 | 50 | 10 | 110 |" in text
    assert "spec 30, bytes 10 (spec-aware 3.00x)" in text  # regions found beyond the seeds
    svg = fuzzing.plots()["fuzzing-llama-files.svg"]
    assert svg.count("<polyline") == 2 * 3  # two arms x (sum + two files)


def test_screen_moves_aside_a_seed_that_kills_the_loader(tmp_path):
    exe = campaign.binary(campaign.TARGETS["llama"], "bytes")
    if not shutil.which("clang-14") and not shutil.which("clang"):
        pytest.skip("clang is not installed (sh fuzz/build_targets.sh installs it)")
    if not exe.exists():
        pytest.skip(f"{exe} is not built (run sh fuzz/build_targets.sh)")
    bad = tmp_path / "gating"
    shutil.copy(ROOT / "fuzz" / "findings" / "cov" / "llama-gating-func-16.gguf", bad)
    fine = tmp_path / "fine"
    fine.write_bytes(dict(seedmodels.vocab_models())["llama"])
    aborts = tmp_path / "abort"  # an abort is recorded by the harness, not a killed process
    shutil.copy(ROOT / "fuzz" / "findings" / "cov" / "llama-expert-groups-without-experts.gguf", aborts)
    assert campaign.screen(exe, [fine, bad, aborts], campaign.runtime_env("bytes")) == [bad]


def test_a_crash_report_keeps_the_message_of_its_own_input_not_an_earlier_abort():
    tail = (
        "src/llama-vocab.cpp:2544: GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed\n"
        "llama_loader: src/llama-hparams.cpp:298: bool llama_hparams::is_mla() const: Assertion `x' failed.\n"
        "==1== ERROR: libFuzzer: deadly signal\n"
        "    #8 0x1 in llama_hparams::is_mla() const /w/vendor/llama.cpp/src/llama-hparams.cpp:299:5\n"
    )
    rec = campaign.parse_report(tail)
    assert rec["kind"] == "signal" and "is_mla" in rec["message"]
    assert rec["signature"].startswith("llama_hparams::is_mla@llama-hparams.cpp:299")
