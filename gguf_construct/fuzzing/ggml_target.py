"""ggml's own C reader as a fuzz target: ``gguf_init_from_file`` from a libggml-base shared library, via ctypes.

``gguf-construct fuzz --target ggml:/path/to/libggml-base.so --profile ggml`` runs it in the persistent worker
(the library path travels in the environment variable ``GGUF_CONSTRUCT_GGML_LIB``).  The file is loaded as a program
loading the model does (``no_alloc = false``: tensor data read and bounds-checked); NULL is a rejection, an abort
(``GGML_ASSERT``, a failed allocation) kills the worker and is reported as a crash.  Accepted files are answered
with every key (type and value: scalars, strings, arrays of them) and every tensor's name, type and offset, so
value mismatches are found too.  Shapes are left out: ggml pads them to four dimensions.  Strings come through the C
API as NUL-terminated C strings, so a string with an embedded NUL (rule STR-NUL) shows up as a value mismatch: it
is what a C consumer of the file sees.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

import numpy as np

from ..format.enums import GGUFValueType
from ..format.values import numpy_dtype_of

__all__ = ["LIB_ENV", "ggml_reader", "library_from_env"]

LIB_ENV = "GGUF_CONSTRUCT_GGML_LIB"

# the numeric value types (their encodings from the spec) and ggml's getter for each: gguf_get_val_u8, ..._f32, ...
_NUMERIC = {vt: numpy_dtype_of(vt) for vt in GGUFValueType if numpy_dtype_of(vt) is not None}
_GETTERS = {
    vt: "gguf_get_val_" + ("bool" if dt.kind == "b" else f"{dt.kind}{8 * dt.itemsize}") for vt, dt in _NUMERIC.items()
}


class _Params(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


def library_from_env(env: str, what: str) -> ctypes.CDLL:
    """The shared library whose path is in environment variable ``env`` (how a target's worker gets it)."""
    path = os.environ.get(env)
    if not path:
        raise RuntimeError(f"set {env} to the path of {what}")
    return ctypes.CDLL(path)


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    lib = library_from_env(LIB_ENV, "libggml-base")
    ctx_p, i64, size = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t
    signatures = {
        "gguf_init_from_file": (ctx_p, [ctypes.c_char_p, _Params]),
        "gguf_free": (None, [ctx_p]),
        "ggml_free": (None, [ctx_p]),
        "gguf_get_n_kv": (i64, [ctx_p]),
        "gguf_get_key": (ctypes.c_char_p, [ctx_p, i64]),
        "gguf_get_kv_type": (ctypes.c_int, [ctx_p, i64]),
        "gguf_get_arr_type": (ctypes.c_int, [ctx_p, i64]),
        "gguf_get_val_str": (ctypes.c_char_p, [ctx_p, i64]),
        "gguf_get_arr_n": (size, [ctx_p, i64]),
        "gguf_get_arr_data": (ctypes.c_void_p, [ctx_p, i64]),
        "gguf_get_arr_str": (ctypes.c_char_p, [ctx_p, i64, size]),
        "gguf_get_n_tensors": (i64, [ctx_p]),
        "gguf_get_tensor_name": (ctypes.c_char_p, [ctx_p, i64]),
        "gguf_get_tensor_type": (ctypes.c_int, [ctx_p, i64]),
        "gguf_get_tensor_offset": (size, [ctx_p, i64]),
    }
    for vt, getter in _GETTERS.items():
        signatures[getter] = (np.ctypeslib.as_ctypes_type(_NUMERIC[vt]), [ctx_p, i64])
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def _value(lib: ctypes.CDLL, ctx: int, i: int) -> dict[str, Any]:
    vtype = GGUFValueType(lib.gguf_get_kv_type(ctx, i))
    if vtype == GGUFValueType.STRING:
        return {"type": "STRING", "value": lib.gguf_get_val_str(ctx, i).decode("utf-8", "surrogateescape")}
    if vtype != GGUFValueType.ARRAY:
        return {"type": vtype.name, "value": getattr(lib, _GETTERS[vtype])(ctx, i)}
    item = GGUFValueType(lib.gguf_get_arr_type(ctx, i))
    n = lib.gguf_get_arr_n(ctx, i)
    entry: dict[str, Any] = {"type": "ARRAY", "item_type": item.name, "length": n}
    if item == GGUFValueType.STRING:
        entry["value"] = [lib.gguf_get_arr_str(ctx, i, j).decode("utf-8", "surrogateescape") for j in range(n)]
    elif item in _NUMERIC:
        dtype = _NUMERIC[item]
        data = ctypes.string_at(lib.gguf_get_arr_data(ctx, i), n * dtype.itemsize) if n else b""
        if dtype.kind == "b":  # any nonzero byte reads as true
            entry["value"] = (np.frombuffer(data, dtype=np.uint8) != 0).tolist()
        else:
            entry["value"] = np.frombuffer(data, dtype=dtype).tolist()
    return entry


def ggml_reader(path: str) -> dict:
    """Load ``path`` with ggml's ``gguf_init_from_file`` (data read); ValueError when it returns NULL."""
    lib = _library()
    data_ctx = ctypes.c_void_p()
    ctx = lib.gguf_init_from_file(
        os.fsencode(path), _Params(False, ctypes.cast(ctypes.pointer(data_ctx), ctypes.c_void_p))
    )
    if not ctx:
        raise ValueError("gguf_init_from_file returned NULL")
    try:
        metadata = [
            {"key": lib.gguf_get_key(ctx, i).decode("utf-8", "surrogateescape"), **_value(lib, ctx, i)}
            for i in range(lib.gguf_get_n_kv(ctx))
        ]
        tensors = [
            {
                "name": lib.gguf_get_tensor_name(ctx, i).decode("utf-8", "surrogateescape"),
                "type": lib.gguf_get_tensor_type(ctx, i),
                "offset": lib.gguf_get_tensor_offset(ctx, i),
            }
            for i in range(lib.gguf_get_n_tensors(ctx))
        ]
    finally:
        lib.gguf_free(ctx)
        if data_ctx.value:
            lib.ggml_free(data_ctx)
    return {"metadata": metadata, "tensors": tensors}
