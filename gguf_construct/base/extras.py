"""Optional features and the extras that bring them: the one-line message a missing extra gives, said before any
work is done (never a traceback, never a half-written output)."""

from __future__ import annotations

import functools
import importlib.util

__all__ = ["MissingExtra", "compiled_walk", "require"]


class MissingExtra(OSError):
    """An optional feature was asked for whose extra is not installed (the command line prints it in one line)."""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing
        return False


def require(extra: str, modules: tuple[str, ...], feature: str) -> None:
    """Raise :class:`MissingExtra` naming ``extra`` when one of ``modules`` cannot be imported."""
    if not all(_importable(m) for m in modules):
        raise MissingExtra(f'{feature} needs the {extra} extra: pip install "gguf-construct[{extra}]"')


@functools.lru_cache(maxsize=None)
def compiled_walk(name: str):
    """The compiled walk ``name`` of :mod:`gguf_construct.base.compiledwalks` (the ``fast`` extra), imported on first
    use, or None when numba is not installed: the scans then take their numpy way, no message."""
    try:
        from . import compiledwalks
    except ImportError:
        return None
    return getattr(compiledwalks, name)
