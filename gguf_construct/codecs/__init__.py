"""Tensor codecs: ggml block formats decoded to and encoded from numpy arrays.

Each tensor type in ``spec/tensor_types`` names a codec module (``codec: legacy`` means
``gguf_construct.codecs.legacy``).  That module defines, by naming convention:

* ``decode_<name>(blocks) -> ndarray`` where ``blocks`` is a 1-D structured array of the type's block dtype
  (fields as declared in the spec, any byte order: numpy reads the values correctly) and the result has shape
  ``(n_blocks, block_size)``: float32 for quantized and float types, the type's own dtype for F64 and integers.
  A decoder that works through the blocks in chunks takes ``out=`` (a C-contiguous float32 array of that shape)
  and writes straight into it; :func:`decode_blocks` feeds the others chunk by chunk, so that decoding a whole
  tensor into a given output needs little memory beyond it;
* ``encode_<name>(rows, imatrix) -> ndarray`` where ``rows`` is float32 of shape ``(n_rows, n_per_row)`` with
  ``n_per_row`` a multiple of the block size and ``imatrix`` is ``None`` or float32 ``(n_per_row,)``; the
  result is a structured array of little-endian blocks, ``n_rows * n_per_row // block_size`` long, in row order.

A type whose module lacks the function has no codec in that direction; :func:`quantize` then raises
``NotImplementedError`` naming the type.

Compiled path: with numba installed (``pip install "gguf-construct[fast]"``) the codecs of :mod:`.compiled`
(same results, bit for bit, for every quantized type and F16/BF16) replace the numpy ones in both directions,
and ``threads=`` spreads a call over cores (the numpy path ignores it).  ``use("numpy")`` or the environment variable ``GGUF_CONSTRUCT_CODECS=numpy`` turns it off;
:func:`backend` says which path runs.  Nothing is imported or compiled until a codec first runs.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import os
import time
from dataclasses import dataclass
from typing import Callable, Iterable, SupportsInt, Union

import numpy as np

from ..format import spec as _spec
from ._common import decode_chunks

TypeLike = Union[int, str, SupportsInt]  # a GGMLType, an id, a name

BACKEND_ENV = "GGUF_CONSTRUCT_CODECS"
_BACKENDS = ("auto", "numba", "numpy")
_backend_choice: str | None = None  # set by use(); None: the environment variable decides
_FAST_MISSING = 'the compiled codecs need numba: pip install "gguf-construct[fast]"'


def use(name: str) -> None:
    """Select the codec path: ``"numba"`` (compiled; ImportError when numba is missing), ``"numpy"`` (the
    reference), or ``"auto"`` (compiled when numba imports, the default)."""
    global _backend_choice
    if name not in _BACKENDS:
        raise ValueError(f"codec backend must be one of {_BACKENDS}, not {name!r}")
    if name == "numba" and _compiled_module() is None:
        raise ImportError(_FAST_MISSING)
    _backend_choice = name


@contextlib.contextmanager
def using(name: str):
    """:func:`use` for the duration of a ``with`` block (the previous choice is restored afterwards)."""
    global _backend_choice
    previous = _backend_choice
    use(name)
    try:
        yield
    finally:
        _backend_choice = previous


def backend() -> str:
    """The codec path in use: ``"numba"`` or ``"numpy"``."""
    return "numba" if _compiled() is not None else "numpy"


@functools.lru_cache(maxsize=None)
def _compiled_module():
    """The compiled codecs package when numba imports, else None (the numpy path then runs everywhere)."""
    if importlib.util.find_spec("numba") is None:
        return None
    try:
        import numba  # noqa: F401  (a numba that is installed but broken counts as missing)
        from . import compiled
    except ImportError:
        return None
    return compiled


def _compiled():
    """The compiled codecs module when that path is selected and numba imports, else None."""
    choice = _backend_choice or os.environ.get(BACKEND_ENV, "auto").strip().lower() or "auto"
    if choice == "numpy":
        return None
    return _compiled_module()


@dataclass(frozen=True)
class WarmedKernel:
    """One kernel made ready: ``type`` name, ``direction`` (``decode``/``encode``), ``seconds`` it took, and
    whether it was ``compiled`` now (False: loaded from numba's on-disk cache)."""

    type: str
    direction: str
    seconds: float
    compiled: bool


def _sample_rows(t) -> tuple[np.ndarray, np.ndarray | None]:
    """One row of one block of varied values, and an importance matrix where the type takes one."""
    x = np.linspace(-1.0, 1.0, t.block_size, dtype=np.float32).reshape(1, -1)
    imatrix = None if t.imatrix == "ignored" else np.linspace(0.5, 1.5, t.block_size, dtype=np.float32)
    return x, imatrix


def warm_up(types: Iterable | None = None, *, decode: bool = True, encode: bool = True) -> list[WarmedKernel]:
    """Compile (or load from the on-disk cache) the compiled decoders and encoders of ``types`` (names, ids or
    enum members; default: every type with a compiled kernel), so that their first real use costs nothing.

    Returns one :class:`WarmedKernel` per kernel, in spec order.  Raises ``ImportError`` naming the extra to
    install when numba is missing, ``ValueError`` for an unknown type.
    """
    compiled = _compiled_module()
    if compiled is None:
        raise ImportError(_FAST_MISSING)
    if types is None:
        wanted = [t for t in _spec.tensor_types() if t.is_current and t.codec]
    else:
        wanted = [type_spec(t) for t in types]
    done: list[WarmedKernel] = []
    with using("numba"), np.errstate(all="ignore"):
        for t in wanted:
            if decode and compiled_decoder(t.id):
                done.append(_timed(compiled, t, "decode", lambda: decode_blocks(t.id, bytes(t.type_size), threads=1)))
            if encode and compiled_encoder(t.id):
                x, imatrix = _sample_rows(t)
                done.append(_timed(compiled, t, "encode", lambda: encode_blocks(t.id, x, imatrix=imatrix, threads=1)))
    return done


def _timed(compiled, t, direction: str, run) -> WarmedKernel:
    """Run one kernel's first call and say what it cost."""
    label = f"{t.name} {direction}r"
    before = label in compiled.compiled_kernels()
    start = time.perf_counter()
    try:
        run()
    except ValueError:  # an IQ encoder refusing the sample as ggml aborts: the kernel is compiled all the same
        pass
    seconds = time.perf_counter() - start
    return WarmedKernel(t.name, direction, seconds, not before and label in compiled.compiled_kernels())


@functools.lru_cache(maxsize=None)
def _types_by_name() -> dict[str, _spec.TensorTypeSpec]:
    return {t.name: t for t in _spec.tensor_type_by_id().values()}


def type_spec(ggml_type: TypeLike) -> _spec.TensorTypeSpec:
    """Resolve a tensor type given as enum member, int id or name (case-insensitive)."""
    by_id = _spec.tensor_type_by_id()
    if isinstance(ggml_type, str):
        found = _types_by_name().get(ggml_type.upper())
        if found is None:
            raise ValueError(f"unknown ggml type name {ggml_type!r}")
        return found
    try:
        return by_id[int(ggml_type)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"unknown ggml type {ggml_type!r}") from None


@functools.lru_cache(maxsize=None)
def _block_dtype(type_id: int, byte_order: str) -> np.dtype:
    t = _spec.tensor_type_by_id()[type_id]
    if not t.is_current:
        raise ValueError(f"ggml type {t.name} ({t.id}) is {t.status} and has no block layout")
    fields = []
    for f in t.fields:
        dt = _spec.numpy_dtype(f.type, byte_order)
        fields.append((f.id, dt, (f.count,)) if f.count > 1 else (f.id, dt))
    dtype = np.dtype(fields)
    if dtype.itemsize != t.type_size:
        raise AssertionError(f"spec error: {t.name} fields take {dtype.itemsize} bytes, type_size is {t.type_size}")
    return dtype


def block_dtype(ggml_type: TypeLike, byte_order: str = "little") -> np.dtype:
    """The numpy structured dtype of one block of ``ggml_type`` in the given byte order (from spec/)."""
    if byte_order not in ("little", "big"):
        raise ValueError(f"byte_order must be 'little' or 'big', not {byte_order!r}")
    return _block_dtype(type_spec(ggml_type).id, byte_order)


@functools.lru_cache(maxsize=None)
def _codec_function(type_id: int, direction: str) -> Callable | None:
    t = _spec.tensor_type_by_id()[type_id]
    if not t.codec:
        return None
    name = f"{__name__}.{t.codec}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None  # codec module not written yet
        raise
    return getattr(module, f"{direction}_{t.name.lower()}", None)


def has_decoder(ggml_type: TypeLike) -> bool:
    """True when :func:`dequantize` supports ``ggml_type``."""
    return _codec_function(type_spec(ggml_type).id, "decode") is not None


def compiled_decoder(ggml_type: TypeLike) -> bool:
    """True when the compiled path (numba installed) has a decoder for ``ggml_type``."""
    compiled = _compiled_module()
    return compiled is not None and compiled.decoder(type_spec(ggml_type).id) is not None


def compiled_encoder(ggml_type: TypeLike) -> bool:
    """True when the compiled path (numba installed) has an encoder for ``ggml_type``."""
    compiled = _compiled_module()
    return compiled is not None and compiled.encoder(type_spec(ggml_type).id) is not None


def has_encoder(ggml_type: TypeLike) -> bool:
    """True when :func:`quantize` supports ``ggml_type``."""
    return _codec_function(type_spec(ggml_type).id, "encode") is not None


def swap_blocks(ggml_type: TypeLike, raw, from_order: str, to_order: str) -> bytes:
    """Re-encode whole blocks of ``ggml_type`` from one byte order to the other, field by field as the spec
    declares them (single-byte fields are left alone)."""
    src = np.frombuffer(raw, dtype=block_dtype(ggml_type, from_order))
    return src.astype(block_dtype(ggml_type, to_order)).tobytes()


@functools.lru_cache(maxsize=None)
def _writes_into(type_id: int) -> bool:
    """The decoder takes ``out=`` and fills it chunk by chunk itself."""
    decode = _codec_function(type_id, "decode")
    return decode is not None and "out" in inspect.signature(decode).parameters


_OUT_CHUNK_VALUES = 1 << 18  # values per call of a decoder without ``out``: its temporaries stay small


def _byte_view(raw):
    """``raw`` (bytes-like or a numpy array) as a flat sequence of its bytes, without copying."""
    return memoryview(raw).cast("B") if not isinstance(raw, np.ndarray) else raw.reshape(-1).view(np.uint8)


def decode_blocks(
    ggml_type: TypeLike,
    raw,
    *,
    byte_order: str = "little",
    out: np.ndarray | None = None,
    threads: int | None = None,
    stream: bool = True,
) -> np.ndarray:
    """Decode whole blocks to an array of shape ``(n_blocks, block_size)``.

    ``out``: a C-contiguous array of that shape and the decoded dtype to write into (returned).  Decoders that
    take ``out`` fill it directly; the others decode chunks of about 256K values whose results are copied there,
    so the memory needed beyond ``out`` stays small either way.  ``threads``: cores the compiled path may use
    (default: 1 for small inputs; for large ones 1 plus one per core idle at the call; the result is the same
    for any count; the numpy path uses one).  ``stream``: whether the compiled decoders that have streaming
    stores may write ``out`` with them (they do so only when it is larger than the last-level cache and in
    memory already, see ``compiled._stream``; a new array is never streamed into).
    """
    t = type_spec(ggml_type)
    decode = _codec_function(t.id, "decode")
    if decode is None:
        raise NotImplementedError(f"no decoder for ggml type {t.name}")
    buf = _byte_view(raw)
    if len(buf) % t.type_size:
        raise ValueError(f"{t.name}: {len(buf)} bytes is not a whole number of {t.type_size}-byte blocks")
    blocks = np.frombuffer(buf, dtype=block_dtype(t.id, byte_order))
    if out is not None and (out.shape != (blocks.shape[0], t.block_size) or not out.flags.c_contiguous):
        raise ValueError(f"out must be C-contiguous of shape {(blocks.shape[0], t.block_size)}, not {out.shape}")
    compiled = _compiled()
    if compiled is not None and compiled.decoder(t.id) is not None:
        return _decode_compiled(compiled, t, blocks, byte_order, out, threads, stream and out is not None)
    if out is None:
        return decode(blocks)
    if _writes_into(t.id):
        if out.dtype != np.float32:
            raise ValueError(f"{t.name} decodes to float32, out is {out.dtype}")
        return decode(blocks, out=out)
    for s, e in decode_chunks(blocks.shape[0], t.block_size, _OUT_CHUNK_VALUES):
        out[s:e] = decode(blocks[s:e])
    return out


def _decode_compiled(
    compiled,
    t: _spec.TensorTypeSpec,
    blocks: np.ndarray,
    byte_order: str,
    out: np.ndarray | None,
    threads: int | None,
    stream: bool,
) -> np.ndarray:
    """:func:`decode_blocks` on the compiled path (kernels read little-endian bytes: big-endian blocks are
    swapped chunk by chunk)."""
    n = blocks.shape[0]
    if out is None:
        out = np.empty((n, t.block_size), dtype=np.float32)
    elif out.dtype != np.float32:
        raise ValueError(f"{t.name} decodes to float32, out is {out.dtype}")
    threads = compiled.resolve_threads(threads, n * t.block_size)
    if byte_order == "little":
        compiled.decode(t.id, blocks.view(np.uint8).reshape(n, t.type_size), out, threads, stream)
        return out
    little = block_dtype(t.id, "little")
    for s, e in decode_chunks(n, t.block_size, _OUT_CHUNK_VALUES * max(1, threads)):
        x = blocks[s:e].astype(little).view(np.uint8).reshape(e - s, t.type_size)
        compiled.decode(t.id, x, out[s:e], threads, stream)
    return out


_OUTPUT_ALIGN = 64  # bytes: empty_blocks' arrays start on a cache line


def empty_blocks(n_blocks: int, block_size: int, dtype=np.float32) -> np.ndarray:
    """``np.empty((n_blocks, block_size), dtype)`` starting on a 64-byte boundary (numpy's own arrays: 16
    bytes): an ``out`` array to reuse, which the compiled decoders that have streaming stores fill 32 bytes a
    store once it is large (``compiled._stream``; 16 into other arrays)."""
    dtype = np.dtype(dtype)
    n = n_blocks * block_size
    buf = np.empty(n + _OUTPUT_ALIGN // dtype.itemsize, dtype)
    skip = (-buf.ctypes.data % _OUTPUT_ALIGN) // dtype.itemsize
    return buf[skip : skip + n].reshape(n_blocks, block_size)


def dequantize(
    ggml_type: TypeLike, raw, *, byte_order: str = "little", threads: int | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Decode raw tensor bytes of ``ggml_type`` to a flat array, bit-identical to ggml's ``dequantize_row_*``.

    The result is float32 for quantized and float types, and the type's own dtype for F64 and integer types.
    The element count follows from ``len(raw)``, the block size and the bytes per block.  ``threads``: as in
    :func:`decode_blocks`.  ``out``: an existing C-contiguous array of that dtype and element count (any shape)
    to decode into, returned as given; reusing one spares the page faults of a new array, which cost a large
    tensor's decode about as much as the decoding itself.
    """
    if out is None:
        return decode_blocks(ggml_type, raw, byte_order=byte_order, threads=threads).reshape(-1)
    buf = _byte_view(raw)
    decode_blocks(ggml_type, buf, byte_order=byte_order, threads=threads, out=blocks_view(ggml_type, out, len(buf)))
    return out


@functools.lru_cache(maxsize=None)
def _decoded_dtype(type_id: int) -> np.dtype:
    return decode_blocks(type_id, bytes(type_spec(type_id).type_size), threads=1).dtype


def decoded_dtype(ggml_type: TypeLike) -> np.dtype:
    """The dtype ``ggml_type`` decodes to: float32, or the type's own for F64 and the integer types."""
    return _decoded_dtype(type_spec(ggml_type).id)


def blocks_view(ggml_type: TypeLike, out: np.ndarray, n_bytes: int) -> np.ndarray:
    """``out`` seen as the ``(n_blocks, block_size)`` array that :func:`decode_blocks` writes ``n_bytes`` of
    ``ggml_type`` into; ``ValueError`` unless it is C-contiguous, writeable, of the decoded dtype and of that
    many elements."""
    t = type_spec(ggml_type)
    n_blocks = n_bytes // t.type_size
    dtype = decoded_dtype(t.id)
    if not isinstance(out, np.ndarray) or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writeable C-contiguous numpy array")
    if out.dtype != dtype or out.size != n_blocks * t.block_size:
        raise ValueError(
            f"{t.name}: out must hold {n_blocks * t.block_size} values of {dtype}, not {out.size} of {out.dtype}"
        )
    return out.reshape(n_blocks, t.block_size)


def quantize(
    ggml_type: TypeLike, values, *, imatrix=None, byte_order: str = "little", threads: int | None = None
) -> bytes:
    """Encode float values into ``ggml_type`` blocks, bit-identical to ggml's ``ggml_quantize_chunk``.

    ``values`` is float32 of shape ``(rows, n_per_row)`` or 1-D (one row); ``imatrix`` holds ``n_per_row``
    importance weights or is ``None``.  Whether the type needs, uses or ignores it is the spec's ``imatrix``
    fact; a type that needs one raises ``ValueError`` without it (where ggml asserts).  Raises
    ``NotImplementedError`` for types without an encoder.  ``threads``: cores a compiled encoder may use
    (default: 1 for small inputs; for large ones 1 plus one per core idle at the call; the bytes are the same
    for any count).
    """
    return encode_blocks(ggml_type, values, imatrix=imatrix, byte_order=byte_order, threads=threads).tobytes()


def encode_blocks(
    ggml_type: TypeLike, values, *, imatrix=None, byte_order: str = "little", threads: int | None = None
) -> np.ndarray:
    """:func:`quantize` returning the blocks as a 1-D structured array of :func:`block_dtype` (no copy into
    ``bytes``; write it with ``tofile`` or into a buffer); ``threads`` as there."""
    t = type_spec(ggml_type)
    encode = _codec_function(t.id, "encode")
    if encode is None:
        raise NotImplementedError(f"no encoder for ggml type {t.name}")
    rows = np.asarray(values)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    if rows.ndim != 2:
        raise ValueError("values must be 1-D or 2-D (rows, n_per_row)")
    if t.kind == "quantized" or (t.kind == "float" and t.type_size < 8):
        rows = np.ascontiguousarray(rows, dtype=np.float32)
    elif t.kind == "float":  # F64 keeps double precision
        rows = np.ascontiguousarray(rows, dtype=np.float64)
    if rows.shape[1] % t.block_size:
        raise ValueError(f"{t.name}: row length {rows.shape[1]} is not a multiple of the block size {t.block_size}")
    if imatrix is not None:
        imatrix = np.ascontiguousarray(imatrix, dtype=np.float32).reshape(-1)
        if imatrix.shape[0] != rows.shape[1]:
            raise ValueError(f"imatrix has {imatrix.shape[0]} weights, rows have {rows.shape[1]} values")
        if t.imatrix == "ignored":
            imatrix = None
    elif t.imatrix == "required":
        raise ValueError(
            f"{t.name} requires an importance matrix (ggml_quantize_requires_imatrix: "
            "ggml_quantize_chunk asserts imatrix != NULL): pass imatrix="
        )
    compiled = _compiled()
    if compiled is not None and compiled.encoder(t.id) is not None:
        blocks = np.zeros(rows.size // t.block_size, dtype=block_dtype(t.id, "little"))
        compiled.encode(t.id, rows, imatrix, blocks.view(np.uint8).reshape(-1, t.type_size), threads)
    else:
        blocks = encode(rows, imatrix)
    if byte_order != "little":
        blocks = blocks.astype(block_dtype(t.id, byte_order))
    return blocks
