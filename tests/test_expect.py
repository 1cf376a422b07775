"""``expect``: every tensor the loader asks for, with concrete shapes, against the replayed loader and (with
GGUF_CONSTRUCT_LLAMA_LIB) against libllama itself."""

from __future__ import annotations

import json
import os

import pytest

from gguf_construct.arch.expect import STATUSES, expect, expect_architecture, parse_setting
from gguf_construct.arch.loader import TensorMeta
from gguf_construct.arch.synth import build_model_file, minimal_model_parts, model_architectures
from gguf_construct.cli import main

QWEN2_05B = ["embedding_length=896", "attention.head_count=14", "attention.head_count_kv=2",
             "feed_forward_length=4864", "block_count=24"]


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
    e = expect_architecture("qwen2", QWEN2_05B + ["attention.key_length=80", "attention.value_length=80"],
                            n_vocab=100)
    t = _by_name(e)
    assert t["blk.0.attn_k.weight"][0].shape == (896, 160)
    assert t["blk.0.attn_q.weight"][0].shape == (896, 896)  # qwen2's loader writes Q as n_embd x n_embd


def test_settings_are_typed_as_the_loader_reads_them():
    key, v = parse_setting("llama", "attention.layer_norm_rms_epsilon=1e-6",
                           {"llama.attention.layer_norm_rms_epsilon": "float"})
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
    assert doc["arch"] == "qwen2" and doc["loads"]
    assert {"name", "shape", "required", "status"} <= set(doc["tensors"][0])
    assert {t["name"] for t in doc["tensors"] if t["status"] == "present"} == set(tensors)
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
    """Against llama.cpp's loader: a file of exactly the listed required tensors loads; without any one of them
    (the first and the last required tensor of each architecture) llama.cpp refuses, naming that tensor."""
    from gguf_construct.fuzzing.targets import make_target

    target = make_target(f"llama:{LIB}", timeout=60)
    wrong = {}
    try:
        for name in model_architectures():
            meta, tensors = minimal_model_parts(name)
            e = expect(meta, tensors)
            required = [t.name for t in e.tensors if t.required and not t.duplicate and t.status == "present"]
            path = tmp_path / f"{name}.gguf"
            build_model_file(meta, {n: tensors[n] for n in tensors}).save(path)
            if target.run(str(path)).status != "accept":
                wrong[name] = "the listed tensors do not load"
                continue
            for drop in dict.fromkeys([required[0], required[-1]]):
                cut = tmp_path / f"{name}-cut.gguf"
                build_model_file(meta, {n: t for n, t in tensors.items() if n != drop}).save(cut)
                out = target.run(str(cut))
                if out.status == "accept" or drop not in (out.detail or ""):
                    wrong[f"{name} without {drop}"] = (out.status, (out.detail or "")[:160])
    finally:
        target.close()
    assert not wrong, wrong
