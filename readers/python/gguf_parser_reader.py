"""gguf-parser (PyPI) as a suite target: ``python:readers.python.gguf_parser_reader:read``.

Every exception the parser raises is its way of refusing a file (it has no other), so it becomes a rejection;
only MemoryError and RecursionError (resource exhaustion) are left to count as crashes.
"""

from __future__ import annotations

import math


def _value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v


def read(path: str) -> dict:
    """Parse ``path`` with ``gguf_parser.GGUFParser`` and answer in the runner's shape (values without types)."""
    from gguf_parser import GGUFParser

    parser = GGUFParser(path)
    try:
        parser.parse()
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - the parser's only way to refuse a file
        raise ValueError(f"{type(exc).__name__}: {exc}") from None
    metadata = [{"key": k, "value": _value(v)} for k, v in parser.metadata.items()]
    tensors = [{"name": t["name"], "type": t["type"], "shape": list(t["dimensions"]), "offset": t["offset"]}
               for t in parser.tensors_info]
    return {"metadata": metadata, "tensors": tensors}
