"""The paths a new user walks first (issue #24): a core install that decodes, `set` typing as the API and llama.cpp
do, interrupts, pipes and odd inputs ending in one line of the project's words, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct import codecs
from gguf_construct.format import structs
from gguf_construct.breaking.models import minimal_model
from gguf_construct.checker import check
from gguf_construct.commands.main import main
from gguf_construct.operations.edit import set_key

CLI = [sys.executable, "-m", "gguf_construct"]


def _small(path, **kw) -> str:
    f = g.GGUFFile.new(**kw)
    f.metadata["general.architecture"] = "llama"
    f.metadata["tokenizer.ggml.tokens"] = ["<unk>", "<s>", "</s>", "a", "b"]
    f.add_tensor("a", np.arange(64, dtype=np.float32).reshape(2, 32))
    f.add_tensor("q", np.linspace(-1, 1, 256, dtype=np.float32).reshape(1, 256), ggml_type="Q4_K")
    f.save(path)
    return str(path)


def _run(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True, timeout=300, **kw)


def _one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr and "Error:" not in err.split(":", 1)[0], proc.stderr
    assert len(err.splitlines()) == 1, proc.stderr
    for w in words:
        assert w in err, (w, proc.stderr)


# -- 1. the install users get ---------------------------------------------------------------------------------
NO_NUMBA = """
import sys
sys.modules["numba"] = None          # as in an install without the [fast] extra
import numpy as np
import gguf_construct as g
from gguf_construct import codecs, spec
assert codecs.backend() == "numpy", codecs.backend()
f = g.GGUFFile.new()
rng = np.random.default_rng(0)
for t in spec.tensor_types():
    if codecs.has_encoder(t.name):
        values = rng.integers(-8, 8, (1, 256)).astype(np.float32)
        imatrix = np.ones(256, np.float32) if codecs.type_spec(t.name).imatrix == "required" else None
        f.add_tensor(t.name, values, ggml_type=t.name, imatrix=imatrix)
data = f.to_bytes()
back = g.load(data)
for t in back.tensors:
    assert t.numpy().shape == (1, 256), t.name
