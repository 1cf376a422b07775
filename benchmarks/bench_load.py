"""Metadata loading speed: gguf_construct.load vs gguf-py's GGUFReader, same files, same run.

Usage: python benchmarks/bench_load.py FOLDER_OR_FILE... [--repeat N]

With --ggml-lib PATH (a libggml-base.so you built yourself from ggml's sources) the same run also times ggml's
own C reader (gguf_init_from_file, no_alloc), which reads every string into a std::string.

"ours" is load plus fetching every metadata value: string arrays are StringLists (offsets, UTF-8 validity and NUL
bytes decided, items decoded when accessed), so the file is read and judged as check reads it.  "ours+str" also
turns every string array into a list of str (to_list()), the cost of having every token as a Python object.
GGUFReader's figure is its constructor plus reading every field's contents(), which is what it takes to get the
same values.  --memory adds the tracemalloc peak of one load (and of load + to_list) per file.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gguf_construct  # noqa: E402


def files_of(paths):
    out = []
    for p in paths:
        out.extend(sorted(glob.glob(os.path.join(p, "**", "*.gguf"), recursive=True)) if os.path.isdir(p) else [p])
    return out


def ours(path):
    f = gguf_construct.load(path)
    n = 0
    for key, value in f.metadata.typed_items():
        v = value.to_python() if value.type.name == "ARRAY" and value.item_type.name == "ARRAY" else value.value
        n += len(v) if value.type.name == "ARRAY" else 1
    f.close()
    return n


def ours_str(path):
    f = gguf_construct.load(path)
    n = 0
    for key, value in f.metadata.typed_items():
        v = value.to_python()
        n += len(v) if isinstance(v, list) else 1
    f.close()
    return n


def peak_kib(fn, path):
    """The tracemalloc peak of one call, in KiB."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn(path)
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def theirs(path):
    from gguf import GGUFReader

    r = GGUFReader(path)
    n = 0
    for field in r.fields.values():
        v = field.contents()
        n += len(v) if isinstance(v, list) else 1
    return n


def ggml_reader(lib_path):
    """A callable timing ggml's C reader through ctypes."""
    import ctypes

    lib = ctypes.CDLL(lib_path)

    class Params(ctypes.Structure):
        _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]

    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, Params]
    lib.gguf_free.argtypes = [ctypes.c_void_p]

    def run(path):
        handle = lib.gguf_init_from_file(os.fsencode(path), Params(True, None))
        if not handle:
            raise RuntimeError(f"ggml rejected {path}")
        lib.gguf_free(handle)

    return run


CLOCK = time.process_time  # --clock: CPU time of this process (user + system) or wall time


def best(fn, path, repeat):
    times = []
    for _ in range(repeat):
        t0 = CLOCK()
        fn(path)
        times.append(CLOCK() - t0)
    return min(times)


def best_of_rounds(fns, path, repeat):
    """The best time of each function, calling them in turn ``repeat`` times (a busy machine slows all alike)."""
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            t0 = CLOCK()
            fn(path)
            out.append(CLOCK() - t0)
    return [min(t) for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference-repeat", type=int, default=1)
    ap.add_argument("--no-gguf-py", action="store_true", help="skip gguf-py (minutes per large file on a busy machine)")
    ap.add_argument("--ggml-lib", help="path to a libggml-base.so to time ggml's C reader too")
    ap.add_argument("--memory", action="store_true", help="also print the tracemalloc peak of one load")
    ap.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu (default): process CPU time, which a machine shared with other jobs does not inflate "
        "by preemption; wall: elapsed time",
    )
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"clock: {args.clock} time, best of {args.repeat} rounds (ours, ours+str and C in turn)")
    try:
        import gguf  # noqa: F401

        have_ref = not args.no_gguf_py
    except ImportError:
        have_ref = False
        print("gguf (gguf-py) not installed: pip install -e '.[bench]' for the comparison")
    c_reader = ggml_reader(args.ggml_lib) if args.ggml_lib else None
    head = f"{'file':<36} {'ours ms':>9} {'ours+str':>9} {'gguf-py ms':>11} {'speed-up':>9}"
    print(
        head
        + (f" {'ggml C ms':>10} {'ours/C':>7} {'+str/C':>7}" if c_reader else "")
        + (f" {'peak KiB':>9} {'+str KiB':>9}" if args.memory else "")
    )
    ratios, c_ratios = [], []
    for path in files_of(args.paths):
        timed = best_of_rounds([ours, ours_str] + ([c_reader] if c_reader else []), path, args.repeat)
        t_ours, t_str = timed[:2]
        line = f"{os.path.basename(path):<36} {t_ours * 1e3:>9.1f} {t_str * 1e3:>9.1f}"
        if have_ref:
            t_ref = best(theirs, path, args.reference_repeat)
            ratios.append(t_ref / t_ours)
            line += f" {t_ref * 1e3:>11.1f} {t_ref / t_ours:>8.1f}x"
        else:
            line += f" {'-':>11} {'-':>9}"
        if c_reader:
            t_c = timed[2]
            line += f" {t_c * 1e3:>10.1f} {t_ours / t_c:>6.2f}x {t_str / t_c:>6.2f}x"
            c_ratios.append(t_ours / t_c)
        if args.memory:
            line += f" {peak_kib(ours, path):>9.0f} {peak_kib(ours_str, path):>9.0f}"
        print(line, flush=True)
    import math

    if ratios:
        print(f"geometric mean speed-up vs gguf-py: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.1f}x")
    if c_ratios:
        print(
            f"ours/C: geometric mean {math.exp(sum(map(math.log, c_ratios)) / len(c_ratios)):.2f}x, "
            f"worst {max(c_ratios):.2f}x"
        )


if __name__ == "__main__":
    main()
