"""Malformed input ends in GGUFError naming offset and field: quickly, without large allocations."""

import struct
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gguf_construct as g
from gguf_construct.operations.demo import example_file


def small_file(version=3, byte_order="little"):
    gguf = g.GGUFFile.new(version=version, byte_order=byte_order)
    gguf.metadata.set("general.architecture", "llama", "STRING")
    gguf.metadata.set("test.list", ["a", "bc"], "ARRAY", "STRING")
    gguf.metadata.set("test.nums", np.arange(3, dtype=np.int32), "ARRAY", "INT32")
    gguf.add_tensor("w", np.arange(8, dtype=np.float32))
    return gguf.to_bytes()


def header(n_tensors, n_kv, version=3, order="<"):
    width = "I" if version == 1 else "Q"
    return b"GGUF" + struct.pack(f"{order}I{width}{width}", version, n_tensors, n_kv)


@pytest.mark.parametrize("version,order", [(1, "little"), (2, "big"), (3, "little"), (3, "big")])
def test_truncation_at_every_offset(version, order):
    data = small_file(version, order)
    full = g.load(data)
    needed = full._orig["data_start"] + full.tensors[0].nbytes
    for cut in range(needed):
        with pytest.raises(g.GGUFError) as info:
            g.load(data[:cut])
        assert info.value.offset is None or 0 <= info.value.offset <= cut
    for cut in range(needed, len(data) + 1):  # only trailing padding is missing: still readable
        assert g.load(data[:cut]).tensors[0].nbytes == 32


@pytest.mark.parametrize("field", ["n_kv", "n_tensors"])
@pytest.mark.parametrize("count", [2**63, 2**64 - 1, 2**40])
def test_huge_counts_in_a_tiny_file(field, count):
    data = header(count if field == "n_tensors" else 0, count if field == "n_kv" else 0) + b"\0" * 16
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(g.GGUFError) as info:
        g.load(data)
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert info.value.rule == "HDR-COUNT"  # at the count that cannot be satisfied, as the checker reports it
    assert (info.value.offset, info.value.path) == (
        (8, "header.tensor_count") if field == "n_tensors" else (16, "header.metadata_kv_count")
    )
    assert peak < 1 << 20 and elapsed < 1.0


def kv_file(key: bytes, vtype: int, payload: bytes, n_kv=1):
    return header(0, n_kv) + struct.pack("<Q", len(key)) + key + struct.pack("<I", vtype) + payload


@pytest.mark.parametrize("length", [2**64 - 1, 2**63, 2**62, 5])
def test_string_length_past_the_end(length):
    data = kv_file(b"a.b", 8, struct.pack("<Q", length) + b"abc")
    with pytest.raises(g.GGUFError) as info:
        g.load(data)
    assert info.value.rule == "STR-EOF"
    assert info.value.offset == 24 + 8 + 3 + 4
    assert info.value.path == "metadata_kv[0].value"


