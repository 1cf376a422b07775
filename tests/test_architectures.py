"""spec/architectures/: the facts extracted from llama.cpp's loader are complete and well-formed data."""

from __future__ import annotations

import ast

import pytest
import yaml

from gguf_construct.format import spec

ARCH_DIR = spec.spec_dir() / "architectures"
ARCH_FILES = sorted(p for p in ARCH_DIR.glob("*.yaml") if not p.name.startswith("_"))
EXPR_KEYS = ("if", "value", "do", "assert", "return", "switch", "from", "to")


def _statements(stmts):
    for s in stmts or []:
        yield s
        for key in ("then", "else", "do"):
            if isinstance(s.get(key), list):
                yield from _statements(s[key])
        for case in s.get("cases", []):
            yield from _statements(case["do"])


def _load(path):
    with open(path, "rb") as fh:
        return yaml.load(fh, Loader=yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader)


def test_every_llama_cpp_architecture_is_declared():
    ids = [_load(p)["id"] for p in ARCH_FILES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 150
    for name in ("llama", "qwen2", "gemma3", "mamba", "bert", "deepseek2", "command-r", "nomic-bert-moe", "t5"):
        assert name in ids


@pytest.mark.parametrize("path", ARCH_FILES + [ARCH_DIR / "_loader.yaml"], ids=lambda p: p.name)
def test_expressions_are_python_syntax(path):
    data = _load(path)
    programs = [
        data.get("hparams"),
        data.get("tensors"),
        data.get("load_hparams"),
        data.get("load_tensors"),
        data.get("locals"),
    ]
    programs += [f["body"] for f in data.get("functions", {}).values()]
    for program in programs:
        for s in _statements(program):
            for key in EXPR_KEYS:
                if isinstance(s.get(key), str):
                    ast.parse(s[key], mode="eval")


def test_few_statements_left_unread():
    unparsed = sum(
        1
        for p in ARCH_FILES + [ARCH_DIR / "_loader.yaml"]
        for prog in ("hparams", "tensors", "load_hparams", "load_tensors")
        for s in _statements(_load(p).get(prog))
        if "unparsed" in s
    )
    assert unparsed < 80


def test_llama_declares_its_standard_tensors():
    text = (ARCH_DIR / "llama.yaml").read_text()
    for name in ("'token_embd'", "'output_norm'", "'blk.%d.attn_norm'", "'blk.%d.ffn_down'", "'blk.%d.ffn_up_exps'"):
        assert name in text
    loader = _load(ARCH_DIR / "_loader.yaml")
    assert loader["tensor_names"]["LLM_TENSOR_ATTN_Q"] == "blk.%d.attn_q"
    assert loader["key_names"]["LLM_KV_CONTEXT_LENGTH"] == "{arch}.context_length"
    assert loader["hparams_fields"]["n_embd"]["type"] == "uint32_t"


@pytest.mark.parametrize(
    "tokens,bad",
    [
        (["<unk>", "a", "b", "c"], False),
        (["<unk>", "a", "b", "a"], True),  # two equal strings
        (["<unk>", "", "b", "c"], False),  # an empty token is named by its id
        (["<unk>", "", "[EMPTY_1]", "c"], True),  # ... and that name may collide with a real token
    ],
)
def test_vocabulary_strings_must_be_unique(tokens, bad):
    from gguf_construct.arch.loader import Fatal, _unique_tokens

    if bad:
        with pytest.raises(Fatal):
            _unique_tokens(tokens, "[EMPTY_{i}]")
    else:
        _unique_tokens(tokens, "[EMPTY_{i}]")