print(len(back.tensors))
"""


def test_without_numba_every_type_decodes_on_the_numpy_path():
    proc = subprocess.run([sys.executable, "-c", NO_NUMBA], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) > 20


def test_without_numba_warm_up_names_the_extra():
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "from gguf_construct.commands.main import main\n"
        "sys.exit(main(['warm-up', 'Q8_0']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    _one_line_error(proc, "gguf-construct[fast]")


def test_without_numba_asking_for_the_compiled_path_names_the_extra(monkeypatch):
    monkeypatch.setattr(codecs, "_compiled_module", lambda: None)
    with pytest.raises(ImportError, match=r"gguf-construct\[fast\]"):
        codecs.use("numba")


@pytest.mark.parametrize(
    "out,engine,extra_module", [("rows.parquet", "local", "pyarrow"), ("rows.jsonl", "dask", "dask.distributed")]
)
def test_sweep_names_a_missing_extra_before_any_work(tmp_path, monkeypatch, capsys, out, engine, extra_module):
    from gguf_construct.base import extras as _extras

    real = _extras._importable
    monkeypatch.setattr(_extras, "_importable", lambda m: False if m == extra_module else real(m))
    src = _small(tmp_path / "m.gguf")
    rc = main(["sweep", src, "--out", str(tmp_path / out), "--engine", engine])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "gguf-construct[cluster]" in err, err
    assert not (tmp_path / out).exists()


# -- 3. the CLI writes what the API writes ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "key",
    [
        "llama.embedding_length",
        "llama.block_count",
        "llama.feed_forward_length",
        "llama.attention.head_count",
        "llama.rope.dimension_count",
    ],
)
def test_set_types_a_new_key_as_the_api_does(tmp_path, key):
    path = _small(tmp_path / "m.gguf")
    assert main(["set", path, key, "4096"]) == 0
    api = g.GGUFFile.new()
    api.metadata["general.architecture"] = "llama"
    api.metadata[key] = 4096
    assert g.load(path).metadata.type_of(key) == api.metadata.type_of(key) == g.GGUFValueType.UINT32


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gemma3", "mamba", "bert"])
def test_every_key_set_from_text_keeps_the_model_loadable(arch):
    """Delete each scalar key of a minimal model llama.cpp loads and set it back from its text, as a user would:
    the replayed loader of llama.cpp must still accept the file."""
    model = minimal_model(arch)
    assert check(model.to_bytes(), profile="llama.cpp").valid
    keys = [k for k, v in model.metadata.typed_items() if v.type.name not in ("ARRAY", "STRING")]
    assert keys
    for key in keys:
        value = model.metadata[key]
        text = json.dumps(bool(value)) if isinstance(value, bool) else repr(value)
        del model.metadata[key]
        set_key(model, key, text)
    report = check(model.to_bytes(), profile="llama.cpp")
    assert report.valid and not [f for f in report.findings if f.rule.startswith("MODEL-KEY")], [
        (f.rule, f.message) for f in report.findings
    ]


def test_set_item_type_alone_means_an_array_of_it(tmp_path):
    path = _small(tmp_path / "m.gguf")
    assert main(["set", path, "x.floats", "[1.5, 2]"]) == 0
    assert g.load(path).metadata.typed("x.floats").item_type == g.GGUFValueType.FLOAT32
    assert main(["set", path, "x.floats", "[1, 2]", "--item-type", "FLOAT64"]) == 0
    value = g.load(path).metadata.typed("x.floats")
    assert value.type == g.GGUFValueType.ARRAY and value.item_type == g.GGUFValueType.FLOAT64
    assert list(value.value) == [1.0, 2.0]


def test_set_from_files_and_special_tokens(tmp_path, capsys):
    path = _small(tmp_path / "m.gguf")
    (tmp_path / "t.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages[0].content }}"}))
    assert main(["set", path, "general.description", "--from-file", str(tmp_path / "t.jinja")]) == 0
    assert (
        main(
            [
                "set",
                path,
                "--chat-template-file",
                str(tmp_path / "tokenizer_config.json"),
                "--special-token",
                "bos",
                "<s>",
                "--special-token",
                "sep",
                "b",
            ]
        )
        == 0
    )
    f = g.load(path)
    assert f.metadata["general.description"].endswith("{% endfor %}\n")
    assert f.metadata["tokenizer.chat_template"] == "{{ messages[0].content }}"
    assert f.metadata["tokenizer.ggml.bos_token_id"] == 1
    assert f.metadata.type_of("tokenizer.ggml.bos_token_id") == g.GGUFValueType.UINT32
    assert f.metadata["tokenizer.ggml.seperator_token_id"] == 4  # the spelling llama.cpp reads
    capsys.readouterr()
    assert main(["set", path, "--special-token", "bos", "nope"]) == 2
    assert "no token 'nope'" in capsys.readouterr().err
    assert main(["set", path, "llama.context_length", "abc"]) == 2
    err = capsys.readouterr().err
    assert "invalid literal" not in err and "'abc' does not fit" in err


def test_diff_data_across_byte_orders_compares_values(tmp_path, capsys):
    a = _small(tmp_path / "a.gguf")
    b = str(tmp_path / "b.gguf")
    assert main(["convert", a, b, "--byte-order", "big"]) == 0
    capsys.readouterr()
    assert main(["diff", "--data", "--json", a, b]) == 1  # the header's byte order differs
    result = json.loads(capsys.readouterr().out)
    assert result["data_compared"] == "values" and result["tensors"]["changed"] == []
    assert main(["diff", "--data", a, b]) == 1
    assert "by value" in capsys.readouterr().out
    assert main(["diff", "--data", "--json", a, a]) == 0
    assert json.loads(capsys.readouterr().out)["data_compared"] == "bytes"


def test_check_says_why_fail_on_warning_fails(tmp_path, capsys):
    path = _small(tmp_path / "m.gguf")
    rc = main(["check", path, "--fail-on", "warning", "--no-config"])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 1
    assert out[0].endswith(")") and " valid " in out[0]
    assert out[-1].startswith("1 file checked: 1 valid") and "fails --fail-on warning" in out[-1]


def test_a_model_without_chat_template_is_noted_not_judged(tmp_path, capsys):
    path = _small(tmp_path / "m.gguf")
    report = check(path)
    assert any("no chat template" in n for n in report.notes)
    assert not [f for f in report.findings if "template" in f.message]
    assert main(["check", path, "--format", "json", "--no-config"]) == 0
    assert "no chat template" in json.loads(capsys.readouterr().out)[0]["notes"][0]
    f = g.load(path)
    f.metadata["tokenizer.chat_template"] = "{{ messages }}"
    assert check(f.to_bytes()).notes == []
    # a vocabulary alone (no tensors) is no model: no note either
    vocab = g.GGUFFile.new()
    vocab.metadata["tokenizer.ggml.tokens"] = ["a", "b"]
    assert check(vocab.to_bytes()).notes == []


# -- 4. interrupts, pipes and odd files ------------------------------------------------------------------------
def test_interrupted_split_leaves_no_shard(tmp_path, monkeypatch, capsys):
    src = _small(tmp_path / "m.gguf")
    calls = []
    real = g.GGUFFile.write_to

    def interrupted(self, out, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, out, **kw)

    monkeypatch.setattr(g.GGUFFile, "write_to", interrupted)
    (tmp_path / "s").mkdir()
    assert main(["split", src, str(tmp_path / "s" / "m"), "--max-tensors", "1"]) == 130
    assert capsys.readouterr().err.strip() == "gguf-construct: interrupted"
    assert os.listdir(tmp_path / "s") == []


@pytest.mark.parametrize(
    "command", [["check", "--jobs", "2"], ["hash"], ["set", "llama.block_count", "2"], ["convert", "OUT"], ["dump"]]
)
def test_ctrl_c_is_one_line_and_status_130(tmp_path, monkeypatch, capsys, command):
    """Wherever the interrupt lands inside a command, the command line says so in one line and exits 130."""
    path = _small(tmp_path / "m.gguf")
    others = [_small(tmp_path / f"o{i}.gguf") for i in range(2)]
    import gguf_construct.filemodel.inputs as inputs_module

    monkeypatch.setattr(inputs_module, "load", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    from gguf_construct.checker import core

    monkeypatch.setattr(core, "check_buffer", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    args = [
        command[0],
        path,
        *(others if command[0] == "check" else []),
        *[str(tmp_path / "x.gguf") if a == "OUT" else a for a in command[1:]],
    ]
    assert main(args) == 130
    assert capsys.readouterr().err == "gguf-construct: interrupted\n"


def test_an_interrupted_fuzz_leaves_no_empty_out(tmp_path, monkeypatch, capsys):
    from gguf_construct.fuzzing import runner

    def interrupted(*args, **kw):
        assert (tmp_path / "out").is_dir()  # prepared before the run
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)
    assert main(["fuzz", "--target", "python:json:loads", "--count", "5", "--out", str(tmp_path / "out")]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "gguf-construct: interrupted"
    assert not (tmp_path / "out").exists()


def test_worker_pools_leave_ctrl_c_to_the_parent():
    from gguf_construct.base.processes import worker_pool

    with worker_pool(1) as pool:
        assert pool.submit(signal.getsignal, signal.SIGINT).result(timeout=120) == signal.SIG_IGN


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("command", [["dump"], ["check"], ["hash"]])
def test_a_named_pipe_is_refused_not_waited_on(tmp_path, command):
    fifo = tmp_path / "ff.gguf"
    os.mkfifo(fifo)
    proc = _run(command + [fifo])
    assert proc.returncode == 2
    assert "pipe" in proc.stderr and "Traceback" not in proc.stderr


def test_a_closed_pipe_keeps_a_failing_status(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 64)
    good = [_small(tmp_path / f"g{i}.gguf") for i in range(3)]
    proc = subprocess.Popen(CLI + ["check", *good, str(bad)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 1, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_convert_of_an_unknown_type_to_the_other_byte_order_is_one_line(tmp_path):
    path = _small(tmp_path / "m.gguf")
    data = bytearray(open(path, "rb").read())
    root = structs.family(3, "little").read("file_head", bytes(data)).root
    at = root["tensor_infos[0].type"].start
    data[at : at + 4] = (200).to_bytes(4, "little")
    (tmp_path / "o.gguf").write_bytes(bytes(data))
    proc = _run(["convert", tmp_path / "o.gguf", tmp_path / "x.gguf", "--byte-order", "big"])
    assert proc.returncode == 2
    _one_line_error(proc, "o.gguf", "byte order")
    assert not (tmp_path / "x.gguf").exists()


def test_a_target_that_cannot_run_is_one_line(tmp_path):
    proc = _run(["fuzz", "--target", "python:os:nope", "--count", "2", "--out", tmp_path / "o"])
    assert proc.returncode == 2
    _one_line_error(proc, "os:nope", "nope")
    assert not (tmp_path / "o").exists()


def test_messages_name_the_file_in_the_project_words(tmp_path, capsys):
    good = _small(tmp_path / "a.gguf")
    (tmp_path / "rand.gguf").write_bytes(os.urandom(64))
    assert main(["diff", good, str(tmp_path / "rand.gguf")]) == 2
    err = capsys.readouterr().err
    assert "rand.gguf: " in err and "magic" in err
    for command in (["dump"], ["hash"], ["convert", "--version", "3"]):
        args = command[:1] + [str(tmp_path / "missing.gguf")] + (["o.gguf"] + command[1:] if len(command) > 1 else [])
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "missing.gguf: no such file or directory" in err and "Errno" not in err, (command, err)
    (tmp_path / "empty").mkdir()
    assert main(["check", str(tmp_path / "empty")]) == 2
    assert f"no .gguf files found in {tmp_path / 'empty'}" in capsys.readouterr().err


def test_docs_check_outside_a_checkout_says_so(monkeypatch, capsys):
    from gguf_construct.format import spec

    monkeypatch.setattr(spec, "in_checkout", lambda: False)
    for command in (["docs", "--check"], ["export", "all", "--check"]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "no checkout" in err, err


def test_dump_markdown_has_the_model_section_and_notes_a_missing_template(tmp_path, capsys):
    path = _small(tmp_path / "m.gguf")
    assert main(["dump", "--markdown", path]) == 0
    md = capsys.readouterr().out
    assert "## Model" in md and "- model: llama" in md and "no chat template" in md
    assert main(["dump", path]) == 0
    assert "chat:       no chat template" in capsys.readouterr().out
