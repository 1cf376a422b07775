"""``gguf-construct diff``: compare two GGUF files, exit status as ``diff`` (0 same, 1 different, 2 trouble)."""

from __future__ import annotations

import json

from ..filemodel.inputs import open_input
from ..operations.diff import _COMPARISONS, diff_files, differs, render_diff

__all__ = ["add_cli"]


def _cmd_diff(args) -> int:
    from ..base.jsonout import write_json

    a, b = open_input(args.a), open_input(args.b)
    try:
        result = diff_files(a, b, data=args.data)
    finally:
        a.close()
        b.close()
    if args.json:
        write_json(json.dumps(result, ensure_ascii=False, allow_nan=False, indent=1))
    else:
        if differs(result):  # identical files print nothing, as diff does
            if result["data_compared"]:
                print(f"# tensor data compared {_COMPARISONS[result['data_compared']]}")
            print(render_diff(result))
    return 1 if differs(result) else 0


def add_cli(subparsers) -> None:
    """Register the ``diff`` sub-command."""
    p = subparsers.add_parser(
        "diff",
        help="compare two GGUF files (header, keys, tensors); exit 1 when they differ",
        description="Compare B against A: header fields, metadata keys (- only in A, + only in B, ~ changed, "
        "with types) and tensors (removed, added, changed shape/type/offset; with --data, tensors "
        "whose bytes differ). Exit status as diff: 0 same, 1 different, 2 trouble.",
    )
    p.add_argument("a", help="the first GGUF file")
    p.add_argument("b", help="the second GGUF file")
    p.add_argument(
        "--data",
        action="store_true",
        help="also compare the tensors' data (reads both files): byte for byte, or by value when "
        "the byte orders differ",
    )
    p.add_argument("--json", action="store_true", help="the differences as JSON")
    p.set_defaults(func=_cmd_diff)
