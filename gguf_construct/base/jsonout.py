"""Writing JSON to stdout, shared by the command-line layers (a leaf module: imports nothing of the package)."""

from __future__ import annotations

import json
import sys

__all__ = ["write_json"]


def write_json(text: str) -> None:
    """Print JSON text to stdout as UTF-8 (RFC 8259) whatever the locale; lone surrogates (strings of invalid UTF-8
    read with surrogateescape) become JSON ``\\udcXX`` escapes instead of an encoding error."""
    data = (text + "\n").encode("utf-8", "backslashreplace")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (e.g. captured): ASCII JSON is valid everywhere
        sys.stdout.write(json.dumps(json.loads(data), ensure_ascii=True, indent=1) + "\n")
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()
