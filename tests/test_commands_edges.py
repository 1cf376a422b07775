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


from test_commands import run  # noqa: E402 - one runner of the command line for both test files


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

    cases = [
        {
            "file": f"c{i}.gguf",
            "group": "edge",
            "expect": {"spec": "accept"},
            "metadata": [{"key": "general.name", "type": "STRING", "value": "x"}],
            "tensors": [],
        }
        for i in range(3)
    ]
    silent = summarise([score_case(c, Outcome("accept"), "spec") for c in cases])
    assert silent["counts"]["pass"] == 3 and silent["values_correct"] == [0, 0]
    assert "values correct -" in counts_line(silent)
    told = {"metadata": [{"key": "general.name", "type": "STRING", "value": "x"}], "tensors": []}
    wrong = {"metadata": [{"key": "general.name", "type": "STRING", "value": "y"}], "tensors": []}
    mixed = summarise(
        [
            score_case(cases[0], Outcome("accept", summary=told), "spec"),
            score_case(cases[1], Outcome("accept", summary=wrong), "spec"),
            score_case(cases[2], Outcome("accept"), "spec"),
        ]
    )
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


# -- 7. a later shard named alone: the CLI says what the API and llama.cpp say -------------------------------------
def _split_set(tmp_path) -> list[str]:
    from gguf_construct.operations.split import split_model

    whole = tmp_path / "whole.gguf"
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    for i in range(4):
        f.add_tensor(f"t{i}", np.ones(32, np.float32))
    f.save(whole)
    return [str(p) for p, _ in split_model(g.load(whole), str(tmp_path / "m"), max_tensors=1)]


def _split_no_out_of_range(tmp_path) -> str:
    from gguf_construct.format import splitset

    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    for key, value in ((splitset.SPLIT_NO, 5), (splitset.SPLIT_COUNT, 2), (splitset.SPLIT_TENSORS, 1)):
        f.metadata.set(key, value, splitset.split_key_type(key))
    f.add_tensor("t", np.ones(32, np.float32))
    f.save(tmp_path / "split-no-out-of-range.gguf")
    return str(tmp_path / "split-no-out-of-range.gguf")


@pytest.mark.parametrize("profile", ["spec", "ggml", "llama.cpp"])
def test_cli_and_api_agree_on_a_file_that_claims_a_later_split_no(tmp_path, capsys, profile):
    shards = _split_set(tmp_path)
    for path in (shards[2], _split_no_out_of_range(tmp_path)):
        api = g.check(path, profile=profile)
        code, out, _ = run(
            capsys, "check", "--no-config", "--fail-on", "error", "--profile", profile, "--format", "json", path
        )
        import json

        reports = json.loads(out)
        reports = reports["files"] if isinstance(reports, dict) else reports
        mine = [r for r in reports if r["file"].endswith(path.rsplit("/", 1)[-1])]
        assert len(mine) == 1 and mine[0]["valid"] == api.valid, (path, profile)
        if profile == "llama.cpp":
            assert code == 1 and not api.valid
            assert "META-SPLIT-LATER" in {f.rule for f in api.findings}


def test_a_later_shard_named_alone_is_refused_under_llama_cpp(tmp_path, capsys):
    shards = _split_set(tmp_path)
    code, out, _ = run(capsys, "check", "--no-config", "--profile", "llama.cpp", shards[2])
    assert code == 1 and "1 file checked" in out and "META-SPLIT-LATER" in out
    assert "m-00001-of-00004.gguf" in out  # the hint: the shard llama.cpp loads the model from
    code, out, _ = run(capsys, "check", "--no-config", "--profile", "spec", shards[2])
    assert code == 0 and "4 files checked" in out  # the spec's view: the shard names its set, judged whole
    code, out, _ = run(capsys, "check", "--no-config", "--profile", "llama.cpp", shards[0], shards[2])
    assert "META-SPLIT-LATER" not in out and "4 files checked" in out  # named with its first shard: a member


# -- 8. the smaller things ----------------------------------------------------------------------------------------
def _model_with_tensors(path, n=6) -> bytes:
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    for i in range(n):
        f.add_tensor(f"t{i}", np.ones(256, np.float32))
    f.save(path)
    return open(path, "rb").read()


def test_a_truncated_download_is_no_advisory(tmp_path):
    data = _model_with_tensors(tmp_path / "whole.gguf")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 3000])  # the last three tensors missing, one of them partly
    bounds = [f for f in g.check(str(cut)).findings if f.rule == "DATA-BOUNDS"]
    assert len(bounds) >= 3 and not [f for f in bounds if "CVE-" in f.message]
    crafted = g.load(tmp_path / "whole.gguf")
    crafted.tensors[-1].shape = (256, 1000)  # the advisory's trigger: the last tensor declares too many bytes
    raw = bytearray(crafted.to_bytes())
    oversize = tmp_path / "oversize.gguf"
    oversize.write_bytes(bytes(raw))
    # (to_bytes lays the data out for the new shape; cut it back to the original length, as the exploit file is)
    oversize.write_bytes(bytes(raw[: len(data)]))
    bounds = [f for f in g.check(str(oversize)).findings if f.rule == "DATA-BOUNDS"]
    assert bounds and all("[CVE-2026-7482]" in f.message for f in bounds)


