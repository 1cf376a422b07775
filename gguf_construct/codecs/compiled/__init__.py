"""Optional compiled codecs (numba): the same codecs as the numpy modules, as ggml-style C loops.

Imported only when a codec first runs with the compiled path enabled (``gguf_construct.codecs.use``), so
importing ``gguf_construct`` neither imports numba nor compiles anything; each kernel compiles on its first call
and is cached on disk.  The numpy codecs stay the reference: the tests hold these kernels bit-identical to them.

One module per codec family, named like the numpy module it mirrors (``codec:`` in spec/tensor_types).  Each
defines ``decode_<name>(x, y, *tables)`` over ``x`` (n_blocks, type_size) uint8 little-endian blocks into ``y``
(n_blocks, block_size) float32, and ``tables(name)`` with the lookup tables that kernel takes (the decoders of
the most used types take a last flag ``stream`` besides, see :mod:`._stream`); some also define
``encode_<name>(x, y, qw, *encode_tables(name))`` from ``x`` (n_blocks, block_size) float32 into ``y``
(n_blocks, type_size) uint8, with ``qw`` the importance weights per block position of a row ((0, block_size):
none).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import sys
import threading

import numpy as np
from numba.core import event as _event

from ...format import spec as _spec
from . import _stream
from ._jit import cache_folder
from ._run import ENCODE_PARALLEL_MIN_VALUES, resolve_threads, run_blocks

__all__ = ["decoder", "decode", "encoder", "encode", "resolve_threads", "compiled_kernels"]

_log = logging.getLogger("gguf_construct.codecs")


class _CompileNotice(_event.Listener):
    """Says once per kernel, when numba starts compiling it (a cache miss), which type it is for: on standard
    error when that is a terminal, and always to the ``gguf_construct.codecs`` logger."""

    def __init__(self):
        self.labels: dict[int, str] = {}  # id(dispatcher) -> "Q4_K decoder"
        self.compiled: set[str] = set()  # labels compiled in this process (not loaded from the cache)
        self._lock = threading.Lock()

    def on_start(self, event):
        label = self.labels.get(id(event.data.get("dispatcher")))
        if label is None:
            return
        with self._lock:
            if label in self.compiled:
                return
            self.compiled.add(label)
        where = cache_folder()
        message = f"compiling {label}, once (cached{' in ' + where if where else ''})"
        _log.info(message)
        stream = sys.stderr
        if stream is not None and getattr(stream, "isatty", lambda: False)():
            print(f"gguf-construct: {message}", file=stream, flush=True)

    def on_end(self, event):
        pass


_notice = _CompileNotice()
_event.register("numba:compile", _notice)


def compiled_kernels() -> frozenset[str]:
    """The kernels compiled (not loaded from the on-disk cache) in this process, as ``"Q4_K decoder"``."""
    return frozenset(_notice.compiled)


@functools.lru_cache(maxsize=None)
def decoder(type_id: int):
    """``(kernel, tables)`` decoding ``type_id``, or None when no compiled decoder exists for it."""
    return _kernel(type_id, "decode", "tables")


@functools.lru_cache(maxsize=None)
def encoder(type_id: int):
    """``(kernel, tables)`` encoding ``type_id``, or None when no compiled encoder exists for it."""
    return _kernel(type_id, "encode", "encode_tables")


def _kernel(type_id: int, kind: str, tables: str):
    """The kernel ``{kind}_{type}`` of the type's codec family module and its tables, or None."""
    t = _spec.tensor_type_by_id()[type_id]
    if not t.codec:
        return None
    try:
        module = importlib.import_module(f"{__name__}.{t.codec}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{t.codec}":
            return None
        raise
    kernel = getattr(module, f"{kind}_{t.name.lower()}", None)
    if kernel is None:
        return None
    _notice.labels[id(kernel)] = f"{t.name} {kind}r"
    return kernel, getattr(module, tables)(t.name)


def encode(type_id: int, rows: np.ndarray, imatrix: np.ndarray | None, out: np.ndarray, threads: int | None) -> None:
    """Encode ``rows`` (n_rows, n_per_row) float32 into ``out`` (n_blocks, type_size) uint8 on ``threads``
    threads (None: see :func:`resolve_threads`); ``imatrix``: None or float32 (n_per_row,)."""
    kernel, tables = encoder(type_id)
    threads = resolve_threads(threads, rows.size, ENCODE_PARALLEL_MIN_VALUES)
    t = _spec.tensor_type_by_id()[type_id]
    x = rows.reshape(-1, t.block_size)
    qw = np.empty((0, t.block_size), np.float32) if imatrix is None else imatrix.reshape(-1, t.block_size)
    status = run_blocks(kernel, x, out, (qw,) + tables, threads, unit=max(1, rows.shape[1] // t.block_size))
    if status:
        from .._iqgrid import GridAbort

        raise GridAbort(_ABORTS[status])


_ABORTS = {  # the statuses of IQ encoder kernels: where ggml hits a GGML_ASSERT
    1: "ggml aborts: no grid neighbour with an error below FLT_MAX (GGML_ASSERT(grid_index >= 0))",
    2: "ggml aborts: a group scale is NaN (GGML_ASSERT(scale >= 0))",
    3: "ggml reads out of bounds: quantized point outside its grid map",
    4: "ggml aborts: quantized point not on the grid ('Oops: found point ... not on grid')",
}


def decode(type_id: int, x: np.ndarray, out: np.ndarray, threads: int, stream: bool = False) -> np.ndarray:
    """Decode the little-endian blocks ``x`` (n_blocks, type_size) uint8 into ``out`` (n_blocks, block_size)
    float32 on ``threads`` threads; ``stream``: with streaming stores where the kernel has them, ``out`` is
    large and its memory in use already (:mod:`._stream`)."""
    kernel, tables = decoder(type_id)
    if x.flags.writeable:  # one compiled signature per kernel: read-only input (as from bytes or a mapped file)
        x = x.view()
        x.flags.writeable = False
    if _streaming(type_id):
        tables = tables + (
            stream and out.nbytes >= _stream.STREAM_MIN_BYTES and _stream.resident(out.ctypes.data, out.nbytes),
        )
    run_blocks(kernel, x, out, tables, threads)
    return out


@functools.lru_cache(maxsize=None)
def _streaming(type_id: int) -> bool:
    """The decoder of ``type_id`` takes the ``stream`` flag of :mod:`._stream` after its tables."""
    kernel, _ = decoder(type_id)
    return "stream" in inspect.signature(kernel.py_func).parameters
