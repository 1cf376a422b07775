"""Heads written in runs (filemodel/headencode.py) are the bytes the generated structs build, in every version and
byte order: files drawn by the strategies and values at the edges of their types, converted to every family, are
written once with the encoder and once with every record built by the struct; a value the struct refuses is
refused the same way; writing many records is a few calls a record."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import gguf_construct as g
from gguf_construct.filemodel import headencode
from gguf_construct.format import structs
from gguf_construct.format.enums import GGUFValueType as T
from gguf_construct.strategies import gguf_files
from callcount import count_calls

FAMILIES = [(v, o) for v in structs.versions() for o in structs.BYTE_ORDERS]


def _struct_only(monkeypatch) -> None:
    monkeypatch.setattr(headencode, "kv_encodable", lambda layout, value: False)
    monkeypatch.setattr(headencode, "encode_tensor_infos", lambda infos, layout, limit: None)


def _both(f_bytes: bytes, family, monkeypatch) -> tuple:
    out = []
    for struct_only in (False, True):
        with monkeypatch.context() as m:
            if struct_only:
                _struct_only(m)
            f = g.load(f_bytes)
            f._kv_source = None  # no record copied: every one encoded or built
            try:
                out.append(f.convert(version=family[0], byte_order=family[1]).to_bytes())
            except (ValueError, g.GGUFError) as exc:
                out.append(type(exc))
    return tuple(out)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)
@given(gguf_files())
def test_drawn_files_in_every_family_are_the_structs_bytes(drawn):
    with pytest.MonkeyPatch.context() as monkeypatch:
        for family in FAMILIES:
            encoded, built = _both(drawn[0], family, monkeypatch)
            assert encoded == built, family


EDGES = [
    ("f.inf", float("inf"), T.FLOAT32),
    ("f.ninf", float("-inf"), T.FLOAT32),
    ("f.tiny", 1e-45, T.FLOAT32),
    ("f.negzero", -0.0, T.FLOAT32),
    ("f.max", float(np.finfo(np.float32).max), T.FLOAT32),
    ("f.round", 0.1, T.FLOAT32),
    ("d.pi", math.pi, T.FLOAT64),
    ("d.nan", float("nan"), T.FLOAT64),
    ("u8.max", 255, T.UINT8),
    ("i8.min", -128, T.INT8),
    ("u64.max", 2**64 - 1, T.UINT64),
    ("i64.min", -(2**63), T.INT64),
    ("b.true", True, T.BOOL),
    ("b.zero", 0, T.BOOL),
    ("s.empty", "", T.STRING),
    ("s.text", "h\u00e9llo \u2581 \U0001f600", T.STRING),
    ("s.escaped", "bad \udcff byte", T.STRING),
    ("k.\udcfe", 1, T.UINT32),
]


def test_values_at_the_edges_of_their_types(monkeypatch):
    f = g.GGUFFile.new()
    for key, value, vtype in EDGES:
        f.metadata.set(key, value, vtype)
    f.add_tensor("t.\u00e9", np.zeros((2, 3, 4, 32), dtype=np.float32))
    f.add_tensor("scalar", np.zeros((), dtype=np.float32))
    data = f.to_bytes()
    for family in FAMILIES:
        encoded, built = _both(data, family, monkeypatch)
        assert encoded == built and isinstance(encoded, bytes), family


@pytest.mark.parametrize(
    "key, value, vtype",
    [
        ("u8.big", 256, T.UINT8),
        ("i8.low", -129, T.INT8),
        ("f.huge", 1e300, T.FLOAT32),
        ("u32.neg", -1, T.UINT32),
        ("i32.float", 3.7, T.INT32),  # numpy would truncate it to 3; the struct refuses a float for an integer
    ],
)
def test_a_value_out_of_range_is_refused_as_the_struct_refuses_it(key, value, vtype):
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata._items[key] = g.GGUFValue(vtype, value)  # past the API's own checks
    with pytest.raises(ValueError, match="cannot encode this file"):
        f.to_bytes()


def test_writing_a_head_of_many_records_converted_is_a_few_calls_a_record():
    counts = []
    for n in (3000, 12000):
        f = g.GGUFFile.new()
        for i in range(n):
            f.metadata[f"x.k{i:08d}"] = i
            f.metadata[f"x.s{i:08d}"] = "v"
        for i in range(n):
            f.add_tensor(f"t{i}", np.zeros(32, dtype=np.float32))
        f.convert(byte_order="big")
        counts.append(count_calls(lambda: f._build_head(f._canonical_offsets())) / (3 * n))
    assert counts[1] < 12 and counts[1] < counts[0] * 1.2, counts  # the struct: over 100 a record
