"""Every real file of ../shared/corpus loads and rebuilds to identical bytes (skipped when absent)."""

import pytest

import gguf_construct as g
from gguf_construct.format import structs
from gguf_construct.format.constructs import BufferStream

from conftest import corpus_files


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_round_trip(path):
    data = path.read_bytes()
    gguf = g.load(path)
    assert gguf.to_bytes() == data
    assert len(gguf.metadata) > 0
    tokens = gguf.metadata.get("tokenizer.ggml.tokens")
    if tokens is not None:
        assert gguf.metadata.typed("tokenizer.ggml.tokens").item_type == g.GGUFValueType.STRING
        assert all(isinstance(t, str) for t in tokens[:100])


@pytest.mark.parametrize("path", corpus_files()[:4], ids=lambda p: p.name)
def test_corpus_compiled_agrees_with_interpreted(path):
    data = path.read_bytes()
    gguf = g.load(data)
    fam = structs.family(gguf.version, gguf.byte_order)
    fast = fam.compiled_head.parse_stream(BufferStream(data))
    slow = fam.types["file_head"].parse_stream(BufferStream(data))
    assert [kv.key for kv in fast.metadata_kv] == [kv.key for kv in slow.metadata_kv]
    assert repr(fast) == repr(slow)


@pytest.mark.parametrize("path", sorted(corpus_files(), key=lambda p: p.stat().st_size)[:3], ids=lambda p: p.name)
def test_corpus_converts_and_back(path):
    data = path.read_bytes()
    for version, order in structs.each_family():
        other = g.load(g.load(data).convert(version=version, byte_order=order).to_bytes())
        assert other.version == version and other.byte_order == order
        for key, value in g.load(data).metadata.typed_items():
            assert other.metadata.typed(key) == value
        back = g.load(other.to_bytes()).convert(version=g.load(data).version, byte_order="little")
        assert back.to_bytes() == data


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_corpus_vocab_files_load_in_llama_cpp_as_vocabularies(path):
    """The converter's --vocab-only files (no tensors; two say general.type = model) are valid under the llama.cpp
    profile: llama.cpp loads them with vocab_only, which libllama confirms (tests/test_llama_loader.py)."""
    report = g.check(str(path), profile="llama.cpp")
    assert report.valid, [f"{f.rule}: {f.message}" for f in report.errors()][:3]
    info = g.load(str(path))
    from gguf_construct.filemodel.modelinfo import model_info

    facts = model_info(info)
    assert facts["kind"] == "vocab" and facts["llama_cpp"]["loads"] is True
