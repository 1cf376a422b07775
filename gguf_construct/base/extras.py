"""Optional features and the extras that bring them: the one-line message a missing extra gives, said before any
work is done (never a traceback, never a half-written output)."""

from __future__ import annotations

import importlib.util

__all__ = ["MissingExtra", "require"]


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