@pytest.mark.parametrize("item_type,length", [(0, 2**63), (8, 2**60), (4, 1000), (9, 2**62), (7, 2**64 - 1)])
def test_array_length_bombs(item_type, length):
    data = kv_file(b"a.b", 9, struct.pack("<IQ", item_type, length) + b"\0" * 40)
    tracemalloc.start()
    with pytest.raises(g.GGUFError) as info:
        g.load(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert info.value.rule == "ARR-EOF"
    assert info.value.path.startswith("metadata_kv[0].value")
    assert peak < 1 << 20


def test_key_length_past_the_end():
    data = header(0, 1) + struct.pack("<Q", 2**63) + b"abc" + b"\0" * 20
    with pytest.raises(g.GGUFError) as info:
        g.load(data)
    assert info.value.path == "metadata_kv[0].key" and info.value.offset == 24


@pytest.mark.parametrize("vtype", [13, 100, 0xFFFFFFFF])
def test_unknown_value_type(vtype):
    with pytest.raises(g.GGUFError) as info:
        g.load(kv_file(b"a.b", vtype, b"\0" * 8))
    assert info.value.rule == "KV-TYPE" and info.value.path == "metadata_kv[0].value_type"


@pytest.mark.parametrize("magic", [b"GGUG", b"FUGG", b"tjgg", b"gguf", b"\0\0\0\0"])
def test_bad_magic(magic):
    with pytest.raises(g.GGUFError) as info:
        g.load(magic + small_file()[4:])
    assert info.value.rule == "HDR-MAGIC" and info.value.offset == 0


@pytest.mark.parametrize("version_bytes", [b"\0\0\0\0", b"\4\0\0\0", b"\xff\xff\xff\xff", b"\3\0\3\0"])
def test_bad_version(version_bytes):
    with pytest.raises(g.GGUFError) as info:
        g.load(b"GGUF" + version_bytes + small_file()[8:])
    assert info.value.rule == "HDR-VERSION" and info.value.offset == 4


def test_deep_nesting_is_an_error_not_a_crash():
    depth = 5000
    body = b"".join(struct.pack("<IQ", 9, 1) for _ in range(depth)) + struct.pack("<IQ", 0, 0)
    with pytest.raises(g.GGUFError):
        g.load(kv_file(b"a.b", 9, body))


def test_tensor_out_of_bounds_and_unknown_type():
    data = bytearray(small_file())
    gguf = g.load(bytes(data))
    # the tensor info is the last thing before the padding: type (u32) then offset (u64)
    end = gguf._orig["head_end"]
    bad_offset = bytes(data[: end - 8]) + struct.pack("<Q", 2**64 - 32) + bytes(data[end:])
    with pytest.raises(g.GGUFError) as info:
        g.load(bad_offset)
    assert info.value.rule == "DATA-BOUNDS" and info.value.path == "tensor_infos[0].offset"
    for bad_type in (4, 31, 43, 0xFFFFFFFF):  # removed and unknown types: the file opens, the tensor is opaque
        mutated = bytes(data[: end - 12]) + struct.pack("<I", bad_type) + bytes(data[end - 8 :])
        t = g.load(mutated).tensors[0]
        assert t.opaque and int(t.ggml_type) == bad_type and bytes(t.raw()) == bytes(gguf.tensors[0].raw())
        with pytest.raises(g.GGUFError) as info:
            t.numpy()
        assert info.value.rule == "TI-TYPE"


EXAMPLE = example_file(3, "little").to_bytes()


@given(st.lists(st.tuples(st.integers(0, len(EXAMPLE) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_mutated_files_raise_only_gguf_error(edits):
    data = bytearray(EXAMPLE)
    for pos, byte in edits:
        data[pos] = byte
    try:
        gguf = g.load(bytes(data))
    except g.GGUFError:
        return
    gguf.to_bytes()
    for t in gguf.tensors:
        try:
            t.numpy()
        except g.GGUFError:  # an opaque tensor (its type id was hit) says why it cannot decode
            assert t.opaque


@given(st.integers(0, len(EXAMPLE)), st.sampled_from([0, 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1]))
def test_boundary_values_written_over_any_field(pos, value):
    data = bytearray(EXAMPLE)
    data[pos : pos + 8] = struct.pack("<Q", value)
    try:
        g.load(bytes(data[: len(EXAMPLE)]))
    except g.GGUFError:
        pass


def test_scalar_tensor_of_a_quantized_type_is_rejected():
    """No dimensions means ne[0] = 1, never a multiple of a quantized block size (found by the fuzzer)."""
    f = g.GGUFFile.new()
    head = f._build_head([g.Tensor("s", (), g.GGMLType.Q2_K, 0, 0)])
    with pytest.raises(g.GGUFError) as info:
        g.load(head + b"\0" * 64)
    assert info.value.rule == "TI-BLOCK"
    scalar = g.GGUFFile.new()
    scalar.add_tensor("one", b"\0\0\x80\x3f", "F32", shape=())
    assert g.load(scalar.to_bytes()).tensor("one").numpy() == np.float32(1.0)


@pytest.mark.parametrize("shape", [(0, 2**31, 2**31), (2**40, 0, 2**40)])
def test_empty_tensor_with_dimensions_numpy_cannot_hold(shape):
    """A zero dimension makes the tensor empty (accepted, like gguf.cpp), but numpy refuses the shape when the other
    dimensions multiply past its index range: numpy() raises GGUFError naming the field (found by fuzzing)."""
    f = g.GGUFFile.new()
    head = f._build_head([g.Tensor("e", shape, g.GGMLType.F32, 0, 0)])
    gguf = g.load(head + b"\0" * 64)
    t = gguf.tensor("e")
    assert t.nbytes == 0 and t.n_elements == 0
    with pytest.raises(g.GGUFError) as info:
        t.numpy()
    assert info.value.path == "tensor_infos[0].dimensions"
    small = g.load(g.GGUFFile.new()._build_head([g.Tensor("z", (4, 0), g.GGMLType.F32, 0, 0)]) + b"\0" * 64)
    assert small.tensor("z").numpy().shape == (0, 4)
