"""The ``gguf-construct`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__
from .errors import GGUFError

__all__ = ["main", "write_json"]


def write_json(text: str) -> None:
    """Print JSON text to stdout as UTF-8 (RFC 8259) whatever the locale; lone surrogates (strings of invalid UTF-8
    read with surrogateescape) become JSON ``\\udcXX`` escapes instead of an encoding error."""
    data = (text + "\n").encode("utf-8", "backslashreplace")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (e.g. captured): ASCII JSON is valid everywhere
        sys.stdout.write(json.dumps(json.loads(data), ensure_ascii=True, indent=1) + "\n")
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def _cmd_dump(args) -> int:
    from .dump import file_summary, render_text
    from .model import load

    gguf = load(sys.stdin.buffer if args.file == "-" else args.file)  # - is standard input (read to its end)
    summary = file_summary(gguf, full=args.full)
    if args.json:
        write_json(json.dumps(summary, ensure_ascii=False, allow_nan=False, indent=1))
    else:
        print(render_text(summary))
    return 0


def _cmd_convert(args) -> int:
    from .model import load

    gguf = load(args.input)
    gguf.convert(version=args.version, byte_order=args.byte_order)
    gguf.save(args.output)
    print(f"wrote {args.output}: GGUF v{gguf.version} {gguf.byte_order}-endian")
    return 0


def _cmd_demo(args) -> int:
    from .demo import run

    return 0 if run(directory=args.out) else 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command line (one sub-command per job)."""
    parser = argparse.ArgumentParser(prog="gguf-construct",
                                     description="GGUF files from a declarative spec: dump, convert, check.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("dump", help="show header, metadata and tensor table")
    p.add_argument("file", help="a GGUF file; - reads standard input")
    p.add_argument("--json", action="store_true", help="machine-readable, stable JSON")
    p.add_argument("--full", action="store_true", help="do not summarise long arrays")
    p.set_defaults(func=_cmd_dump)

    p = sub.add_parser("convert", help="rewrite between GGUF versions and byte orders")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--version", type=int, choices=(1, 2, 3))
    p.add_argument("--byte-order", choices=("little", "big"))
    p.set_defaults(func=_cmd_convert)

    p = sub.add_parser("demo", help="write, load and verify example files in every version and byte order")
    p.add_argument("--out", help="keep the example files in this directory")
    p.set_defaults(func=_cmd_demo)

    for extra in ("checker", "fuzzing", "docgen"):
        try:
            module = __import__(f"gguf_construct.{extra}", fromlist=["add_cli"])
        except ImportError:
            continue
        add_cli = getattr(module, "add_cli", None)
        if add_cli is not None:
            add_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 on usage, input or I/O errors)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # names and keys from hostile files must not crash the printing
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        return args.func(args)
    except GGUFError as exc:
        print(f"gguf-construct: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: not an error; keep Python's exit quiet too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"gguf-construct: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
