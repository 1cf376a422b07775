"""``gguf-construct export``: GGUF for other tools (Kaitai Struct, ImHex, libmagic, shared-mime-info)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..export import EXPORTS, _write_atomic, check_exports, default_exports_dir, render, write_exports
from ..format import spec as _spec

__all__ = ["add_cli"]


def _cmd_export(args: argparse.Namespace) -> int:
    if args.what != "all":
        if args.check:
            print("gguf-construct: --check goes with `export all`", file=sys.stderr)
            return 2
        text = render(args.what)
        if args.out:
            _write_atomic(Path(args.out), text)
            print(f"wrote {args.out}")
        else:
            sys.stdout.write(text)
        return 0
    if args.check:
        why = _spec.nothing_to_check(args.out, "exports")
        if why:
            print(f"gguf-construct: {why}", file=sys.stderr)
            return 2
    out = Path(args.out) if args.out else default_exports_dir()
    if args.check:
        problems = check_exports(out)
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print(
                "gguf-construct: exports are stale; run `gguf-construct export all` and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"{out}: up to date")
        return 0
    changed, notes = write_exports(out)
    for path in changed:
        print(f"wrote {path}")
    for note in notes:
        print(note, file=sys.stderr)
    if not changed:
        print(f"{out}: up to date")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the ``export`` sub-command on the CLI's subparsers."""
    p = subparsers.add_parser("export", help="GGUF for other tools: Kaitai Struct, ImHex, libmagic, shared-mime-info")
    p.add_argument(
        "what",
        choices=(*EXPORTS, "all"),
        help="ksy (Kaitai Struct), hexpat (ImHex), magic (libmagic), mime (shared-mime-info), "
        "or all of them into exports/",
    )
    p.add_argument(
        "--out",
        default=None,
        help="file to write (default: stdout); for `all` the folder (default: exports/ beside spec/)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="with `all`: write nothing; exit 1 listing the exports that differ from what the spec generates",
    )
    p.set_defaults(func=_cmd_export)
