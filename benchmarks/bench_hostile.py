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


# -- KV records of every value kind (read in bulk: rulebook/records.py) -------------------------------------
I8, U16, I16, F32, BOOL, U64, I64, F64 = 1, 2, 3, 6, 7, 10, 11, 12
_PRIMS = {U8: "u1", I8: "i1", U16: "u2", I16: "i2", U32: "u4", I32: "i4", F32: "f4", BOOL: "u1"}
_PRIMS_V2 = {**_PRIMS, U64: "u8", I64: "i8", F64: "f8"}


class _Layout:
    """The widths of a GGUF version and byte order, for writing records: v1 has 32-bit counts and lengths."""

    def __init__(self, version: int = 3, order: str = "<"):
        self.version, self.order = version, order
        self.n = "I" if version == 1 else "Q"  # counts, string lengths and array lengths

    def pack(self, fmt: str, *values) -> bytes:
        return struct.pack(self.order + fmt, *values)

    def str(self, b: bytes) -> bytes:
        return self.pack(self.n, len(b)) + b

    def head(self, n_tensors: int, n_kv: int) -> bytes:
        return b"GGUF" + self.pack("I" + 2 * self.n, self.version, n_tensors, n_kv)

    def array(self, item: int, values: list) -> bytes:
        """An ARRAY body (after the value type) of ``values``: bytes for STRING items, numbers otherwise."""
        if item == STRING:
            return self.pack("I" + self.n, item, len(values)) + b"".join(self.str(v) for v in values)
        dtype = np.dtype(_PRIMS_V2[item]).newbyteorder(self.order)
        return self.pack("I" + self.n, item, len(values)) + np.array(values, dtype=dtype).tobytes()


