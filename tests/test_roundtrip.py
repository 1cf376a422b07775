"""Property tests: build -> parse gives the document back; parse -> build gives the bytes back; the compiled and
interpreted parsers agree; conversions between versions and byte orders are lossless."""

from hypothesis import given
from hypothesis import strategies as st

import gguf_construct as g
from gguf_construct import codecs
from gguf_construct.format import structs
from gguf_construct.format.constructs import BufferStream
from gguf_construct.strategies import gguf_files


def assert_matches(gguf, doc):
    assert gguf.version == doc.version
    assert gguf.byte_order == doc.byte_order
    assert list(gguf.metadata) == [k for k, _ in doc.metadata]
    for key, value in doc.metadata:
        assert gguf.metadata.typed(key) == value, key
    assert [(t.name, t.ggml_type, t.shape) for t in gguf.tensors] == [(n, ty, sh) for n, ty, sh, _ in doc.tensors]
    for t, (_, _, _, raw) in zip(gguf.tensors, doc.tensors):
        assert bytes(t.raw()) == raw
        assert t.offset % gguf.alignment == 0


@given(gguf_files())
def test_build_then_parse_gives_the_document(sample):
    data, doc = sample
    assert_matches(g.load(data), doc)


@given(gguf_files())
def test_parse_then_build_is_byte_identical(sample):
    data, _ = sample
    assert g.load(data).to_bytes() == data


@given(gguf_files(max_tensors=1))
def test_compiled_and_interpreted_parsers_agree(sample):
    data, doc = sample
    fam = structs.family(doc.version, doc.byte_order)
    fast = fam.compiled_head.parse_stream(BufferStream(data))
    slow = fam.types["file_head"].parse_stream(BufferStream(data))
    assert repr(fast) == repr(slow)


@given(gguf_files(), st.sampled_from(structs.each_family()))
def test_convert_is_lossless(sample, target):
    data, doc = sample
    version, order = target
    converted = g.load(g.load(data).convert(version=version, byte_order=order).to_bytes())
    assert (converted.version, converted.byte_order) == target
    for key, value in doc.metadata:
        assert converted.metadata.typed(key) == value
    for a, b in zip(g.load(data).tensors, converted.tensors):
        assert (a.name, a.shape, a.ggml_type) == (b.name, b.shape, b.ggml_type)
        if order == doc.byte_order:
            assert bytes(a.raw()) == bytes(b.raw())
        else:
            assert codecs.swap_blocks(a.ggml_type, a.raw(), doc.byte_order, order) == bytes(b.raw())
    back = g.load(converted.to_bytes()).convert(version=doc.version, byte_order=doc.byte_order)
    assert back.to_bytes() == data


@given(gguf_files(byte_orders=["little"], tensor_types=["F32", "F16", "BF16", "I16", "I32", "F64"]))
def test_big_endian_tensors_decode_to_the_same_values(sample):
    data, doc = sample
    le = g.load(data)
    be = g.load(g.load(data).convert(byte_order="big").to_bytes())
    for a, b in zip(le.tensors, be.tensors):
        x, y = a.numpy(), b.numpy()
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
