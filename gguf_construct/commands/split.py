"""``gguf-construct split`` and ``merge``: shards as llama.cpp's gguf-split writes them, and back."""

from __future__ import annotations

import os
import sys

from ..filemodel.inputs import open_input
from ..format import keynames
from ..operations.split import merge_shards, parse_size, split_model

__all__ = ["add_cli"]


def _human(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"


def _cmd_split(args) -> int:
    if args.max_size is not None and args.max_tensors is not None:
        print("gguf-construct split: give --max-size or --max-tensors, not both", file=sys.stderr)
        return 2
    try:
        max_size = parse_size(args.max_size) if args.max_size is not None else None
    except ValueError as exc:
        print(f"gguf-construct split: {exc}", file=sys.stderr)
        return 2
    if args.max_tensors is not None and args.max_tensors <= 0:
        print("gguf-construct split: --max-tensors must be positive", file=sys.stderr)
        return 2
    source = open_input(args.input)
    shards = split_model(
        source,
        args.prefix,
        max_size=max_size,
        max_tensors=args.max_tensors,
        no_tensor_first_split=args.no_tensor_first_split,
        dry_run=args.dry_run,
    )
    verb = "would write" if args.dry_run else "wrote"
    for path, shard in shards:
        print(f"{verb} {path}: {len(shard.tensors)} tensors, {_human(sum(t.nbytes for t in shard.tensors))}")
    print(f"{len(shards)} shards, {len(source.tensors)} tensors")
    return 0


def _cmd_merge(args) -> int:
    if os.path.exists(args.output) and not args.force:
        print(f"gguf-construct merge: {args.output} exists (use --force to replace it)", file=sys.stderr)
        return 2
    merged = merge_shards(args.first_shard, args.output, dry_run=args.dry_run)
    verb = "would write" if args.dry_run else "wrote"
    print(f"{verb} {args.output}: {len(merged.tensors)} tensors")
    return 0


def add_cli(subparsers) -> None:
    """Register the ``split`` and ``merge`` sub-commands."""
    p = subparsers.add_parser(
        "split",
        help="split a model into shards (as llama.cpp's gguf-split)",
        description="Write IN as shards PREFIX-00001-of-0000N.gguf, byte-compatible with llama.cpp's gguf-split: "
        f"the first shard holds all metadata, every shard gets {keynames.SPLIT_NO}, {keynames.SPLIT_COUNT} and "
        f"{keynames.SPLIT_TENSORS_COUNT}. Without a limit, shards hold 128 tensors each (gguf-split's default).",
    )
    p.add_argument("input", help="the GGUF file to split")
    p.add_argument("prefix", help="output path prefix; shards are PREFIX-00001-of-0000N.gguf")
    p.add_argument(
        "--max-size",
        metavar="SIZE",
        help="at most SIZE bytes of tensor data per shard, e.g. 2G or 500M (decimal units; a larger "
        "tensor gets a shard of its own)",
    )
    p.add_argument("--max-tensors", type=int, metavar="N", help="at most N tensors per shard")
    p.add_argument(
        "--no-tensor-first-split", action="store_true", help="the first shard holds only the metadata, no tensors"
    )
    p.add_argument("--dry-run", action="store_true", help="print the shards without writing them")
    p.set_defaults(func=_cmd_split)

    p = subparsers.add_parser(
        "merge",
        help="merge the shards of a split model into one file",
        description="Merge a split model into OUT, as llama.cpp's gguf-split --merge: name the first shard "
        "(...-00001-of-0000N.gguf); the others are found next to it. The metadata is the first "
        f"shard's, with {keynames.SPLIT_COUNT} set to 0.",
    )
    p.add_argument("first_shard", help="the first shard, ...-00001-of-0000N.gguf")
    p.add_argument("output", help="the merged GGUF file to write (atomically)")
    p.add_argument("--force", action="store_true", help="replace OUT when it exists")
    p.add_argument("--dry-run", action="store_true", help="read every shard but write nothing")
    p.set_defaults(func=_cmd_merge)
