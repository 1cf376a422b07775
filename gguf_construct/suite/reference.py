"""The project's own reader as a suite target: ``python:gguf_construct.suite.reference:read_spec`` (and
``read_ggml``, ``read_llama_cpp``) accepts a file exactly when the checker finds no error under that profile,
and reports what :func:`gguf_construct.load` reads, with each tensor's data hash and, for tiny tensors, its
decoded values."""

from __future__ import annotations

import hashlib
import math

import numpy as np

from ..checker import check
from ..codecs import has_decoder
from ..format.constructs import encode_text
from ..filemodel.dump import value_to_json
from ..base.errors import GGUFError
from ..filemodel.gguffile import load

__all__ = ["read", "read_spec", "read_ggml", "read_llama_cpp"]

DECODE_LIMIT = 4096  # elements: tensors up to this size report decoded values
BIG_VALUE = 1 << 20  # bytes or items: longer values are reported by length and hash (the suite's large cases)


def _f(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _key(key: str, value) -> dict:
    """One key of the answer; a value of more than :data:`BIG_VALUE` bytes or items as its length and the SHA-256
    of its bytes (a string's bytes, an array of numbers' elements as stored), never as a list."""
    v = value.value
    if value.type.name == "STRING" and len(v) > BIG_VALUE // 4:
        data = encode_text(v)
        if len(data) > BIG_VALUE:
            return {"key": key, "type": "STRING", "length": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if value.type.name == "ARRAY" and isinstance(v, np.ndarray) and len(v) > BIG_VALUE:
        return {
            "key": key,
            "type": "ARRAY",
            "item_type": value.item_type.name,
            "length": len(v),
            "sha256": hashlib.sha256(np.ascontiguousarray(v).view(np.uint8)).hexdigest(),
        }
    return dict(key=key, **value_to_json(value))


def read(path: str, profile: str = "spec") -> dict:
    """Accept (return the answer shape) or reject (raise ValueError) ``path`` as the checker does under
    ``profile``."""
    report = check(path, profile=profile, data=True)
    if not report.valid:
        raise ValueError("; ".join(sorted({f.rule for f in report.errors()})))
    del report  # what the checker read is not kept while the file is loaded again (a large case's 1 GiB value)
    try:
        f = load(path, lazy=False, shards=False)
    except GGUFError as exc:
        raise ValueError(f"load refuses what check accepts: {exc}") from exc
    tensors = []
    for t in f.tensors:
        entry = {
            "name": t.name,
            "type": t.type_name,
            "shape": list(t.shape),
            "offset": t.offset,
            "sha256": hashlib.sha256(bytes(t.raw())).hexdigest(),
        }
        n = 1
        for d in t.shape:
            n *= d
        if n <= DECODE_LIMIT and not t.opaque and has_decoder(t.type_name):  # a type the spec sizes, no codec
            entry["values"] = [_f(v) for v in t.numpy().ravel().tolist()]
        tensors.append(entry)
    return {"metadata": [_key(k, v) for k, v in f.metadata.typed_items()], "tensors": tensors}


def read_spec(path: str) -> dict:
    """:func:`read` under the spec profile."""
    return read(path, "spec")


def read_ggml(path: str) -> dict:
    """:func:`read` under the ggml profile."""
    return read(path, "ggml")


def read_llama_cpp(path: str) -> dict:
    """:func:`read` under the llama.cpp profile."""
    return read(path, "llama.cpp")
