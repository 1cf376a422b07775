"""Ctrl-C at many points of ``fuzz`` and ``check --jobs 2``: exit 130, one line, nothing left behind.

Each command runs as its own process (as a user runs it) with a private TMPDIR, and gets SIGINT after a
different delay each time, so the interrupt lands in start-up, generation, a target's fork, minimisation, the
worker pool's hand-over and the report (counted from the moment the command line's imports are done and
``main()`` runs).  Every run must end within seconds with status 130 and
``gguf-construct: interrupted`` as its last line (no traceback of any thread, no "Exception ignored"), leave its
TMPDIR empty, no --out it created, and no process still running on its files.  A run that finished before its
signal proves nothing and is only counted: most runs must have been interrupted.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gguf_construct as g

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")

ROOT = Path(__file__).resolve().parent.parent
DELAYS = (0.0, 0.15, 0.4, 0.8, 1.3, 2.0)  # seconds after the command line starts (its imports done)
READY = "ready: main() is next"


def _cli(*args: str) -> list[str]:
    """The command line, telling READY from inside ``main()``'s handler (as its parser is built), so a signal sent
    at once lands in the command, not in this wrapper's own lines before ``main()`` is entered."""
    return [
        sys.executable,
        "-c",
        "import sys; import gguf_construct.commands.main as m; build = m.build_parser\n"
        "def told():\n"
        f"    print({READY!r}, file=sys.stderr, flush=True)\n"
        "    return build()\n"
        "m.build_parser = told; sys.exit(m.main())",
        *args,
    ]


DONE = ("files checked", "summary.json in")  # the last line of check's and fuzz's output


def _running_on(folder: str) -> list[str]:
    """Command lines of live processes that name ``folder`` (a target still reading a scratch file)."""
    found = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if folder in cmdline and "pytest" not in cmdline:
                found.append(cmdline)
    return found


def _interrupt(argv: list[str], delay: float, tmp: Path, out: Path | None = None) -> str | None:
    """Run, send SIGINT after ``delay``, and return what went wrong (None: clean, "finished": done before it)."""
    scratch = tmp / f"tmp-{delay}"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stderr.readline().decode().strip() == READY
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        out_bytes, err_bytes = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"still running 30 s after SIGINT at {delay} s"
    err = err_bytes.decode(errors="replace")
    lines = [line for line in err.splitlines() if line.strip()]
    if "interrupted" not in err and (
        proc.returncode in (0, 1)
        or (proc.returncode == -signal.SIGINT and not err and any(d in out_bytes.decode() for d in DONE))
    ):
        return "finished"  # done before the signal (or it came while Python was exiting, after the last line)
    problems = []
    if proc.returncode != 130:
        problems.append(f"exit {proc.returncode}")
    if not lines or lines[-1] != "gguf-construct: interrupted" or err.count("interrupted") != 1:
        problems.append(f"stderr ends {lines[-3:]}")
    if "Traceback" in err or "Exception ignored" in err:
        problems.append("a traceback: " + err[-600:])
    time.sleep(0.2)
    if os.listdir(scratch):
        problems.append(f"left in TMPDIR: {os.listdir(scratch)}")
    if out is not None and out.exists():
        problems.append(f"left {out}")
    if _running_on(str(scratch)):
        problems.append(f"still running: {_running_on(str(scratch))}")
    return f"SIGINT at {delay} s: {'; '.join(problems)}" if problems else None


def _verdict(outcomes: list[str | None]) -> None:
    failures = [o for o in outcomes if o not in (None, "finished")]
    assert failures == []
    assert outcomes.count(None) >= len(outcomes) // 2, outcomes  # most runs were really interrupted


@pytest.mark.parametrize("target", ["cmd:true", "python:json:loads"])
def test_ctrl_c_anywhere_in_fuzz(tmp_path, target):
    outcomes = []
    for delay in DELAYS:
        out = tmp_path / f"out-{delay}"
        outcomes.append(
            _interrupt(_cli("fuzz", "--target", target, "--count", "400", "--out", str(out)), delay, tmp_path, out)
        )
    _verdict(outcomes)


def test_ctrl_c_anywhere_in_check_jobs(tmp_path):
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    rng = np.random.default_rng(0)
    for i in range(8):
        f.add_tensor(f"t{i}", rng.standard_normal(32 * 4096).astype(np.float32), ggml_type="Q8_0")
    model = tmp_path / "files" / "m-0.gguf"
    model.parent.mkdir()
    f.save(model)
    for i in range(1, 400):
        shutil.copyfile(model, model.with_name(f"m-{i}.gguf"))
    outcomes = [
        _interrupt(_cli("check", "--no-config", "--data", "--jobs", "2", str(model.parent)), delay, tmp_path)
        for delay in DELAYS
    ]
    _verdict(outcomes)


def test_the_command_line_starts_without_the_file_model():
    """The console script and ``import gguf_construct`` load no numpy and no file model, so a Ctrl-C while a command
    starts up lands in main's handler (one line, 130), not in an import (a traceback)."""
    probe = (
        "import sys, gguf_construct, gguf_construct.commands.entry, gguf_construct.commands.main; "
        "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('gguf_construct.filemodel')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    assert g.load is g.filemodel.gguffile.load and "GGUFFile" in dir(g)  # the public names still resolve


def test_an_interrupt_while_modules_load_is_one_line(monkeypatch, capsys):
    import builtins

    from gguf_construct.commands import entry, main as cli_main

    real_import = builtins.__import__

    def interrupted_import(name, *args, **kwargs):
        if name == "main" or name.endswith("commands.main"):
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted_import)
    assert entry.main(["demo"]) == 130
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert capsys.readouterr().err == "gguf-construct: interrupted\n"

    def numpy_like(args):  # numpy re-raises an interrupt in its C core's import as an ImportError
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("numpy: error importing numpy") from exc

    parser = cli_main.build_parser()
    monkeypatch.setattr(cli_main, "build_parser", lambda: parser)
    monkeypatch.setattr(
        parser, "parse_known_args", lambda argv: (type("A", (), {"func": staticmethod(numpy_like)})(), [])
    )
    assert cli_main.main(["demo"]) == 130
    assert capsys.readouterr().err == "gguf-construct: interrupted\n"
