"""``gguf-construct warm-up``: compiling the compiled codecs ahead of time (``codecs.warm_up``)."""

from __future__ import annotations

import sys

from ..codecs import warm_up

__all__ = ["add_cli"]


def _cmd_warm_up(args) -> int:
    try:
        done = warm_up(args.types or None, decode=not args.encode_only, encode=not args.decode_only)
    except (ImportError, ValueError) as exc:
        print(f"gguf-construct: {exc}", file=sys.stderr)
        return 2
    from ..codecs.compiled._jit import cache_folder  # only now that warm_up found numba

    for k in done:
        if not args.quiet:
            print(f"{k.type:8s} {k.direction:6s} {k.seconds:7.2f} s  {'compiled' if k.compiled else 'cached'}")
    total = sum(k.seconds for k in done)
    n_compiled = sum(k.compiled for k in done)
    where = cache_folder() or "numba's default cache folder (next to the package, or NUMBA_CACHE_DIR)"
    print(
        f"{len(done)} kernels ready in {total:.1f} s ({n_compiled} compiled, {len(done) - n_compiled} from the "
        f"cache); cache: {where}"
    )
    return 0


def add_cli(subparsers) -> None:
    """Register the ``warm-up`` sub-command."""
    p = subparsers.add_parser(
        "warm-up",
        help="compile the compiled codecs ahead of time (needs the [fast] extra)",
        description="Compile the numba kernels of the tensor codecs now, so that a service or a CI job does not "
        "pay their compile time (up to seconds per type) on first use; they are cached on disk, once "
        "per machine: next to the package when it is writable, else in ~/.cache/gguf-construct "
        "($XDG_CACHE_HOME, or $GGUF_CONSTRUCT_CACHE_DIR). Prints each kernel's time and whether it "
        "was compiled or loaded from the cache.",
    )
    p.add_argument("types", nargs="*", help="tensor type names (default: every type with a compiled kernel)")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--decode-only", action="store_true", help="only the decoders")
    direction.add_argument("--encode-only", action="store_true", help="only the encoders")
    p.add_argument("--quiet", action="store_true", help="only the summary line")
    p.set_defaults(func=_cmd_warm_up)
