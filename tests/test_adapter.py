"""LoRA adapters are checked for what they are (MODEL-ADAPTER), not as broken models."""

from __future__ import annotations

import numpy as np
import pytest

from gguf_construct import GGUFFile, check


def _adapter(*, arch="llama", adapter_type=("lora", "STRING"), alpha=(16.0, "FLOAT32"), tensors=None):
    f = GGUFFile.new(version=3, byte_order="little")
    f.metadata.set("general.type", "adapter", "STRING")
    f.metadata.set("general.architecture", arch, "STRING")
    if adapter_type is not None:
        f.metadata.set("adapter.type", adapter_type[0], adapter_type[1])
    if alpha is not None:
        f.metadata.set("adapter.lora.alpha", alpha[0], alpha[1])
    shapes = (
        tensors
        if tensors is not None
        else {"blk.0.attn_q.weight.lora_a": (64, 8), "blk.0.attn_q.weight.lora_b": (8, 64)}
    )
    for name, shape in shapes.items():
        f.add_tensor(name, np.zeros(int(np.prod(shape)), "<f4").tobytes(), "F32", shape=shape)
    return f.to_bytes()


def _adapter_errors(data: bytes) -> list[str]:
    report = check(data, profile="llama.cpp")
    return [f.message for f in report.errors() if f.rule == "MODEL-ADAPTER"], report


def test_a_well_formed_adapter_is_valid_and_not_judged_as_a_model():
    errors, report = _adapter_errors(_adapter())
    assert report.valid, [f"{f.rule}: {f.message}" for f in report.errors()]


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"arch": "no-such-arch"}, "not one llama.cpp knows"),
        ({"adapter_type": None}, "expect adapter.type to be 'lora'"),
        ({"adapter_type": ("cvec", "STRING")}, "but got: 'cvec'"),
        ({"adapter_type": (1, "UINT32")}, "adapter.type has type UINT32"),
        ({"alpha": (16, "UINT32")}, "adapter.lora.alpha has type UINT32"),
        ({"tensors": {"blk.0.attn_q.weight.lora_a": (64, 8)}}, "missing one component"),
        ({"tensors": {"blk.0.attn_q.weight.lora_a": (64, 8), "blk.0.attn_q.weight.lora_b": (4, 64)}}, "not transposed"),
        ({"tensors": {"blk.0.attn_q.weight.lora_x": (64, 8)}}, "unexpected suffix"),
    ],
)
def test_each_adapter_breakage_is_reported(kwargs, needle):
    errors, report = _adapter_errors(_adapter(**kwargs))
    assert not report.valid
    assert any(needle in e for e in errors), errors


def test_a_norm_vector_and_a_flipped_token_embd_pair_are_accepted():
    data = _adapter(
        tensors={
            "token_embd.weight.lora_a": (8, 32),
            "token_embd.weight.lora_b": (64, 8),
            "blk.0.attn_norm.weight": (64,),
        }
    )
    errors, report = _adapter_errors(data)
    assert report.valid, errors


def _imatrix(*, keys=True, tensors=None, chunk_type="UINT32"):
    f = GGUFFile.new(version=3, byte_order="little")
    f.metadata.set("general.type", "imatrix", "STRING")
    if keys:
        f.metadata.set("imatrix.datasets", ["wiki.train.raw"], "ARRAY", "STRING")
        f.metadata.set("imatrix.chunk_count", 10, chunk_type)
        f.metadata.set("imatrix.chunk_size", 512, "UINT32")
    for name, gtype in (tensors or {"blk.0.ffn_up.weight.in_sum2": "F32", "blk.0.ffn_up.weight.counts": "F32"}).items():
        shape = (64, 1) if name.endswith("in_sum2") else (1, 1)
        f.add_tensor(
            name,
            bytes(2 * 64 if gtype == "F16" else 4 * 64)[: (2 if gtype == "F16" else 4) * shape[0]],
            gtype,
            shape=shape,
        )
    report = check(f.to_bytes(), profile="llama.cpp")
    return [x.message for x in report.errors() if x.rule == "MODEL-IMATRIX"], report


def test_an_importance_matrix_is_checked_for_what_it_is():
    errors, report = _imatrix()
    assert report.valid, [f"{f.rule}: {f.message}" for f in report.errors()]
    for kwargs, needle in (
        ({"keys": False}, "missing imatrix metadata"),
        ({"chunk_type": "INT32"}, "imatrix.chunk_count has type INT32"),
        ({"tensors": {"blk.0.ffn_up.weight.in_sum2": "F32"}}, "mismatched sums and counts"),
        ({"tensors": {"blk.0.ffn_up.weight.in_sum2": "F16", "blk.0.ffn_up.weight.counts": "F32"}}, "must be F32"),
    ):
        errors, report = _imatrix(**kwargs)
        assert not report.valid and any(needle in e for e in errors), (kwargs, errors)
