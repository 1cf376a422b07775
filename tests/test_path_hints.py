"""A path that names nothing gets one hint of what was meant: an unexpanded '~', a trailing '/', another letter
case or a close spelling, a download still under way; a name like nothing gets none."""

from __future__ import annotations

import pytest

from gguf_construct.commands.pathhints import missing_hint

from test_commands import run
from test_commands_edges import _small


@pytest.fixture
def model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return _small(tmp_path / "Model-7B.gguf")


@pytest.mark.parametrize(
    "typed, said",
    [
        ("Model-7B.gguf/", "Model-7B.gguf is a file, not a folder: drop the trailing '/'"),
        ("model-7b.gguf", "did you mean Model-7B.gguf?"),
        ("Modle-7B.gguf", "did you mean Model-7B.gguf?"),
    ],
)
@pytest.mark.parametrize("command", ["check", "dump", "hash"])
def test_each_command_says_what_was_meant(model, capsys, command, typed, said):
    code, _, err = run(capsys, command, typed)
    first = err.splitlines()[0]
    assert code == 2 and typed in first and first.endswith(said), err


def test_a_quoted_tilde_names_the_home_folder_file(model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run(capsys, "dump", "~/Model-7B.gguf")
    assert code == 2 and f"did you mean {tmp_path}/Model-7B.gguf?" in err


def test_a_partial_download_beside_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.gguf.incomplete").write_bytes(b"GGUF")
    code, _, err = run(capsys, "check", "big.gguf")
    assert code == 2 and "big.gguf.incomplete exists: is the download still under way?" in err


def test_no_hint_for_a_name_like_nothing(model):
    assert missing_hint("entirely-different-name.bin") == ""
    assert missing_hint("") == ""
