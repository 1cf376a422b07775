"""Seeds that llama.cpp's loader takes all the way: small complete models and a vocabulary of every tokenizer.

A coverage-guided campaign goes only as deep as its seeds load.  :func:`small_models` makes the smallest model
of every architecture the replayed loader accepts (:func:`~gguf_construct.arch.synth.minimal_model_parts`, with
the hyperparameters of :data:`SMALL` where the architecture takes them: 1 block, 32-wide, 2 heads), every tensor
of the shape the loader computes, so a full load gets through ``load_hparams`` and ``create_tensors``.
:func:`vocab_models` puts a vocabulary of every tokenizer model ``spec/model.yaml`` lists (SPM, BPE with each
pre-tokenizer it names, WPM, UGM, RWKV, PLaMo-2, none ...) into a small ``llama`` model, so each of
``llama-vocab.cpp``'s per-type paths has a seed that reaches it.  The token lists are shaped by the spec's facts
(the byte-token pattern, the token type values of ``spec/keys.yaml``, merges where the model requires them).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..arch import MetaValue, TensorMeta
from ..arch.programs import model_spec
from ..arch.synth import SynthesisError, minimal_model_parts, model_architectures
from ..breaking.models import build_model_file
from ..format import keynames
from ..format.spec import load_yaml

__all__ = ["SMALL", "small_model", "small_models", "vocab_models", "token_types"]

# starting hyperparameters of the seeds (synth's SIZES, smaller): a model of ~30 KiB instead of ~300 KiB
SMALL = {
    "context_length": 32,
    "embedding_length": 32,
    "block_count": 1,
    "feed_forward_length": 32,
    "attention.head_count": 2,
    "attention.head_count_kv": 2,
}


def small_model(arch: str, n_vocab: int = 16) -> tuple[dict[str, MetaValue], dict[str, TensorMeta]]:
    """The metadata and tensors of a small complete model of ``arch`` (:data:`SMALL`, else synth's sizes)."""
    try:
        return minimal_model_parts(arch, n_vocab=n_vocab, sizes=SMALL)
    except SynthesisError:
        return minimal_model_parts(arch, n_vocab=n_vocab)


def small_models() -> Iterator[tuple[str, bytes]]:
    """``(architecture, file bytes)`` for every architecture a model file can be made of."""
    for arch in model_architectures():
        try:
            meta, tensors = small_model(arch)
        except SynthesisError:
            continue
        yield arch, build_model_file(meta, tensors).to_bytes()


def token_types() -> dict[str, int]:
    """Token type name -> id, from ``tokenizer.ggml.token_type``'s values in ``spec/keys.yaml``."""
    key = next(k for k in load_yaml("keys.yaml")["keys"] if k["key"] == keynames.TOKENIZER_GGML_TOKEN_TYPE)
    return {str(name): int(i) for i, name in key["values"].items()}


def _byte_unicode() -> list[str]:
    """Byte-level BPE's printable stand-in of each byte (GPT-2's table: printable Latin-1 as itself, the rest
    shifted past 255)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    out, n = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return [out[b] for b in range(256)]


def _vocabulary(kind: str, byte_pattern: str) -> tuple[list[str], list[int], list[str] | None]:
    """Tokens, token types and merges (or None) of a small vocabulary of tokenizer type ``kind``."""
    tt = token_types()
    normal, unknown, control, byte = tt["normal"], tt["unknown"], tt["control"], tt["byte"]
    words = ["a", "b", "ab", "the", "\u2581a", "\u2581the", "hello", "\u2581hello", "1", "12"]
    if kind in ("SPM", "UGM", "PLAMO2"):
        # <0xNN> byte tokens, as the spec's byte-token pattern names them
        hexes = [byte_pattern.split("(")[0].replace("\\", "") + f"{b:02X}>" for b in range(256)]
        tokens = ["<unk>", "<s>", "</s>", *hexes, *words]
        types = [unknown, control, control] + [byte] * 256 + [normal] * len(words)
        return tokens, types, None
    if kind == "BPE":
        table = _byte_unicode()
        tokens = ["<|endoftext|>", *table, "\u0120t", "he", "\u0120the", "ll", "\u0120hello"]
        types = [control] + [normal] * (len(tokens) - 1)
        merges = ["\u0120 t", "h e", "\u0120t he", "l l", "\u0120 hello"]
        return tokens, types, merges
    if kind == "WPM":
        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghij", "##a", "##b", "the", "hello", "."]
        types = [control, unknown, control, control, control] + [normal] * (len(tokens) - 5)
        return tokens, types, None
    if kind == "RWKV":
        tokens = ["<s>", *(repr(chr(b))[1:-1] if b < 128 else f"\\x{b:02x}" for b in range(256)), "the", "hello"]
        types = [control] + [normal] * (len(tokens) - 1)
        return list(dict.fromkeys(tokens)), [control] + [normal] * (len(dict.fromkeys(tokens)) - 1), None
    tokens = ["<unk>", "<s>", "</s>", *words]
    return tokens, [unknown, control, control] + [normal] * len(words), None


def vocab_models(arch: str = "llama") -> Iterator[tuple[str, bytes]]:
    """``(label, file bytes)``: a small complete ``arch`` model with a vocabulary of every tokenizer model of
    ``spec/model.yaml`` (a BPE one once per pre-tokenizer the spec names), special token ids set."""
    vocab = model_spec()["vocab"]
    cases: list[tuple[str, str, str | None]] = []
    for model, info in vocab["models"].items():
        if info["type"] == "BPE" and model == "gpt2":
            cases += [(model, info["type"], pre) for pre in vocab["bpe_pre"]]
        else:
            cases.append((model, info["type"], None))
    for model, kind, pre in cases:
        if kind == "NONE":
            meta, tensors = small_model(arch)
            for key in list(meta):
                if key.startswith("tokenizer."):
                    del meta[key]
            meta[keynames.TOKENIZER_GGML_MODEL] = MetaValue("STRING", model)
            meta[keynames.ARCH_VOCAB_SIZE.format(arch=arch)] = MetaValue("UINT32", 16)
            yield f"{model}", build_model_file(meta, tensors).to_bytes()
            continue
        tokens, types, merges = _vocabulary(kind, vocab["byte_token_pattern"])
        try:
            meta, tensors = small_model(arch, n_vocab=len(tokens))
        except SynthesisError:
            continue
        for key in list(meta):
            if key.startswith("tokenizer."):
                del meta[key]
        meta[keynames.TOKENIZER_GGML_MODEL] = MetaValue("STRING", model)
        if pre is not None:
            meta[keynames.TOKENIZER_GGML_PRE] = MetaValue("STRING", pre)
        meta[keynames.TOKENIZER_GGML_TOKENS] = MetaValue("ARRAY", tokens, "STRING")
        meta[keynames.TOKENIZER_GGML_TOKEN_TYPE] = MetaValue("ARRAY", np.array(types, np.int32), "INT32")
        scores = np.linspace(-1.0, -10.0, len(tokens)).astype(np.float32)
        meta[keynames.TOKENIZER_GGML_SCORES] = MetaValue("ARRAY", scores, "FLOAT32")
        if merges is not None:
            meta[keynames.TOKENIZER_GGML_MERGES] = MetaValue("ARRAY", merges, "STRING")
        specials = {"bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0, "padding_token_id": 0}
        for name, i in specials.items():
            meta[f"tokenizer.ggml.{name}"] = MetaValue("UINT32", i)
        meta[keynames.TOKENIZER_GGML_ADD_BOS_TOKEN] = MetaValue("BOOL", True)
        label = f"{model}-{pre}" if pre else model
        yield label, build_model_file(meta, tensors).to_bytes()
