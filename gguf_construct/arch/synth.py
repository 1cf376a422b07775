"""Minimal models of any architecture, found by replaying llama.cpp's loader until it has nothing to ask for.

:func:`minimal_model` starts from the keys every model has, replays the load (:func:`plan_load`), and adds what
the loader reports missing -- a key with a small value of the type it is read as, the tensors it asks for with
the shapes it computes -- until the replay finds no problem.  The result is the smallest model the spec says
llama.cpp will load; a differential test holds that claim against libllama.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arch.loader import MetaValue, TensorMeta, plan_load
from ..arch.programs import architecture, model_spec
from ..format import keynames

__all__ = ["SynthesisError", "minimal_model_parts", "model_architectures"]


class SynthesisError(ValueError):
    """The replay keeps finding a problem that adding keys and tensors cannot solve."""


def model_architectures() -> list[str]:
    """The architectures a model file can be made of: those llama.cpp's loader accepts, less the stubs whose
    tensor loading always aborts (``clip``: vision encoders are read by another loader)."""
    from ..arch.programs import architectures

    return [
        n for n, a in architectures().items() if a.loadable and not (len(a.tensors) == 1 and "fail" in a.tensors[0])
    ]


# small values that satisfy the loader's asserts and divide evenly (embedding 64 = 4 heads x 16)
SIZES = {
    "context_length": 64,
    "embedding_length": 64,
    "block_count": 2,
    "feed_forward_length": 128,
    "attention.head_count": 4,
    "attention.head_count_kv": 4,
}
_BY_SUFFIX = (
    ("expert_used_count", 2),
    ("expert_count", 4),
    ("expert_group_used_count", 1),
    ("expert_group_count", 1),
    ("head_count", 4),
    ("key_length", 16),
    ("value_length", 16),
    ("conv_kernel", 4),
    ("inner_size", 128),
    ("state_size", 16),
    ("time_step_rank", 8),
    ("group_count", 1),
    ("head_size", 16),
    ("extra_dim", 32),
    ("sliding_window", 32),
    ("feed_forward_length", 128),
    ("block_count", 1),
    ("length", 64),
    ("rank", 16),
    ("step", 1),
    ("dimension_count", 16),
    ("size", 16),
    ("count", 1),
)
_CTYPE_GGUF = None


def _value_for(key: str, ctype: str) -> tuple[Any, str]:
    global _CTYPE_GGUF
    if _CTYPE_GGUF is None:
        _CTYPE_GGUF = model_spec()["key_types"]["scalar"]
    gtype = _CTYPE_GGUF.get(ctype, "UINT32")
    if gtype in ("FLOAT32", "FLOAT64"):
        return (1e-5 if "eps" in key else 1.0), gtype
    if gtype == "BOOL":
        return False, gtype
    if gtype == "STRING":
        return "", gtype
    for suffix, value in _BY_SUFFIX:
        if key.endswith(suffix):
            return value, gtype
    return 16, gtype


def _vocab(meta: dict[str, MetaValue], n_vocab: int) -> None:
    tokens = [f"t{i}" for i in range(n_vocab - 2)] + ["\n", " "]
    meta[keynames.TOKENIZER_GGML_MODEL] = MetaValue("STRING", "gpt2")
    meta[keynames.TOKENIZER_GGML_PRE] = MetaValue("STRING", "default")
    meta[keynames.TOKENIZER_GGML_TOKENS] = MetaValue("ARRAY", tokens, "STRING")
    meta[keynames.TOKENIZER_GGML_TOKEN_TYPE] = MetaValue("ARRAY", np.ones(n_vocab, np.int32), "INT32")
    meta[keynames.TOKENIZER_GGML_MERGES] = MetaValue("ARRAY", ["t 1"], "STRING")


# what to add when the plain model does not satisfy the loader: experts (MoE architectures), token types (BERT)
VARIANTS = (
    {},
    {keynames.ARCH_EXPERT_COUNT: (4, "UINT32"), keynames.ARCH_EXPERT_USED_COUNT: (2, "UINT32")},
    {keynames.TOKENIZER_GGML_TOKEN_TYPE_COUNT: (2, "UINT32")},
    {
        keynames.ARCH_EXPERT_COUNT: (4, "UINT32"),
        keynames.ARCH_EXPERT_USED_COUNT: (2, "UINT32"),
        keynames.TOKENIZER_GGML_TOKEN_TYPE_COUNT: (2, "UINT32"),
    },
)


# Hyperparameters some architectures need beyond the generic search, from their loaders' asserts and failures
# (docs/architectures/<name>.md lists them): multi-head latent attention needs key_length_mla > the rope
# dimension, DeepSeek-V4-style hyper-connections a count of 4, draft models their target layers, ...
_MLA = {
    "{arch}.attention.key_length_mla": (32, "UINT32"),
    "{arch}.attention.value_length_mla": (16, "UINT32"),
    keynames.ARCH_ROPE_DIMENSION_COUNT: (16, "UINT32"),
}
_MOE = {
    keynames.ARCH_EXPERT_COUNT: (4, "UINT32"),
    keynames.ARCH_EXPERT_USED_COUNT: (2, "UINT32"),
    "{arch}.expert_feed_forward_length": (16, "UINT32"),
}
HINTS: dict[str, dict] = {
    "deepseek2": _MLA,
    "mistral4": _MLA,
    "hy_v4": _MLA,
    "deepseek32": _MLA,
    "glm-dsa": _MLA,
    "kimi-k3": _MLA,
    "kimi-linear": _MLA,
    "dots3note": {
        **_MLA,
        "{arch}.attention.key_length_mla_swa": (32, "UINT32"),
        "{arch}.attention.value_length_mla_swa": (16, "UINT32"),
    },
    "bailingmoe3": {**_MLA, "{arch}.kda.gate_lower_bound": (-5.0, "FLOAT32")},
    "glm5-next": {
        **_MLA,
        "{arch}.hyper_connection.count": (4, "UINT32"),
        "{arch}.attention.indexer.kpool": (2, "UINT32"),
    },
    "deepseek4": {
        "{arch}.hyper_connection.count": (4, "UINT32"),
        "{arch}.expert_gating_func": (4, "UINT32"),
        "{arch}.attention.compress_ratios": ([0, 0], "ARRAY", "UINT32"),
    },
    "qwen4exp": {"{arch}.hyper_connection.count": (4, "UINT32")},
    "dflash": {"{arch}.target_layers": ([0], "ARRAY", "INT32")},
    "eagle3": {"{arch}.target_layers": ([0, 1, 2], "ARRAY", "INT32"), "{arch}.target_hidden_size": (64, "UINT32")},
    "gemma4-assistant": {
        "{arch}.embedding_length_out": (128, "UINT32"),
        "{arch}.attention.sliding_window_pattern": ([True, False], "ARRAY", "BOOL"),
    },
    "graniteswitch": {
        "{arch}.adapters.count": (1, "UINT32"),
        "{arch}.adapters.lora_rank": (4, "UINT32"),
        "{arch}.adapters.token_ids_activate": ([1], "ARRAY", "INT32"),
        "{arch}.adapters.token_ids_substitute": ([2], "ARRAY", "INT32"),
    },
    "grovemoe": {
        **_MOE,
        "{arch}.experts_per_group": (2, "UINT32"),
        "{arch}.expert_chunk_feed_forward_length": (16, "UINT32"),
    },
    "smallthinker": _MOE,
    "hrm_text": {
        "{arch}.hrm.layers_per_stack": (1, "UINT32"),
        "{arch}.hrm.h_cycles": (1, "UINT32"),
        "{arch}.hrm.l_cycles": (1, "UINT32"),
    },
    "rwkv7": {"{arch}.attention.gate_lora_rank": (16, "UINT32")},
    # the loader tries the fused tensor and falls back to five separate ones; give it the fused one
    "rwkv6": {"tensor:blk.{i}.time_mix_lerp_fused.weight": (("embedding_length", 1, 1, 5), "F32")},
}
TENSOR_HINT = "tensor:"


def minimal_model_parts(
    name: str,
    *,
    n_vocab: int = 32,
    overrides: dict | None = None,
    sizes: dict[str, int] | None = None,
    max_rounds: int = 40,
) -> tuple[dict[str, MetaValue], dict[str, TensorMeta]]:
    """The metadata and tensor infos of the smallest model of architecture ``name`` the replay accepts (the
    plain model first, then with experts and token types as :data:`VARIANTS` lists).  ``sizes`` overrides the
    starting hyperparameters of :data:`SIZES` (same keys, without the architecture prefix)."""
    error: SynthesisError | None = None
    for variant in VARIANTS:
        extra = {k.replace("{arch}", name): v for k, v in {**variant, **HINTS.get(name, {})}.items()}
        extra.update(overrides or {})
        try:
            return _synthesize(name, n_vocab, extra, max_rounds, {**SIZES, **(sizes or {})})
        except SynthesisError as exc:
            error = error or exc
    raise error  # type: ignore[misc]


def _synthesize(name: str, n_vocab: int, overrides: dict, max_rounds: int, sizes: dict[str, int] = SIZES):
    a = architecture(name)
    if a is None or not a.loadable:
        raise SynthesisError(f"llama.cpp cannot load architecture {name!r}")
    meta: dict[str, MetaValue] = {
        keynames.GENERAL_ARCHITECTURE: MetaValue("STRING", name),
        keynames.GENERAL_NAME: MetaValue("STRING", "tiny model"),
    }
    for key, value in sizes.items():
        meta[f"{name}.{key}"] = MetaValue("UINT32", value)
    meta[f"{name}.attention.layer_norm_rms_epsilon"] = MetaValue("FLOAT32", 1e-5)
    meta[f"{name}.attention.layer_norm_epsilon"] = MetaValue("FLOAT32", 1e-5)
    _vocab(meta, n_vocab)
    tensors: dict[str, TensorMeta] = {}
    for key, (value, gtype, *item) in (overrides or {}).items():
        if key.startswith(TENSOR_HINT):
            for i in range(int(meta[f"{name}.block_count"].value)):
                tname = key[len(TENSOR_HINT) :].replace("{i}", str(i))
                ne = tuple(int(meta[f"{name}.{d}"].value) if isinstance(d, str) else d for d in value)
                tensors[tname] = TensorMeta(tname, ne, 0)
        elif value is None:
            meta.pop(key, None)
        else:
            meta[key] = MetaValue(gtype, value, *item)
    for _ in range(max_rounds):
        plan = plan_load(meta, tensors, vocab_only=False)
        if not plan.problems:
            # a type-checked key the loader reads but which is not present is fine; the model is complete
            return meta, tensors
        progressed = False
        for p in plan.problems:
            if p.code == "KEY-MISSING" and p.key and p.key not in meta:
                ctype = plan.keys_read.get(p.key, "")
                value, gtype = _value_for(p.key, ctype)
                if p.message.startswith("array key"):
                    n = int(meta[f"{name}.block_count"].value)
                    meta[p.key] = MetaValue("ARRAY", [value] * n, gtype)
                else:
                    meta[p.key] = MetaValue(gtype, value)
                progressed = True
            elif p.code == "TENSOR-MISSING" and p.tensor:
                ne = plan.expected[p.tensor].ne
                if not all(isinstance(d, int) and d > 0 for d in ne) or len(ne) > 4:
                    raise SynthesisError(f"{name}: tensor {p.tensor} has no computable shape {ne}")
                tensors[p.tensor] = TensorMeta(p.tensor, tuple(int(d) for d in ne), 0)
                progressed = True
        if not progressed:
            first = plan.problems[0]
            raise SynthesisError(f"{name}: {first.code}: {first.message}")
    raise SynthesisError(f"{name}: no fixed point after {max_rounds} rounds")
