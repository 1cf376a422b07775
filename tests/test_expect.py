"""``expect``: every tensor the loader asks for, with concrete shapes, against the replayed loader and (with
GGUF_CONSTRUCT_LLAMA_LIB) against libllama itself."""

from __future__ import annotations

import json
import os

import pytest

from gguf_construct.arch.expect import STATUSES, expect, expect_architecture, parse_setting
from gguf_construct.arch.loader import TensorMeta
from gguf_construct.arch.synth import minimal_model_parts, model_architectures
from gguf_construct.breaking.models import build_model_file
from gguf_construct.commands.main import main

QWEN2_05B = [
    "embedding_length=896",
    "attention.head_count=14",
    "attention.head_count_kv=2",
    "feed_forward_length=4864",
    "block_count=24",
]


def _by_name(e):
    out = {}
    for t in e.tensors:
        out.setdefault(t.name, []).append(t)
    return out


def test_concrete_shapes_follow_the_derived_quantities():
    """Qwen2-0.5B's hyperparameters: K/V projections are n_embd x (head_count_kv * n_embd / head_count)."""
    e = expect_architecture("qwen2", QWEN2_05B, n_vocab=151936)
    t = _by_name(e)
    assert t["blk.0.attn_k.weight"][0].shape == (896, 128)
    assert t["blk.0.attn_q.weight"][0].shape == (896, 896)
    assert t["blk.23.ffn_down.weight"][0].shape == (4864, 896)
    assert t["token_embd.weight"][0].shape == (896, 151936)
    assert "blk.24.attn_k.weight" not in t
    assert e.quantities["n_embd_head_k"] == 64 and e.quantities["n_embd_k_gqa"] == 128
    assert all(x.status is None for x in e.tensors)  # no file, no status
    # without a separate output.weight the loader asks for token_embd again, as a duplicate
    assert [x.duplicate for x in t["token_embd.weight"]] == [False, True]
    assert t["output.weight"][0].required is False


def test_key_length_overrides_the_head_size():
    e = expect_architecture("qwen2", QWEN2_05B + ["attention.key_length=80", "attention.value_length=80"], n_vocab=100)
    t = _by_name(e)
    assert t["blk.0.attn_k.weight"][0].shape == (896, 160)
    assert t["blk.0.attn_q.weight"][0].shape == (896, 896)  # qwen2's loader writes Q as n_embd x n_embd


def test_settings_are_typed_as_the_loader_reads_them():
    key, v = parse_setting(
        "llama", "attention.layer_norm_rms_epsilon=1e-6", {"llama.attention.layer_norm_rms_epsilon": "float"}
    )
    assert key == "llama.attention.layer_norm_rms_epsilon" and v.type == "FLOAT32"
    key, v = parse_setting("llama", "general.name=x")
    assert key == "general.name" and v.type == "STRING"
    key, v = parse_setting("llama", "feed_forward_length=[1,2]", {"llama.feed_forward_length": "uint32_t"})
    assert v.type == "ARRAY" and v.item_type == "UINT32" and v.value == [1, 2]
    with pytest.raises(ValueError):
        parse_setting("llama", "no-equals-sign")


@pytest.mark.parametrize("name", model_architectures())
def test_every_minimal_model_is_exactly_what_expect_lists(name):
    """The minimal model of each architecture holds exactly the tensors expect lists as present; nothing has a
    wrong shape, nothing is unused, no required tensor is missing."""
    meta, tensors = minimal_model_parts(name)
    e = expect(meta, tensors)
    assert e.loads
    assert {t.status for t in e.tensors} <= set(STATUSES)
    assert {t.name for t in e.tensors if t.status == "present"} == set(tensors)
    assert not [t for t in e.tensors if t.status in ("shape", "unused") or (t.status == "missing" and t.required)]


def test_statuses_of_a_broken_file():
    meta, tensors = minimal_model_parts("llama")
    tensors = dict(tensors)
    del tensors["blk.0.attn_q.weight"]
    t = tensors["blk.1.ffn_up.weight"]
    tensors[t.name] = TensorMeta(t.name, (t.ne[0] + 1,) + tuple(t.ne[1:]), t.type)
    tensors["stray.weight"] = TensorMeta("stray.weight", (4,), 0)
    e = expect(meta, tensors)
    got = {x.name: x for x in e.tensors}
    assert got["blk.0.attn_q.weight"].status == "missing" and got["blk.0.attn_q.weight"].required
    assert got["blk.1.ffn_up.weight"].status == "shape"
    assert got["blk.1.ffn_up.weight"].file_shape[0] == got["blk.1.ffn_up.weight"].shape[0] + 1
    assert got["stray.weight"].status == "unused"
    assert not e.loads


