"""The model layer against llama.cpp's own loader (the oracle): runs when GGUF_CONSTRUCT_LLAMA_LIB points at a
libllama shared library (a `pip install llama-cpp-python` build ships one in site-packages/llama_cpp/lib).

Without it, every model rule is still tested on crafted files (tests/test_checker.py, test_model_strategies.py).
"""

from __future__ import annotations

import json
import os

import pytest

import gguf_construct

from gguf_construct.arch.synth import model_architectures
from gguf_construct.breaking.models import minimal_model
from gguf_construct.commands.main import main
from gguf_construct.fuzzing.targets import make_target

LIB = os.environ.get("GGUF_CONSTRUCT_LLAMA_LIB")
pytestmark = pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")


def test_make_target_refuses_a_missing_library(tmp_path):
    with pytest.raises(ValueError, match="libllama"):
        make_target(f"llama:{tmp_path / 'missing.so'}")


def test_every_architectures_minimal_model_loads_in_llama_cpp(tmp_path):
    """The minimal model the spec derives for each architecture is accepted by llama_model_load_from_file."""
    target = make_target(f"llama:{LIB}", timeout=60)
    refused = {}
    try:
        for name in model_architectures():
            path = tmp_path / f"{name}.gguf"
            minimal_model(name).save(path)
            out = target.run(str(path))
            if out.status != "accept":
                refused[name] = (out.status, out.detail[:200])
    finally:
        target.close()
    assert not refused, refused


def test_llama_target_agrees_with_the_llama_cpp_profile(tmp_path, capsys):
    """Models of every architecture and labelled breakages: the llama.cpp profile's verdict is the loader's.  An
    abort of the loader (a failed GGML_ASSERT in load_hparams or the vocabulary kills the process) is a rejection
    the checker must have predicted (MODEL-HPARAM-RANGE or MODEL-VOCAB)."""
    rc = main(
        [
            "fuzz",
            "--target",
            f"llama:{LIB}",
            "--profile",
            "llama.cpp",
            "--count",
            "300",
            "--seed",
            "7",
            "--out",
            str(tmp_path),
            "--no-minimize",
            "--timeout",
            "60",
        ]
    )
    capsys.readouterr()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert rc in (0, 1)
    per_class = summary["per_class"]
    assert all(per_class.get(k, 0) == 0 for k in ("false_accept", "false_reject", "hang", "value_mismatch")), per_class
    for f in summary["findings"]:
        assert f["kind"] == "crash" and "SIGABRT" in f["detail"], f
        assert {"MODEL-HPARAM-RANGE", "MODEL-VOCAB"} & set(f["oracle_rules"]), f


def test_corpus_vocab_files_load_in_llama_cpp():
    """The 19 converter-written vocabulary files load (vocab_only) in libllama, as the llama.cpp profile says."""
    from conftest import corpus_files

    files = corpus_files()
    if not files:
        pytest.skip("../shared/corpus not present")
    target = make_target(f"llama:{LIB}", timeout=60)
    try:
        verdicts = {p.name: target.run(str(p)).status for p in files}
    finally:
        target.close()
    assert set(verdicts.values()) == {"accept"}, verdicts


def test_split_models_load_from_the_first_shard_only_as_the_profile_says(tmp_path):
    """A model split with ``split``: libllama loads it from shard 1 (with its siblings) and refuses a later shard
    ("model must be loaded with the first split"); check --profile llama.cpp of each shard path says the same."""
    from gguf_construct import check
    from gguf_construct.operations.split import split_model

    target = make_target(f"llama:{LIB}", timeout=60)
    disagree = {}
    try:
        for name in ("llama", "gemma3", "qwen2", "mamba", "bert"):
            minimal_model(name).save(tmp_path / f"{name}.gguf")
            source = gguf_construct.load(tmp_path / f"{name}.gguf")
            shards = [p for p, _ in split_model(source, str(tmp_path / name), max_tensors=4)]
            source.close()
            assert len(shards) > 1
            for i, path in enumerate(shards):
                out = target.run(path)
                ours = check(path, profile="llama.cpp")
                if (out.status == "accept") != ours.valid or (out.status == "accept") != (i == 0):
                    disagree[path] = (out.status, out.detail[:200], sorted(ours.rules()))
                if i > 0:
                    assert "META-SPLIT-LATER" in ours.rules()
    finally:
        target.close()
    assert not disagree, disagree
