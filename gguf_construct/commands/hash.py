"""``gguf-construct hash``: tensor-data hashes in llama.cpp gguf-hash's line format."""

from __future__ import annotations

import sys

from ..filemodel.inputs import open_input
from ..operations.hashing import ALGORITHMS, hash_lines

__all__ = ["add_cli"]


def _cmd_hash(args) -> int:
    algos = args.algo or ["xxh64"]
    if args.all:
        algos = list(ALGORITHMS)
    gguf = open_input(args.file, shards=args.set)
    try:
        for line in hash_lines(gguf, args.file, algos, per_tensor=args.per_tensor, uuid=args.uuid):
            print(line)
            sys.stdout.flush()
    finally:
        gguf.close()
    return 0


def add_cli(subparsers) -> None:
    """Register the ``hash`` sub-command."""
    p = subparsers.add_parser(
        "hash",
        help="hash the tensor data (per tensor and whole model), as llama.cpp's gguf-hash",
        description="Hash the tensor data of FILE in llama.cpp gguf-hash's line format "
        "('ALGO      HEX  FILE:TENSOR' per tensor, 'ALGO      HEX  FILE' for the model). The model "
        "hash covers every tensor's bytes in order and ignores metadata, so it survives metadata edits. "
        "xxh64 is fast with the xxhash package (pip install 'gguf-construct[hash]'), else pure Python.",
    )
    p.add_argument("file", help="the GGUF file")
    p.add_argument(
        "--algo",
        action="append",
        choices=ALGORITHMS,
        help="hash algorithm (repeat for several; default xxh64, as gguf-hash)",
    )
    p.add_argument("--all", action="store_true", help="every algorithm: xxh64, sha1 and sha256")
    p.add_argument("--per-tensor", action="store_true", help="also one line per tensor (before the model line)")
    p.add_argument("--uuid", action="store_true", help="also the model's UUIDv5 (llama.cpp's namespace)")
    p.add_argument(
        "--set",
        action="store_true",
        help="when FILE is a shard of a split model, hash the whole model (every shard's tensors, in "
        "order): its model hash equals the unsplit file's",
    )
    p.set_defaults(func=_cmd_hash)
