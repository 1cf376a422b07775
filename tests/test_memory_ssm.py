"""The compute buffer of Mamba-2 layers (mamba2, nemotron_h and the other hybrids that build them) against the
figures llama.cpp logs.

The recorded figures are libllama's (the llama.cpp vendored by llama-cpp-python 0.3.36, CPU backend, built from
that sdist) for the models these tests build; ``GGUF_CONSTRUCT_LLAMA_LIB=/path/to/libllama.so`` asks it again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gguf_construct.arch.expect import architecture_parts
from gguf_construct.arch.memory import ContextParams, estimate

TOOLS = Path(__file__).resolve().parent.parent / "tools"
MiB = 1024 * 1024
LIB = os.environ.get("GGUF_CONSTRUCT_LLAMA_LIB")

WIDE_GROUPS = [
    "embedding_length=128",
    "ssm.inner_size=1024",
    "ssm.state_size=128",
    "ssm.group_count=8",
    "ssm.time_step_rank=16",
]
SIX_LAYERS = [
    "block_count=6",
    "embedding_length=256",
    "ssm.inner_size=512",
    "ssm.state_size=64",
    "ssm.group_count=8",
    "ssm.time_step_rank=16",
]
HYBRID = [
    "block_count=6",
    "attention.head_count=8",
    "attention.head_count_kv=[0,0,2,0,0,0]",
    "feed_forward_length=[0,0,0,672,0,0]",
    "embedding_length=256",
    "ssm.inner_size=512",
    "ssm.state_size=128",
    "ssm.group_count=8",
    "ssm.time_step_rank=8",
]

# the widths of published models (4 and 2 layers, a 32-token vocabulary: the figures need no file)
NEMOTRON_H_8B = [
    "block_count=4",
    "attention.head_count=32",
    "attention.head_count_kv=[0,8,0,0]",
    "feed_forward_length=[0,0,0,21504]",
    "embedding_length=4096",
    "ssm.inner_size=8192",
    "ssm.state_size=128",
    "ssm.group_count=8",
    "ssm.time_step_rank=128",
]
MAMBA2_2_7B = [
    "embedding_length=2560",
    "ssm.inner_size=5120",
    "ssm.state_size=128",
    "ssm.group_count=1",
    "ssm.time_step_rank=80",
]

# (architecture, hyperparameters, context, llama.cpp's compute buffer in MiB); estimate was 11-65% low on most
RECORDED = [
    ("mamba2", [], {"ctx": 4096}, 1.83),
    ("mamba2", [], {"ctx": 32768, "flash_attn": False}, 1.83),
    ("mamba2", [], {"ctx": 4096, "seqs": 4}, 1.85),
    ("mamba2", WIDE_GROUPS, {"ctx": 4096}, 22.86),
    ("mamba2", WIDE_GROUPS, {"ctx": 4096, "seqs": 4}, 23.07),
    ("mamba2", SIX_LAYERS, {"ctx": 32768, "flash_attn": False}, 12.57),
    ("nemotron_h", HYBRID, {"ctx": 4096}, 21.59),
    ("nemotron_h", HYBRID, {"ctx": 32768}, 49.59),
    ("nemotron_h", HYBRID, {"ctx": 4096, "flash_attn": False}, 74.26),
    ("nemotron_h", HYBRID, {"ctx": 32768, "flash_attn": False}, 578.26),
    ("nemotron_h", NEMOTRON_H_8B, {"ctx": 4096}, 120.5),
    ("nemotron_h", NEMOTRON_H_8B, {"ctx": 32768}, 148.5),
    ("nemotron_h", NEMOTRON_H_8B, {"ctx": 4096, "flash_attn": False}, 308.01),
    ("nemotron_h", NEMOTRON_H_8B, {"ctx": 32768, "flash_attn": False}, 2156.01),
    ("mamba2", MAMBA2_2_7B, {"ctx": 4096}, 69.28),
    ("mamba2", MAMBA2_2_7B, {"ctx": 4096, "seqs": 4}, 77.15),
]


def _model(arch: str, settings: list[str]):
    sys.path.insert(0, str(TOOLS))
    from memory_differential import with_conv_bias

    meta, tensors = architecture_parts(arch, settings, n_vocab=32)
    return meta, with_conv_bias(tensors)


def _params(cfg: dict) -> ContextParams:
    return ContextParams(n_seq_max=cfg.get("seqs"), flash_attn=cfg.get("flash_attn"))


@pytest.mark.parametrize("arch, settings, cfg, llama", RECORDED)
def test_mamba2_compute_within_ten_percent_of_llama_cpp(arch, settings, cfg, llama):
    meta, tensors = _model(arch, settings)
    got = estimate(meta, tensors, cfg["ctx"], _params(cfg)).compute_bytes / MiB
    assert abs(got - llama) <= 0.10 * llama, (got, llama)


def test_the_peak_follows_the_groups_and_state_not_only_the_inner_width():
    """Same d_inner, eight groups of a 128-wide state: the projection and the convolution are wider, so is the
    peak (the former estimate had only d_inner and gave both the same figure)."""
    narrow = _model("mamba2", ["embedding_length=256", "ssm.inner_size=512"])
    wide = _model("mamba2", ["embedding_length=256", "ssm.inner_size=512", "ssm.state_size=128", "ssm.group_count=8"])
    a, b = (estimate(m, t, 4096).compute_bytes for m, t in (narrow, wide))
    assert b > a + 2 * 512 * 1024 * 4  # at least the 2 x 1024 more B/C channels over 512 tokens, twice


def test_a_mamba1_layer_keeps_its_own_term():
    """Mamba-1 layers (they have ssm_x) are not Mamba-2 layers: their term is unchanged."""
    from gguf_construct.arch.synth import minimal_model_parts

    meta, tensors = minimal_model_parts("mamba")
    assert any(n.endswith("ssm_x.weight") for n in tensors)
    e = estimate(meta, tensors, 4096)
    assert e.compute_bytes == 13 * int(meta["mamba.ssm.inner_size"].value) * 512 * 4 // 2


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
@pytest.mark.parametrize("arch, settings", [("mamba2", []), ("mamba2", SIX_LAYERS), ("nemotron_h", HYBRID)])
def test_mamba2_compute_against_libllama(arch, settings, tmp_path):
    sys.path.insert(0, str(TOOLS))
    import memory_differential as md

    from gguf_construct.breaking.models import build_model_file

    meta, tensors = _model(arch, settings)
    path = tmp_path / f"{arch}.gguf"
    build_model_file(meta, tensors).save(path)
    configs = [{"ctx": 4096}, {"ctx": 32768, "flash_attn": False}, {"ctx": 4096, "seqs": 2}]
    proc = subprocess.run(
        [sys.executable, md.__file__, "--lib", LIB, "--worker", str(path), json.dumps(configs)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    _, results = md.collect(proc.stdout)
    assert sorted(results) == list(range(len(configs))), proc.stderr[-500:]
    for index, r in sorted(results.items()):
        assert r["ok"], (configs[index], proc.stderr[-300:])
        llama = md.reported(r["lines"])["compute"]
        got = estimate(meta, tensors, configs[index]["ctx"], _params(configs[index])).compute_bytes / MiB
        assert abs(got - llama) <= 0.10 * llama, (configs[index], got, llama)


@pytest.mark.parametrize("arch", ["falcon-h1", "nemotron_h"])
def test_a_mamba2_layer_without_its_conv_bias_is_refused(arch):
    """nemotron_h, granite-hybrid and falcon-h1 load a Mamba-2 layer without ssm_conv1d.bias, but the graph adds
    the missing tensor: llama.cpp dies creating every context (SIGSEGV, seen with libllama on these models)."""
    from gguf_construct.arch.synth import minimal_model_parts

    if arch == "falcon-h1":
        meta, tensors = minimal_model_parts(arch)
    else:
        meta, tensors = architecture_parts(arch, HYBRID, n_vocab=32)
    assert not any(n.endswith("ssm_conv1d.bias") for n in tensors)
    with pytest.raises(ValueError, match=r"llama.cpp crashes .* layer 0 has no ssm_conv1d.bias"):
        estimate(meta, tensors, 4096)
    meta, tensors = _model(arch, [] if arch == "falcon-h1" else HYBRID)
    assert estimate(meta, tensors, 4096).compute_bytes > 0
