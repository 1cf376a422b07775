"""A file that another process overwrites or truncates while a command reads it: the command stops with one line
naming it and exit 2 (commands/leases.py), where it died of SIGBUS before; the other process goes on afterwards."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time

import pytest

from gguf_construct.base import mapwatch

from test_commands import run
from test_commands_edges import _small


def _leases_work(folder) -> bool:
    probe = folder / "lease-probe"
    probe.write_bytes(b"x")
    fd = os.open(probe, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return True
    except (OSError, AttributeError):
        return False
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "command",
    [
        ["hash", "--per-tensor"],
        ["check", "--data"],
        ["check", "--data", "--jobs", "2", "OTHER"],  # the file is read in a worker process
        ["dump", "--stats"],
        ["convert", "--byte-order", "big"],
    ],
)
def test_overwritten_while_read(tmp_path, capsys, monkeypatch, command):
    if not _leases_work(tmp_path):
        pytest.skip("this system or filesystem grants no file leases (F_SETLEASE)")
    path = _small(tmp_path / "m.gguf")
    # a writer waiting for its cue: cp opens the file to truncate it, the kernel holds cp and signals the command
    writer = subprocess.Popen(["sh", "-c", 'read go && exec cp "$0" "$1"', os.devnull, path], stdin=subprocess.PIPE)
    cued: list[str] = []

    def cue_once_mapped(fileno, mapped_path, mapping):  # runs after the command's own watcher took its lease
        if not cued and mapped_path == path:
            cued.append(mapped_path)
            writer.stdin.write(b"go\n")
            writer.stdin.flush()
            time.sleep(30)  # interrupted by the lease's signal; the test fails if it is not

    monkeypatch.setattr(mapwatch, "_watchers", [])
    real_watch = mapwatch.watch
    monkeypatch.setattr(mapwatch, "watch", lambda cb: (real_watch(cb), real_watch(cue_once_mapped)))
    extra = [str(tmp_path / "out.gguf")] if command[0] == "convert" else []
    if "OTHER" in command:
        command = [w for w in command if w != "OTHER"]
        extra = [_small(tmp_path / "other.gguf")]
    code, _, err = run(capsys, *command, path, *extra)
    writer.stdin.close()
    assert cued or "--jobs" in command, "the command mapped no file"  # a worker's list is its own
    assert writer.wait(timeout=60) == 0
    assert code == 2 and err.count("\n") == 1, err
    assert "m.gguf: another process opened it for writing or truncated it while it was read" in err
    assert os.path.getsize(path) == 0  # the writer went on once the command let go
    assert not (tmp_path / "out.gguf").exists()


def test_a_file_done_with_may_be_overwritten(tmp_path, capsys):
    """A file whose map the command closed is let go when another process writes it: no stop, no wait."""
    if not _leases_work(tmp_path):
        pytest.skip("this system or filesystem grants no file leases (F_SETLEASE)")
    from gguf_construct.checker import check
    from gguf_construct.commands.leases import leased_inputs

    first, second = _small(tmp_path / "a.gguf"), _small(tmp_path / "b.gguf")
    with leased_inputs():
        assert check(first).valid
        subprocess.run(["cp", os.devnull, first], check=True, timeout=60)  # held 45 s if the lease were kept
        assert check(second).valid
    assert os.path.getsize(first) == 0
