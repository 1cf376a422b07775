"""The built-in example: small files in every version x byte order, loaded, dumped and verified."""

from __future__ import annotations

import os
import tempfile

import numpy as np

from .. import codecs
from ..format import structs
from ..format.spec import byte_order as byte_order_of
from ..filemodel.gguffile import GGUFFile, load
from ..format import keynames
from ..format.enums import GGUFValueType
from ..format.values import numpy_dtype_of

# types the demo tries to include, in order; those without an encoder yet are skipped
DEMO_TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "IQ4_NL", "MXFP4", "I32"]


def example_file(version: int, byte_order: str) -> GGUFFile:
    """A small model-like file with several tensor types and every kind of metadata value."""
    gguf = GGUFFile.new(version=version, byte_order=byte_order)
    md = gguf.metadata
    md.set(keynames.GENERAL_ARCHITECTURE, "llama", "STRING")
    md.set(keynames.GENERAL_NAME, "gguf-construct demo ✓", "STRING")
    md.set(keynames.GENERAL_QUANTIZATION_VERSION, 2, "UINT32")
    md.set(keynames.ARCH_CONTEXT_LENGTH.format(arch="llama"), 4096, "UINT32")
    md.set(keynames.ARCH_ROPE_FREQ_BASE.format(arch="llama"), 10000.0, "FLOAT32")
    md.set("demo.flag", True, "BOOL")
    wide = "UINT64" if GGUFValueType.UINT64 in structs.value_types_in(version) else "UINT32"  # v1 has no UINT64
    md.set("demo.big", 2**40 if wide == "UINT64" else 2**31, wide)
    md.set(keynames.TOKENIZER_GGML_TOKENS, ["<unk>", "<s>", "</s>", "héllo", "wörld"], "ARRAY", "STRING")
    md.set(keynames.TOKENIZER_GGML_SCORES, np.array([0, 0, 0, -1.5, -2.5], np.float32), "ARRAY", "FLOAT32")
    md.set("demo.empty", [], "ARRAY", "INT32")
    md.set("demo.nested", [[1, 2], [3]], "ARRAY", "ARRAY")
    for type_id in structs.value_types_in(version):  # a value and an array of every value type the version has
        name = structs.value_types()[type_id]["name"]
        sample = _samples(type_id)
        if sample:
            md.set(f"demo.types.{name.lower()}", sample[0], name)
            md.set(f"demo.types.{name.lower()}_array", sample, "ARRAY", name)
    rng = np.random.default_rng(0)
    for name in DEMO_TYPES:
        if not codecs.has_encoder(name):
            continue
        t = codecs.type_spec(name)
        cols = max(256, t.block_size)
        if t.kind == "integer":
            values = rng.integers(-100, 100, size=(2, cols)).astype(np.int32)
        else:
            values = rng.standard_normal((2, cols)).astype(np.float32)
        gguf.add_tensor(f"blk.0.{name.lower()}.weight", values, ggml_type=name)
    return gguf


def _samples(type_id: int) -> list:
    """Values of a scalar value type by its spec ``kind`` (an integer type's extremes), or [] for an array."""
    kind = structs.value_kind(type_id)
    if kind == "integer":
        dtype = numpy_dtype_of(GGUFValueType(type_id))
        info = np.iinfo(dtype)
        return [int(info.max), int(info.min), 1]
    return {"float": [1.5, -0.25, 0.0], "bool": [True, False], "text": ["demo ✓", ""]}.get(kind, [])


def run(out=print, directory: str | None = None) -> bool:
    """Write, reload, dump and verify the example in every version x byte order; True when all round trips hold."""
    ok = True
    with tempfile.TemporaryDirectory(prefix="gguf-construct-demo-") as tmp:
        directory = directory or tmp
        os.makedirs(directory, exist_ok=True)
        for version, byte_order in structs.each_family():
            gguf = example_file(version, byte_order)
            path = os.path.join(directory, f"demo-v{version}-{byte_order}.gguf")
            gguf.save(path)
            with open(path, "rb") as fh:
                data = fh.read()
            back = load(path)
            same_bytes = back.to_bytes() == data
            same_meta = all(back.metadata.typed(k) == v for k, v in gguf.metadata.typed_items())
            same_tensors = all(
                np.array_equal(a.numpy(), b.numpy(), equal_nan=a.numpy().dtype.kind == "f")
                for a, b in zip(gguf.tensors, back.tensors)
            )
            other = byte_order_of(byte_order).other.name
            swapped = load(load(path).convert(byte_order=other).to_bytes())
            restored = swapped.convert(byte_order=byte_order).to_bytes() == data
            good = same_bytes and same_meta and same_tensors and restored
            ok &= good
            types = ", ".join(t.ggml_type.name for t in back.tensors)
            out(
                f"{'ok  ' if good else 'FAIL'} v{version} {byte_order:<6} {len(data):>7} bytes  "
                f"{len(back.metadata)} keys  {len(back.tensors)} tensors ({types})  "
                f"round trip {'identical' if same_bytes else 'DIFFERS'}, byte order swap and back "
                f"{'identical' if restored else 'DIFFERS'}"
            )
            back.close()
    out("demo: all round trips identical" if ok else "demo: FAILED")
    return ok


__all__ = ["example_file", "run"]
