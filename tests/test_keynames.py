"""The key-name constants module (gguf_construct/format/keynames.py) is generated from spec/keys.yaml and
committed; ``docs --check`` fails when it is stale, and code names keys through it."""

from __future__ import annotations


from gguf_construct.docgen import keynames as generator
from gguf_construct.format import keynames, keyregistry, splitset


def test_the_committed_module_is_the_generated_one():
    assert generator.check_keynames() == []
    assert generator.KEYNAMES_MODULE.read_text(encoding="utf-8") == generator.keynames_source()


def test_one_constant_per_registered_key():
    keys = [e["key"] for e in keyregistry.keys_spec()["keys"]]
    assert sorted(keynames.__all__) == sorted({generator.constant_name(k) for k in keys})
    assert keynames.GENERAL_ARCHITECTURE == "general.architecture"
    assert keynames.ARCH_CONTEXT_LENGTH.format(arch="llama") == "llama.context_length"
    assert splitset.SPLIT_KEYS == (keynames.SPLIT_NO, keynames.SPLIT_COUNT, keynames.SPLIT_TENSORS_COUNT)


def test_docs_check_sees_a_stale_module(tmp_path, monkeypatch):
    stale = tmp_path / "keynames.py"
    stale.write_text(generator.keynames_source().replace('"general.name"', '"general.title"'), encoding="utf-8")
    assert generator.check_keynames(stale)
    assert generator.write_keynames(stale) == [stale] and generator.check_keynames(stale) == []
