"""Codec throughput: gguf_construct's decoders/encoders against gguf-py's ``gguf.quants``, same data, same run.

Usage: python benchmarks/bench_codecs.py [TYPES...] [--mib 16] [--repeat 3] [--budget 1.5] [--cpu]
                                        [--ggml-lib PATH/libggml-base.so] [--decode-only] [--cold-jit]
                                        [--scaling MIB] [--threads-test MIB] [--compile-cost]

For every tensor type with a decoder or encoder (or only the TYPES named), prints MiB/s of *quantized* data:

* decode: ``codecs.dequantize`` of ``--mib`` MiB of blocks (a quantized sample of normal random rows, tiled;
  random bytes for types without an encoder), best of ``--repeat`` runs;
* encode: ``codecs.encode_blocks`` (``codecs.quantize`` without its final copy into ``bytes``: gguf-py also
  returns an array; for F32 that array is a view of the input, so its figure is not a throughput) of normal
  random rows (4096 per row; integer-valued for the integer types) producing up
  to ``--mib`` MiB, scaled down so that one run takes about ``--budget`` seconds (slow search-based
  encoders); with an importance matrix for the types ggml requires one for;
* the same calls of ``gguf.quants.dequantize`` / ``gguf.quants.quantize`` where gguf-py has the type (and the
  same block size; not F32, where gguf-py returns a view), and our/their ratio, with the geometric mean of the
  ratios at the end.  The contenders of one measurement run in turns (ours, gguf-py, C, C-pre, ours, ...) and
  the best time of each is kept, so a machine whose speed drifts affects them alike; rounds stop once each
  has used about a second;
* with ``--ggml-lib``, for encoders: ggml's ``ggml_quantize_chunk`` of the same rows (``C``; the bytes are
  compared with ours);
* with ``--ggml-lib``: ggml's own C decode of the same blocks in the same run, loaded with ctypes from the
  given (user-built) ``libggml-base`` -- ``ggml_get_type_traits(type)->to_float`` on the whole buffer, or the
  exported ``dequantize_row_<name>`` when the traits have none -- as ``C`` (into a freshly allocated output
  array, as ``codecs.dequantize`` must produce one) and ``C-pre`` (into one output array reused by every run:
  no page faults, the speed of ggml decoding into an existing tensor), with the ratios ``ours/C`` and
  ``ours/C-pre`` and their geometric means; and ``fill/C``: a fresh output array of the same size merely filled
  with a constant, against C -- the most any decoder that returns a new array can lead C by, since first writes
  to fresh pages (page faults, zeroing) cost the same whoever writes them.  Ratios from the same run are what to
  compare on a loaded machine.

Single-threaded numpy; ``--cpu`` times process CPU time instead of wall time (steadier on a loaded machine;
the default with ``--ggml-lib``).  ``--decode-only`` skips the encoders.

Both codec paths: "ours" is the path in use (the compiled one when numba is installed, see
``codecs.backend()``); with numba installed each decode line also shows the numpy path (``numpy``, and
``ours/np``), the compiled decode into one reused output array (``pre``, to set against ``C-pre``: ``pre/C-pre``),
and ``jit s``, the first call's time (compile, or load from numba's cache; ``--cold-jit`` uses an empty cache
directory so that it is the compile time); encode lines show ``numpy``, ``ours/np`` and ``jit s`` likewise.  All compiled figures are single-threaded.  ``--scaling MIB``
instead times ``Tensor.numpy()`` of a Q4_K tensor of MIB MiB (written to a temporary file) with 1 thread and
with every core, and prints the speed-up.  ``--threads-test MIB`` times decoders (MIB and MIB/8 of blocks) and
encoders with one thread, with every core and with the default count, alone and with a competing CPU-bound
process, in turns (at least 5 runs each), and prints medians, the ratios to one thread and the counts the
default chose.
``--compile-cost [TYPES...]`` prints each kernel's first-use cost: compiled into an empty cache, then loaded
from it, each in a fresh process.  ``--kernels KIB[,KIB...] --ggml-lib PATH`` times only the compiled decode
kernels against ggml's C decode functions, both called directly on KIB KiB of blocks into outputs they reuse,
in turns (no Python wrapper, no page faults): the speed of the decoding itself, in the caches (small KIB) and
from memory (large KIB), where the write bandwidth bounds both; ``fill/C`` is a third contender that only fills
an output of the same size with a constant (normal stores), against C: the most a decoder with normal stores can
lead C by at that size; the kernels that have streaming stores are also timed with them (``stream``), and
``used`` says which store ``decode_blocks`` takes for a reused ``out=`` array of that size.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gguf_construct import codecs
from gguf_construct.format import spec  # noqa: E402

try:
    import gguf.quants as gq
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
except ImportError:  # pragma: no cover - gguf-py is optional
    gq = None

ROW = 4096
MIB = 1 << 20


def timer(cpu: bool):
    return time.process_time if cpu else time.perf_counter


def best(fn, repeat: int, clock, budget: float = 1.0) -> float:
    """Fastest of up to ``repeat`` timed calls; stops repeating once ``budget`` seconds are spent."""
    return race({"fn": fn}, repeat, clock, budget)["fn"]


def race(fns: dict, repeat: int, clock, budget: float = 1.0) -> dict:
    """Fastest time of each of ``fns`` over up to ``repeat`` rounds that call every function once in turn, so
    that a machine slowing down or speeding up affects all of them alike; stops after the round in which
    ``budget`` seconds per function have been spent."""
    out = {k: math.inf for k in fns}
    spent = 0.0
    for _ in range(repeat):
        for k, fn in fns.items():
            t = clock()
            fn()
            dt = clock() - t
            out[k] = min(out[k], dt)
            spent += dt
        if spent > budget * len(fns):
            break
    return {k: max(v, 1e-9) for k, v in out.items()}


def gguf_type(t):
    """gguf-py's enum member for our type when it has the same block geometry, else None."""
    if gq is None:
        return None
    try:
        qt = GGMLQuantizationType[t.name]
    except KeyError:
        return None
    if tuple(GGML_QUANT_SIZES.get(qt, ())) != (t.block_size, t.type_size):
        return None
    if t.name == "F32":  # gguf-py returns a view: nothing to compare against
        return None
    return qt


