"""Every command x every kind of path argument: a right answer, or one line on stderr with a documented exit status.

The commands are read from the parser (``build_parser()``), so a new command is covered by being registered.  Each
positional argument is given a role by its name (an input file, an output, a plain word); a positional whose role
this table does not know fails :func:`test_every_positional_has_a_role` until it is added here.  For each input
slot, every path kind below is put in that slot (the other input slots get a valid file) and the command is run
in-process with an alarm against hangs.

What counts as right:

* the exit status is one the command line documents: 0, 1 (a finding: invalid, different) or 2 (usage, input or
  I/O trouble), never an exception;
* status 2 comes with exactly one line on stderr, starting ``gguf-construct``, and no traceback;
* a path that cannot be a GGUF file (a directory, a pipe, a device, a symlink loop, a glob that matches nothing)
  given where one file is expected is status 2: never 0, and never 1, which would read as "invalid" or
  "different".
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import stat
import sys

import numpy as np
import pytest

import gguf_construct as g
from gguf_construct.base.rangeserver import RangeServer
from gguf_construct.commands.main import build_parser, main
from gguf_construct.operations.split import split_model

DOCUMENTED = {0, 1, 2}

# positional argument name -> role; "in" is a GGUF input (one file), "in+" several inputs (files, folders, globs),
# "suite" a written suite's folder, "out" a file or prefix written, "outdir" a folder written
ROLES = {
    "file": "in",
    "input": "in",
    "a": "in",
    "b": "in",
    "first_shard": "in",
    "paths": "in+",
    "inputs": "in+",
    "output": "out",
    "prefix": "out",
    "dir": "suite",
    "key": "word",
    "value": "word",
    "old": "word",
    "new": "word",
    "id": "word",
    "types": "word",
    "what": "choice",
    "shell": "choice",
    "suite_command": "subcommands",
}
# where one name has two roles
ROLES_OF = {("suite write", "dir"): "outdir"}
WORDS = {"key": "general.name", "value": "renamed", "old": "a", "new": "z", "id": None, "types": None}
# required options and the value a run gets
REQUIRED = {"--target": "cmd:true", "--out": "{tmp}/results.jsonl"}
# inputs that take a folder or a glob on purpose: they may answer 0/1 for those kinds
KINDS = ("file", "directory", "glob", "stdin", "url", "fifo", "device", "symlink-loop", "no-permission", "shard")
NOT_A_FILE = {"directory", "fifo", "device", "symlink-loop"}


def _small(path) -> str:
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata["general.name"] = "small"
    f.add_tensor("a", np.arange(64, dtype=np.float32).reshape(2, 32))
    f.add_tensor("b", np.ones(32, np.float32))
    f.save(path)
    return str(path)


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """(command words, parser) for every sub-command, nested ones (``suite run``) included."""
    out = []

    def walk(words, parser):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out.append((" ".join(words), parser))
            return
        for name, sub in subs[0].choices.items():
            walk([*words, name], sub)

    walk([], build_parser())
    return out


COMMANDS = _commands()


def _positionals(parser):
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def _role(words: str, dest: str) -> str | None:
    return ROLES_OF.get((words, dest), ROLES.get(dest))


def _slots() -> list[tuple[str, str]]:
    """(command, positional name) for every input slot of every command."""
    return [
        (words, a.dest)
        for words, parser in COMMANDS
        for a in _positionals(parser)
        if _role(words, a.dest) in ("in", "in+", "suite")
    ]


def test_every_positional_has_a_role():
    unknown = [(words, a.dest) for words, parser in COMMANDS for a in _positionals(parser) if a.dest not in ROLES]
    assert unknown == [], "give these positional arguments a role in ROLES (and so the path kinds they get)"
    assert len(_slots()) >= 12  # dump, convert, check, split, merge, set, rename-tensor, diff x2, hash, sweep, ...


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    _small(root / "m.gguf")
    with RangeServer(str(root)) as server:
        yield server.url("m.gguf")


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang("the command did not answer within 20 s")


def _path_of(kind: str, tmp, served_url: str, monkeypatch) -> str:
    valid = _small(tmp / "valid.gguf")
    if kind == "file":
        return valid
    if kind == "directory":
        (tmp / "folder").mkdir()
        _small(tmp / "folder" / "inside.gguf")
        return str(tmp / "folder")
    if kind == "glob":
        return str(tmp / "nothing-*.gguf")
    if kind == "stdin":
        with open(valid, "rb") as fh:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(fh.read())))
        return "-"
    if kind == "url":
        return served_url
    if kind == "fifo":
        os.mkfifo(tmp / "pipe")
        return str(tmp / "pipe")
    if kind == "device":  # a private node: a command that wrongly replaced it must not replace the system's
        try:
            os.mknod(tmp / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is on Linux
        except (OSError, AttributeError):
            pytest.skip("cannot make a device node here (not root, or not Linux)")
        return str(tmp / "null")
    if kind == "symlink-loop":
        os.symlink(tmp / "loop-b", tmp / "loop-a")
        os.symlink(tmp / "loop-a", tmp / "loop-b")
        return str(tmp / "loop-a")
    if kind == "no-permission":
        path = _small(tmp / "locked.gguf")
        os.chmod(path, 0)  # root still reads it: then the answer is the file's
        return path
    if kind == "shard":
        shards = split_model(g.load(valid), str(tmp / "set"), max_tensors=1)
        return str(shards[-1][0])
    raise AssertionError(kind)


def _argv(words: str, parser, slot: str, path: str, tmp) -> list[str]:
    argv = words.split()
    for a in _positionals(parser):
        role = _role(words, a.dest)
        if a.dest == slot:
            argv.append(path)
        elif role in ("in", "in+"):
            argv.append(_small(tmp / f"other-{a.dest}.gguf"))
        elif role == "outdir":
            argv.append(str(tmp / "written-folder"))
        elif role == "out":
            argv.append(str(tmp / f"written-{a.dest}.gguf"))
        elif role == "word" and WORDS.get(a.dest) is not None:
            argv.append(WORDS[a.dest])
    for a in parser._actions:
        if a.option_strings and a.required:
            argv += [a.option_strings[0], REQUIRED[a.option_strings[0]].format(tmp=tmp)]
    return argv


def _answer(argv: list[str], capsys) -> tuple[int, str]:
    """Run the command line (20 s at most) and hold its answer to the rules of every path: a documented exit
    status, no traceback or raw errno, one line on exit 2.  Returns the status and what to show on failure."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    try:
        code = main(argv)
    except SystemExit as exc:  # a usage error of this table's making would show here
        code = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    _, err = capsys.readouterr()
    shown = f"gguf-construct {' '.join(argv)} -> {code}\nstderr: {err}"
    assert code in DOCUMENTED, shown
    assert "Traceback" not in err and "[Errno" not in err, shown
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gguf-construct"), shown
    return code, shown


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("words,slot", _slots(), ids=[f"{w}:{s}" for w, s in _slots()])
def test_every_command_answers_every_path_kind(words, slot, kind, tmp_path, served, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # an output named "-" is a file in the current folder: never the checkout's
    parser = dict(COMMANDS)[words]
    path = _path_of(kind, tmp_path, served, monkeypatch)
    argv = _argv(words, parser, slot, path, tmp_path)
    code, shown = _answer(argv, capsys)
    if kind in NOT_A_FILE | {"glob"} and _role(words, slot) == "in":
        assert code == 2, shown
    if kind == "file" and words in ("dump", "hash", "diff", "check", "set", "rename-tensor", "convert"):
        assert code in (0, 1), shown


# -- options that take a path -------------------------------------------------------------------------------------
# option dest -> what it names: "in" a file read, "out" a file written, "outdir" a folder written
PATH_OPTIONS = {
    "out": "out",
    "install": "out",
    "from_file": "in",
    "chat_template_file": "in",
    "config": "in",
    "site": "outdir",
    "results": "in",
    "compare": "in",
}
OUTDIR_OPTIONS = {("docs", "out"), ("demo", "out"), ("fuzz", "out"), ("suite matrix", "out"), ("export", "out")}
OPTION_KINDS = ("fifo", "device", "symlink-loop", "directory")


def _option_slots() -> list[tuple[str, str]]:
    return [
        (words, a.dest)
        for words, parser in COMMANDS
        for a in parser._actions
        if a.option_strings and a.dest in PATH_OPTIONS
    ]


@pytest.mark.parametrize("kind", OPTION_KINDS)
@pytest.mark.parametrize("words,dest", _option_slots(), ids=[f"{w}:--{d}" for w, d in _option_slots()])
def test_every_path_option_answers_every_odd_path(words, dest, kind, tmp_path, served, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    parser = dict(COMMANDS)[words]
    role = "outdir" if (words, dest) in OUTDIR_OPTIONS else PATH_OPTIONS[dest]
    if kind == "directory" and role == "outdir":
        pytest.skip("a folder is what this option takes")
    if (words, dest) == ("suite run", "results"):
        pytest.skip("read only with --record after a run over a written suite")
    path = _path_of(kind, tmp_path, served, monkeypatch)
    option = next(a for a in parser._actions if a.dest == dest)
    argv = [a for a in _argv(words, parser, "", "", tmp_path) if a]
    if option.required:  # given by _argv: replace its value
        argv[argv.index(option.option_strings[0]) + 1] = path
    else:
        argv += [option.option_strings[0], path]
    if words == "set" and dest in ("from_file",):
        argv.remove("renamed")  # VALUE comes from the file
    if words == "export":
        argv.insert(1, "ksy")
    if words == "completion":
        argv.insert(1, "bash")
    code, shown = _answer(argv, capsys)
    if role == "in" and kind != "device":  # /dev/null reads as an empty file
        assert code == 2, shown  # nothing of these is a file to read
