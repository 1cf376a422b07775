"""``gguf-construct fuzz``: differential fuzzing of a GGUF reader against the spec (:mod:`..fuzzing`)."""

from __future__ import annotations

import os
import sys

__all__ = ["add_cli", "cli_main"]


def cli_main(args) -> int:
    """Run ``gguf-construct fuzz`` with parsed arguments; exit 1 when the target disagrees with the oracle."""
    from ..fuzzing.runner import run
    from ..fuzzing.targets import make_target

    from ..fuzzing.report import prepare_out

    created = bool(args.out) and not os.path.exists(args.out)
    try:
        versions, byte_orders, types = _supported(args)
        target = make_target(args.target, timeout=args.timeout, memory=args.memory << 20)
        target.start()
        if args.out:
            prepare_out(args.out)  # refuse or clean before the run, not after it
    except (ValueError, OSError) as exc:
        print(f"gguf-construct fuzz: {exc}", file=sys.stderr)
        return 2
    try:
        results = run(target, count=args.count, seed=args.seed, profile=args.profile, out_dir=args.out,
                      minimize=not args.no_minimize, versions=versions, byte_orders=byte_orders,
                      tensor_types=types)
    except BaseException:
        if created and os.path.isdir(args.out) and not os.listdir(args.out):
            os.rmdir(args.out)  # an interrupted run leaves no empty --out behind
        raise
    print(results.table())
    if args.out:
        print(f"reproducers and summary.json in {args.out}")
    return 1 if results.findings else 0


def _supported(args) -> tuple[list[int] | None, list[str] | None, list[str] | None]:
    """The versions, byte orders and tensor types the target claims to read (None: all), checked against the
    spec; ValueError names a value the spec does not define."""
    from ..format import spec as _spec
    from ..format import structs

    def items(text):
        return [x.strip() for x in text.split(",") if x.strip()] if text else None

    versions = items(args.versions)
    if versions is not None:
        try:
            versions = [int(v) for v in versions]
        except ValueError:
            raise ValueError(f"--versions takes numbers, got {args.versions!r}") from None
        bad = [v for v in versions if v not in structs.versions()]
        if bad:
            raise ValueError(f"--versions: GGUF has versions {', '.join(map(str, structs.versions()))}, not {bad[0]}")
    orders = items(args.byte_orders)
    if orders is not None and not set(orders) <= set(structs.BYTE_ORDERS):
        raise ValueError(f"--byte-orders takes {', '.join(structs.BYTE_ORDERS)}")
    types = items(args.types)
    if types is not None:
        known = {t.name for t in _spec.tensor_types() if t.is_current}
        bad = [t for t in types if t not in known]
        if bad:
            raise ValueError(f"--types: {bad[0]!r} is not a current tensor type")
    return versions, orders, types


def add_cli(subparsers) -> None:
    """Register the ``fuzz`` sub-command on the main command line's sub-parsers."""
    p = subparsers.add_parser("fuzz", help="differential fuzzing of a GGUF reader against the spec",
                              description="Generate valid and invalid GGUF files, run TARGET on each and report "
                                          "where it disagrees with the spec (false accepts/rejects, crashes, "
                                          "hangs, wrong values), with minimised reproducers.")
    p.add_argument("--target", required=True,
                   help="gguf-py | ggml:LIBGGML_BASE_SO | llama:LIBLLAMA_SO (fed whole models; use --profile "
                        "llama.cpp) | cmd:'PROGRAM ARGS {file}' | python:module:function")
    p.add_argument("--count", type=int, default=1000, help="files to generate (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (runs are reproducible)")
    p.add_argument("--profile", choices=("spec", "ggml", "llama.cpp"), default="spec",
                   help="oracle verdicts: the spec's (default), ggml's reader's or llama.cpp's model loader's")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per file before a hang is declared")
    p.add_argument("--memory", type=int, default=2048, help="memory limit of the target in MiB (RLIMIT_AS)")
    p.add_argument("--out", help="directory for reproducers (.gguf) and summary.json; must be new, empty or hold "
                                 "only an earlier run's output (which is replaced)")
    p.add_argument("--no-minimize", action="store_true", help="keep reproducers as generated")
    p.add_argument("--versions", metavar="LIST",
                   help="GGUF versions the target reads, e.g. 2,3 (default: all); files of other versions are not "
                        "generated")
    p.add_argument("--byte-orders", metavar="LIST", help="byte orders the target reads: little, big or both")
    p.add_argument("--types", metavar="LIST",
                   help="tensor types the target decodes, e.g. F32,F16,Q8_0 (default: every current type)")
    p.set_defaults(func=cli_main)

