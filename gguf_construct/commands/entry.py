"""The console script's entry: imports nothing heavy before a Ctrl-C handler is in place, so an interrupt while
the command line starts up ends in one line and exit status 130, like one while it runs."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Start the command line (:func:`.main.main`); 130 when interrupted while its modules load."""
    try:
        from .main import main as run  # noqa: PLC0415 - the import itself is what may be interrupted
    except KeyboardInterrupt:
        print("gguf-construct: interrupted", file=sys.stderr)
        return 130
    return run(argv)