def test_cli_json_and_exit_status(tmp_path, capsys):
    meta, tensors = minimal_model_parts("qwen2")
    path = tmp_path / "m.gguf"
    build_model_file(meta, tensors).save(path)
    assert main(["expect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert isinstance(doc, list) and {"name", "shape", "required", "status"} <= set(doc[0])
    assert {t["name"] for t in doc if t["status"] == "present"} == set(tensors)
    assert {t["status"] for t in doc} <= set(STATUSES)
    tensors = dict(tensors)
    del tensors["output_norm.weight"]
    bad = tmp_path / "bad.gguf"
    build_model_file(meta, tensors).save(bad)
    assert main(["expect", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "output_norm.weight" in out and "missing" in out
    assert main(["expect", "--arch", "qwen2", "--set", "embedding_length=128"]) == 0
    assert "[128, 32]" in capsys.readouterr().out
    assert main(["expect", "--arch", "no-such-arch"]) == 2


LIB = os.environ.get("GGUF_CONSTRUCT_LLAMA_LIB")


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
def test_libllama_asks_for_what_expect_lists(tmp_path):
    """Against llama.cpp's loader: the tensors it asks for (its ``create_tensor: loading tensor`` lines, in order)
    are the requests expect replays, for the minimal model of every architecture."""
    import subprocess
    import sys
    from pathlib import Path

    tool = Path(__file__).resolve().parent.parent / "tools" / "memory_differential.py"
    ours = {}
    for name in model_architectures():
        meta, tensors = minimal_model_parts(name)
        path = tmp_path / f"{name}.gguf"
        build_model_file(meta, tensors).save(path)
        ours[str(path)] = [r.name for r in expect(meta, tensors).plan.requests]
    proc = subprocess.run(
        [sys.executable, str(tool), "--lib", LIB, "--requests", *ours], capture_output=True, text=True, timeout=1800
    )
    got = {r["path"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(got) == set(ours), proc.stderr[-400:]
    wrong = {
        Path(p).stem: (ours[p], got[p]["requests"]) for p in ours if not got[p]["ok"] or got[p]["requests"] != ours[p]
    }
    assert not wrong, {
        k: next(((i, a, b) for i, (a, b) in enumerate(zip(*v)) if a != b), len(v[0]) - len(v[1]))
        for k, v in wrong.items()
    }


def _corpus():
    from conftest import corpus_files

    return corpus_files()


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.name)
def test_corpus_vocabularies_list_every_tensor_as_missing(path):
    """The corpus holds vocabularies (no tensors): as a model, each misses every tensor expect lists, some of them
    required (llama.cpp's load stops at the first)."""
    import gguf_construct as g
    from gguf_construct.arch import from_file

    meta, tensors = from_file(g.load(path))
    e = expect(meta, tensors)
    assert not tensors and not e.loads
    if e.tensors:  # an architecture whose hyperparameters are all present gets as far as the tensors
        assert {t.status for t in e.tensors} == {"missing"}
        assert any(t.required for t in e.tensors)


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
def test_libllama_stops_at_the_first_missing_tensor_of_the_corpus():
    """llama.cpp asks for the corpus vocabularies' tensors in expect's order, up to the first required one."""
    import subprocess
    import sys
    from pathlib import Path

    import gguf_construct as g
    from gguf_construct.arch import from_file

    paths = [str(p) for p in _corpus()]
    if not paths:
        pytest.skip("../shared/corpus is absent")
    tool = Path(__file__).resolve().parent.parent / "tools" / "memory_differential.py"
    proc = subprocess.run(
        [sys.executable, str(tool), "--lib", LIB, "--requests", *paths], capture_output=True, text=True, timeout=1800
    )
    got = {r["path"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(got) == set(paths), proc.stderr[-400:]
    compared = 0
    for p in paths:
        meta, tensors = from_file(g.load(p))
        ours = [r.name for r in expect(meta, tensors).plan.requests]
        theirs = got[p]["requests"]
        assert not got[p]["ok"]
        assert theirs == ours[: len(theirs)], (p, theirs, ours[: len(theirs)])
        compared += bool(theirs)
    assert compared > 0
