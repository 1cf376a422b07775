"""The one way the commands open a GGUF file named on the command line (so other sources can hook in here)."""

from __future__ import annotations

import sys

from ..base.errors import GGUFError
from .gguffile import GGUFFile, load

__all__ = ["open_input"]


def open_input(name: str, *, shards: bool = False) -> GGUFFile:
    """Open the GGUF file ``name`` for a command, memory-mapped; ``-`` is standard input (read to its end unless it
    is a regular file).

    ``shards``: when ``name`` is a shard of a split model, open the whole set (see :func:`gguf_construct.load`);
    by default a command works on the named file alone.
    """
    try:
        if name == "-":
            return load(sys.stdin.buffer)
        return load(name, shards=shards)
    except GGUFError as exc:
        exc.file = "standard input" if name == "-" else name  # the command line says which file it is about
        raise
