"""The built wheel holds the whole package and nothing else: every module of every layer folder, the spec's YAML
as package data, ``py.typed``, the ``gguf-construct`` command; no tests, benchmarks, virtual environments or
bytecode.

The wheel is built (``pip wheel . --no-deps``) from a copy of the checkout's tracked files (``git ls-files``;
without git, the tree less the usual build and cache folders), with a stray ``.venv/`` and bytecode planted in
it, so a packaging rule that swept them up would show here.  Without build isolation when this interpreter's
setuptools can build a wheel, else pip fetches setuptools; skips when it cannot.
"""

from __future__ import annotations

import configparser
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_SKIP_DIRS = {
    ".git",
    ".venv",
    ".venv-core",
    "build",
    "dist",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "site",
}


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        out = None
    if out is not None and out.returncode == 0 and out.stdout:
        return [Path(p) for p in out.stdout.decode().split("\0") if p and (ROOT / p).is_file()]
    return [
        p.relative_to(ROOT)
        for p in ROOT.rglob("*")
        if p.is_file() and not _SKIP_DIRS.intersection(p.relative_to(ROOT).parts)
    ]


def _can_build_here() -> bool:
    """setuptools of this interpreter can build a wheel itself (bdist_wheel: setuptools 70.1+, or ``wheel``)."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    if importlib.util.find_spec("wheel") is not None:
        return True
    from importlib.metadata import version

    major, minor = (int(x) for x in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for rel in _tracked_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    (src / ".venv" / "lib").mkdir(parents=True)
    (src / ".venv" / "lib" / "stray.py").write_text("raise SystemExit('packaged a venv')\n")
    (src / "gguf_construct" / "__pycache__").mkdir(exist_ok=True)
    (src / "gguf_construct" / "__pycache__" / "stray.cpython-311.pyc").write_bytes(b"\0" * 16)
    isolation = ["--no-build-isolation"] if _can_build_here() else []
    out = tmp / "dist"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if run.returncode != 0 and "setuptools" in run.stderr and "No matching distribution" in run.stderr:
        pytest.skip("pip cannot fetch setuptools to build the wheel")
    assert run.returncode == 0, run.stderr[-2000:]
    wheels = list(out.glob("gguf_construct-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as zf:
        yield zf


def test_wheel_holds_every_module_of_every_layer_folder(wheel):
    names = set(wheel.namelist())
    modules = {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "gguf_construct").rglob("*.py") if "__pycache__" not in p.parts
    }
    assert modules, "no modules found in the checkout"
    missing = sorted(modules - names)
    assert not missing, f"modules left out of the wheel: {missing}"
    for folder in (
        "base",
        "format",
        "codecs",
        "arch",
        "rulebook",
        "filemodel",
        "checker",
        "breaking",
        "export",
        "operations",
        "fuzzing",
        "suite",
        "docgen",
        "commands",
    ):
        assert f"gguf_construct/{folder}/__init__.py" in names, folder


def test_wheel_holds_the_spec_and_py_typed(wheel):
    names = set(wheel.namelist())
    assert "gguf_construct/py.typed" in names
    spec = {
        "gguf_construct/_spec/" + p.relative_to(ROOT / "spec").as_posix()
        for p in (ROOT / "spec").rglob("*")
        if p.suffix in (".yaml", ".json")
    }
    assert "gguf_construct/_spec/gguf.yaml" in spec and "gguf_construct/_spec/rules.yaml" in spec
    missing = sorted(spec - names)
    assert not missing, f"spec files left out of the wheel: {missing[:10]}"


def test_wheel_has_nothing_else(wheel):
    stray = [
        n
        for n in wheel.namelist()
        if not (n.startswith("gguf_construct/") or n.startswith("gguf_construct-"))
        or "__pycache__" in n
        or n.endswith(".pyc")
        or "/.venv" in n
        or n.startswith("gguf_construct/tests")
    ]
    assert not stray, stray[:20]


def test_wheel_installs_the_command(wheel):
    entry = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    points = configparser.ConfigParser()
    points.read_string(wheel.read(entry).decode())
    assert points["console_scripts"]["gguf-construct"] == "gguf_construct.commands.entry:main"
    metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Python: >=3.10" in metadata
    assert "Provides-Extra: lint" in metadata