def rows_for(t, n_bytes: int) -> int:
    """Number of ROW-wide rows whose encoding takes about n_bytes (at least one)."""
    row_bytes = ROW // t.block_size * t.type_size
    return max(1, n_bytes // row_bytes)


def make_rows(n_rows: int, seed: int = 0, t=None) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n_rows, ROW)).astype(np.float32)
    if t is not None and t.kind == "integer":  # integer types encode integer values only
        x = np.clip(np.rint(x * np.float32(30)), -120, 120)
    return x


def sample_blocks(t, n_bytes: int, imatrix) -> bytes:
    """About n_bytes of blocks: a small encoded sample tiled, or random bytes when there is no encoder."""
    row_bytes = ROW // t.block_size * t.type_size
    n_rows = max(1, n_bytes // row_bytes)
    if codecs.has_encoder(t.id):
        sample_rows = min(n_rows, 16)
        with np.errstate(all="ignore"):
            sample = np.frombuffer(codecs.quantize(t.id, make_rows(sample_rows, 1, t), imatrix=imatrix), np.uint8)
        reps = -(-n_rows // sample_rows)
        return np.tile(sample, reps)[: n_rows * row_bytes].tobytes()
    return np.random.default_rng(2).integers(0, 256, n_rows * row_bytes, dtype=np.uint8).tobytes()


class GgmlDecoder:
    """ggml's C decoders from a user-supplied ``libggml-base`` shared library, through ctypes."""

    class _Traits(ctypes.Structure):  # the leading fields of ``struct ggml_type_traits`` (ggml.h)
        _fields_ = [
            ("type_name", ctypes.c_char_p),
            ("blck_size", ctypes.c_int64),
            ("blck_size_interleave", ctypes.c_int64),
            ("type_size", ctypes.c_size_t),
            ("is_quantized", ctypes.c_bool),
            ("to_float", ctypes.c_void_p),
            ("from_float_ref", ctypes.c_void_p),
        ]

    # void (*ggml_to_float_t)(const void * x, float * y, int64_t k)
    _ToFloat = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        self.lib.ggml_get_type_traits.restype = ctypes.POINTER(self._Traits)
        self.lib.ggml_get_type_traits.argtypes = [ctypes.c_int]

    def to_float(self, t):
        """The C function decoding ``t``'s blocks, or None when ggml has none (F32, Q8_1, integers)."""
        tr = self.lib.ggml_get_type_traits(t.id).contents
        if (tr.blck_size, tr.type_size) != (t.block_size, t.type_size):
            raise RuntimeError(f"{t.name}: the library's block geometry differs from the spec")
        ptr = tr.to_float
        if not ptr:
            try:
                sym = getattr(self.lib, f"dequantize_row_{tr.type_name.decode()}")
                ptr = ctypes.cast(sym, ctypes.c_void_p).value
            except AttributeError:
                return None
        return self._ToFloat(ptr)

    def quantizer(self, t):
        """A callable ``(x, imatrix) -> bytes`` running ``ggml_quantize_chunk`` for ``t``, or None."""
        lib = self.lib
        lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        lib.ggml_quantize_chunk.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.c_int64,
            ctypes.c_int64,
            ctypes.c_void_p,
        ]
        if t.kind != "quantized" or t.name in ("Q8_1", "Q8_K"):  # not offered by ggml_quantize_chunk
            return None
        lib.ggml_quantize_init(t.id)

        def run(x: np.ndarray, imatrix) -> np.ndarray:
            out = np.empty(x.shape[0] * (x.shape[1] // t.block_size) * t.type_size, np.uint8)
            lib.ggml_quantize_chunk(
                t.id,
                x.ctypes.data,
                out.ctypes.data,
                0,
                x.shape[0],
                x.shape[1],
                None if imatrix is None else imatrix.ctypes.data,
            )
            return out

        return run

    def decoders(self, t, raw: bytes):
        """(fresh, reused): callables decoding ``raw`` into a new output array / into one reused array."""
        fn = self.to_float(t)
        if fn is None:
            return None
        src = np.frombuffer(raw, np.uint8)
        k = src.size // t.type_size * t.block_size
        kept = np.empty(k, np.float32)

        def fresh():
            out = np.empty(k, np.float32)
            fn(src.ctypes.data, out.ctypes.data, k)
            return out

        def reused():
            fn(src.ctypes.data, kept.ctypes.data, k)
            return kept

        return fresh, reused


def requires_imatrix(t) -> bool:
    return t.name in ("IQ2_XXS", "IQ2_XS", "IQ1_S")


def bench_type(t, args, clock, ggml=None) -> list[tuple]:
    """[(direction, ours, gguf-py, C, C-pre, numpy path, ours into a reused output, a fresh output array filled
    with a constant (all MiB/s), first call s)]
    (nan where there is no comparison)"""
    results = []
    qt = gguf_type(t)
    im = np.random.default_rng(3).random(ROW).astype(np.float32) + np.float32(0.1) if requires_imatrix(t) else None
    n_bytes = int(args.mib * MIB)
    row_bytes = ROW // t.block_size * t.type_size
    if codecs.has_decoder(t.id):
        raw = sample_blocks(t, n_bytes, im)
        compiled = codecs.backend() == "numba" and codecs.compiled_decoder(t.id)
        fns = {"ours": lambda: codecs.dequantize(t.id, raw, threads=1)}
        jit = math.nan
        if compiled:
            start = time.perf_counter()
            codecs.decode_blocks(t.id, raw[: t.type_size], threads=1)
            jit = time.perf_counter() - start
            kept = np.empty((len(raw) // t.type_size, t.block_size), np.float32)

            def numpy_path():
                with codecs.using("numpy"):
                    return codecs.dequantize(t.id, raw)

            fns["numpy"] = numpy_path
            fns["pre"] = lambda: codecs.decode_blocks(t.id, raw, out=kept, threads=1)
        if qt is not None:
            arr = np.frombuffer(raw, np.uint8).reshape(-1, row_bytes)
            try:
                gq.dequantize(arr[:1], qt)
                fns["gguf-py"] = lambda: gq.dequantize(arr, qt)
            except (NotImplementedError, ValueError):
                pass
        c_fns = ggml.decoders(t, raw) if ggml is not None else None
        if c_fns is not None:
            same = np.array_equal(codecs.dequantize(t.id, raw).view(np.uint32), c_fns[0]().view(np.uint32))
            if not same:
                print(f"{t.name}: decoded values differ from ggml's", file=sys.stderr)
            fns["C"], fns["C-pre"] = c_fns
            n_out = len(raw) // t.type_size * t.block_size
            fns["fill"] = lambda: np.empty(n_out, np.float32).fill(1.0)
        times = race(fns, args.repeat, clock)
        rate = len(raw) / MIB
        results.append(
            ("decode",)
            + tuple(rate / times.get(k, math.nan) for k in ("ours", "gguf-py", "C", "C-pre", "numpy", "pre", "fill"))
            + (jit,)
        )
    if codecs.has_encoder(t.id) and not args.decode_only:
        compiled = codecs.backend() == "numba" and codecs.compiled_encoder(t.id)
        c_quantize = ggml.quantizer(t) if ggml is not None else None
        probe = make_rows(1, 0, t)  # one row to estimate the speed (of the slowest contender)
        jit = math.nan
        with np.errstate(all="ignore"):
            if compiled:
                start = time.perf_counter()
                codecs.quantize(t.id, probe, imatrix=im, threads=1)
                jit = time.perf_counter() - start
            dt = best(lambda: codecs.quantize(t.id, probe, imatrix=im, threads=1), 1, clock)
            if compiled:
                with codecs.using("numpy"):
                    dt = max(dt, best(lambda: codecs.quantize(t.id, probe, imatrix=im), 1, clock))
        rate = probe.shape[0] * row_bytes / dt
        n_rows = max(1, min(rows_for(t, n_bytes), int(rate * args.budget / row_bytes)))
        x = make_rows(n_rows, 0, t)
        out_bytes = n_rows * row_bytes
        reps = args.repeat if rate * args.budget > 2 * out_bytes else 1
        fns = {"ours": lambda: codecs.encode_blocks(t.id, x, imatrix=im, threads=1)}
        if compiled:

            def numpy_path():
                with codecs.using("numpy"):
                    return codecs.encode_blocks(t.id, x, imatrix=im)

            fns["numpy"] = numpy_path
        if c_quantize is not None:
            with np.errstate(all="ignore"):
                if c_quantize(x, im).tobytes() != codecs.quantize(t.id, x, imatrix=im):
                    print(f"{t.name}: encoded bytes differ from ggml's", file=sys.stderr)
            fns["C"] = lambda: c_quantize(x, im)
        if qt is not None and t.kind != "integer":
            try:
                gq.quantize(x[:1], qt)
                fns["gguf-py"] = lambda: gq.quantize(x, qt)
            except (NotImplementedError, ValueError, gq.QuantError):
                pass
        with np.errstate(all="ignore"):
            times = race(fns, reps, clock, args.budget)
        rate = out_bytes / MIB
        results.append(
            (
                "encode",
                rate / times["ours"],
                rate / times.get("gguf-py", math.nan),
                rate / times.get("C", math.nan),
                math.nan,
                rate / times.get("numpy", math.nan),
                math.nan,
                math.nan,
                jit,
            )
        )
    return results


def scaling(mib: float, repeat: int) -> int:
    """Time ``Tensor.numpy()`` of a Q4_K tensor of about ``mib`` MiB with 1 thread and with every core."""
    from gguf_construct import GGUFFile, load
    from gguf_construct.codecs.compiled import _run

    t = codecs.type_spec("Q4_K")
    n_rows = max(1, int(mib * MIB) // (ROW // t.block_size * t.type_size))
    sample = np.frombuffer(codecs.quantize(t.id, make_rows(16, 1)), np.uint8)
    raw = np.tile(sample, -(-n_rows // 16))[: n_rows * ROW // t.block_size * t.type_size]
    threads = (1, _run.cpu_count())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scaling.gguf")
        f = GGUFFile.new(version=3, byte_order="little")
        f.add_tensor("w", memoryview(raw), "Q4_K", shape=(ROW, n_rows))
        f.save(path)
        tensor = load(path).tensors[0]
        tensor.numpy()  # warm-up: the first read of the mapped file is slower
        times = race({k: (lambda k=k: tensor.numpy(threads=k)) for k in threads}, repeat, time.perf_counter)
    size = raw.size / MIB
    one, many = times[1], times[_run.cpu_count()]
    print(
        f"Q4_K Tensor.numpy() of {size:.0f} MiB: 1 thread {size / one:.0f} MiB/s, "
        f"{_run.cpu_count()} threads {size / many:.0f} MiB/s, speed-up {one / many:.2f}x"
    )
    return 0


def _median(xs: list) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def threads_test(mib: float, repeat: int) -> int:
    """One thread, every core forced, and the default thread count, each case alone and with a competing
    CPU-bound process (a busy loop in another Python process), run in turns; prints medians (wall time), the
    ratios to one thread, and which counts the default chose."""
    from gguf_construct.codecs.compiled import _run

    repeat = max(repeat, 5)  # beside the rival a run swings by a third: a median of 3 gave 0.67 for one code path
    cores = _run.cpu_count()
    cases = []  # (label, MiB of quantized data, values, callable taking threads, default's threshold)
    for name, size in (("Q4_K", mib), ("Q8_0", mib), ("BF16", mib), ("Q4_K", mib / 8)):
        t = codecs.type_spec(name)
        raw = sample_blocks(t, int(size * MIB), None)
        cases.append(
            (
                f"{name} decode {len(raw) / MIB:.0f} MiB",
                len(raw) / MIB,
                len(raw) // t.type_size * t.block_size,
                lambda k, t=t, raw=raw: codecs.dequantize(t.id, raw, threads=k),
                _run.PARALLEL_MIN_VALUES,
            )
        )
    for name, n_rows in (("Q4_K", 64), ("Q8_0", 1024)):
        t = codecs.type_spec(name)
        x = make_rows(n_rows, 0, t)
        cases.append(
            (
                f"{name} encode {n_rows}x{ROW}",
                n_rows * ROW // t.block_size * t.type_size / MIB,
                x.size,
                lambda k, t=t, x=x: codecs.encode_blocks(t.id, x, threads=k),
                _run.ENCODE_PARALLEL_MIN_VALUES,
            )
        )
    for case in cases:  # compile / load every kernel before timing
        case[3](1)
    print(
        f"threads on {cores} cores; load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}; median of "
        f"{repeat} runs in turns (wall time); MiB/s of quantized data"
    )
    print(
        f"{'case':22s} {'rival':>5s} {'1 thread':>9s} {f'{cores} threads':>10s} {'default':>9s} "
        f"{f'{cores}t/1':>6s} {'dflt/1':>6s}  default chose"
    )
    worst = math.inf
    for competing in (False, True):
        rival = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if competing else None
        try:
            time.sleep(0.5)
            for label, size, n_values, fn, parallel_min in cases:
                runs: dict = {1: [], cores: [], None: []}
                chosen: list = []
                for _ in range(repeat):
                    for k in runs:
                        if k is None:
                            chosen.append(_run.resolve_threads(None, n_values, parallel_min))
                        start = time.perf_counter()
                        fn(k)
                        runs[k].append(time.perf_counter() - start)
                one, many, default = (_median(runs[k]) for k in (1, cores, None))
                worst = min(worst, one / default)
                counts = ",".join(f"{c}x{chosen.count(c)}" for c in sorted(set(chosen)))
                print(
                    f"{label:22s} {'yes' if competing else 'no':>5s} {size / one:9.0f} {size / many:10.0f} "
                    f"{size / default:9.0f} {one / many:6.2f} {one / default:6.2f}  {counts}",
                    flush=True,
                )
        finally:
            if rival is not None:
                rival.kill()
                rival.wait()
    print(f"worst default/1: {worst:.2f}; load average after {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


_WARM = (
    "import json, sys\n"
    "from gguf_construct import codecs\n"
    "codecs._compiled_module()\n"  # numba's import, not any one type's cost
    "print(json.dumps([[k.type, k.direction, k.seconds, k.compiled] for k in "
    "codecs.warm_up(sys.argv[1:] or None)]))\n"
)


def compile_cost(names: list[str]) -> int:
    """First-use cost per type and direction: ``codecs.warm_up`` in a fresh process with an empty kernel cache
    (compile), then in another fresh process with that cache (load)."""
    root = os.path.join(os.path.dirname(__file__), "..")
    with tempfile.TemporaryDirectory(prefix="bench-kernels-") as cache:
        env = dict(os.environ, GGUF_CONSTRUCT_CACHE_DIR=cache, PYTHONPATH=root)
        runs = []
        for _ in range(2):
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-c", _WARM] + names, env=env, capture_output=True, text=True, check=True
            )
            runs.append((json.loads(out.stdout.splitlines()[-1]), time.perf_counter() - start))
    (cold, cold_total), (warm, warm_total) = runs
    print(
        f"first use of each kernel (load average {os.getloadavg()[0]:.1f}): compile = empty cache, "
        f"cached = loaded from the cache numba wrote; the first line includes LLVM's start-up"
    )
    print(f"{'type':8s} {'dir':6s} {'compile s':>9s} {'cached s':>9s}")
    for (name, direction, seconds, compiled), (_, _, cached, again) in zip(cold, warm):
        flag = "" if compiled and not again else "  (unexpected: " + ("cached" if not compiled else "recompiled") + ")"
        print(f"{name:8s} {direction:6s} {seconds:9.2f} {cached:9.2f}{flag}")
    print(
        f"total: {sum(k[2] for k in cold):.1f} s compiling, {sum(k[2] for k in warm):.1f} s loading "
        f"(processes: {cold_total:.1f} s, {warm_total:.1f} s)"
    )
    return 0


def kernels(sizes_kib: list[int], ggml: "GgmlDecoder", wanted: set[str], repeat: int) -> int:
    """Compiled decode kernel against ggml's C decode function, each called directly on the same blocks into
    an output array it reuses, in turns; prints the time of each and their ratio per type and size.  Kernels
    that can write with streaming stores (``compiled._stream``) are also timed that way (``stream``), into a
    64-byte aligned output; the decoders use it for reused ``out=`` arrays from ``_stream.STREAM_MIN_BYTES`` on."""
    from gguf_construct.codecs import compiled
    from gguf_construct.codecs.compiled import _stream

    print(
        f"{'type':8s} {'KiB':>6s} {'kernel us':>10s} {'C us':>10s} {'kernel/C':>8s} {'fill/C':>7s} "
        f"{'stream us':>10s} {'stream/C':>8s} {'used':>6s}  (speed ratio; best of {repeat} turns)"
    )
    ratios: dict[int, list[float]] = {k: [] for k in sizes_kib}
    for t in spec.tensor_types():
        if not (t.is_current and t.codec) or (wanted and t.name not in wanted):
            continue
        found = compiled.decoder(t.id)
        c_fn = ggml.to_float(t)
        if found is None or c_fn is None:
            continue
        kernel, tables = found
        streams = compiled._streaming(t.id)
        im = np.random.default_rng(3).random(ROW).astype(np.float32) + np.float32(0.1) if requires_imatrix(t) else None
        for kib in sizes_kib:
            x = np.frombuffer(sample_blocks(t, kib * 1024, im), np.uint8).reshape(-1, t.type_size)
            x.flags.writeable = False
            ours = codecs.empty_blocks(x.shape[0], t.block_size)
            theirs = np.empty_like(ours)
            filled = np.empty_like(ours)
            fns = {
                "kernel": lambda: kernel(x, ours, *tables),
                "C": lambda: c_fn(x.ctypes.data, theirs.ctypes.data, theirs.size),
                "fill": lambda: filled.fill(1.0),
            }
            if streams:
                streamed = codecs.empty_blocks(x.shape[0], t.block_size)
                fns["stream"] = lambda: kernel(x, streamed, *tables, True)
            for fn in fns.values():
                fn()
            if not np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)) or (
                streams and not np.array_equal(streamed.view(np.uint32), theirs.view(np.uint32))
            ):
                print(f"{t.name}: decoded values differ from ggml's", file=sys.stderr)
            times = race(fns, repeat, time.perf_counter, budget=0.5)
            used = "stream" if streams and ours.nbytes >= _stream.STREAM_MIN_BYTES else "kernel"
            ratios[kib].append(times["C"] / times[used])
            line = (
                f"{t.name:8s} {kib:6d} {times['kernel'] * 1e6:10.1f} {times['C'] * 1e6:10.1f} "
                f"{times['C'] / times['kernel']:8.2f} {times['C'] / times['fill']:7.2f}"
            )
            if streams:
                line += f" {times['stream'] * 1e6:10.1f} {times['C'] / times['stream']:8.2f} {used:>6s}"
            print(line)
    for kib, r in ratios.items():
        if r:
            mean = math.exp(sum(map(math.log, r)) / len(r))
            print(f"geometric mean (the store the decoder uses)/C at {kib} KiB over {len(r)} types: {mean:.2f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("types", nargs="*", help="type names (default: every type with a codec)")
    ap.add_argument("--mib", type=float, default=16.0, help="MiB of quantized data per measurement")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds for one encode run (caps the size)")
    ap.add_argument("--cpu", action="store_true", help="time process CPU time instead of wall time")
    ap.add_argument("--ggml-lib", metavar="PATH", help="libggml-base shared library: compare with ggml's C decode")
    ap.add_argument("--decode-only", action="store_true", help="skip the encoders")
    ap.add_argument("--cold-jit", action="store_true", help="compile the kernels afresh (empty numba cache)")
    ap.add_argument("--scaling", type=float, metavar="MIB", help="only time Tensor.numpy() threads scaling")
    ap.add_argument(
        "--threads-test",
        type=float,
        metavar="MIB",
        help="only time the default thread count against one thread, alone and with a competing process",
    )
    ap.add_argument(
        "--kernels",
        metavar="KIB[,KIB...]",
        help="only the decode kernels against ggml's C functions, called directly (needs --ggml-lib)",
    )
    ap.add_argument(
        "--compile-cost",
        action="store_true",
        help="only the first-use cost per type: compile (empty cache) and load from the cache",
    )
    args = ap.parse_args(argv)
    if args.compile_cost:
        return compile_cost([n.upper() for n in args.types])
    if args.cold_jit:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-numba-")
    if args.scaling:
        return scaling(args.scaling, args.repeat)
    if args.threads_test:
        return threads_test(args.threads_test, args.repeat)
    ggml = GgmlDecoder(args.ggml_lib) if args.ggml_lib else None
    if args.kernels:
        if ggml is None or codecs.backend() != "numba":
            ap.error("--kernels needs --ggml-lib and the compiled codecs (the [fast] extra)")
        return kernels(
            [int(k) for k in args.kernels.split(",")], ggml, {n.upper() for n in args.types}, max(args.repeat, 50)
        )
    clock = timer(args.cpu or ggml is not None)
    wanted = {n.upper() for n in args.types}
    types = [t for t in spec.tensor_types() if t.is_current and t.codec and (not wanted or t.name in wanted)]
    fast = codecs.backend() == "numba"
    print(f"codec path: {codecs.backend()}")
    head = f"{'type':8s} {'dir':6s} {'ours MiB/s':>11s} {'gguf-py':>9s} {'ratio':>7s}"
    if ggml is not None:
        head += f" {'C':>9s} {'ours/C':>7s} {'fill/C':>7s} {'C-pre':>9s} {'ours/pre':>8s}"
    if fast:
        head += f" {'numpy':>9s} {'ours/np':>7s} {'pre':>9s}"
        head += (f" {'pre/C-pre':>9s}" if ggml else "") + f" {'jit s':>6s}"
    print(head)
    ratios: dict[str, list[float]] = {"gguf-py": [], "C": [], "fill/C": [], "C-pre": [], "numpy": [], "pre/C-pre": []}

    def cell(v, width, fmt, name=None):
        if v != v:
            return f" {'-':>{width}s}"
        if name:
            ratios[name].append(v)
        return f" {v:{width}{fmt}}"

    for t in types:
        if not (codecs.has_decoder(t.id) or codecs.has_encoder(t.id)):
            continue
        for direction, ours, theirs, c_fresh, c_reused, numpy_path, pre, fill, jit in bench_type(t, args, clock, ggml):
            line = f"{t.name:8s} {direction:6s} {ours:11.1f}"
            line += cell(theirs, 9, ".1f") + cell(ours / theirs, 7, ".2f", "gguf-py")
            if ggml is not None:
                line += cell(c_fresh, 9, ".1f") + cell(ours / c_fresh, 7, ".2f", "C")
                line += cell(fill / c_fresh, 7, ".2f", "fill/C")
                line += cell(c_reused, 9, ".1f") + cell(ours / c_reused, 8, ".2f", "C-pre")
            if fast:
                line += cell(numpy_path, 9, ".1f") + cell(ours / numpy_path, 7, ".2f", "numpy") + cell(pre, 9, ".1f")
                if ggml is not None:
                    line += cell(pre / c_reused, 9, ".2f", "pre/C-pre")
                line += cell(jit, 6, ".2f")
            print(line, flush=True)
    for name, rs in ratios.items():
        if rs:
            gmean = math.exp(sum(math.log(r) for r in rs) / len(rs))
            label = name if "/" in name else f"ours / {name}"
            print(f"geometric mean ratio ({label}) over {len(rs)} measurements: {gmean:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
