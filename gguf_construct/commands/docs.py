"""``gguf-construct docs``: the Markdown reference in docs/ (and the HTML site) generated from spec/."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..format import spec as _spec

__all__ = ["add_cli"]


def _cmd_site(out: str) -> int:
    from ..docgen import write_docs
    from ..docgen.site import DOCS_EXTRA_HINT, build_site, missing_requirements

    if os.path.lexists(out) and not os.path.isdir(out):  # said before the build, not after it (12 s here)
        from .main import os_error_text

        try:
            os.stat(out)
            why = f"{out}: exists and is no folder"
        except OSError as exc:  # a symlink loop
            why = os_error_text(exc)
        print(f"gguf-construct: {why}", file=sys.stderr)
        return 2
    if missing_requirements():
        print(f"gguf-construct: {DOCS_EXTRA_HINT}", file=sys.stderr)
        return 2
    seconds, n = build_site(out, write_docs)
    print(
        f"wrote {out}: {n} pages in {seconds:.1f} s (open {Path(out) / 'index.html'}; search needs it served, "
        f"e.g. python -m http.server -d {out})"
    )
    return 0


def _cmd_docs(args: argparse.Namespace) -> int:
    from ..docgen import check_docs, default_out_dir, write_docs  # here: every other command starts without it

    if getattr(args, "site", None):
        if args.check or args.out is not None:
            print("gguf-construct: docs --site builds the HTML site only (no --out, no --check)", file=sys.stderr)
            return 2
        return _cmd_site(args.site)
    if args.check:
        why = _spec.nothing_to_check(args.out, "docs")
        if why:
            print(f"gguf-construct: {why}", file=sys.stderr)
            return 2
    if args.out is None:
        args.out = default_out_dir()
    # the docs of a source checkout: its exports/ and the key-name constants module too
    exports = _spec.in_checkout() and os.path.realpath(args.out) == os.path.realpath(default_out_dir())
    if args.check:
        problems = check_docs(args.out)
        if exports:
            from ..docgen.keynames import check_keynames
            from ..export import check_exports

            problems += check_exports(compile_parser=False) + check_keynames()
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print("gguf-construct: docs are stale; run `gguf-construct docs` and commit the result", file=sys.stderr)
            return 1
        print(f"{args.out}: up to date")
        return 0
    changed = write_docs(args.out)
    if exports:
        from ..docgen.keynames import write_keynames
        from ..export import write_exports

        written, notes = write_exports()
        written += write_keynames()
        changed += written
        for note in notes:
            print(note, file=sys.stderr)
    for path in changed:
        print(f"wrote {path}")
    if not changed:
        print(f"{args.out}: up to date")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the ``docs`` sub-command on the CLI's subparsers."""
    p = subparsers.add_parser(
        "docs",
        help="render the Markdown reference in docs/ from spec/",
        description="Render the GGUF reference (Markdown) in docs/ from spec/; hand-written "
        "prose outside the generated blocks is kept.",
    )
    p.add_argument(
        "--out", default=None, help="output directory (default: docs/ beside spec/ in a source checkout, else ./docs)"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 listing the files that differ from what the spec generates",
    )
    p.add_argument(
        "--site",
        metavar="OUT",
        help="build the reference as a static HTML site with navigation and search into OUT (MkDocs "
        'with the Material theme: pip install "gguf-construct[docs]"); docs/ is not touched',
    )
    p.set_defaults(func=_cmd_docs)