def _kv_cycle(path: str, size: int, bodies: list[bytes], lay: _Layout | None = None) -> int:
    """KV pairs ``x.k%08d`` whose values (type and value bytes) cycle through ``bodies``, about ``size`` bytes;
    how many array items they hold."""
    lay = lay or _Layout()
    key = b"x.k00000000"
    block = b"".join(lay.str(key) + body for body in bodies)
    digits_at = np.cumsum([0] + [len(lay.str(key)) + len(b) for b in bodies[:-1]]) + len(lay.str(key)) - 1
    cycles = max(1, size // len(block))
    n = cycles * len(bodies)
    out = np.tile(np.frombuffer(block, dtype=np.uint8), cycles)
    at = (np.arange(cycles)[:, None] * len(block) + digits_at).reshape(-1)
    index = np.arange(n)
    for k in range(8):
        out[at - k] = 48 + (index // 10**k) % 10
    arch = lay.str(b"general.architecture") + lay.pack("I", STRING) + lay.str(b"llama")
    with open(path, "wb") as fh:
        fh.write(lay.head(0, n + 1) + arch + out.tobytes())
    items = sum(_items(body, lay) for body in bodies)
    return items * cycles


def _items(body: bytes, lay: _Layout) -> int:
    (vtype,) = struct.unpack_from(lay.order + "I", body)
    if vtype != ARRAY:
        return 0
    return struct.unpack_from(lay.order + lay.n, body, 8)[0]


def _every_kind(lay: _Layout, nested: bool = True) -> list[bytes]:
    """One body of each value kind of ``lay``'s version: every scalar, a STRING, arrays of every primitive
    (0 to 3 items), arrays of 0 to 3 strings and, with ``nested``, an array of arrays."""
    prims = _PRIMS if lay.version == 1 else _PRIMS_V2
    bodies = []
    for vtype, code in prims.items():
        bodies.append(lay.pack("I", vtype) + np.array([1], dtype=np.dtype(code).newbyteorder(lay.order)).tobytes())
        for count in range(4):
            bodies.append(lay.pack("I", ARRAY) + lay.array(vtype, list(range(count))))
    bodies.append(lay.pack("I", STRING) + lay.str(b"abc"))
    for count in range(4):
        bodies.append(lay.pack("I", ARRAY) + lay.array(STRING, [b"s%d" % i for i in range(count)]))
    if nested:
        bodies.append(lay.pack("I", ARRAY) + lay.pack("I" + lay.n, ARRAY, 1) + lay.array(U8, [1, 2]))
    return bodies


def write_many_arrays(path: str, size: int) -> int:
    """KV pairs each ARRAY[UINT8] of one item."""
    return _kv_cycle(path, size, [struct.pack("<IIQ", ARRAY, U8, 1) + b"\x07"])


def write_many_empty_arrays(path: str, size: int) -> int:
    """KV pairs each ARRAY[UINT32] of no item."""
    return _kv_cycle(path, size, [struct.pack("<IIQ", ARRAY, U32, 0)])


def write_many_strarrays(path: str, size: int) -> int:
    """KV pairs each ARRAY[STRING] of one empty string."""
    return _kv_cycle(path, size, [struct.pack("<IIQQ", ARRAY, STRING, 1, 0)])


def write_many_strkvs(path: str, size: int) -> int:
    """KV pairs each STRING "abc"."""
    return _kv_cycle(path, size, [struct.pack("<IQ", STRING, 3) + b"abc"])


def write_bad_bools(path: str, size: int) -> int:
    """KV pairs each BOOL of value 5 (only 0 and 1 are valid: a finding each)."""
    return _kv_cycle(path, size, [struct.pack("<I", BOOL) + b"\x05"])


def write_prim_arrays(path: str, size: int) -> int:
    """KV pairs each an ARRAY of a primitive type, every type in turn, of 0 to 8 items."""
    lay = _Layout()
    bodies = [struct.pack("<I", ARRAY) + lay.array(t, list(range(c))) for t in _PRIMS_V2 for c in range(9)]
    return _kv_cycle(path, size, bodies, lay)


def write_mixed_kvs(path: str, size: int) -> int:
    """KV pairs of every value kind in turn (see _every_kind), one array of arrays among every 44 pairs."""
    return _kv_cycle(path, size, _every_kind(_Layout()))


def write_mixed_kvs_flat(path: str, size: int) -> int:
    """mixed-kvs without the array of arrays (which ggml refuses): a file ggml reads, to time against it."""
    return _kv_cycle(path, size, _every_kind(_Layout(), nested=False))


def write_mixed_kvs_be(path: str, size: int) -> int:
    """mixed-kvs in a big-endian v3 file."""
    lay = _Layout(3, ">")
    return _kv_cycle(path, size, _every_kind(lay), lay)


def write_mixed_kvs_v1(path: str, size: int) -> int:
    """mixed-kvs in a v1 file (32-bit lengths and counts, no 64-bit types), which ggml refuses."""
    lay = _Layout(1)
    return _kv_cycle(path, size, _every_kind(lay), lay)


def write_many_strarrays_long(path: str, size: int) -> int:
    """KV pairs each ARRAY[STRING] of 40 one-byte strings (past the strings a numpy window follows together)."""
    lay = _Layout()
    return _kv_cycle(path, size, [struct.pack("<I", ARRAY) + lay.array(STRING, [b"t"] * 40)], lay)


# -- files where every record breaks a rule (findings counted past the spec's limit) -------------------------
def _kv_records(n: int, key_prefix: bytes, tail: bytes, distinct: bool = True) -> np.ndarray:
    """n KV records keyed ``key_prefix`` + 8 digits (all the same digits unless ``distinct``), each followed by the
    same value type and value bytes ``tail``."""
    klen = len(key_prefix) + 8
    rec = np.zeros((n, 8 + klen + len(tail)), dtype=np.uint8)
    rec[:, 0] = klen
    rec[:, 8 : 8 + len(key_prefix)] = np.frombuffer(key_prefix, dtype=np.uint8)
    digits = np.arange(n) if distinct else np.zeros(n, dtype=np.int64)
    for k in range(8):
        rec[:, 8 + klen - 1 - k] = 48 + (digits // 10**k) % 10
    rec[:, 8 + klen :] = np.frombuffer(tail, dtype=np.uint8)
    return rec


def write_dup_keys(path: str, size: int) -> int:
    """size / 30 KV pairs all keyed ``x.dupkey00000000`` (UINT32): every one after the first a duplicate, which
    ggml refuses at the second."""
    n = size // 30
    with open(path, "wb") as fh:
        fh.write(
            _head(0, n + 1) + ARCH + _kv_records(n, b"x.dupkey", struct.pack("<I", U32) + bytes(4), False).tobytes()
        )
    return n


def _tensor_records(n: int, name_of: np.ndarray, ne0: int, offsets: np.ndarray, name_pad: int = 1) -> np.ndarray:
    """n tensor infos named ``t`` * name_pad + 8 digits of ``name_of``, 1 dimension of ``ne0``, F32, at ``offsets``."""
    nl = name_pad + 8
    w = 8 + nl + 4 + 8 + 4 + 8
    rec = np.zeros((n, w), dtype=np.uint8)
    rec[:, 0] = nl
    rec[:, 8 : 8 + name_pad] = ord("t")
    for k in range(8):
        rec[:, 8 + nl - 1 - k] = 48 + (name_of // 10**k) % 10
    p = 8 + nl
    rec[:, p] = 1  # n_dimensions
    rec[:, p + 4 : p + 12] = np.full(n, ne0, dtype="<u8").view(np.uint8).reshape(n, 8)
    rec[:, p + 16 : p + 24] = offsets.astype("<u8").view(np.uint8).reshape(n, 8)  # type F32 (0) before it
    return rec


def _write_tensors(path: str, rec: np.ndarray, data: int) -> None:
    with open(path, "wb") as fh:
        fh.write(_head(len(rec), 1) + ARCH + rec.tobytes())
        pos = fh.tell()
        fh.truncate(pos + (-pos) % 32 + data)  # sparse


def write_dup_tensors(path: str, size: int) -> int:
    """size / 41 tensor infos all named ``t00000000``, each at its own place: every one after the first a
    duplicate, which ggml refuses at the second."""
    n = size // 41
    _write_tensors(path, _tensor_records(n, np.zeros(n, dtype=np.int64), 1, np.arange(n) * 32), 32 * n)
    return n


def write_long_names(path: str, size: int) -> int:
    """size / 100 tensor infos named with 68 bytes (ggml's limit is 63): every one a finding, which ggml refuses
    at the first."""
    n = size // 100
    _write_tensors(path, _tensor_records(n, np.arange(n), 1, np.arange(n) * 32, name_pad=60), 32 * n)
    return n


def write_overlap_tensors(path: str, size: int) -> int:
    """size / 41 tensor infos of 1024 bytes all at offset 0: every one after the first overlaps the first and is
    out of the canonical order."""
    n = size // 41
    _write_tensors(path, _tensor_records(n, np.arange(n), 256, np.zeros(n, dtype=np.int64)), 1024)
    return n


def write_misaligned(path: str, size: int) -> int:
    """size / 41 tensor infos at offsets 32 * i + 1: every offset misaligned, which ggml refuses at the first."""
    n = size // 41
    _write_tensors(path, _tensor_records(n, np.arange(n), 1, np.arange(n) * 32 + 1), 32 * n + 32)
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
    "many-arrays": write_many_arrays,
    "many-empty-arrays": write_many_empty_arrays,
    "many-strarrays": write_many_strarrays,
    "many-strkvs": write_many_strkvs,
    "bad-bools": write_bad_bools,
    "prim-arrays": write_prim_arrays,
    "mixed-kvs": write_mixed_kvs,
    "mixed-kvs-flat": write_mixed_kvs_flat,
    "mixed-kvs-be": write_mixed_kvs_be,
    "mixed-kvs-v1": write_mixed_kvs_v1,
    "many-strarrays-long": write_many_strarrays_long,
    # every record breaks a rule: findings counted past the spec's findings_per_rule, never kept
    "dup-keys": write_dup_keys,
    "dup-tensors": write_dup_tensors,
    "long-names": write_long_names,
    "overlap-tensors": write_overlap_tensors,
    "misaligned": write_misaligned,
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
