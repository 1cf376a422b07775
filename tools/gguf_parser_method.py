"""gguf-parser-go's published estimation method, re-stated from its source for the side-by-side note
(docs/memory.md): what it would give for a file and a context configuration, for the CPU-only totals that
llama.cpp logs (model weights, KV cache, recurrent state, output buffer).

gguf-parser-go cannot be installed here; the formulas below are read from its source at one commit and written
anew (no code of it is copied).  Each function names the place it restates:

* ``file_estimate__llamacpp.go`` at commit c3936a04351b9e8c8b91d50b0be37216806b8d9e
  (``estimateLLaMACppRunInModel``: context padding, output buffer, weights, KV cache, recurrent state);
* ``file_architecture.go`` at the same commit (``transformerArchitecture``: the hyperparameters it reads, their
  defaults, the sliding-window patterns it assumes per architecture, the recurrent and hybrid architecture lists).
"""

from __future__ import annotations

from typing import Any, Mapping

SOURCE = "github.com/gpustack/gguf-parser-go@c3936a04351b9e8c8b91d50b0be37216806b8d9e"

# file_architecture.go: the architectures it treats as recurrent / hybrid, and its sliding-window patterns
_RECURRENT = {"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"}
_HYBRID = {"jamba", "falcon-h1", "granitehybrid"}
_SWA_PATTERN = {"llama4": 4, "gemma2": 2, "gemma3": 6, "cohere2": 4}
_SWA_DEFAULT = {"llama4": 8192, "gemma2": 4096}


def _first(v: Any) -> int:
    if isinstance(v, (list, tuple)):
        return int(v[0]) if v else 0
    return int(v)


def _pad(x: int, n: int) -> int:
    return (x + n - 1) // n * n


def method(
    meta: Mapping[str, Any],
    tensors: Mapping[str, Any],
    ctx: int,
    *,
    seqs: int = 1,
    type_k: str = "F16",
    type_v: str = "F16",
    flash_attn: bool = True,
    swa_full: bool = False,
    row_size=None,
    tensor_bytes=None,
) -> dict[str, int]:
    """gguf-parser-go's figures (bytes) for ``ctx`` tokens: ``model``, ``kv``, ``recurrent``, ``output``.

    ``meta`` maps keys to plain values, ``tensors`` names to tensor infos; ``row_size(type, n)`` and
    ``tensor_bytes(info)`` are ggml's sizes (passed in so that this module needs nothing of the package)."""
    arch = str(meta["general.architecture"])

    def key(name: str, default: Any = None) -> Any:
        return meta.get(f"{arch}.{name}", default)

    n_embd = int(key("embedding_length", 0))
    n_head = _first(key("attention.head_count", 0))
    n_head_kv = _first(key("attention.head_count_kv", n_head))
    k_len = int(key("attention.key_length", n_embd // n_head if n_head else 0))
    v_len = int(key("attention.value_length", n_embd // n_head if n_head else 0))
    k_mla, v_mla = int(key("attention.key_length_mla", 0)), int(key("attention.value_length_mla", 0))
    if k_mla > 0 and v_mla > 0:
        k_len, v_len = k_mla, v_mla
    causal = bool(key("attention.causal", True))
    if causal and int(key("pooling_type", 0)) > 2:
        causal = False
    blocks = int(key("block_count", 0))
    n_vocab = int(key("vocab_size", 0)) or len(meta.get("tokenizer.ggml.tokens") or ())
    recurrent = arch in _RECURRENT or arch in _HYBRID
    pattern = _SWA_PATTERN.get(arch, 1)
    n_swa = _first(key("attention.sliding_window", 0)) or _SWA_DEFAULT.get(arch, 0)
    if arch == "phi3":
        n_swa = 0

    # estimateLLaMACppRunInModel: context padded to 256 with flash attention, else 32; n_tokens = min(ctx, 512)
    if type_v.upper() not in ("F32", "F16", "BF16") and not flash_attn:
        type_v = "F16"  # a quantized V cache falls back to F16 without flash attention
    n_ctx = _pad(int(ctx), 256 if flash_attn else 32)
    n_tokens = min(n_ctx, 512)
    n_kv = n_ctx

    out = {"model": 0, "kv": 0, "recurrent": 0, "output": 0}
    # weights: every tensor's bytes; without output.weight the input tensors are counted again for the output
    inputs = sum(tensor_bytes(t) for n, t in tensors.items() if n.startswith(("position_", "token_")))
    out["model"] = sum(tensor_bytes(t) for t in tensors.values()) + (0 if "output.weight" in tensors else inputs)
    # output buffer: n_embd floats per output, plus n_vocab logits for causal models, for n_tokens outputs
    out["output"] = 4 * n_embd * n_tokens + (4 * n_vocab * n_tokens if causal else 0)
    if not causal:
        return out
    if recurrent:
        shift = int(key("token_shift_count", 2))
        head = int(key("wkv.head_size", 0))
        if head > 0:
            r, s = shift * n_embd, head * n_embd
        else:
            d_conv, d_inner = int(key("ssm.conv_kernel", 0)), int(key("ssm.inner_size", 0))
            d_state, groups = int(key("ssm.state_size", 0)), int(key("ssm.group_count", 0))
            r, s = (d_conv - 1) * (d_inner + 2 * groups * d_state), d_state * d_inner
        out["recurrent"] = (row_size("F32", r * seqs) + row_size("F32", s * seqs)) * blocks
        if arch not in _HYBRID:
            return out
    k_gqa, v_gqa = k_len * n_head_kv, v_len * n_head_kv
    using_swa = pattern != 1 and not swa_full
    per_layer = row_size(type_k, k_gqa * n_kv) + row_size(type_v, v_gqa * n_kv)
    if not using_swa:
        out["kv"] = per_layer * blocks
    else:
        swa_cells = min(n_kv, _pad(n_swa * seqs + 2048, 256 if flash_attn else 32))
        n_swa_layers = sum(1 for i in range(blocks) if pattern == 0 or i % pattern != 0)
        swa_layer = row_size(type_k, k_gqa * swa_cells) + row_size(type_v, v_gqa * swa_cells)
        out["kv"] = swa_layer * n_swa_layers + per_layer * (blocks - n_swa_layers)
    return out
