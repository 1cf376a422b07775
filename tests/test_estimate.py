"""``estimate``: the memory llama.cpp allocates for a context, from the sizing rules of spec/architectures/_memory.yaml;
with GGUF_CONSTRUCT_LLAMA_LIB, against the sizes libllama itself reports."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from gguf_construct.arch.expect import architecture_parts
from gguf_construct.arch.memory import ContextParams, estimate, memory_spec, row_size
from gguf_construct.arch.synth import minimal_model_parts
from gguf_construct.breaking.models import build_model_file
from gguf_construct.commands.main import main

MiB = 1 << 20
QWEN2_05B = [
    "embedding_length=896",
    "attention.head_count=14",
    "attention.head_count_kv=2",
    "feed_forward_length=4864",
    "block_count=24",
    "context_length=32768",
]


def test_the_spec_names_what_create_memory_decides():
    spec = memory_spec()
    assert "bert" in spec["no_memory"]
    assert spec["context_defaults"]["n_ctx"] == 512 and spec["context_defaults"]["type_k"] == "GGML_TYPE_F16"
    assert spec["n_ctx_pad"] == 256 and spec["cpu_buffer_alignment"] == 32
    assert spec["hybrid_default_filters"]["filter_recr"] == "hparams.is_recr(il)"


def test_qwen2_kv_cache_is_the_known_figure():
    """Qwen2-0.5B: 24 layers x (K + V) x 2 KV heads x 64 x 32768 cells x F16 = 384 MiB."""
    meta, tensors = architecture_parts("qwen2", QWEN2_05B, n_vocab=151936)
    e = estimate(meta, tensors, 32768)
    assert e.memory == "kv" and e.kv_bytes == 384 * MiB == e.kv_size_bytes
    assert len(e.layers) == 24 and {x.k_width for x in e.layers} == {128}
    assert e.output_bytes == 151936 * 4  # logits for one sequence
    q8 = estimate(meta, tensors, 32768, ContextParams(type_k="Q8_0", type_v="Q8_0"))
    assert q8.kv_bytes == 24 * 2 * row_size("Q8_0", 128) * 32768
    four = estimate(meta, tensors, 32768, ContextParams(n_seq_max=4))
    assert four.n_ctx_seq == 8192 and four.kv_bytes == 384 * MiB and four.output_bytes == 4 * 151936 * 4


def test_context_sizes_are_padded_as_llama_cpp_pads_them():
    meta, tensors = minimal_model_parts("llama")
    e = estimate(meta, tensors, 1000)
    assert e.n_ctx == 1024 and e.caches["kv"] == 1024
    e = estimate(meta, tensors, 1000, ContextParams(n_seq_max=3))
    assert e.n_ctx_seq == 512 and e.n_ctx == 1536  # pad(1024 / 3) per sequence


def test_sliding_window_cache_is_window_sized_without_swa_full():
    meta, tensors = minimal_model_parts("cohere2")
    full = estimate(meta, tensors, 4096)
    small = estimate(meta, tensors, 4096, ContextParams(swa_full=False))
    n_swa = int(small_plan_swa(meta, tensors))
    assert full.caches["swa"] == 4096
    assert small.caches["swa"] == min(4096, -(-(n_swa + 512) // 256) * 256)
    assert small.kv_bytes < full.kv_bytes


def small_plan_swa(meta, tensors):
    from gguf_construct.arch.loader import plan_load

    return plan_load(meta, tensors, vocab_only=False).hparams.n_swa


def test_recurrent_state_does_not_grow_with_the_context():
    meta, tensors = minimal_model_parts("mamba")
    a, b = estimate(meta, tensors, 512), estimate(meta, tensors, 65536)
    assert a.memory == "recurrent" and a.kv_bytes == 0 and a.recurrent_bytes == b.recurrent_bytes > 0
    two = estimate(meta, tensors, 512, ContextParams(n_seq_max=2))
    assert two.recurrent_bytes == 2 * a.recurrent_bytes


def test_hybrid_splits_layers_between_caches():
    meta, tensors = minimal_model_parts("jamba")
    e = estimate(meta, tensors, 4096)
    kinds = {x.il: x.cache for x in e.layers}
    assert e.memory.startswith("hybrid") and set(kinds.values()) <= {"kv", "recurrent"}
    assert len(kinds) == len(e.layers)  # each layer in one cache


def test_encoders_have_no_cache():
    meta, tensors = minimal_model_parts("bert")
    e = estimate(meta, tensors, 512)
    assert e.memory == "none" and e.kv_bytes == e.recurrent_bytes == 0 and e.replayed


def test_dsa_cache_adds_a_k_only_indexer_cache():
    """llama_kv_cache_dsa: the MLA cache (K only) plus an indexer cache of one head of indexer_head_size."""
    meta, tensors = minimal_model_parts("deepseek32")
    e = estimate(meta, tensors, 512)
    assert e.replayed and e.memory == "kv_cache_dsa" and set(e.caches) == {"kv", "lid"}
    lid = [x for x in e.layers if x.cache == "lid"]
    head = int(meta["deepseek32.attention.indexer.key_length"].value)
    assert lid and all(x.k_width == head and x.v_bytes == 0 for x in lid)
    assert e.buffers["lid"] == sum(x.k_bytes for x in lid) == len(lid) * head * 2 * 512


@pytest.mark.parametrize("arch", ["deepseek4", "dots3note", "glm-dsa", "glm5-next", "hy_v4", "minimax-m3", "qwen4exp"])
def test_special_memory_classes_are_replayed(arch):
    meta, tensors = minimal_model_parts(arch)
    e = estimate(meta, tensors, 4096)
    assert e.replayed and not e.notes and e.kv_bytes + e.recurrent_bytes > 0


def test_context_checks_come_from_the_spec():
    """llama_init_from_model's refusals, run from the spec: their messages are llama.cpp's."""
    checks = str(memory_spec()["context_checks"])
    assert "quantized V cache requires flash_attn to be enabled" in checks
    meta, tensors = minimal_model_parts("llama")
    with pytest.raises(ValueError, match="quantized V cache requires flash_attn"):
        estimate(meta, tensors, 512, ContextParams(type_v="Q8_0", flash_attn=False))
    with pytest.raises(ValueError, match="K cache type q4_0 with block size 32 does not divide n_embd_head_k=16"):
        estimate(meta, tensors, 512, ContextParams(type_k="Q4_0"))
    assert estimate(meta, tensors, 512, ContextParams(type_k="Q4_0", flash_attn=False)).kv_bytes > 0
    meta, tensors = minimal_model_parts("deepseek32")
    with pytest.raises(ValueError, match=r"does not support different K \(f16\) and V \(f32\)"):
        estimate(meta, tensors, 512, ContextParams(type_v="F32"))


def test_cli_sweep_json(tmp_path, capsys):
    meta, tensors = minimal_model_parts("llama")
    path = tmp_path / "m.gguf"
    build_model_file(meta, tensors).save(path)
    assert main(["estimate", str(path), "--ctx", "512", "--ctx", "4096", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["ctx"] for r in rows] == [512, 4096]
    for r in rows:
        assert {
            "ctx",
            "model_bytes",
            "kv_bytes",
            "recurrent_bytes",
            "output_bytes",
            "compute_bytes",
            "total_bytes",
        } <= set(r)
        assert r["total_bytes"] == sum(
            r[k] for k in ("model_bytes", "kv_bytes", "recurrent_bytes", "output_bytes", "compute_bytes")
        )
    assert rows[1]["kv_bytes"] == 8 * rows[0]["kv_bytes"]
    assert rows[0]["model_bytes"] > 0
    assert main(["estimate", str(path), "--ctx", "2048", "--layers"]) == 0
    assert "per layer" in capsys.readouterr().out


LIB = os.environ.get("GGUF_CONSTRUCT_LLAMA_LIB")


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
@pytest.mark.parametrize("arch", ["llama", "qwen2", "cohere2", "gemma2", "mamba", "jamba", "rwkv7", "bert"])
def test_figures_agree_with_libllama(arch, tmp_path):
    """Weights, KV cache, recurrent state and output buffer as llama.cpp reports them (MiB to 2 decimals) for
    several configurations; the compute estimate within 25%."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    import memory_differential as md

    path = tmp_path / f"{arch}.gguf"
    meta, tensors, offsets = md.wide_model(arch, path)
    configs = [
        {"ctx": 4096},
        {"ctx": 8192, "seqs": 2, "flash_attn": False, "type_k": "F32", "type_v": "F32"},
        {"ctx": 4096, "swa_full": False, "type_k": "Q8_0", "type_v": "Q8_0", "flash_attn": True},
    ]
    import subprocess

    proc = subprocess.run(
        [sys.executable, md.__file__, "--lib", LIB, "--worker", str(path), json.dumps(configs)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    model_lines, results = md.collect(proc.stdout)
    assert sorted(results) == list(range(len(configs))), proc.stderr[-500:]
    for index, r in sorted(results.items()):
        cfg = configs[index]
        params = ContextParams(
            n_seq_max=cfg.get("seqs"),
            type_k=cfg.get("type_k"),
            type_v=cfg.get("type_v"),
            flash_attn=cfg.get("flash_attn"),
            swa_full=cfg.get("swa_full"),
        )
        assert r["ok"] is not None, (cfg, proc.stderr[-300:])  # the context was created or refused, not aborted
        if not r["ok"]:  # llama.cpp refuses the context (a cache type that does not fit the heads): so do we
            with pytest.raises(ValueError):
                estimate(meta, tensors, cfg["ctx"], params, offsets=offsets)
            continue
        got = md.reported(r["lines"])
        got["model"] = md.reported(model_lines)["model"]
        mine = md.ours(estimate(meta, tensors, cfg["ctx"], params, offsets=offsets))
        for c in ("model", "kv", "recurrent", "output"):
            assert abs((got[c] or 0.0) - mine[c]) < 0.005, (cfg, c, got, mine)
        assert abs(mine["compute"] - got["compute"]) <= 0.25 * got["compute"], (cfg, got, mine)


def test_sweep_rows_carry_the_estimate(tmp_path):
    from gguf_construct.filemodel.gguffile import load
    from gguf_construct.operations.sweep import sweep_one

    meta, tensors = minimal_model_parts("llama")
    path = tmp_path / "m.gguf"
    build_model_file(meta, tensors).save(path)
    row = sweep_one(str(path))
    offsets = {t.name: (0, int(t.offset)) for t in load(str(path)).tensors}
    assert row["memory_bytes"] == {
        "4096": estimate(meta, tensors, 4096, offsets=offsets).total_bytes,
        "train": estimate(meta, tensors, 0, offsets=offsets).total_bytes,
    }
    tensors = {n: t for n, t in tensors.items() if n != "output_norm.weight"}
    bad = tmp_path / "bad.gguf"
    build_model_file(meta, tensors).save(bad)
    assert sweep_one(str(bad))["memory_bytes"] == {}


def _quantized(arch: str, type_name: str):
    import dataclasses

    from gguf_construct.format.spec import tensor_types

    t = {x.name: x for x in tensor_types()}[type_name]
    meta, tensors = minimal_model_parts(
        arch, sizes={"embedding_length": 256, "feed_forward_length": 1024}, n_vocab=1000
    )
    return meta, {
        n: dataclasses.replace(m, type=t.id)
        if len(m.ne) >= 2 and n.endswith(".weight") and "norm" not in n and int(m.ne[0]) % t.block_size == 0
        else m
        for n, m in tensors.items()
    }


def test_cpu_repack_takes_matmul_weights_of_the_repacked_types():
    """ggml-cpu repacks Q4_0 on AVX2 (rows a multiple of 8) but Q8_0 only on ARM: the CPU_REPACK buffer holds the
    matrix weights (and the tied output), the mapped range the rest."""
    from gguf_construct.arch.loader import plan_load
    from gguf_construct.arch.memory import repacked

    meta, tensors = _quantized("llama", "Q4_0")
    plan = plan_load(meta, tensors, vocab_only=False)
    moved = repacked(plan, tensors, {"avx2"})
    names = {n for n, _, _ in moved}
    assert "blk.0.attn_q.weight" in names and "blk.0.ffn_down.weight" in names
    assert not any("norm" in n for n in names)
    assert any(dup for n, dup, _ in moved if n == "token_embd.weight")  # the tied output is a repacked copy
    x86 = estimate(meta, tensors, 512, ContextParams(cpu_features=frozenset({"avx2"})))
    plain = estimate(meta, tensors, 512, ContextParams(cpu_features=frozenset()))
    assert x86.repack_bytes == sum((b + 31) // 32 * 32 for _, _, b in moved) > 0 and plain.repack_bytes == 0
    assert x86.notes and "CPU_REPACK" in x86.notes[0]
    meta, tensors = _quantized("llama", "Q8_0")
    plan = plan_load(meta, tensors, vocab_only=False)
    assert repacked(plan, tensors, {"avx2"}) == []
    assert repacked(plan, tensors, {"neon", "dotprod"})


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
@pytest.mark.parametrize("type_name", ["Q4_0", "Q4_K", "IQ4_NL", "Q8_0"])
def test_cpu_repack_agrees_with_libllama(type_name, tmp_path):
    """The model buffers (mapped + CPU_REPACK) as libllama logs them on this machine's CPU."""
    import subprocess

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    import memory_differential as md

    from gguf_construct.filemodel.gguffile import load

    meta, tensors = _quantized("qwen2", type_name)
    path = tmp_path / "q.gguf"
    build_model_file(meta, tensors).save(path)
    offsets = {t.name: (0, int(t.offset)) for t in load(str(path)).tensors}
    proc = subprocess.run(
        [sys.executable, md.__file__, "--lib", LIB, "--worker", str(path), '[{"ctx": 512}]'],
        capture_output=True,
        text=True,
        timeout=600,
    )
    model_lines, _ = md.collect(proc.stdout)
    logged = {
        m.group(1): float(m.group(2))
        for m in (__import__("re").search(r"(\w+) model buffer size\s*=\s*([\d.]+) MiB", x) for x in model_lines)
        if m
    }
    e = estimate(meta, tensors, 512, offsets=offsets)
    assert logged.get("CPU_REPACK", 0.0) == round(e.repack_bytes / MiB, 2)
    assert logged["CPU_Mapped"] == round((e.model_bytes - e.repack_bytes) / MiB, 2)


def test_a_graph_without_cache_attention_has_a_batch_sized_mask():
    """llama-embed allocates a KV cache but its graph attends over the batch only (extracted from llama.cpp's
    graph templates): the compute estimate does not grow with the context, the KV cache does."""
    assert memory_spec()["no_cache_attention"] == ["llama-embed"]
    meta, tensors = minimal_model_parts("llama-embed")
    small, large = estimate(meta, tensors, 512), estimate(meta, tensors, 32768)
    assert small.compute_bytes == large.compute_bytes and large.kv_bytes == 64 * small.kv_bytes
    meta, tensors = minimal_model_parts("llama")
    assert estimate(meta, tensors, 32768).compute_bytes > estimate(meta, tensors, 512).compute_bytes


def test_compute_has_no_attention_or_scan_term_without_such_layers():
    """nemotron_h's minimal model has feed-forward layers only: no attention mask, no recurrent scan in the
    compute estimate (llama.cpp logs 0.63 MiB for it at 512 tokens)."""
    meta, tensors = minimal_model_parts("nemotron_h")
    e = estimate(meta, tensors, 512)
    assert not e.buffers.get("recurrent") and not e.kv_bytes
    assert abs(e.compute_bytes / MiB - 0.63) <= 0.1 * 0.63


def test_a_vocabulary_only_file_has_no_context_to_estimate():
    meta, _ = minimal_model_parts("llama")
    with pytest.raises(ValueError, match="vocabulary only"):
        estimate(meta, {}, 4096)
