"""Sweep throughput and transfer: local files vs the same files over HTTP, one worker vs two, both engines.

Usage: python benchmarks/bench_remote.py [FOLDER] [--engines local,dask] [--workers 1,2] [--big N]
           [--profiles spec,ggml,llama.cpp]

FOLDER defaults to ../shared/corpus/vocab when present.  ``--big N`` (default 8) adds N generated model files
whose tensor data dwarfs their head (about 48 MiB each, 200 tensors), to show that an HTTP check fetches the head
only.  Each configuration sweeps every file once into a fresh output and prints files/s (overall, and "steady": from the
first result on, without the engine's start-up), bytes fetched per file, requests per file (the size lookup
included) and the mean task time.  The HTTP server is gguf_construct.base.rangeserver on loopback (no network
latency: add the round trips of a real server yourself, see the README's "Checking a hub").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


import gguf_construct as g  # noqa: E402
from gguf_construct.base.rangeserver import RangeServer  # noqa: E402
from gguf_construct.operations.sweep import read_rows, run_sweep  # noqa: E402

DEFAULT_CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus", "vocab")


def make_big(folder: str, n: int) -> list[str]:
    """``n`` model files of 200 Q8_0 tensors of 240 KiB each (links to one written file, each its own name)."""
    if n <= 0:
        return []
    f = g.GGUFFile.new()
    f.metadata.set("general.architecture", "llama", "STRING")
    f.metadata.set("general.name", "bench", "STRING")
    f.metadata.set("llama.block_count", 40, "UINT32")
    raw = bytes(34 * 256 * 28)  # Q8_0: 34 bytes per 32 values; 28 rows of 256
    for i in range(200):
        f.add_tensor(
            f"blk.{i // 5}.ffn_{('up', 'down', 'gate', 'attn_q', 'attn_k')[i % 5]}.weight",
            raw,
            ggml_type="Q8_0",
            shape=(256 * 32, 28),
        )
    first = os.path.join(folder, "bench-model-0.gguf")
    f.save(first)
    out = [first]
    for i in range(1, n):
        path = os.path.join(folder, f"bench-model-{i}.gguf")
        os.link(first, path)
        out.append(path)
    return out


def run(paths: list[str], engine: str, workers: int, profiles: tuple[str, ...], tmp: str) -> dict:
    """One sweep into a fresh output; totals plus per-file means from the rows."""
    out = os.path.join(tmp, f"rows-{time.monotonic_ns()}.jsonl")
    totals = run_sweep(paths, out, engine=engine, jobs=workers, profiles=profiles)
    rows = read_rows(out)
    totals["requests_per_file"] = statistics.mean(r["requests"] or 0 for r in rows)
    totals["task_seconds"] = statistics.mean(r["seconds"] for r in rows)
    totals["size_per_file"] = statistics.mean(r["size"] or 0 for r in rows)
    totals["errors"] = sum(r["error"] is not None for r in rows)
    return totals


def main() -> int:
    """Run every configuration and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=DEFAULT_CORPUS)
    ap.add_argument("--engines", default="local,dask")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--big", type=int, default=12)
    ap.add_argument("--copies", type=int, default=2, help="sweep each corpus file this many times (as links)")
    ap.add_argument("--profiles", default="spec,ggml,llama.cpp")
    args = ap.parse_args()
    profiles = tuple(args.profiles.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp:
        served = os.path.join(tmp, "served")
        os.mkdir(served)
        if os.path.isdir(args.folder):
            for name in sorted(os.listdir(args.folder)):
                for copy in range(args.copies) if name.endswith(".gguf") else ():
                    os.symlink(
                        os.path.abspath(os.path.join(args.folder, name)),
                        os.path.join(served, f"{copy}-{name}" if copy else name),
                    )
        make_big(served, args.big)
        names = sorted(n for n in os.listdir(served) if n.endswith(".gguf"))
        groups = {
            "corpus": [n for n in names if not n.startswith("bench-model-")],
            "big models": [n for n in names if n.startswith("bench-model-")],
        }
        print(
            f"{'files':11s} {'source':6s} {'engine':6s} {'workers':>7s} {'files/s':>8s} {'steady':>7s} {'MB/file':>9s} "
            f"{'fetched/file':>13s} {'req/file':>8s} {'task s':>7s}"
        )
        with RangeServer(served) as server:
            for group, members in groups.items():
                if not members:
                    continue
                for engine in args.engines.split(","):
                    for workers in (int(w) for w in args.workers.split(",")):
                        for source in ("local", "http"):
                            paths = [os.path.join(served, n) if source == "local" else server.url(n) for n in members]
                            t = run(paths, engine, workers, profiles, tmp)
                            print(
                                f"{group:11s} {source:6s} {engine:6s} {workers:7d} {t['files_per_second']:8.2f} "
                                f"{t['steady_files_per_second']:7.2f} "
                                f"{t['size_per_file'] / 1e6:9.2f} {t['bytes_per_file']:13,.0f} "
                                f"{t['requests_per_file']:8.2f} {t['task_seconds']:7.3f}"
                                + (f"  ({t['errors']} errors)" if t["errors"] else ""),
                                flush=True,
                            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
