"""The ``gguf-construct`` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import stat
import sys

from ..base.jsonout import write_json
from ..base.text import printable
from .._version import __version__
from ..base.errors import GGUFError
from .leases import SourceChanged, leased_inputs
from .pathhints import missing_hint

__all__ = ["main", "write_json"]

# the modules of commands/ that register sub-commands with an add_cli(subparsers) function, in help order
SUBCOMMAND_MODULES = (
    "check",
    "fuzz",
    "suite",
    "docs",
    "rule",
    "split",
    "edit",
    "diff",
    "hash",
    "sweep",
    "export",
    "warmup",
    "model",
    "completion",
)


def _cmd_dump(args) -> int:
    from ..base.jsonout import write_json_stream
    from ..filemodel.dump import file_summary, iter_markdown, iter_text, raw_value_pieces
    from ..filemodel.inputs import open_input

    gguf = open_input(args.file)
    if args.key is not None:
        if args.key not in gguf.metadata:
            print(f"gguf-construct: {args.file}: no key {args.key!r}", file=sys.stderr)
            return 1
        _write_pieces(raw_value_pieces(gguf.metadata.typed(args.key)), newline_once=True)
        return 0
    summary = file_summary(gguf, full=args.full, layout=True)
    if args.no_tensors and args.json:
        del summary["tensors"]  # tensor_count stays
    if args.json:  # a long value (with --full) is written a chunk at a time
        write_json_stream(summary, indent=1)
    elif args.markdown:
        _write_pieces(iter_markdown(summary, full=args.full, tensors=not args.no_tensors))
    else:
        _write_pieces(iter_text(summary, full=args.full, tensors=not args.no_tensors))
    if args.stats:
        from ..base.remote import print_transfer_stats

        print_transfer_stats([gguf.transfer] if gguf.transfer else [], "dump")
    return 0


def _write_pieces(pieces, newline_once: bool = False) -> None:
    """Print text given in pieces, then a newline (with ``newline_once``: only when the text does not end with
    one), never joining the pieces."""
    last = ""
    for piece in pieces:
        if piece:
            sys.stdout.write(piece)
            last = piece
    sys.stdout.write("" if newline_once and last.endswith("\n") else "\n")


def _cmd_convert(args) -> int:
    from ..filemodel.inputs import open_input

    gguf = open_input(args.input)
    gguf.convert(version=args.version, byte_order=args.byte_order)
    try:
        gguf.save(args.output)
    except ValueError as exc:  # e.g. a tensor of unknown layout cannot change byte order
        print(f"gguf-construct: {printable(args.input)}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}: GGUF v{gguf.version} {gguf.byte_order}-endian")
    return 0


def _cmd_demo(args) -> int:
    from ..operations.demo import run

    return 0 if run(directory=args.out) else 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command line (one sub-command per job)."""
    parser = argparse.ArgumentParser(
        prog="gguf-construct",
        description="GGUF files from a declarative spec: dump, edit, diff, split, merge, hash, convert, check.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "dump",
        help="show header, metadata and tensor table",
        description="Show FILE's header (version, byte order, alignment, file size, where the tensor "
        "data starts), every metadata key with its type and value (arrays with their "
        "item count) and the tensor table. Long values are summarised unless --full.",
    )
    p.add_argument(
        "file",
        help="the GGUF file or a URL (https://, hf://, s3://, ...; read header-only; a shard of a "
        "split model is shown alone); - reads standard input",
    )
    form = p.add_mutually_exclusive_group()
    form.add_argument(
        "--json",
        action="store_true",
        help="machine-readable, stable JSON (with file_size, data_offset and each key's offset)",
    )
    form.add_argument("--markdown", action="store_true", help="Markdown tables")
    form.add_argument(
        "--key",
        metavar="KEY",
        help="print only KEY's value, raw: a string exactly as stored (e.g. the chat template), "
        "an array as JSON; exit 1 when absent",
    )
    p.add_argument(
        "--full", action="store_true", help="everything: whole arrays and strings (no 8-item or 160-character cut)"
    )
    p.add_argument("--no-tensors", action="store_true", help="leave out the tensor table")
    p.add_argument("--stats", action="store_true", help="print the bytes fetched for a URL on stderr")
    p.set_defaults(func=_cmd_dump)

    p = sub.add_parser(
        "convert",
        help="rewrite between GGUF versions and byte orders",
        description="Rewrite INPUT as OUTPUT in another GGUF version and/or byte order (tensor data "
        "is swapped block by block as the spec declares); written atomically.",
    )
    p.add_argument("input", help="the GGUF file to read")
    p.add_argument("output", help="the GGUF file to write")
    from ..format import containerspec  # the versions and byte orders are the spec's

    p.add_argument(
        "--version", type=int, choices=containerspec.versions(), help="GGUF version of the output (default: as input)"
    )
    p.add_argument(
        "--byte-order", choices=containerspec.BYTE_ORDERS, help="byte order of the output (default: as input)"
    )
    p.set_defaults(func=_cmd_convert)

    p = sub.add_parser(
        "demo",
        help="write, load and verify example files in every version and byte order",
        description="Write small model files with several tensor types in every version and byte "
        "order, load them back and verify byte-exact round trips and conversions.",
    )
    p.add_argument("--out", help="keep the example files in this directory")
    p.set_defaults(func=_cmd_demo)

    for name in SUBCOMMAND_MODULES:  # a broken import is an error here, never a silently missing command
        importlib.import_module(f"gguf_construct.commands.{name}").add_cli(sub)
    return parser


