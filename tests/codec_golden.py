"""Comparing codec output with ggml's own results (golden .npz files, same array names everywhere).

Array names (see ../shared/golden/README.md): ``x`` input rows, ``imatrix``, ``q`` / ``q_imat`` ggml's
quantization without / with importance weights, ``deq_q`` / ``deq_q_imat`` its dequantization, ``raw`` random
blocks and ``deq_raw`` their dequantization.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gguf_construct import codecs

SHARED_GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "golden"
LOCAL_GOLDEN = Path(__file__).resolve().parent / "golden"


def assert_same(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Bit-identical arrays (floats compared as bit patterns, any NaN equal to any NaN)."""
    actual = np.ascontiguousarray(actual)
    expected = np.ascontiguousarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.dtype.kind == "f":
        bits = np.dtype(f"u{actual.dtype.itemsize}")
        same = (actual.view(bits) == expected.view(bits)) | (np.isnan(actual) & np.isnan(expected))
    else:
        same = actual == expected
    if not same.all():
        bad = np.argwhere(~same)
        raise AssertionError(f"{what}: {len(bad)} mismatches, first at {bad[0].tolist()}")


def check_golden(path: Path, type_name: str, byte_orders=("little", "big")) -> list[str]:
    """Check every array of a golden file against our codecs; returns the names of the arrays checked."""
    g = np.load(path)
    rows = g["x"].shape[0]
    checked = []
    with np.errstate(all="ignore"):
        for key in ("q", "q_imat", "raw"):
            if key in g.files and "deq_" + key in g.files:
                raw = g[key].tobytes()
                for order in byte_orders:
                    data = raw if order == "little" else codecs.swap_blocks(type_name, raw, "little", "big")
                    got = codecs.dequantize(type_name, data, byte_order=order).reshape(g[key].shape[0], -1)
                    assert_same(got, g["deq_" + key], f"{path.name} deq_{key} ({order})")
                checked.append("deq_" + key)
        for key, imatrix in (("q", None), ("q_imat", g["imatrix"])):
            if key in g.files:
                got = np.frombuffer(codecs.quantize(type_name, g["x"], imatrix=imatrix), np.uint8).reshape(rows, -1)
                assert_same(got, g[key], f"{path.name} {key}")
                checked.append(key)
    return checked
