"""Every route to a configuration file of ``check`` ends in the project's one-line error naming the path, never an
``[Errno N]`` text or a traceback: ``--config FILE``, the discovery of ``.gguf-construct.toml`` or of a
pyproject.toml with a ``[tool.gguf-construct]`` table in the current folder or a parent, and the Python API
(``find_config``/``load_config``)."""

from __future__ import annotations

import errno
import os

import pytest

from gguf_construct.checker import config
from gguf_construct.checker.config import ConfigError, find_config, load_config
from gguf_construct.commands.main import main


def _check(capsys, *args: str) -> tuple[int, str]:
    rc = main(["check", *args])
    err = capsys.readouterr().err
    return rc, err


def _one_line(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Errno" not in err and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], err


@pytest.fixture
def model(tmp_path):
    from gguf_construct.breaking import crafting

    path = tmp_path / "m.gguf"
    path.write_bytes(crafting.carrier().to_bytes())
    return str(path)


def test_config_option_with_bytes_that_are_not_utf8(tmp_path, capsys, model):
    bad = tmp_path / "c.toml"
    bad.write_bytes(b'profile = "ggml"\n# \xff\xfe\n')
    rc, err = _check(capsys, "--config", str(bad), model)
    assert rc == 2
    _one_line(err, str(bad), "not UTF-8")


@pytest.mark.parametrize("name", [".gguf-construct.toml", "pyproject.toml"])
def test_discovered_config_that_is_a_folder_fifo_or_loop(tmp_path, capsys, model, monkeypatch, name):
    here = tmp_path / "work"
    here.mkdir()
    monkeypatch.chdir(here)
    target = here / name
    for make in ("folder", "fifo", "loop"):
        if make == "folder":
            target.mkdir()
        elif make == "fifo":
            os.mkfifo(target)
        else:
            os.symlink(target.name, target)  # a link to itself
        rc, err = _check(capsys, model)
        assert rc == 2, (make, err)
        _one_line(err, str(target), "--no-config")
        assert main(["check", "--no-config", model]) == 0
        capsys.readouterr()
        target.rmdir() if make == "folder" else target.unlink()


@pytest.mark.parametrize("name", [".gguf-construct.toml", "pyproject.toml"])
def test_discovered_config_that_cannot_be_read(tmp_path, capsys, model, monkeypatch, name):
    """Root reads any file, so the refusal to open is simulated where the module opens it."""
    here = tmp_path / "work"
    here.mkdir()
    (here / name).write_text('[tool.gguf-construct]\nprofile = "ggml"\n')
    monkeypatch.chdir(here)
    real_open = os.open

    def denied(path, *args, **kwargs):
        if os.fspath(path).endswith(name):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(config.os, "open", denied)
    rc, err = _check(capsys, model)
    assert rc == 2
    _one_line(err, str(here / name), "permission denied")


def test_discovered_config_not_utf8_and_not_toml(tmp_path, capsys, model, monkeypatch):
    here = tmp_path / "work"
    here.mkdir()
    monkeypatch.chdir(here)
    own = here / ".gguf-construct.toml"
    own.write_bytes(b"profile = \xff\n")
    rc, err = _check(capsys, model)
    assert rc == 2
    _one_line(err, str(own), "not UTF-8")
    own.write_text("profile = [\n")
    rc, err = _check(capsys, model)
    assert rc == 2
    _one_line(err, str(own))
    own.write_text("tool = 3\n")  # once a traceback (a str has no .get)
    rc, err = _check(capsys, model)
    assert rc == 2
    _one_line(err, str(own), "tool must be a table")


def test_current_folder_removed(tmp_path, capsys, model, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    rc, err = _check(capsys, model)
    assert rc == 2
    _one_line(err, "current directory", "no such file or directory")


def test_api_routes(tmp_path):
    with pytest.raises(ConfigError, match="not a regular file") as info:
        load_config(tmp_path)
    assert "Errno" not in str(info.value)
    fifo = tmp_path / "p.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):  # opened without blocking
        load_config(fifo)
    with pytest.raises(ConfigError, match="no such file") as info:
        load_config(tmp_path / "absent.toml")
    assert "Errno" not in str(info.value) and "absent.toml" in str(info.value)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config(tmp_path) is None  # a pyproject.toml without the table is no configuration
    (tmp_path / "pyproject.toml").write_text("[tool.gguf-construct]\njobs = 2\n")
    assert find_config(tmp_path / "sub") == tmp_path / "pyproject.toml"
    assert load_config(tmp_path / "pyproject.toml") == {"jobs": 2}
    (tmp_path / "pyproject.toml").write_text('tool = "x"\n')
    with pytest.raises(ConfigError, match="tool must be a table"):
        load_config(tmp_path / "pyproject.toml")
    loop = tmp_path / "loop"
    os.symlink("loop", loop)
    with pytest.raises(ConfigError) as info:
        find_config(loop)
    assert "Errno" not in str(info.value)
