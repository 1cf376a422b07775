"""Codec throughput: gguf_construct's decoders/encoders against gguf-py's ``gguf.quants``, same data, same run.

Usage: python benchmarks/bench_codecs.py [TYPES...] [--mib 16] [--repeat 3] [--budget 1.5] [--cpu]

For every tensor type with a decoder or encoder (or only the TYPES named), prints MiB/s of *quantized* data:

* decode: ``codecs.dequantize`` of ``--mib`` MiB of blocks (a quantized sample of normal random rows, tiled;
  random bytes for types without an encoder), best of ``--repeat`` runs;
* encode: ``codecs.quantize`` of normal random rows (4096 per row; integer-valued for the integer types)
  producing up to ``--mib`` MiB, scaled down so that one run takes about ``--budget`` seconds (slow
  search-based encoders); with an importance matrix for the types ggml requires one for;
* the same calls of ``gguf.quants.dequantize`` / ``gguf.quants.quantize`` where gguf-py has the type (and the
  same block size; not F32, where gguf-py returns a view), and our/their ratio, with the geometric mean of the
  ratios at the end.  Repeats stop early once a measurement has used about a second.

Single-threaded numpy; ``--cpu`` times process CPU time instead of wall time (steadier on a loaded machine).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gguf_construct import codecs, spec  # noqa: E402

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
    out = math.inf
    spent = 0.0
    for _ in range(repeat):
        t = clock()
        fn()
        dt = clock() - t
        out = min(out, dt)
        spent += dt
        if spent > budget:
            break
    return max(out, 1e-9)


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


def requires_imatrix(t) -> bool:
    return t.name in ("IQ2_XXS", "IQ2_XS", "IQ1_S")


def bench_type(t, args, clock) -> list[tuple[str, float, float]]:
    """[(direction, ours MiB/s, gguf-py MiB/s or nan)]"""
    results = []
    qt = gguf_type(t)
    im = np.random.default_rng(3).random(ROW).astype(np.float32) + np.float32(0.1) if requires_imatrix(t) else None
    n_bytes = int(args.mib * MIB)
    row_bytes = ROW // t.block_size * t.type_size
    if codecs.has_decoder(t.id):
        raw = sample_blocks(t, n_bytes, im)
        ours = best(lambda: codecs.dequantize(t.id, raw), args.repeat, clock)
        theirs = math.nan
        if qt is not None:
            arr = np.frombuffer(raw, np.uint8).reshape(-1, row_bytes)
            try:
                theirs = best(lambda: gq.dequantize(arr, qt), args.repeat, clock)
            except (NotImplementedError, ValueError):
                pass
        results.append(("decode", len(raw) / ours / MIB, len(raw) / theirs / MIB))
    if codecs.has_encoder(t.id):
        probe = make_rows(1, 0, t)  # one row to estimate the speed
        with np.errstate(all="ignore"):
            dt = best(lambda: codecs.quantize(t.id, probe, imatrix=im), 1, clock)
        rate = probe.shape[0] * row_bytes / dt
        n_rows = max(1, min(rows_for(t, n_bytes), int(rate * args.budget / row_bytes)))
        x = make_rows(n_rows, 0, t)
        out_bytes = n_rows * row_bytes
        reps = args.repeat if rate * args.budget > 2 * out_bytes else 1
        with np.errstate(all="ignore"):
            ours = best(lambda: codecs.quantize(t.id, x, imatrix=im), reps, clock)
        theirs = math.nan
        if qt is not None and t.kind != "integer":
            try:
                theirs = best(lambda: gq.quantize(x, qt), reps, clock)
            except (NotImplementedError, ValueError, gq.QuantError):
                pass
        results.append(("encode", out_bytes / ours / MIB, out_bytes / theirs / MIB))
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("types", nargs="*", help="type names (default: every type with a codec)")
    ap.add_argument("--mib", type=float, default=16.0, help="MiB of quantized data per measurement")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds for one encode run (caps the size)")
    ap.add_argument("--cpu", action="store_true", help="time process CPU time instead of wall time")
    args = ap.parse_args(argv)
    clock = timer(args.cpu)
    wanted = {n.upper() for n in args.types}
    types = [t for t in spec.tensor_types() if t.is_current and t.codec and (not wanted or t.name in wanted)]
    print(f"{'type':8s} {'dir':6s} {'ours MiB/s':>11s} {'gguf-py':>9s} {'ratio':>7s}")
    ratios = []
    for t in types:
        if not (codecs.has_decoder(t.id) or codecs.has_encoder(t.id)):
            continue
        for direction, ours, theirs in bench_type(t, args, clock):
            ratio = ours / theirs if theirs == theirs else math.nan
            if ratio == ratio:
                ratios.append(ratio)
            theirs_s = f"{theirs:9.1f}" if theirs == theirs else f"{'-':>9s}"
            ratio_s = f"{ratio:7.2f}" if ratio == ratio else f"{'-':>7s}"
            print(f"{t.name:8s} {direction:6s} {ours:11.1f} {theirs_s} {ratio_s}", flush=True)
    if ratios:
        gmean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean ratio (ours / gguf-py) over {len(ratios)} measurements: {gmean:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
