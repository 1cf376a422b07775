"""The file model: lazy loading, editing, atomic saves, building from scratch."""

import os
import tracemalloc

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.format import structs
from gguf_construct.format.reader import align_offset


def sparse_file(path, n_elements=2**31):
    """A file declaring one F32 tensor of n_elements (8 GiB by default), data left sparse."""
    f = g.GGUFFile.new()
    f.metadata.set("general.architecture", "llama", "STRING")
    head = f._build_head([g.Tensor("big", (n_elements,), g.GGMLType.F32, 0, 4 * n_elements)])
    start = align_offset(len(head), 32)
    with open(path, "wb") as fh:
        fh.write(head + b"\0" * (start - len(head)))
        fh.truncate(start + 4 * n_elements)
    return start


def test_loading_8_gib_of_sparse_tensor_data_costs_only_the_header(tmp_path):
    path = tmp_path / "big.gguf"
    start = sparse_file(path)
    g.load(path).close()  # the process's first load builds the struct family once; that is not the file's cost
    tracemalloc.start()
    f = g.load(path)
    t = f.tensors[0]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert t.nbytes == 8 << 30 and t.shape == (2**31,)
    assert len(t.raw()) == 8 << 30
    assert peak < 1 << 20
    assert bytes(t.raw()[:8]) == b"\0" * 8
    assert f._orig["data_start"] == start
    f.close()


def test_editing_metadata_keeps_tensor_data_verbatim(tmp_path):
    src = g.GGUFFile.new()
    src.metadata.set("general.name", "a", "STRING")
    src.add_tensor("w", np.arange(64, dtype=np.float32))
    src.add_tensor("v", np.arange(32, dtype=np.float16))
    path = tmp_path / "a.gguf"
    src.save(path)
    f = g.load(path)
    f.metadata["general.name"] = "a much longer name than before, moving the data section"
    f.metadata.set("test.extra", [1, 2, 3], "ARRAY", "UINT8")
    out = tmp_path / "b.gguf"
    f.save(out)
    back = g.load(out)
    assert back.metadata["general.name"].startswith("a much longer")
    assert back.metadata.type_of("test.extra") == g.GGUFValueType.ARRAY
    for a, b in zip(g.load(path).tensors, back.tensors):
        assert bytes(a.raw()) == bytes(b.raw()) and a.offset == b.offset
    assert np.array_equal(back.tensor("w").numpy(), np.arange(64, dtype=np.float32))


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "x.gguf"
    path.write_bytes(b"old contents")
    f = g.GGUFFile.new()
    f.add_tensor("w", np.zeros(32, np.float32))

    def broken(self, out, **options):
        out.write(b"GGUF partial")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(g.GGUFFile, "write_to", broken)
    with pytest.raises(RuntimeError):
        f.save(path)
    assert path.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["x.gguf"]


def test_new_file_has_canonical_layout():
    f = g.GGUFFile.new(alignment=64)
    f.add_tensor("a", np.ones((3, 32), np.float32))
    f.add_tensor("b", np.ones(16, np.int8))
    data = f.to_bytes()
    back = g.load(data)
    assert back.alignment == 64
    assert [t.offset for t in back.tensors] == [0, 384]  # 3*32*4 bytes, already a multiple of 64
    start = back._orig["data_start"]
    assert start % 64 == 0 and set(data[back._orig["head_end"] : start]) <= {0}
    assert len(data) == start + 384 + 64  # every tensor padded to the alignment, the last one too
    assert back.tensors[0].shape == (32, 3) and back.tensors[0].numpy().shape == (3, 32)


def test_non_canonical_layouts_round_trip():
    """Gaps, reversed order, non-zero padding and trailing bytes are all kept byte for byte."""
    f = g.GGUFFile.new(version=2, byte_order="big")
    f.metadata.set("general.alignment", 64, "UINT32")
    a = g.Tensor("a", (32,), g.GGMLType.F32, 192, 128)
    b = g.Tensor("b", (64,), g.GGMLType.I8, 0, 64)
    head = f._build_head([a, b])
    start = align_offset(len(head), 64)
    data = bytearray(head + b"\x7f" * (start - len(head)))
    body = bytearray(np.random.default_rng(7).bytes(320))
    data += body + b"trailing bytes"
    back = g.load(bytes(data))
    assert back.to_bytes() == bytes(data)
    assert bytes(back.tensor("a").raw()) == bytes(body[192:320])
    little = g.load(back.convert(byte_order="little").to_bytes())
    assert little.tensor("a").numpy().tobytes() == back.tensor("a").numpy().tobytes()  # random bits: NaNs too
    assert g.load(little.convert(byte_order="big").to_bytes()).to_bytes() == bytes(data)


def test_metadata_types_are_kept_and_checked():
    f = g.GGUFFile.new()
    f.metadata.set("a.u8", 7, "UINT8")
    f.metadata["a.u8"] = 9
    assert f.metadata.type_of("a.u8") == g.GGUFValueType.UINT8
    with pytest.raises(ValueError):
        f.metadata["a.u8"] = 300
    f.metadata["a.inferred"] = 1.5
    assert f.metadata.type_of("a.inferred") == g.GGUFValueType.FLOAT32
    f.metadata["a.list"] = ["x", "y"]
    assert f.metadata.typed("a.list").item_type == g.GGUFValueType.STRING
    back = g.load(f.to_bytes())
    assert back.metadata["a.u8"] == 9 and back.metadata["a.list"] == ["x", "y"]


@pytest.mark.parametrize("version,order", structs.each_family())
def test_quantized_tensor_added_and_decoded(version, order):
    from gguf_construct import codecs

    x = np.random.default_rng(0).standard_normal((4, 256)).astype(np.float32)
    f = g.GGUFFile.new(version=version, byte_order=order)
    f.add_tensor("q", x, ggml_type="Q8_0")
    back = g.load(f.to_bytes())
    expected = codecs.dequantize("Q8_0", codecs.quantize("Q8_0", x)).reshape(4, 256)
    assert np.array_equal(back.tensor("q").numpy(), expected)


@pytest.mark.parametrize("type_name", ["Q4_K", "Q8_0", "IQ2_XS", "TQ1_0", "BF16"])
def test_tensor_numpy_peak_memory_is_the_output_plus_a_little(tmp_path, type_name):
    """Tensor.numpy() of a 16 MiB-output tensor: decoders that write into the output and those
    decoded chunk by chunk both stay within the output plus a few MiB, and give dequantize's values."""
    from gguf_construct import codecs

    t = codecs.type_spec(type_name)
    rows, n_blocks_row = 64, 65536 // t.block_size
    raw = np.random.default_rng(3).integers(0, 256, rows * n_blocks_row * t.type_size, dtype=np.uint8)
    f = g.GGUFFile.new()
    f.add_tensor("w", raw.tobytes(), type_name, shape=(n_blocks_row * t.block_size, rows))
    path = tmp_path / "w.gguf"
    f.save(path)
    tensor = g.load(path).tensor("w")
    with np.errstate(all="ignore"):
        codecs.dequantize(type_name, raw[: t.type_size])  # the decoder's one-time import (a compiled module) first
        tracemalloc.start()
        values = tensor.numpy()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        want = codecs.dequantize(type_name, raw)
    assert values.shape == (rows, n_blocks_row * t.block_size)
    assert values.nbytes == 16 << 20 and peak < values.nbytes + (6 << 20), (peak - values.nbytes) / 2**20
    assert np.array_equal(values.reshape(-1).view(np.uint32), want.view(np.uint32))
