"""Checking cost against loading: gguf_construct.load vs gguf_construct.check, same files, same run.

Usage: python benchmarks/bench_check.py FILES_OR_FOLDERS... [--repeat N] [--profile spec|ggml]

Prints, per file, the best load time, the best check time and their ratio, then their geometric mean (issue
#27's target is at most 1.05: load and check read a file the same way, check runs every rule, load only those
it refuses a file for).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gguf_construct  # noqa: E402


def files_of(paths: list[str]) -> list[str]:
    """Files named on the command line, directories expanded to their *.gguf files."""
    out = []
    for p in paths:
        out.extend(sorted(glob.glob(os.path.join(p, "**", "*.gguf"), recursive=True)) if os.path.isdir(p) else [p])
    return out


def best_of_rounds(fns, repeat: int, clock) -> list[float]:
    """The fastest of ``repeat`` timed calls of each function, called in turn (a busy machine slows all alike)."""
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            t0 = clock()
            fn()
            out.append(clock() - t0)
    return [min(t) for t in times]


def main() -> int:
    """Time load and check on every file and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", default="spec", choices=("spec", "ggml"))
    ap.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu (default): process CPU time, steady on a shared machine; wall: elapsed time",
    )
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"clock: {args.clock} time, best of {args.repeat} rounds (load and check in turn)")
    print(f"{'file':40s} {'load s':>8s} {'check s':>8s} {'ratio':>6s}")
    ratios = []
    for path in files_of(args.paths):
        gguf_construct.load(path).close()  # warm the page cache and the struct families
        t_load, t_check = best_of_rounds(
            [lambda: gguf_construct.load(path).close(), lambda: gguf_construct.check(path, profile=args.profile)],
            args.repeat,
            clock,
        )
        print(f"{os.path.basename(path):40s} {t_load:8.3f} {t_check:8.3f} {t_check / t_load:6.2f}")
        ratios.append(t_check / t_load)
    if ratios:
        print(f"{'geometric mean':40s} {'':8s} {'':8s} {statistics.geometric_mean(ratios):6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
