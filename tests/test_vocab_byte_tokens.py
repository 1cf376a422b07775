"""A PLaMo2 vocabulary needs a token of type "byte" spelled <0xHH> for each of the 256 bytes (token id 0 does not
count): llama.cpp's tokenizer throws "Byte token for <0xN> is not set" otherwise, and the llama.cpp profile says
so (MODEL-VOCAB).  With GGUF_CONSTRUCT_LLAMA_LIB set, libllama is asked too."""

from __future__ import annotations

import os

import pytest

import gguf_construct
from gguf_construct.breaking.models import minimal_model
from gguf_construct.fuzzing.targets import make_target

LIB = os.environ.get("GGUF_CONSTRUCT_LLAMA_LIB")
BYTE, NORMAL = 6, 1

# (case, token id 0 is an ordinary token, byte whose token is typed normal, hex in lower case, token types present,
#  the byte llama.cpp names as unset or None)
CASES = [
    ("all-bytes", True, None, False, True, None),
    ("lower-case-hex", True, None, True, True, None),
    ("byte-zero-at-id-zero", False, None, False, True, 0),
    ("byte-0x41-typed-normal", True, 0x41, False, True, 0x41),
    ("no-token-types", True, None, False, False, 0),
]


def _model(tmp_path, lead: bool, untyped, lower: bool, typed: bool) -> str:
    f = minimal_model("llama", n_vocab=260)
    tokens = [f"<0x{b:02x}>" if lower else f"<0x{b:02X}>" for b in range(256)] + ["a", "b", "c", "d"]
    types = [BYTE] * 256 + [NORMAL] * 4
    if untyped is not None:
        types[untyped] = NORMAL
    if lead:
        tokens, types = ["z"] + tokens[:-1], [NORMAL] + types[:-1]
    f.metadata.set("tokenizer.ggml.model", "plamo2", "STRING")
    f.metadata.set("tokenizer.ggml.tokens", tokens, "ARRAY", "STRING")
    f.metadata.set("tokenizer.ggml.scores", [0.0] * len(tokens), "ARRAY", "FLOAT32")
    if typed:
        f.metadata.set("tokenizer.ggml.token_type", types, "ARRAY", "INT32")
    else:
        del f.metadata["tokenizer.ggml.token_type"]
    path = str(tmp_path / "plamo2-vocab.gguf")
    f.save(path)
    return path


@pytest.mark.parametrize("case,lead,untyped,lower,typed,unset", CASES, ids=[c[0] for c in CASES])
def test_plamo2_byte_tokens(tmp_path, case, lead, untyped, lower, typed, unset):
    report = gguf_construct.check(_model(tmp_path, lead, untyped, lower, typed), profile="llama.cpp")
    errors = [f for f in report.findings if f.severity == "error"]
    if unset is None:
        assert errors == []
    else:
        assert [f.rule for f in errors] == ["MODEL-VOCAB"]
        assert f"Byte token for <0x{unset}> is not set" in errors[0].message


@pytest.mark.skipif(not LIB, reason="set GGUF_CONSTRUCT_LLAMA_LIB to a libllama to ask llama.cpp")
def test_plamo2_byte_tokens_agree_with_libllama(tmp_path):
    target = make_target(f"llama:{LIB}", timeout=60)
    target.start()
    try:
        for i, (case, lead, untyped, lower, typed, unset) in enumerate(CASES):
            folder = tmp_path / str(i)
            folder.mkdir()
            out = target.run(_model(folder, lead, untyped, lower, typed))
            assert out.status == ("accept" if unset is None else "reject"), (case, out)
    finally:
        target.close()
