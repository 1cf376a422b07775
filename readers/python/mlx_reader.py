"""MLX's GGUF loader (``mlx.core.load``, which reads GGUF with its own C library) as a suite target:
``python:readers.python.mlx_reader:read``.

MLX returns metadata as arrays (typed by their dtype) and strings, and tensors converted to its own arrays:
F32/F16/BF16 as float arrays, Q4_0/Q4_1/Q8_0 as MLX quantized weights with ``.scales`` and ``.biases``
companions, which are dequantized here so that the decoded values can be compared.  Any exception of
``mx.load`` that is a ``ValueError`` or ``RuntimeError`` (its C++ library's exceptions) is its refusal of the
file; a signal (a segmentation fault inside the library) or any other exception is a crash.
"""

from __future__ import annotations

import math

_DTYPES = {
    "uint8": "UINT8",
    "int8": "INT8",
    "uint16": "UINT16",
    "int16": "INT16",
    "uint32": "UINT32",
    "int32": "INT32",
    "float32": "FLOAT32",
    "bool": "BOOL",
    "uint64": "UINT64",
    "int64": "INT64",
    "float64": "FLOAT64",
}


def _num(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _entry(key, v) -> dict:
    import mlx.core as mx

    if isinstance(v, str):
        return {"key": key, "type": "STRING", "value": v}
    if isinstance(v, list):
        return {"key": key, "type": "ARRAY", "item_type": "STRING", "value": v}
    if isinstance(v, mx.array):
        vtype = _DTYPES.get(str(v.dtype).rsplit(".", 1)[-1])
        value = v.tolist()
        if v.ndim == 0:
            out = {"key": key, "value": _num(value)}
            if vtype:
                out["type"] = vtype
            return out
        out = {"key": key, "type": "ARRAY", "value": [_num(x) for x in value]}
        if vtype:
            out["item_type"] = vtype
        return out
    return {"key": key, "value": v}


def read(path: str) -> dict:
    """Load ``path`` with ``mlx.core.load`` and answer in the runner's shape."""
    import mlx.core as mx

    try:
        arrays, metadata = mx.load(path, format="gguf", return_metadata=True)
    except RuntimeError as exc:
        raise ValueError(f"RuntimeError: {exc}") from None
    tensors = []
    companions = {k for k in arrays if k.endswith((".scales", ".biases"))}
    for name, a in arrays.items():
        if name in companions:
            continue
        entry = {"name": name}
        base = name[: -len(".weight")] if name.endswith(".weight") else name
        if a.dtype == mx.uint32:
            # MLX names the companions of a quantized tensor by cutting 7 characters (".weight") off any name;
            # a companion found only under that cut name is reported as the extra tensor it is
            found = next((b for b in (base, name[:-7]) if b + ".scales" in arrays), None)
            if found is not None:
                if found != base:
                    tensors += [{"name": found + ".scales"}, {"name": found + ".biases"}]
                scales, biases = arrays[found + ".scales"], arrays[found + ".biases"]
                bits = 32 * a.shape[-1] // (scales.shape[-1] * 32)
                try:
                    a = mx.dequantize(a, scales.astype(mx.float32), biases.astype(mx.float32), group_size=32, bits=bits)
                except (ValueError, RuntimeError):  # not a layout this adapter can undo: report the name only
                    tensors.append(entry)
                    continue
        entry["shape"] = list(reversed(a.shape))
        if a.size <= 4096:
            entry["values"] = [_num(x) for x in a.astype(mx.float32).reshape(-1).tolist()]
        tensors.append(entry)
    return {"metadata": [_entry(k, v) for k, v in metadata.items()], "tensors": tensors}
