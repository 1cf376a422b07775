"""Streaming (non-temporal) stores for decoders whose output is larger than the caches.

A normal store to a line that is not in the cache first reads that line from memory, so a decoder writing
hundreds of MiB moves each output byte twice; a non-temporal store writes whole lines without the read and
without keeping them in the cache.  On this project's 2-core EPYC machine, decoders with outputs past a few
MiB are bound by that write traffic, ggml's C decoders too: filling 128 MiB took 11.3 ms with normal stores
and 6.9 ms with streaming ones, and with them the Q8_0, Q4_K, Q5_K and BF16 kernels went from 0.9-1.1x to
1.3-1.7x the speed of ggml's C at 4-16 MiB of blocks (``bench_codecs --kernels``, column ``stream``).  Outputs
that fit in the caches are written as fast or faster by normal stores, which also leave them in the cache for
whatever reads them next; the decoders switch at ``STREAM_MIN_BYTES`` of output (``.._common``, asked by
``compiled.decode``; measured here:
streaming was slower at 2-4 MiB, faster from 7 MiB on).

Kernels that can stream take a last argument ``stream`` (default False).  They then decode each block into a
scratch row, which stays in L1, and copy it out with :func:`stream_store` (8 float32 per store, so the output
must start on a 32-byte boundary: :func:`streams` checks; the outputs this package allocates that large do,
``codecs.empty_blocks``), and end with :func:`store_fence`, so that the stores are visible to any thread
before the kernel returns.  The bytes are those of the normal stores.  Each has the loop of each store kind on
its own: one loop choosing its output row per block made LLVM's code for Q4_K 0.7x as fast.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._jit import helper

STREAM_ALIGN = 32  # bytes: a vector of 8 float32, the width of one streaming store


@intrinsic
def _store8_nontemporal(typingctx, dst, at, src, start):
    """``dst[at:at+8] = src[start:start+8]`` as one non-temporal vector store (``dst[at]`` 32-byte aligned)."""
    sig = types.void(dst, types.intp, src, types.intp)

    def codegen(context, builder, signature, args):
        dst_arr = context.make_array(signature.args[0])(context, builder, args[0])
        src_arr = context.make_array(signature.args[2])(context, builder, args[2])
        vector = ir.VectorType(ir.FloatType(), 8)
        source = builder.bitcast(builder.gep(src_arr.data, [args[3]]), vector.as_pointer())
        target = builder.bitcast(builder.gep(dst_arr.data, [args[1]]), vector.as_pointer())
        store = builder.store(builder.load(source, align=4), target, align=STREAM_ALIGN)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _fence(typingctx):
    """A sequentially consistent fence (x86: ``mfence``, which also orders the non-temporal stores)."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@helper
def streams(y, stream):
    """``stream``, unless ``y`` does not start on a 32-byte boundary (a streaming store there would fault)."""
    return stream and y.ctypes.data % STREAM_ALIGN == 0


@helper
def stream_store(dst, row):
    """``dst[:] = row`` with streaming stores (``len(row)`` a multiple of 8, ``dst`` 32-byte aligned)."""
    for k in range(0, row.shape[0], 8):
        _store8_nontemporal(dst, k, row, k)


@helper
def store_fence():
    """Make the streaming stores before it visible before any later store or load."""
    _fence()
