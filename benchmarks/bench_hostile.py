"""Cost on hostile shapes: time and peak RSS of load, check, dump, diff and hash on big files of every shape,
beside ggml's C reader (gguf_init_from_file, no_alloc) and gguf-py, in one run.

Usage: python benchmarks/bench_hostile.py [--size-mb 200] [--long-gib 1.25] [--shapes a,b] [--commands c,d]
                                          [--ggml-lib PATH] [--gguf-py-limit 60] [--dir /tmp] [--keep]

Each shape is written straight as bytes (not through this library), sparse where it can be (the payload of the
long string, the data section of the many-tensors file), under --dir, and deleted after its row unless --keep.
Every measurement runs in a child process of its own: the time is the child's own CPU time (``--clock wall``:
elapsed) around the operation, Python's start-up and imports left out; the memory is the child's peak resident set
(VmHWM), which counts a mapped file's pages as they are read.
``load`` is ``gguf_construct.load`` plus touching every metadata value (string arrays stay StringLists, long
STRING values LazyStrings), the CLI
commands run through ``gguf_construct.commands.main.main`` with output to /dev/null (``diff`` compares the file with
itself).  gguf-py is GGUFReader plus every field's contents(), stopped after --gguf-py-limit seconds.

The targets of issue #42 are printed beside each row: load <= 2x C, check and dump <= 3x C; where C refuses the
file, 1 s per GiB for load and 2 s per GiB for check and dump; peak RSS <= 256 MB + 16 bytes per array item.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# -- writing the shapes ----------------------------------------------------------------------------------------
U8, U32, I32, STRING, ARRAY = 0, 4, 5, 8, 9


def _str(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _kv_header(key: bytes, vtype: int) -> bytes:
    return _str(key) + struct.pack("<I", vtype)


def _head(n_tensors: int, n_kv: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)


ARCH = _kv_header(b"general.architecture", STRING) + _str(b"llama")


def _string_records(lengths: np.ndarray, payload: np.ndarray) -> np.ndarray:
    """GGUF string records (8-byte little-endian lengths) from item lengths and their joined bytes."""
    n = len(lengths)
    out = np.empty(8 * n + len(payload), dtype=np.uint8)
    heads = np.arange(n, dtype=np.int64) * 8 + np.cumsum(lengths) - lengths
    body = np.ones(len(out), dtype=bool)
    pre = lengths.astype("<u8").view(np.uint8).reshape(n, 8)
    for k in range(8):
        out[heads + k] = pre[:, k]
        body[heads + k] = False
    out[body] = payload
    return out


def write_empty_tokens(path: str, size: int) -> int:
    """tokenizer.ggml.tokens = size / 8 empty strings (the 160 MB / 20M file of the issue at --size-mb 160)."""
    n = size // 8
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(b"tokenizer.ggml.tokens", ARRAY) + struct.pack("<IQ", STRING, n))
        zero = bytes(8 << 20)
        left = 8 * n
        while left:
            fh.write(zero[: min(left, len(zero))])
            left -= min(left, len(zero))
    return n


def write_mixed_tokens(path: str, size: int) -> int:
    """tokenizer.ggml.tokens with random lengths: a third empty, most 1-16 bytes, 2% of 256-700 bytes (prefixes
    with two non-zero bytes), payloads of letters with zero bytes here and there."""
    rng = np.random.default_rng(42)
    n = size // 24
    lengths = rng.integers(1, 17, n)
    lengths[rng.random(n) < 0.33] = 0
    wide = rng.random(n) < 0.02
    lengths[wide] = rng.integers(256, 700, int(wide.sum()))
    total = int(lengths.sum())
    payload = rng.integers(97, 123, total).astype(np.uint8)
    payload[rng.random(total) < 0.01] = 0
    recs = _string_records(lengths, payload)
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(b"tokenizer.ggml.tokens", ARRAY) + struct.pack("<IQ", STRING, n))
        fh.write(recs.tobytes())
    return n


def write_long_string(path: str, size: int, long_bytes: int) -> int:
    """One STRING value of ``long_bytes`` (sparse: its payload is a hole of zero bytes)."""
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(b"general.description", STRING) + struct.pack("<Q", long_bytes))
        fh.truncate(fh.tell() + long_bytes)
    return 0


def write_long_text(path: str, size: int) -> int:
    """One STRING value of ``size`` bytes of non-ASCII text (two- and three-byte characters), not sparse: every
    byte is decoded when judged."""
    block = ("héllo wörld ✓ ünïcode " * 4096).encode()
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(b"general.description", STRING) + struct.pack("<Q", size))
        left = size
        while left:
            fh.write(block[: min(left, len(block))])
            left -= min(left, len(block))
    return 0


def write_many_kvs(path: str, size: int) -> int:
    """size / 26 KV pairs ``x.k%08d`` = UINT32."""
    n = size // 26
    rec = np.zeros((n, 26), dtype=np.uint8)
    rec[:, 0] = 10  # key length 10 (8-byte little-endian)
    rec[:, 8:10] = np.frombuffer(b"x.", dtype=np.uint8)
    digits = np.arange(n)
    for k in range(8):
        rec[:, 17 - k] = 48 + (digits // 10**k) % 10
    rec[:, 18] = U32
    rec[:, 22:26] = np.arange(n, dtype="<u4").view(np.uint8).reshape(n, 4)
    with open(path, "wb") as fh:
        fh.write(_head(0, n + 1) + ARCH + rec.tobytes())
    return n


def write_many_tensors(path: str, size: int) -> int:
    """size / 41 tensor infos ``t%08d``, 1 dimension of 1, F32, each at 32 * i (the data section is sparse)."""
    n = size // 41
    rec = np.zeros((n, 41), dtype=np.uint8)
    rec[:, 0] = 9
    rec[:, 8] = ord("t")
    digits = np.arange(n)
    for k in range(8):
        rec[:, 16 - k] = 48 + (digits // 10**k) % 10
    rec[:, 17] = 1  # n_dimensions (u32)
    rec[:, 21] = 1  # ne[0] (u64)
    rec[:, 29] = 0  # type F32 (u32)
    rec[:, 33:41] = (np.arange(n, dtype="<u8") * 32).view(np.uint8).reshape(n, 8)
    with open(path, "wb") as fh:
        fh.write(_head(n, 1) + ARCH + rec.tobytes())
        pos = fh.tell()
        fh.truncate(pos + (-pos) % 32 + 32 * n)
    return n


def write_long_keys(path: str, size: int) -> int:
    """Keys of 65,000 bytes (under the 65,535 of the spec), each a UINT8, size / 65 KB of them."""
    n = max(1, size // 65013)
    with open(path, "wb") as fh:
        fh.write(_head(0, n + 1) + ARCH)
        for i in range(n):
            fh.write(_kv_header(b"x." + str(i).encode().rjust(64998, b"k"), U8) + b"\x01")
    return 0


def write_nested(path: str, size: int) -> int:
    """One ARRAY of ARRAY[UINT8], inner arrays of 16 items: size / 28 inner arrays."""
    n = size // 28
    rec = np.zeros((n, 28), dtype=np.uint8)
    rec[:, 0] = U8
    rec[:, 4] = 16
    rec[:, 12:28] = np.arange(16, dtype=np.uint8)
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(b"x.nested", ARRAY) + struct.pack("<IQ", ARRAY, n))
        fh.write(rec.tobytes())
    return n


def write_nested_empty(path: str, size: int) -> int:
    """One ARRAY of empty ARRAY[UINT8] (type, count 0): size / 12 inner arrays, which ggml refuses."""
    n = size // 12
    rec = np.zeros((n, 12), dtype=np.uint8)
    rec[:, 0] = U8
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(b"x.nested", ARRAY) + struct.pack("<IQ", ARRAY, n))
        fh.write(rec.tobytes())
    return n


def write_numeric(path: str, size: int) -> int:
    """One ARRAY[INT32] of size / 4 items."""
    n = size // 4
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(b"x.numbers", ARRAY) + struct.pack("<IQ", I32, n))
        fh.write(np.arange(n, dtype="<i4").tobytes())
    return n


def _array_file(path: str, key: bytes, lengths: np.ndarray, payload: np.ndarray) -> int:
    """A file whose one array ``key`` is ARRAY[STRING] of the items with ``lengths`` and joined bytes ``payload``."""
    with open(path, "wb") as fh:
        fh.write(_head(0, 2) + ARCH + _kv_header(key, ARRAY) + struct.pack("<IQ", STRING, len(lengths)))
        fh.write(_string_records(lengths, payload).tobytes())
    return len(lengths)


def _pooled(pool: list[bytes], n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, joined bytes) of ``n`` items drawn at random from ``pool``, built without a step per item."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(pool), n)
    sizes = np.array([len(b) for b in pool], dtype=np.int64)
    heads = np.cumsum(sizes) - sizes
    joined = np.frombuffer(b"".join(pool) or b"\0", dtype=np.uint8)
    lengths = sizes[pick]
    where = np.cumsum(lengths) - lengths
    total = int(lengths.sum())
    index = np.repeat(heads[pick] - where, lengths) + np.arange(total, dtype=np.int64)
    return lengths, joined[index]


def _mean_record(pool: list[bytes]) -> float:
    return 8 + sum(map(len, pool)) / len(pool)


def write_bad_utf8_tokens(path: str, size: int) -> int:
    """tokenizer.ggml.tokens of size / 9 one-byte strings 0xFF, none valid UTF-8 (51 s to load 10 MB on main at
    956e86a: one failed decode per item)."""
    n = size // 9
    return _array_file(path, b"tokenizer.ggml.tokens", np.ones(n, dtype=np.int64), np.full(n, 0xFF, np.uint8))


def write_dup_tokens(path: str, size: int) -> int:
    """tokenizer.ggml.tokens of size / 10 strings, all "ab" (every item a duplicate of the first)."""
    n = size // 10
    return _array_file(path, b"tokenizer.ggml.tokens", np.full(n, 2, dtype=np.int64), np.tile(np.uint8([97, 98]), n))


# items of every kind of content: invalid bytes, lone continuation bytes, sequences cut at the item's end, overlong
# encodings, encoded surrogates, code points past U+10FFFF, NUL inside, characters of 1 to 4 bytes, empty
CONTENT_POOL = [
    b"\xff",
    b"\x80",
    b"\xbf\x80",
    b"a\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc0\xaf",
    b"\xe0\x80\xaf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"a\x00b",
    b"\x00",
    "é".encode(),
    "€".encode(),
    "😀".encode(),
    "aé€😀".encode(),
    b"abc",
    b"",
]


def write_content_tokens(path: str, size: int) -> int:
    """tokenizer.ggml.tokens of items drawn at random from CONTENT_POOL (valid, invalid and NUL-holding mixed)."""
    lengths, payload = _pooled(CONTENT_POOL, int(size / _mean_record(CONTENT_POOL)))
    return _array_file(path, b"tokenizer.ggml.tokens", lengths, payload)


def write_content_merges(path: str, size: int) -> int:
    """tokenizer.ggml.merges of "a b"-like items whose halves are drawn from CONTENT_POOL."""
    pool = [a + b" " + b for a in CONTENT_POOL[::2] for b in CONTENT_POOL[1::2]]
    lengths, payload = _pooled(pool, int(size / _mean_record(pool)))
    return _array_file(path, b"tokenizer.ggml.merges", lengths, payload)


def write_content_array(path: str, size: int) -> int:
    """An arbitrary key x.strings of items drawn from CONTENT_POOL, each repeated 3 to 40 times (runs of invalid
    sequences and multi-byte characters within one item)."""
    pool = [b * k for b in CONTENT_POOL[:-1] for k in (3, 17, 40)]
    lengths, payload = _pooled(pool, int(size / _mean_record(pool)))
    return _array_file(path, b"x.strings", lengths, payload)


def write_long_bad_items(path: str, size: int) -> int:
    """tokenizer.ggml.tokens of items of 5,000 invalid bytes (0xFF, alternating with lone continuation bytes)."""
    n = max(1, size // 5008)
    item = np.tile(np.uint8([0xFF, 0x80]), 2500)
    return _array_file(path, b"tokenizer.ggml.tokens", np.full(n, 5000, dtype=np.int64), np.tile(item, n))


SHAPES = {
    "empty-tokens": write_empty_tokens,
    "mixed-tokens": write_mixed_tokens,
    "long-string": write_long_string,
    "long-text": write_long_text,
    "many-kvs": write_many_kvs,
    "many-tensors": write_many_tensors,
    "long-keys": write_long_keys,
    "nested": write_nested,
    "nested-empty": write_nested_empty,
    "numeric": write_numeric,
    "bad-utf8-tokens": write_bad_utf8_tokens,
    "dup-tokens": write_dup_tokens,
    "content-tokens": write_content_tokens,
    "content-merges": write_content_merges,
    "content-array": write_content_array,
    "long-bad-items": write_long_bad_items,
}

# -- measuring -------------------------------------------------------------------------------------------------
CHILD = r"""
import os, sys, time
sys.path.insert(0, {root!r})
what, path = sys.argv[1], sys.argv[2]
CLOCK = time.process_time if os.environ.get("BENCH_CLOCK", "cpu") == "cpu" else time.perf_counter
if what == "ggml":
    sys.path.insert(0, {here!r})
    from bench_load import ggml_reader
    run = ggml_reader(sys.argv[3])
    t0 = CLOCK()
    try:
        run(path)
        status = "ok"
    except RuntimeError:
        status = "refused"
