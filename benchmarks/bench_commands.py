"""Speed of split, merge, hash and set on a synthetic model, optionally against llama.cpp's own tools.

Usage: python benchmarks/bench_commands.py [--mb 512] [--dir DIR] [--gguf-split PATH] [--gguf-hash PATH]

Builds a model of about --mb megabytes of F16 tensor data (64 tensors), then times, each in a fresh process as a
user would run it: ``split --max-tensors 16``, ``merge``, ``hash --algo sha256``, ``hash`` (xxh64; fast only with
the xxhash package) and ``set`` of one key (rewrites the file).  With --gguf-split / --gguf-hash (binaries you
built from llama.cpp) the same operations by those tools are timed too and their outputs compared with ours.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

import gguf_construct as g  # noqa: E402


def build(path: str, mb: int) -> None:
    f = g.GGUFFile.new()
    f.metadata["general.architecture"] = "llama"
    f.metadata["general.name"] = "bench"
    per = mb * 1_000_000 // 64 // 2 // 4096
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((per, 4096)).astype(np.float16)
    for i in range(64):
        f.add_tensor(f"blk.{i}.w", rows, ggml_type="F16")
    f.save(path)


def timed(cmd: list[str], **kw) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    return time.perf_counter() - t, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=512, help="tensor data size in MB (default 512)")
    ap.add_argument("--dir", help="work directory (default: a temporary one)")
    ap.add_argument("--gguf-split", help="llama.cpp's gguf-split binary, to compare with")
    ap.add_argument("--gguf-hash", help="llama.cpp's gguf-hash binary, to compare with")
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="bench-cmds-")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "model.gguf")
    build(src, args.mb)
    size = os.path.getsize(src) / 1e6
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    us = [sys.executable, "-m", "gguf_construct"]
    rows = []

    def row(name, seconds):
        rows.append((name, seconds))
        print(f"{name:<34} {seconds:7.2f} s  {size / seconds:8.0f} MB/s", flush=True)

    os.makedirs(os.path.join(work, "ours"), exist_ok=True)
    row(
        "split --max-tensors 16",
        timed(us + ["split", src, os.path.join(work, "ours", "m"), "--max-tensors", "16"], env=env)[0],
    )
    first = os.path.join(work, "ours", "m-00001-of-00004.gguf")
    row("merge", timed(us + ["merge", first, os.path.join(work, "merged.gguf")], env=env)[0])
    t, ours_sha = timed(us + ["hash", src, "--algo", "sha256", "--per-tensor"], env=env)
    row("hash --algo sha256 --per-tensor", t)
    t, ours_xxh = timed(us + ["hash", src, "--per-tensor"], env=env)
    row("hash (xxh64) --per-tensor", t)
    if args.gguf_split:
        os.makedirs(os.path.join(work, "ref"), exist_ok=True)
        row(
            "gguf-split --split-max-tensors 16",
            timed([args.gguf_split, "--split-max-tensors", "16", src, os.path.join(work, "ref", "m")])[0],
        )
        same = all(
            filecmp.cmp(os.path.join(work, "ours", n), os.path.join(work, "ref", n), shallow=False)
            for n in os.listdir(os.path.join(work, "ref"))
        )
        print(f"  shards byte-identical to gguf-split's: {same}")
        row("gguf-split --merge", timed([args.gguf_split, "--merge", first, os.path.join(work, "ref.gguf")])[0])
    if args.gguf_hash:
        t, ref_sha = timed([args.gguf_hash, "--sha256", src])
        row("gguf-hash --sha256", t)
        print(f"  sha256 lines identical: {ref_sha == ours_sha}")
        t, ref_xxh = timed([args.gguf_hash, "--xxh64", src])
        row("gguf-hash --xxh64", t)
        print(f"  xxh64 lines identical: {ref_xxh == ours_xxh}")
    row("set general.name (rewrites the file)", timed(us + ["set", src, "general.name", "renamed"], env=env)[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
