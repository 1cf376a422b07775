"""``.pre-commit-hooks.yaml``: a model repository runs ``gguf-construct check`` on its ``.gguf`` files as a
pre-commit hook.  Each hook is well formed, picks the files pre-commit would hand it, and its entry, run as
pre-commit runs it (entry words, then the file names), passes a valid model and fails a broken one.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gguf_construct
from gguf_construct.breaking.models import minimal_model

ROOT = Path(__file__).resolve().parents[1]
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))


def _command(entry: str) -> list[str]:
    """The entry as a command line; the console script ``gguf-construct`` runs as ``python -m gguf_construct``
    (the tests run from the checkout, where the script may not be installed)."""
    words = shlex.split(entry)
    assert words[0] == "gguf-construct", "the hook runs the installed command"
    return [sys.executable, "-m", "gguf_construct", *words[1:]]


def _run(hook: dict, files: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    here = str(Path(gguf_construct.__file__).resolve().parents[1])  # the package these tests import
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        _command(hook["entry"]) + list(hook.get("args", [])) + [str(f) for f in files],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _valid_model(path: Path) -> Path:
    """The smallest llama model llama.cpp's replayed loader accepts (valid under every profile)."""
    minimal_model("llama").save(path)
    return path


def test_hooks_are_well_formed():
    assert isinstance(HOOKS, list) and HOOKS
    ids = [h["id"] for h in HOOKS]
    assert len(set(ids)) == len(ids) and "gguf-check" in ids
    for hook in HOOKS:
        assert {"id", "name", "entry", "language", "files"} <= set(hook), hook
        assert hook["language"] == "python"  # pre-commit installs this repository and runs its console script
        assert shlex.split(hook["entry"])[:2] == ["gguf-construct", "check"]
        assert hook.get("pass_filenames", True), "check needs the file names"


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h["id"])
def test_files_pattern_picks_gguf_files(hook):
    pattern = re.compile(hook["files"])  # pre-commit matches with re.search on the repository-relative path
    exclude = re.compile(hook["exclude"]) if hook.get("exclude") else None

    def picked(name: str) -> bool:
        return bool(pattern.search(name)) and not (exclude and exclude.search(name))

    assert picked("model.gguf") and picked("models/Q4_K_M/model-00001-of-00002.gguf") and picked("OLD.GGUF")
    assert not picked("model.gguf.json") and not picked("README.md") and not picked("gguf/notes.txt")


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h["id"])
def test_entry_passes_a_valid_file_and_fails_a_broken_one(hook, tmp_path):
    good = _valid_model(tmp_path / "good.gguf")
    ok = _run(hook, [good], tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "good.gguf" in ok.stdout
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(good.read_bytes()[:40])  # a truncated download
    bad = _run(hook, [good, broken], tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "broken.gguf" in bad.stdout
