"""Streaming (non-temporal) stores for decoders whose output is larger than the caches.

A normal store to a line that is not in the cache first reads that line from memory, so a decoder writing
hundreds of MiB moves each output byte twice; a non-temporal store writes whole lines without the read and
without keeping them in the cache.  On this project's 2-core EPYC machine, decoders with outputs past a few
MiB are bound by that write traffic, ggml's C decoders too: filling 128 MiB took 11.3 ms with normal stores
and 6.9 ms with streaming ones, and with them the Q8_0, Q4_K, Q5_K and BF16 kernels went from 0.9-1.1x to
1.3-1.8x the speed of ggml's C at 4-16 MiB of blocks (``bench_codecs --kernels``, column ``stream``).

``compiled.decode`` streams an output only where ``codecs.decode_blocks`` was given it (``out=``, and not
``stream=False``): a new array's pages fault on their first write and the kernel zeroes each one, which leaves
its lines dirty in the cache, where writing over them is cheaper than evicting them to stream past; memory
the allocator recycles may hold such lines too (measured into new 60 MiB arrays: 0.98x ggml's C streaming,
1.18x with normal stores).  And then when both hold:

* it is at least :data:`STREAM_MIN_BYTES`, the size of the machine's last-level cache.  Outputs that fit in
  the caches are written as fast or faster by normal stores, which also leave them in the cache for whatever
  reads them next.  Measured here (32 MiB L3) decoding into a reused array and then summing it, streaming
  against normal stores: 0.74-0.93x at 8 MiB of output, 0.92-1.12x at 16, 1.09-1.17x at 32, 1.05-1.37x at
  64-128 MiB;
* its pages are in memory already (:func:`resident`): not an ``out`` array made but not yet written.

Kernels that can stream take a last argument ``stream`` (default False).  They then decode each block into a
scratch row, which stays in L1, and copy it out with :func:`stream_store`: 32 bytes a store where the output
row starts on a 32-byte boundary (``codecs.empty_blocks`` makes such arrays), else 16 (numpy's arrays
are 16-byte aligned; :func:`streams` falls back to normal stores for any other address, where a streaming
store would fault).  They end with :func:`store_fence`, so that the stores are visible to any thread before
the kernel returns.  The bytes are those of the normal stores.  Each kernel has its loop of each store kind on
its own: one loop choosing its output row per block made LLVM's code for Q4_K 0.7x as fast.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._jit import helper


def last_level_cache_bytes(cpu_caches: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The size of the largest cache of this machine's first CPU (Linux's sysfs), or 32 MiB where the system
    does not say."""
    sizes = []
    for index in glob.glob(os.path.join(cpu_caches, "index*")):
        try:
            with open(os.path.join(index, "size")) as fh:
                text = fh.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=32 << 20)


STREAM_MIN_BYTES = max(4 << 20, last_level_cache_bytes())  # out arrays from this size on may be streamed

WIDE, NARROW = 8, 4  # float32 per streaming store: 32 bytes (AVX) where the output allows, else 16 (SSE)


def _nontemporal_copy(lanes: int):
    """The body of an intrinsic ``(dst, at, src, start)``: ``dst[at:at+lanes] = src[start:start+lanes]`` as
    one non-temporal store of a vector of ``lanes`` float32 (``dst[at]`` aligned to the vector's size)."""

    def typer(typingctx, dst, at, src, start):
        def codegen(context, builder, signature, args):
            dst_arr = context.make_array(signature.args[0])(context, builder, args[0])
            src_arr = context.make_array(signature.args[2])(context, builder, args[2])
            vector = ir.VectorType(ir.FloatType(), lanes)
            source = builder.bitcast(builder.gep(src_arr.data, [args[3]]), vector.as_pointer())
            target = builder.bitcast(builder.gep(dst_arr.data, [args[1]]), vector.as_pointer())
            store = builder.store(builder.load(source, align=4), target, align=4 * lanes)
            store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
            return context.get_dummy_value()

        return types.void(dst, types.intp, src, types.intp), codegen

    typer.__name__ = f"_store{lanes}_nontemporal"
    return typer


_store_wide = intrinsic(_nontemporal_copy(WIDE))
_store_narrow = intrinsic(_nontemporal_copy(NARROW))


@intrinsic
def _fence(typingctx):
    """A sequentially consistent fence (x86: ``mfence``, which also orders the non-temporal stores)."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@helper
def streams(y, stream):
    """``stream``, unless ``y`` does not start on a 16-byte boundary (numpy's arrays do; a streaming store to
    a misaligned address would fault)."""
    return stream and y.ctypes.data % (4 * NARROW) == 0


@helper
def stream_store(dst, row):
    """``dst[:] = row`` with streaming stores: 32 bytes each where ``dst`` starts on a 32-byte boundary, else
    16 (``len(row)`` a multiple of 8, ``dst`` on a 16-byte boundary)."""
    if dst.ctypes.data % (4 * WIDE) == 0:
        for k in range(0, row.shape[0], WIDE):
            _store_wide(dst, k, row, k)
    else:
        for k in range(0, row.shape[0], NARROW):
            _store_narrow(dst, k, row, k)


@helper
def store_fence():
    """Make the streaming stores before it visible before any later store or load."""
    _fence()


@functools.lru_cache(maxsize=None)
def _mincore():
    """``(mincore, page size)`` from the C library, or None where there is none (not a POSIX system)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).mincore
        page = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn, page


def resident(address: int, nbytes: int) -> bool:
    """Whether the pages at the start, middle and end of ``nbytes`` from ``address`` are in memory (``mincore``)."""
    found = _mincore()
    if found is None or nbytes <= 0:
        return False
    mincore, page = found
    flag = ctypes.c_ubyte(0)
    for at in (address, address + nbytes // 2, address + nbytes - 1):
        start = at - at % page
        if mincore(start, page, ctypes.byref(flag)) != 0 or not flag.value & 1:
            return False
    return True