def test_unknown_option_gets_the_sub_commands_usage(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["check", "m.gguf", "--bogus"])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert (
        "usage: gguf-construct check" in err and "gguf-construct check: error: unrecognized arguments: --bogus" in err
    )
    with pytest.raises(SystemExit):
        main(["suite", "run", "d", "--target", "x", "--bogus"])
    assert "gguf-construct suite run: error: unrecognized arguments: --bogus" in capsys.readouterr().err


def test_export_all_into_a_new_folder_calls_nothing_stale(tmp_path, capsys, monkeypatch):
    from gguf_construct.export import kaitai

    monkeypatch.setattr(kaitai, "find_compiler", lambda: None)
    code, _, err = run(capsys, "export", "all", "--out", tmp_path / "new")
    assert code == 0 and "stale" not in err and "not written" in err


def _complete(tmp_path, script: str, *words: str) -> list[str]:
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("no bash here")
    (tmp_path / "completion.bash").write_text(script, encoding="utf-8")
    probe = (
        f"source {tmp_path / 'completion.bash'}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
        'COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _gguf_construct; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    return [line for line in done.stdout.splitlines() if line]


def test_completion_offers_the_words_a_position_takes(tmp_path, capsys):
    from gguf_construct.commands import completion
    from gguf_construct.commands.main import build_parser

    script = completion.completion(build_parser(), "bash")
    (tmp_path / "model.gguf").write_bytes(b"")
    assert _complete(tmp_path, script, "gguf-construct", "completion", "") == ["bash", "zsh", "fish"]
    assert "HDR-MAGIC" in _complete(tmp_path, script, "gguf-construct", "rule", "HDR-")
    names = _complete(tmp_path, script, "gguf-construct", "set", "model.gguf", "--special-token", "")
    assert {"bos", "eos"} <= set(names) and "model.gguf" not in names
    assert _complete(tmp_path, script, "gguf-construct", "dump", "mod") == ["model.gguf"]
    assert _complete(tmp_path, script, "gguf-construct", "demo", "--out", "mod") == ["model.gguf"]
    for shell in ("zsh", "fish"):
        assert "HDR-MAGIC" in completion.completion(build_parser(), shell)


def test_expect_lists_no_zero_sized_shapes_and_takes_the_loaders_fallback_shape(tmp_path, capsys):
    from gguf_construct.arch.expect import expect_architecture
    from gguf_construct.breaking.models import minimal_model

    assert not [t for t in expect_architecture("gemma3").tensors if 0 in t.shape]  # dense_2 [640, 0] ...
    m = minimal_model("arwkv7")
    for t in [t for t in m.tensors if "time_mix_lerp_fused" in t.name]:  # the older 5-row layout llama.cpp loads
        m.tensors.remove(t)
        m.add_tensor(t.name, np.zeros((5, 1, 1, t.shape[0]), np.float32))
    m.save(tmp_path / "arwkv7.gguf")
    code, out, _ = run(capsys, "expect", tmp_path / "arwkv7.gguf")
    assert code == 0 and "0 wrong shape" in out and ", 0]" not in out
    assert "time_mix_lerp_fused.weight  [64, 1, 1, 5]" in out


def test_a_value_file_that_is_a_folder_a_silent_pipe_or_endless_is_one_line(tmp_path, capsys, monkeypatch):
    import os

    from gguf_construct.operations import edit

    path = _small(tmp_path / "m.gguf")
    monkeypatch.setattr(edit, "PIPE_SILENCE", 0.2)
    monkeypatch.setattr(edit, "VALUE_FILE_LIMIT", 1 << 20)
    os.mkfifo(tmp_path / "pipe")
    for source, why in (
        (tmp_path, "is a directory"),
        (tmp_path / "pipe", "nothing to read"),
        ("/dev/zero", "more than"),
    ):
        code, _, err = run(capsys, "set", path, "general.name", "--from-file", source)
        assert code == 2 and err.count("\n") == 1 and why in err, err


def test_a_device_or_pipe_is_never_replaced_by_an_atomic_write(tmp_path):
    import os
    import stat

    from gguf_construct.base.atomic import atomic_path

    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(OSError) as caught:
        with atomic_path(tmp_path / "pipe") as tmp:
            open(tmp, "w").close()
    assert caught.value.filename == str(tmp_path / "pipe") and "regular file" in str(caught.value)
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_check_expands_a_quoted_pattern_and_names_one_that_matches_nothing(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    for name in ("a.gguf", "sub/b.gguf", "sub/c.txt"):
        _small(tmp_path / name)
    assert main(["check", str(tmp_path / "**" / "*.gguf")]) == 0
    assert "2 files checked" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "nothing-*.gguf")]) == 2
    assert "no file matches" in capsys.readouterr().err


def test_a_file_whose_name_starts_with_a_dash_gets_a_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _small(tmp_path / "-model.gguf")
    assert main(["check", "-model.gguf"]) == 2
    assert "./-model.gguf or put -- before it" in capsys.readouterr().err
    assert main(["check", "--", "-model.gguf"]) == 0


def test_writing_into_a_folder_that_does_not_exist_names_the_folder(tmp_path, capsys):
    source = _small(tmp_path / "model.gguf")
    assert main(["convert", "--byte-order", "big", source, str(tmp_path / "nodir" / "big.gguf")]) == 2
    err = capsys.readouterr().err
    assert "the folder" in err and "nodir does not exist" in err and err.count("\n") == 1
    assert main(["split", "--max-tensors", "1", source, str(tmp_path / "shards" / "m")]) == 2
    assert "shards does not exist" in capsys.readouterr().err
