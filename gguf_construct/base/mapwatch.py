"""Who is told when a file is memory-mapped for reading: a registry of callbacks, empty unless a caller adds one.

The reader maps files and reads their bytes much later, so a file truncated by another process meanwhile makes
the reading process die of SIGBUS, which Python cannot catch.  The library installs no signal handler of its own;
a program that wants to be told (the command line: :mod:`gguf_construct.commands.leases`) registers a callback
here, and every mapping made by :func:`gguf_construct.format.reader.open_source` is passed to it.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["watch", "unwatch", "mapped"]

Watcher = Callable[[int, str, Any], None]
_watchers: list[Watcher] = []


def watch(callback: Watcher) -> None:
    """Call ``callback(fileno, path, mapping)`` for every file mapped from now on (the descriptor is closed after
    the call: duplicate it to keep it)."""
    _watchers.append(callback)


def unwatch(callback: Watcher) -> None:
    """Stop calling ``callback`` (no error when it was not registered)."""
    if callback in _watchers:
        _watchers.remove(callback)


def mapped(fileno: int, path: str | None, mapping: Any) -> None:
    """Tell the registered callbacks that ``path`` (open as ``fileno``) is now mapped as ``mapping``."""
    for callback in list(_watchers):
        callback(fileno, path or "", mapping)