elif what == "gguf-py":
    from gguf import GGUFReader
    t0 = CLOCK()
    r = GGUFReader(path)
    for field in r.fields.values():
        field.contents()
    status = "ok"
elif what == "load":
    import gguf_construct
    t0 = CLOCK()
    try:
        f = gguf_construct.load(path)
        for key, value in f.metadata.typed_items():
            value.value
        status = "ok"
    except gguf_construct.GGUFError:
        status = "refused"
else:
    from gguf_construct.commands.main import main
    argv = {{"check": ["check", path], "dump": ["dump", path], "diff": ["diff", path, path],
            "hash": ["hash", path], "dump-json": ["dump", "--json", path], "dump-full": ["dump", "--full", path],
            "convert": ["convert", "--byte-order", "big", path, path + ".converted"]}}[what]
    devnull = open(os.devnull, "w")
    sys.stdout = devnull
    t0 = CLOCK()
    code = main(argv)
    sys.stdout = sys.__stdout__
    status = "ok" if code in (0, 1) else f"exit {{code}}"
    if what == "convert" and os.path.exists(path + ".converted"):
        os.unlink(path + ".converted")
spent = CLOCK() - t0
peak = 0
with open("/proc/self/status") as fh:
    for line in fh:
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1])
print(f"{{spent:.6f}} {{peak}} {{status}}")
"""


def measure(
    what: str, path: str, extra: list[str], limit: float, python: str = sys.executable, clock: str = "cpu"
) -> tuple[float | None, float, str]:
    """(seconds, peak RSS in MB, status) of one child process; seconds None when it ran past ``limit`` (wall).
    The peak is the child's VmHWM, which counts from its own start (``ru_maxrss`` would carry the parent's)."""
    code = CHILD.format(root=ROOT, here=HERE)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), BENCH_CLOCK=clock)
    proc = subprocess.Popen(
        [python, "-c", code, what, path, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    start = time.monotonic()
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > limit:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return None, usage.ru_maxrss / 1024, f"> {limit:.0f} s"
        time.sleep(0.01)
    out = proc.stdout.read().decode().split()
    err = proc.stderr.read().decode().strip().splitlines()
    if os.waitstatus_to_exitcode(status) != 0 or len(out) < 3:
        return None, usage.ru_maxrss / 1024, "failed: " + (err[-1] if err else "?")[:60]
    return float(out[0]), int(out[1]) / 1024, out[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=200, help="size of each shape's file (default 200 MB)")
    ap.add_argument("--long-gib", type=float, default=1.25, help="length of the long STRING value (sparse)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated, of: " + ", ".join(SHAPES))
    ap.add_argument(
        "--commands",
        default="load,check,dump,diff,hash",
        help="comma-separated, of: load, check, dump, dump-json, dump-full (to /dev/null), diff, hash, convert "
        "(to big-endian, written beside the file)",
    )
    ap.add_argument("--ggml-lib", help="a libggml-base.so built from ggml's sources, to time its C reader")
    ap.add_argument("--gguf-py-limit", type=float, default=60, help="seconds before gguf-py is stopped (0: skip)")
    ap.add_argument(
        "--gguf-py-python",
        default=sys.executable,
        help="the interpreter of a venv with gguf-py installed (pip install gguf)",
    )
    ap.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu (default): the child's CPU time, which other jobs on a shared machine do not "
        "inflate; wall: elapsed time",
    )
    ap.add_argument("--limit", type=float, default=600, help="seconds before one of our commands is stopped")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true", help="keep the written files")
    args = ap.parse_args()
    size = int(args.size_mb * 1e6)
    commands = args.commands.split(",")
    print(
        f"{'shape':<15} {'MB':>7} {'items':>10} {'reader':<9} {'s':>8} {'RSS MB':>8} {'/C':>6} {'target':>8} "
        f"{'RSS cap':>8}  status"
    )
    for shape in args.shapes.split(","):
        path = os.path.join(args.dir, f"hostile-{shape}.gguf")
        if shape == "long-string":
            items = write_long_string(path, size, int(args.long_gib * 2**30))
        else:
            items = SHAPES[shape](path, size)
        nbytes = os.path.getsize(path)
        gib = nbytes / 2**30
        cap = 256 + 16 * items / 1e6
        try:
            c_time = None
            rows = []
            if args.ggml_lib:
                t, rss, status = measure("ggml", path, [args.ggml_lib], args.limit, clock=args.clock)
                c_time = t if status == "ok" else None
                rows.append(("ggml C", t, rss, status, None))
            if args.gguf_py_limit > 0:
                rows.append(
                    (
                        "gguf-py",
                        *measure("gguf-py", path, [], args.gguf_py_limit, args.gguf_py_python, args.clock),
                        None,
                    )
                )
            for what in commands:
                t, rss, status = measure(what, path, [], args.limit, clock=args.clock)
                factor = 2 if what == "load" else 3
                per_gib = 1 if what == "load" else 2
                target = factor * c_time if c_time is not None else per_gib * max(gib, 1 / 16)
                rows.append((what, t, rss, status, target))
            for name, t, rss, status, target in rows:
                ratio = f"{t / c_time:6.2f}" if t is not None and c_time else f"{'-':>6}"
                tgt = f"{target:8.2f}" if target is not None else f"{'':>8}"
                mark = ""
                if target is not None:
                    ok = t is not None and t <= target and rss <= cap
                    mark = "  MET" if ok else "  MISSED"
                shown = f"{t:8.2f}" if t is not None else f"{'-':>8}"
                print(
                    f"{shape:<15} {nbytes / 1e6:7.0f} {items:>10} {name:<9} {shown} {rss:8.0f} {ratio} {tgt} "
                    f"{cap if target is not None else 0:8.0f}  {status}{mark}",
                    flush=True,
                )
        finally:
            if not args.keep:
                os.unlink(path)


if __name__ == "__main__":
    main()
