"""The edges of issue #41 a newcomer hit on the command line, one test each (every one failed before its fix)."""

from __future__ import annotations

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.commands.main import main


def _small(path, **extra) -> str:
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata["general.name"] = "small"
    for key, value in extra.items():
        f.metadata[key.replace("_", ".")] = value
    f.add_tensor("a", np.arange(64, dtype=np.float32).reshape(2, 32))
    f.save(path)
    return str(path)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. a directory where a file is expected ----------------------------------------------------------------------
def test_load_of_a_directory_names_the_path(tmp_path):
    with pytest.raises(IsADirectoryError) as caught:
        g.load(tmp_path)
    assert caught.value.filename == str(tmp_path) and "directory" in str(caught.value)


def test_diff_of_a_directory_is_trouble_not_a_difference(tmp_path, capsys):
    code, _, err = run(capsys, "diff", _small(tmp_path / "m.gguf"), tmp_path)
    assert code == 2 and err.count("\n") == 1 and str(tmp_path) in err


# -- 4. set --delete, repeated -----------------------------------------------------------------------------------
def test_set_deletes_every_key_named(tmp_path, capsys):
    path = _small(tmp_path / "m.gguf", my_a=1, my_b=2, my_c=3)
    code, out, _ = run(capsys, "set", path, "--delete", "my.a", "--delete", "my.b", "--delete", "my.c")
    assert code == 0 and out.count("deleted") == 3
    md = g.load(path).metadata
    assert not {"my.a", "my.b", "my.c"} & set(md) and md["general.name"] == "small"


# -- 6. hypothesis is a core dependency (the strategies and fuzz are features of `pip install .`) ------------------
def test_hypothesis_is_a_core_dependency():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip() for d in project["dependencies"]}
    assert "hypothesis" in names
    import gguf_construct.strategies  # noqa: F401  (imports hypothesis at module level)


# -- 3. suite run: "values correct" counts only values a reader reported ------------------------------------------
def test_a_reader_that_reports_no_values_has_no_values_correct():
    from gguf_construct.fuzzing.targets import Outcome
    from gguf_construct.suite.matrix import counts_line
    from gguf_construct.suite.runner import score_case, summarise

    cases = [{"file": f"c{i}.gguf", "group": "edge", "expect": {"spec": "accept"},
              "metadata": [{"key": "general.name", "type": "STRING", "value": "x"}], "tensors": []}
             for i in range(3)]
    silent = summarise([score_case(c, Outcome("accept"), "spec") for c in cases])
    assert silent["counts"]["pass"] == 3 and silent["values_correct"] == [0, 0]
    assert "values correct -" in counts_line(silent)
    told = {"metadata": [{"key": "general.name", "type": "STRING", "value": "x"}], "tensors": []}
    wrong = {"metadata": [{"key": "general.name", "type": "STRING", "value": "y"}], "tensors": []}
    mixed = summarise([score_case(cases[0], Outcome("accept", summary=told), "spec"),
                       score_case(cases[1], Outcome("accept", summary=wrong), "spec"),
                       score_case(cases[2], Outcome("accept"), "spec")])
    assert mixed["values_correct"] == [1, 2]


# -- 2. diff --data across byte orders: both sides cut at the same block edges --------------------------------------
def test_diff_data_across_byte_orders_compares_whole_blocks(tmp_path, capsys, monkeypatch):
    from gguf_construct.operations import diff

    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    values = np.linspace(-3, 3, 32 * 200, dtype=np.float32)
    f.add_tensor("q", values, ggml_type="Q8_0")  # 200 blocks of 34 bytes
    f.add_tensor("h", values, ggml_type="F16")
    little, big = str(tmp_path / "little.gguf"), str(tmp_path / "big.gguf")
    f.save(little)
    assert run(capsys, "convert", little, big, "--byte-order", "big")[0] == 0
    monkeypatch.setattr(diff, "_CHUNK", 1000)  # as 16 MiB is to a tensor over 16 MiB: not a multiple of 34
    code, out, _ = run(capsys, "diff", "--data", little, big)
    assert code == 1 and "data differs" not in out and "byte_order" in out
    changed = g.GGUFFile.new()
    changed.metadata["general.architecture"] = "llama"
    changed.add_tensor("q", values * 2, ggml_type="Q8_0")
    changed.add_tensor("h", values, ggml_type="F16")
    other = str(tmp_path / "other.gguf")
    changed.save(other)
    code, out, _ = run(capsys, "diff", "--data", other, big)
    assert code == 1 and "q: data differs" in out and "h: data differs" not in out
