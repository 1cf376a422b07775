"""The loader's failure messages carry their values, as llama.cpp formats them (printf conversions filled from the
replayed state; one not known stays as written)."""

from __future__ import annotations

import gguf_construct
from gguf_construct.arch.interp import _printf
from gguf_construct.breaking.models import minimal_model


def test_printf_fills_conversions_in_order():
    assert _printf("invalid n_rot: %u, expected %u", [3, 64]) == "invalid n_rot: 3, expected 64"
    assert _printf("%s lists %zu layers (%5.1f%%)", ["k", 2, 12.5]) == "k lists 2 layers ( 12.5%)"
    assert _printf("%s: il (%u) out of bounds\\n", [None, 7]) == "%s: il (7) out of bounds"


def test_a_model_rule_message_names_the_values(tmp_path):
    f = minimal_model("llama")
    f.metadata.set("llama.rope.dimension_count", 3, "UINT32")
    path = tmp_path / "odd-rope.gguf"
    f.save(str(path))
    messages = [
        x.message
        for x in gguf_construct.check(str(path), profile="llama.cpp").findings
        if x.rule == "MODEL-HPARAM-RANGE"
    ]
    assert len(messages) == 1 and "invalid n_rot: 3, expected 16" in messages[0], messages
