"""The everyday commands: set / rename-tensor, diff, dump options, help texts; files with unknown tensor types."""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.commands.main import build_parser, main


def small(path, *, unknown_type: int | None = None) -> str:
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata["general.name"] = "small"
    f.metadata.set("llama.context_length", 2048, "UINT32")
    f.metadata["tokenizer.chat_template"] = "{% for m in messages %}" + "x" * 300 + "|{{ m }}\n{% endfor %}"
    f.metadata["tokenizer.ggml.tokens"] = [f"t{i}" for i in range(20)]
    f.add_tensor("a", np.arange(128, dtype=np.float32).reshape(4, 32))
    f.add_tensor("b", np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), ggml_type="Q8_0")
    f.add_tensor("c", np.ones(32, np.float32))
    if unknown_type is not None:
        f.tensors[1].ggml_type = unknown_type  # same bytes, a type id no ggml knows
    f.save(path)
    return str(path)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- set / rename-tensor ----------------------------------------------------------------------------------------
def test_set_uses_the_registry_type_and_keeps_tensor_data(tmp_path, capsys):
    path = small(tmp_path / "m.gguf")
    before = g.load(path)
    data_before = [bytes(t.raw()) for t in before.tensors]
    before.close()
    assert run(capsys, "set", path, "llama.context_length", "4096")[0] == 0
    assert run(capsys, "set", path, "general.name", "renamed model")[0] == 0
    assert run(capsys, "set", path, "my.ratio", "0.5", "--type", "float64")[0] == 0
    assert run(capsys, "set", path, "my.ids", "[1, 2, 3]", "--type", "array", "--item-type", "uint8")[0] == 0
    assert run(capsys, "set", path, "my.guess", "17")[0] == 0
    f = g.load(path)
    md = f.metadata
    assert md["llama.context_length"] == 4096 and md.type_of("llama.context_length") == g.GGUFValueType.UINT32
    assert md["general.name"] == "renamed model"
    assert md.type_of("my.ratio") == g.GGUFValueType.FLOAT64 and md["my.ratio"] == 0.5
    assert md.typed("my.ids").item_type == g.GGUFValueType.UINT8 and list(md["my.ids"]) == [1, 2, 3]
    assert md.type_of("my.guess") == g.GGUFValueType.INT32
    assert [bytes(t.raw()) for t in f.tensors] == data_before
    f.close()
    assert run(capsys, "set", path, "--delete", "my.guess")[0] == 0
    assert "my.guess" not in g.load(path).metadata
    code, _, err = run(capsys, "set", path, "--delete", "my.guess")
    assert code == 2 and "no key" in err
    code, _, err = run(capsys, "set", path, "llama.context_length", "lots")
    assert code == 2 and "llama.context_length" in err
    code, _, err = run(capsys, "set", path, "x.y", "1", "--type", "nope")
    assert code == 2 and "UINT32" in err


def test_rename_tensor_keeps_the_data_section_verbatim(tmp_path, capsys):
    path = small(tmp_path / "m.gguf")
    f = g.load(path)
    data_offset, size = f.data_offset, f.source_size
    tail = bytes(f._buf[data_offset:])
    f.close()
    assert run(capsys, "rename-tensor", path, "b", "blk.0.attn_q.weight")[0] == 0
    f = g.load(path)
    assert [t.name for t in f.tensors] == ["a", "blk.0.attn_q.weight", "c"]
    assert bytes(f._buf[f.data_offset :]) == tail and f.source_size - size == f.data_offset - data_offset
    f.close()
    assert run(capsys, "rename-tensor", path, "nope", "x")[0] == 2
    assert run(capsys, "rename-tensor", path, "a", "c")[0] == 2  # duplicate name


# -- diff --------------------------------------------------------------------------------------------------------
def test_diff_reports_header_keys_and_tensors_with_diff_exit_status(tmp_path, capsys):
    a = small(tmp_path / "a.gguf")
    assert run(capsys, "diff", a, a, "--data") == (0, "", "")
    f = g.load(a)
    f.metadata.set("llama.context_length", 2048, "UINT64")  # same number, other type
    f.metadata["general.name"] = "other"
    del f.metadata["tokenizer.ggml.tokens"]
    f.metadata["new.key"] = True
    f.remove_tensor("c")
    f.add_tensor("d", np.zeros(32, np.float32))
    t = f.tensor("a")
    t._source, t._source_offset = bytes(t.raw())[:-4] + b"\0\0\0\0", 0  # its last value differs
    b = str(tmp_path / "b.gguf")
    f.save(b)
    code, out, err = run(capsys, "diff", a, b)
    assert code == 1, err
    assert "~ key llama.context_length: UINT32 2048 -> UINT64 2048" in out
    assert "~ key general.name: STRING 'small' -> STRING 'other'" in out
    assert "- key tokenizer.ggml.tokens: ARRAY[STRING]" in out and "+ key new.key: BOOL True" in out
    assert "- tensor c: F32 [32]" in out and "+ tensor d: F32 [32]" in out
    assert "data differs" not in out
    code, out, _ = run(capsys, "diff", a, b, "--data")
    assert code == 1 and "~ tensor a: data differs" in out
    code, out, _ = run(capsys, "diff", a, b, "--json", "--data")
    result = json.loads(out)
    assert code == 1 and result["tensors"]["changed"] == [{"name": "a", "data": True}]
    assert [k["key"] for k in result["keys"]["changed"]] == ["general.name", "llama.context_length"]
    assert result["keys"]["changed"][1]["a"] == {"type": "UINT32", "value": 2048}
    assert run(capsys, "diff", a, tmp_path / "missing.gguf")[0] == 2


