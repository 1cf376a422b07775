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
import stat
from pathlib import Path
from typing import Any

from ..base.text import printable

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
    ``start`` (default: the current directory) or its parents; None when there is none.  Raises
    :class:`ConfigError` naming the path when the current directory is gone, or a candidate is there but is no
    regular file (a folder, a FIFO, a symlink loop) or cannot be read: skipping it would change the verdicts
    silently."""
    try:
        here = Path(start or os.getcwd()).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        where = printable(os.fsdecode(start)) if start else "the current directory"
        raise ConfigError(f"{where}: {_reason(exc)}{SKIP_HINT}") from None
    for d in (here, *here.parents):
        own = _candidate(d / OWN_FILE)
        if own is not None:
            return own
        py = _candidate(d / "pyproject.toml")
        if py is not None:
            try:
                if f"[tool.{TABLE}]".encode() in _read(py):
                    return py
            except OSError as exc:
                raise ConfigError(f"{_name(py)}: {_reason(exc)}{SKIP_HINT}") from None
    return None


SKIP_HINT = " (--no-config skips the configuration)"


def _name(path: Path) -> str:
    """A path as printed in an error: control characters escaped (a folder name is untrusted too)."""
    return printable(str(path))


def _candidate(path: Path) -> Path | None:
    """``path`` when it is a regular file, None when nothing is there; ConfigError when something else is."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(f"{_name(path)}: {_reason(exc)}{SKIP_HINT}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{_name(path)}: not a regular file{SKIP_HINT}")
    return path


def _reason(exc: Exception) -> str:
    """An OSError's reason in lower case, without ``[Errno N]`` and the repeated file name."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


MAX_BYTES = 4 << 20  # a configuration larger than this is refused: it is read whole


def _read(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (OSError naming the path otherwise).  Opened without blocking, so a
    FIFO put in a config file's place cannot hang the command; checked as a regular file after opening."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file", str(path))
        if st.st_size > MAX_BYTES:
            raise OSError(0, f"larger than {MAX_BYTES} bytes", str(path))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    """The check options of a configuration file, validated against :data:`KEYS` (keys as written there)."""
    path = Path(path)
    name = _name(path)
    if _toml is None:
        raise ConfigError(f"{name}: reading TOML needs Python 3.11 or the tomli package")
    try:
        doc = _toml.loads(_read(path).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{name}: {_reason(exc)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    except _toml.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{name}: tool must be a table")
    table = tool.get(TABLE)
    if table is None:
        table = doc if path.name == OWN_FILE else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{name}: [tool.{TABLE}] must be a table")
    out = {}
    for key, value in table.items():
        if key == "tool" and path.name == OWN_FILE:
            continue
        want = KEYS.get(key)
        if want is None:
            raise ConfigError(f"{name}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if want is list and isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if (
            not isinstance(value, want)
            or (want is int and isinstance(value, bool))
            or (want is list and not all(isinstance(v, str) for v in value))
        ):
            raise ConfigError(f"{name}: {key} must be {'a list of strings' if want is list else want.__name__}")
        out[key] = value
    return out
