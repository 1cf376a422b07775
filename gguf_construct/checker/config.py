"""Project defaults for ``gguf-construct check``: a ``[tool.gguf-construct]`` table in pyproject.toml or a
``.gguf-construct.toml`` file (top-level keys, or the same table), found in the current directory or the nearest
parent that has one.  Command-line options override it.

Keys: ``profile``, ``format``, ``select``, ``ignore`` (lists of rule IDs or prefixes), ``fail-on``, ``data``,
``jobs``, ``max-per-rule``.  Python 3.11+ reads TOML with the standard library; on 3.10 the ``tomli`` package is
used when installed; without it a found file is an error that says so (ignoring it would change the
verdicts silently).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

try:  # Python 3.11+
    import tomllib as _toml
except ImportError:  # pragma: no cover - Python 3.10
    try:
        import tomli as _toml  # type: ignore[no-redef]
    except ImportError:
        _toml = None  # type: ignore[assignment]

__all__ = ["find_config", "load_config", "ConfigError", "KEYS"]

TABLE = "gguf-construct"
OWN_FILE = ".gguf-construct.toml"
KEYS = {
    "profile": str,
    "format": str,
    "select": list,
    "ignore": list,
    "fail-on": str,
    "data": bool,
    "jobs": int,
    "max-per-rule": int,
}


class ConfigError(ValueError):
    """A configuration file that cannot be read or has a wrong key or value."""


def find_config(start: str | os.PathLike | None = None) -> Path | None:
    """The nearest ``.gguf-construct.toml``, or pyproject.toml with a ``[tool.gguf-construct]`` table, in
    ``start`` (default: the current directory) or its parents; None when there is none."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        own = d / OWN_FILE
        if own.is_file():
            return own
        py = d / "pyproject.toml"
        if py.is_file() and f"[tool.{TABLE}]" in py.read_text(encoding="utf-8", errors="replace"):
            return py
    return None


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    """The check options of a configuration file, validated against :data:`KEYS` (keys as written there)."""
    path = Path(path)
    if _toml is None:
        raise ConfigError(f"{path}: reading TOML needs Python 3.11 or the tomli package")
    try:
        with open(path, "rb") as fh:
            doc = _toml.load(fh)
    except (OSError, _toml.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    table = doc.get("tool", {}).get(TABLE)
    if table is None:
        table = doc if path.name == OWN_FILE else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
    out = {}
    for key, value in table.items():
        if key == "tool" and path.name == OWN_FILE:
            continue
        want = KEYS.get(key)
        if want is None:
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if want is list and isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if (
            not isinstance(value, want)
            or (want is int and isinstance(value, bool))
            or (want is list and not all(isinstance(v, str) for v in value))
        ):
            raise ConfigError(f"{path}: {key} must be {'a list of strings' if want is list else want.__name__}")
        out[key] = value
    return out