# -- dump --------------------------------------------------------------------------------------------------------
def test_dump_full_key_counts_layout_and_formats(tmp_path, capsys):
    path = small(tmp_path / "m.gguf")
    template = g.load(path).metadata["tokenizer.chat_template"]
    code, out, _ = run(capsys, "dump", path)
    assert code == 0 and "(20 items)" in out and "file size:  " + str(os.path.getsize(path)) in out
    assert "data at:    offset" in out and "..." in out  # the long template is cut
    code, out, _ = run(capsys, "dump", path, "--full")
    assert repr(template) in out and "t19" in out  # whole template, whole array
    code, out, _ = run(capsys, "dump", path, "--key", "tokenizer.chat_template")
    assert code == 0 and out == template + "\n"  # exactly as stored, plus the newline it lacks
    assert (
        run(capsys, "dump", path, "--key", "tokenizer.ggml.tokens")[1]
        == json.dumps([f"t{i}" for i in range(20)]) + "\n"
    )
    assert run(capsys, "dump", path, "--key", "llama.context_length")[1] == "2048\n"
    assert run(capsys, "dump", path, "--key", "absent")[0] == 1
    code, out, _ = run(capsys, "dump", path, "--json", "--no-tensors")
    summary = json.loads(out)
    f = g.load(path)
    assert "tensors" not in summary and summary["tensor_count"] == 3
    assert summary["file_size"] == os.path.getsize(path) and summary["data_offset"] == f.data_offset
    raw = open(path, "rb").read()
    for entry in summary["metadata"]:  # each offset is where the key's record starts: length, then the key
        key = entry["key"].encode()
        assert raw[entry["offset"] : entry["offset"] + 8] == len(key).to_bytes(8, "little")
        assert raw[entry["offset"] + 8 : entry["offset"] + 8 + len(key)] == key
    code, out, _ = run(capsys, "dump", path, "--no-tensors")
    assert "tensors:    3" in out and "offset" not in out.split("tensors:    3", 1)[1]  # no tensor table
    code, out, _ = run(capsys, "dump", path, "--markdown")
    assert "| `general.name` | STRING | 'small' |" in out and "| `b` | Q8_0 | [32, 2] |" in out
    code, out, _ = run(capsys, "dump", path, "--markdown", "--full")
    assert "\\|{{ m }}" in out  # a | inside a value does not break the table


# -- files from the wild: unknown tensor types ------------------------------------------------------------------
def test_unknown_tensor_type_opens_and_is_reported_per_profile(tmp_path, capsys):
    path = small(tmp_path / "fork.gguf", unknown_type=150)
    known = g.load(small(tmp_path / "plain.gguf"))
    f = g.load(path)
    a, b, c = f.tensors
    assert not a.opaque and b.opaque and not c.opaque and int(b.ggml_type) == 150 and b.type_name == "type 150"
    assert b.nbytes == c.offset - b.offset  # up to the next tensor
    assert bytes(b.raw()) == bytes(known.tensor("b").raw()) + bytes(b.nbytes - known.tensor("b").nbytes)
    np.testing.assert_array_equal(c.numpy(), np.ones(32, np.float32))
    with pytest.raises(g.GGUFError, match="unknown ggml type") as info:
        b.numpy()
    assert info.value.rule == "TI-TYPE" and info.value.path == "tensor_infos[1].type"
    assert f.to_bytes() == open(path, "rb").read()  # written back unchanged
    for profile in ("ggml", "spec", "llama.cpp"):
        report = g.check(path, profile=profile)
        assert "TI-TYPE" in {x.rule for x in report.errors()}, profile
    code, out, _ = run(capsys, "dump", path)
    assert code == 0 and "type 150" in out
    assert run(capsys, "hash", path, "--per-tensor")[0] == 0
    code, out, _ = run(capsys, "diff", tmp_path / "plain.gguf", path)
    assert code == 1 and "~ tensor b: type Q8_0 -> type 150" in out
    last = g.load(small(tmp_path / "last.gguf"))
    last.tensors[2].ggml_type = 200
    last.save(tmp_path / "last2.gguf")
    t = g.load(tmp_path / "last2.gguf").tensors[2]
    assert (
        t.opaque
        and t.offset + t.nbytes
        == os.path.getsize(tmp_path / "last2.gguf") - g.load(tmp_path / "last2.gguf").data_offset
    )  # the last one runs to the end of the file
    with pytest.raises(ValueError, match="byte order"):
        g.load(path).convert(byte_order="big").to_bytes()


# -- help ---------------------------------------------------------------------------------------------------------
def test_every_subcommand_argument_and_flag_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name in (
        "dump",
        "convert",
        "check",
        "docs",
        "fuzz",
        "demo",
        "set",
        "rename-tensor",
        "diff",
        "split",
        "merge",
        "hash",
    ):
        sp = sub.choices[name]
        assert helps.get(name) and sp.description, name
        missing = [a.dest for a in sp._actions if not a.help and not isinstance(a, argparse._HelpAction)]
        assert not missing, (name, missing)
