"""Files we write get a normal mode, and piping the CLI into a closed reader is quiet."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import gguf_construct as g


def _small_file() -> g.GGUFFile:
    f = g.GGUFFile.new(version=3, byte_order="little")
    f.metadata.set("general.architecture", "llama", "STRING")
    return f


def test_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "new.gguf"
        _small_file().save(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_in_place_rewrite_keeps_the_mode(tmp_path):
    path = tmp_path / "m.gguf"
    _small_file().save(path)
    os.chmod(path, 0o640)
    f = g.load(path)
    f.metadata["general.name"] = "x"
    f.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_broken_pipe_is_silent(tmp_path):
    path = tmp_path / "m.gguf"
    f = _small_file()
    for i in range(3000):
        f.metadata.set(f"test.key_{i}", "value " * 20, "STRING")
    f.save(path)
    proc = subprocess.run(
        f"{sys.executable} -m gguf_construct dump {path} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert proc.stderr == ""


def test_unknown_ggml_type_names_the_types():
    import numpy as np
    import pytest

    f = _small_file()
    with pytest.raises(ValueError, match="unknown ggml type 'Q4_Z'.*Q4_K"):
        f.add_tensor("w", np.zeros((2, 32), np.float32), ggml_type="Q4_Z")


def test_enum_str_is_the_name():
    assert str(g.GGUFValueType(4)) == "UINT32"


def test_demo_out_creates_its_folder(tmp_path):
    from gguf_construct.operations.demo import run

    target = tmp_path / "new" / "dir"
    assert run(out=lambda *a, **k: None, directory=str(target))
    assert any(target.glob("*.gguf"))


def test_version_flag(capsys):
    import pytest
    from gguf_construct.commands.main import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("gguf-construct ")


def test_dump_text_escapes_control_characters():
    import numpy as np

    from gguf_construct.filemodel.dump import file_summary, render_text

    f = _small_file()
    f.metadata.set("evil.\x1b[31mRED\x1b[0m\rkey", "v\x07", "STRING")
    f.add_tensor("t\x1b[2J\x07", np.zeros(32, np.float32))
    text = render_text(file_summary(g.load(f.to_bytes())))
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    assert "evil.\\x1b[31mRED" in text and "t\\x1b[2J\\x07" in text
    assert "'v\\x07'" in text  # a value is escaped once (by repr), not twice


def test_every_writer_is_atomic_and_names_its_target_on_failure(tmp_path):
    """save, the exports, the sweep output and the docs all write through one atomic helper: a failure leaves no
    file (not even a temporary one) and the error names the file asked for."""
    import pytest

    from gguf_construct.base.atomic import atomic_path

    target = tmp_path / "out.bin"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(b"half")
            raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []
    missing = tmp_path / "no-such-dir" / "out.bin"
    with pytest.raises(OSError) as info:
        with atomic_path(missing) as tmp:
            pass
    assert str(missing) in str(info.value) and ".tmp" not in str(info.value)
    import gguf_construct.docgen as docgen
    import gguf_construct.export as export
    import gguf_construct.operations.sweep as sweep
    from gguf_construct.filemodel import gguffile as model

    for module in (model, export, sweep, docgen):
        assert module.atomic_path is atomic_path, module.__name__