def innermost_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the sub-command ``args`` were parsed for (``suite run``'s for ``suite run ...``)."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[name]


class _QuietWhenClosed:
    """Standard output that goes quiet when its reader leaves (``| head -1``): the command runs on to its own exit
    status (a failing check still exits 1) instead of dying on a broken pipe."""

    closed_pipe = False

    def __init__(self, stream):
        self._stream = stream

    def _silence(self) -> None:
        _QuietWhenClosed.closed_pipe = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # Python's own flush at exit then has somewhere to go
        os.close(devnull)

    def write(self, data):
        if not _QuietWhenClosed.closed_pipe:
            try:
                return self._stream.write(data)
            except BrokenPipeError:
                self._silence()
        return len(data)

    def flush(self) -> None:
        if not _QuietWhenClosed.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()

    @property
    def buffer(self):
        inner = getattr(self._stream, "buffer", None)
        return None if inner is None else _QuietWhenClosed(inner)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def regular_file_problem(path: str) -> str | None:
    """Why ``path``, when it exists, is no file to read or replace (a folder, a pipe, a device, a symlink loop), or
    None: checked before reading it, so that a FIFO nobody writes cannot block the command."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return os_error_text(exc)
    return None if stat.S_ISREG(mode) else f"{printable(path)}: not a regular file"


def os_error_text(exc: OSError) -> str:
    """An OSError in the project's words: ``FILE: no such file or directory`` (no ``[Errno 2]``)."""
    text = exc.strerror or str(exc)
    text = text[:1].lower() + text[1:] if text[1:2].islower() else text
    name = exc.filename if isinstance(exc.filename, (str, bytes, os.PathLike)) else None  # never a descriptor
    if name is None:
        return text
    hint = missing_hint(os.fsdecode(name)) if isinstance(exc, (FileNotFoundError, NotADirectoryError)) else ""
    return f"{printable(os.fsdecode(name))}: {text}{hint}"


def _interrupted(exc: BaseException) -> bool:
    """``exc`` was caused, directly or down its chain, by a KeyboardInterrupt."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False


def _file_taken_for_an_option(argv: list[str]) -> str | None:
    """The first word before ``--`` that starts with ``-``, is no option of any command and names an existing file
    (``check -model.gguf``): argparse would take it for an unknown option and ask for a path."""
    for word in argv:
        if word == "--":
            return None
        looks_like_a_name = "." in word or "/" in word  # no short option (-j, -vv) has either
        if word.startswith("-") and not word.startswith("--") and looks_like_a_name and os.path.isfile(word):
            return word
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 on usage, input or I/O errors, 130 when interrupted)."""
    try:
        dashed = _file_taken_for_an_option(sys.argv[1:] if argv is None else argv)
        if dashed is not None:
            print(
                f"gguf-construct: {printable(dashed)} is read as an option; name the file ./{printable(dashed)} "
                f"or put -- before it",
                file=sys.stderr,
            )
            return 2
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the sub-command's parser, with its usage (the top level's would not help)
            innermost_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
        for stream in (sys.stdout, sys.stderr):  # names and keys from hostile files must not crash the printing
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")
        if sys.stdout is sys.__stdout__ and sys.stdout is not None:
            sys.stdout = _QuietWhenClosed(sys.stdout)
        try:
            with leased_inputs():
                return args.func(args)
        finally:
            if isinstance(sys.stdout, _QuietWhenClosed):
                sys.stdout.flush()
                sys.stdout = sys.stdout._stream
    except (KeyboardInterrupt, ImportError) as exc:
        if not _interrupted(exc):  # numpy turns an interrupt while its C core loads into an ImportError
            raise
        print("gguf-construct: interrupted", file=sys.stderr)
        return 130
    except SourceChanged as exc:
        print(
            f"gguf-construct: {printable(exc.path)}: another process opened it for writing or truncated it while it "
            "was read; stopped (nothing written)",
            file=sys.stderr,
        )
        return 2
    except GGUFError as exc:
        about = f"{printable(exc.file)}: " if exc.file else ""
        print(f"gguf-construct: {about}{exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # standard output went away outside the guarded stream: quiet, as `| head` expects
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"gguf-construct: {os_error_text(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
