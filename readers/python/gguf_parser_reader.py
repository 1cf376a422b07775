"""gguf-parser (PyPI) as a suite target: ``python:readers.python.gguf_parser_reader:read``.

The parser refuses a file by raising ``GGUFParseError`` (or a ``ValueError`` such as ``UnicodeDecodeError``);
any other exception escaping it (``struct.error`` when it reads past the end, ``MemoryError`` ...) is an
uncaught error of the reader, which the runner counts as a crash, as it does for every Python reader.
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
    from gguf_parser import GGUFParseError, GGUFParser

    parser = GGUFParser(path)
    try:
        parser.parse()
    except GGUFParseError as exc:
        raise ValueError(f"GGUFParseError: {exc}") from None
    metadata = [{"key": k, "value": _value(v)} for k, v in parser.metadata.items()]
    tensors = [
        {"name": t["name"], "type": t["type"], "shape": list(t["dimensions"]), "offset": t["offset"]}
        for t in parser.tensors_info
    ]
    return {"metadata": metadata, "tensors": tensors}
