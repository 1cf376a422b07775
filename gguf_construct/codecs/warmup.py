"""Compiling the compiled codecs ahead of time (``codecs.warm_up``, ``gguf-construct warm-up``).

A compiled kernel costs its compile time (0.3 s to over 10 s per type on a slow machine) on its first use,
once per machine: numba caches it on disk.  A service or a CI job pays that before its first request instead by
warming up the types it will use.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from . import _compiled_module, compiled_decoder, compiled_encoder, decode_blocks, encode_blocks, type_spec, using
from .. import spec as _spec

_MISSING = "the compiled codecs need numba: pip install \"gguf-construct[fast]\""


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
        raise ImportError(_MISSING)
    if types is None:
        wanted = [t for t in _spec.tensor_types() if t.is_current and t.codec]
    else:
        wanted = [type_spec(t) for t in types]
    done: list[WarmedKernel] = []
    with using("numba"), np.errstate(all="ignore"):
        for t in wanted:
            if decode and compiled_decoder(t.id):
                done.append(_timed(compiled, t, "decode", lambda: decode_blocks(t.id, bytes(t.type_size),
                                                                                 threads=1)))
            if encode and compiled_encoder(t.id):
                x, imatrix = _sample_rows(t)
                done.append(_timed(compiled, t, "encode", lambda: encode_blocks(t.id, x, imatrix=imatrix,
                                                                                 threads=1)))
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


def _cmd_warm_up(args) -> int:
    from .compiled._jit import cache_folder  # only after warm_up found numba

    try:
        done = warm_up(args.types or None, decode=not args.encode_only, encode=not args.decode_only)
    except (ImportError, ValueError) as exc:
        print(f"gguf-construct: {exc}", file=sys.stderr)
        return 2
    for k in done:
        if not args.quiet:
            print(f"{k.type:8s} {k.direction:6s} {k.seconds:7.2f} s  {'compiled' if k.compiled else 'cached'}")
    total = sum(k.seconds for k in done)
    n_compiled = sum(k.compiled for k in done)
    where = cache_folder() or "numba's default cache folder (next to the package, or NUMBA_CACHE_DIR)"
    print(f"{len(done)} kernels ready in {total:.1f} s ({n_compiled} compiled, {len(done) - n_compiled} from the "
          f"cache); cache: {where}")
    return 0


def add_cli(subparsers) -> None:
    """Register the ``warm-up`` sub-command."""
    p = subparsers.add_parser(
        "warm-up", help="compile the compiled codecs ahead of time (needs the [fast] extra)",
        description="Compile the numba kernels of the tensor codecs now, so that a service or a CI job does not "
                    "pay their compile time (up to seconds per type) on first use; they are cached on disk, once "
                    "per machine: next to the package when it is writable, else in ~/.cache/gguf-construct "
                    "($XDG_CACHE_HOME, or $GGUF_CONSTRUCT_CACHE_DIR). Prints each kernel's time and whether it "
                    "was compiled or loaded from the cache.")
    p.add_argument("types", nargs="*", help="tensor type names (default: every type with a compiled kernel)")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--decode-only", action="store_true", help="only the decoders")
    direction.add_argument("--encode-only", action="store_true", help="only the encoders")
    p.add_argument("--quiet", action="store_true", help="only the summary line")
    p.set_defaults(func=_cmd_warm_up)
