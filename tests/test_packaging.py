"""Every package under gguf_construct/ is listed in pyproject.toml, so a wheel install has all commands."""

import json
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _prose(page: Path) -> set[str]:
    """The hand-written lines of a docs page: those outside its generated blocks."""
    import re

    text = re.sub(r"<!-- BEGIN GENERATED.*?<!-- END GENERATED -->", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {line for line in text.splitlines() if len(line) > 40}


def test_every_subpackage_is_packaged():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gguf_construct").rglob("__init__.py")}
    assert found <= listed, f"not packaged: {sorted(found - listed)}"


def test_help_commands_and_site_work_from_a_non_editable_install(tmp_path):
    """``pip install .`` (not editable): rule, man, completion and docs --site find their spec files as package data.

    The package is installed without dependencies into a folder put first on PYTHONPATH, so the test venv's
    construct, numpy (and mkdocs, when the [docs] extra is there) serve it, and nothing is imported from the source
    tree."""
    import importlib.util
    import os
    import shutil
    import subprocess
    import sys

    import pytest

    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("gguf_construct", "spec", "docs"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site-packages"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if build.returncode != 0 and "setuptools" in build.stderr and "No matching distribution" in build.stderr:
        pytest.skip("pip cannot fetch setuptools to build the package")
    assert build.returncode == 0, build.stderr
    shutil.rmtree(src)  # nothing may come from the sources
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}

    def run(*argv: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "gguf_construct", *argv],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (argv, done.stderr)
        return done.stdout

    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gguf_construct, gguf_construct.format.spec as s; "
            "print(gguf_construct.__file__); print(s.spec_dir())",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(p.startswith(str(target)) for p in where), where
    assert "error HDR-MAGIC at byte 0" in run("rule", "HDR-MAGIC")
    # issue #41: the hand-written pages ship too: rule's link names a page that exists, docs --out keeps the prose
    link = json.loads(run("rule", "HDR-MAGIC", "--format", "json"))["docs"].split("#")[0]
    assert link.startswith(str(target)) and Path(link).is_file()
    run("docs", "--out", str(work / "docs"))
    assert _prose(ROOT / "docs" / "rules.md") and _prose(ROOT / "docs" / "rules.md") <= _prose(
        work / "docs" / "rules.md"
    )
    assert run("man").startswith('.TH "GGUF-CONSTRUCT"')
    assert "__fish_use_subcommand -a rule" in run("completion", "fish")
    if importlib.util.find_spec("mkdocs") and importlib.util.find_spec("material"):
        run("docs", "--site", str(work / "site"))
        assert (work / "site" / "tensor-types.html").is_file()
        assert (work / "site" / "pictures" / "block-q4_k.svg").is_file()
        assert (work / "site" / "architectures" / "qwen2.html").is_file()
