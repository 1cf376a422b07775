"""API and message defects of #13: registry types on assignment, bytes are contents, non-regular paths, escaped
fuzz reports."""

from __future__ import annotations

import os

import pytest

import gguf_construct as g
from gguf_construct.format.enums import GGUFValueType as VT
from gguf_construct.fuzzing.report import Disagreement, Results


def test_assigning_a_standardized_key_uses_the_registry_type():
    f = g.GGUFFile.new(version=3, byte_order="little")
    f.metadata["general.architecture"] = "llama"
    f.metadata["llama.context_length"] = 4096
    f.metadata["llama.block_count"] = 2**40  # does not fit UINT32: the registry's UINT64
    f.metadata["general.alignment"] = 64
    f.metadata["tokenizer.ggml.scores"] = [0, 1]
    f.metadata["my.own.key"] = 3
    assert f.metadata.type_of("llama.context_length") == VT.UINT32
    assert f.metadata.type_of("llama.block_count") == VT.UINT64
    assert f.metadata.type_of("general.alignment") == VT.UINT32
    assert f.metadata.typed("tokenizer.ggml.scores").item_type == VT.FLOAT32
    assert f.metadata.type_of("my.own.key") == VT.INT32
    with pytest.raises(TypeError, match="STRING in the key registry"):
        f.metadata["general.name"] = 5
    f.metadata.set("general.name", 5, "UINT8")  # explicit types are always possible
    assert f.metadata.type_of("general.name") == VT.UINT8
    assert g.check(f.to_bytes()).counts.get("META-KEY-TYPE", 0) == 1  # only the explicit UINT8


def test_bytes_are_contents_and_a_path_as_bytes_gets_a_hint(tmp_path):
    p = tmp_path / "m.gguf"
    g.GGUFFile.new(version=3, byte_order="little").save(p)
    assert g.load(p.read_bytes()).version == 3
    with pytest.raises(g.GGUFError, match="bytes are read as the file's contents"):
        g.load(os.fsencode(p))
    assert g.load(str(p)).version == 3  # str and os.PathLike are paths
    with pytest.raises(g.GGUFError) as exc:
        g.load(p.read_bytes()[4:])
    assert "contents" in str(exc.value)  # short non-GGUF bytes: the hint too


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_path_is_refused_clearly():
    for fn in (g.load, g.check):
        with pytest.raises(OSError, match="not a regular file") as exc:
            fn("/dev/zero")
        assert exc.value.filename == "/dev/zero"


def test_a_pipe_object_is_read_to_its_end(tmp_path):
    data = g.GGUFFile.new(version=3, byte_order="little").to_bytes()
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        assert g.load(fh).version == 3


def test_fuzz_table_escapes_hostile_text():
    r = Results("cmd:reader", "spec", 0)
    r.add(Disagreement("false_reject", "false_reject:bad key \x1b[2J\u202e", "detail", [], "valid", 4, b"GGUF"))
    r.notes.append("note \x1b]0;title\x07")
    table = r.table()
    assert "\x1b" not in table and "\u202e" not in table and "\x07" not in table and "\\x1b" in table
