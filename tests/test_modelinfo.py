"""dump shows the model: architecture, file type by name, parameters, size and bits per weight per type, and whether
llama.cpp would load it (with the tensors it expects and does not find)."""

from __future__ import annotations

import json

from gguf_construct.arch.synth import minimal_model_parts
from gguf_construct.breaking.models import build_model_file
from gguf_construct.commands.main import main


def _write(tmp_path, meta, tensors, name="m.gguf"):
    path = tmp_path / name
    build_model_file(meta, tensors).save(path)
    return path


def test_dump_shows_the_model_and_that_llama_cpp_loads_it(tmp_path, capsys):
    meta, tensors = minimal_model_parts("llama")
    from gguf_construct.arch.loader import MetaValue, TensorMeta

    meta["general.file_type"] = MetaValue("UINT32", 7)  # MOSTLY_Q8_0
    tensors = {n: (TensorMeta(n, t.ne, 8) if n.endswith("ffn_up.weight") else t) for n, t in tensors.items()}
    path = _write(tmp_path, meta, tensors)
    assert main(["dump", str(path), "--no-tensors"]) == 0
    text = capsys.readouterr().out
    assert "model:      llama, model, MOSTLY_Q8_0" in text
    assert "llama.cpp:  loads" in text
    assert "Q8_0" in text and "8.5 bpw" in text
    assert main(["dump", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["model"]
    n = sum(1 for _ in tensors)
    assert info["architecture"] == "llama" and info["llama_cpp"]["loads"] is True
    assert sum(r["tensors"] for r in info["by_type"].values()) == n
    assert info["by_type"]["Q8_0"]["bits_per_weight"] == 8.5
    assert info["parameters"] == sum(r["elements"] for r in info["by_type"].values())


def test_dump_names_the_missing_tensors(tmp_path, capsys):
    meta, tensors = minimal_model_parts("llama")
    del tensors["blk.0.ffn_up.weight"]
    path = _write(tmp_path, meta, tensors)
    assert main(["dump", str(path), "--no-tensors"]) == 0
    text = capsys.readouterr().out
    assert "llama.cpp:  refuses: tensor 'blk.0.ffn_up.weight' not found" in text
    assert "missing tensors: blk.0.ffn_up.weight" in text
