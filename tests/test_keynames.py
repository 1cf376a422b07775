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


def _key_literals(source: str) -> list[str]:
    """Registered key names written out as a whole string literal in ``source`` (f-strings and docstring
    examples aside: a literal is a quoted key alone)."""
    import re

    names = {v for k, v in vars(keynames).items() if k.isupper() and isinstance(v, str) and "." in v}
    pattern = re.compile(r"(?<![fFrRbB\w])([\"'])(" + "|".join(map(re.escape, sorted(names, key=len)[::-1])) + r")\1")
    return [m.group(2) for m in pattern.finditer(source)]


def test_no_library_module_spells_a_registered_key():
    from pathlib import Path

    package = Path(keynames.__file__).resolve().parents[1]
    spelled = {}
    for path in package.rglob("*.py"):
        if path.name == "keynames.py" or "docgen" in path.parts:  # the constants themselves; docs quote keys
            continue
        found = [k for k in _key_literals(path.read_text(encoding="utf-8")) if k]
        if found:
            spelled[str(path.relative_to(package))] = found
    # an example key in fuzzing's docstring (the JSON a reader answers with) is prose, not a use
    spelled.pop("fuzzing/__init__.py", None)
    assert spelled == {}


def test_the_key_literal_scan_sees_a_spelling():
    assert _key_literals('x = meta["general.architecture"]') == ["general.architecture"]
    assert _key_literals('x = f"general.architecture"') == []
