"""Every package under gguf_construct/ is listed in pyproject.toml, so a wheel install has all commands."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_packaged():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gguf_construct").rglob("__init__.py")}
    assert found <= listed, f"not packaged: {sorted(found - listed)}"
