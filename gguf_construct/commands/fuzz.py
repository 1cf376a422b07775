"""``gguf-construct fuzz``: differential fuzzing of a GGUF reader against the spec (:mod:`..fuzzing`)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading

__all__ = ["add_cli", "cli_main"]


class _StickyInterrupt:
    """Ctrl-C that cannot be lost: the handler records it before raising KeyboardInterrupt, so an interrupt that
    lands in a callback whose exceptions Python ignores (logging's at-fork hook, a garbage-collector callback of
    Hypothesis) still stops the run at its next file (:meth:`seen` is the runner's ``should_stop``), and the
    "Exception ignored ... KeyboardInterrupt" report of such a callback is not printed."""

    def __init__(self) -> None:
        self.interrupted = False
        self._handler = None
        self._hook = None

    def seen(self) -> bool:
        return self.interrupted

    def _on_sigint(self, signum, frame) -> None:
        self.interrupted = True
        raise KeyboardInterrupt

    def _unraisable(self, unraisable) -> None:
        if self.interrupted and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return
        self._hook(unraisable)

    def __enter__(self) -> "_StickyInterrupt":
        if threading.current_thread() is threading.main_thread():
            self._handler = signal.signal(signal.SIGINT, self._on_sigint)
        self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        if self._handler is not None:
            signal.signal(signal.SIGINT, self._handler)
        sys.unraisablehook = self._hook


# OSErrors of the system (no message of ours): said as "PATH: file exists", without "[Errno 17]"
_PLAIN_OS_ERRORS = (OSError, FileExistsError, FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def cli_main(args) -> int:
    """Run ``gguf-construct fuzz`` with parsed arguments; exit 1 when the target disagrees with the oracle.
    Interrupted, it stops the target and leaves no --out it created and no scratch file behind."""
    from ..fuzzing.report import prepare_out
    from ..fuzzing.runner import run
    from ..fuzzing.targets import make_target

    created = bool(args.out) and not os.path.exists(args.out)
    target = None
    with _StickyInterrupt() as interrupt:
        try:
            try:
                versions, byte_orders, types = _supported(args)
                target = make_target(args.target, timeout=args.timeout, memory=args.memory << 20)
                target.start()
                if args.out:
                    prepare_out(args.out)  # refuse or clean before the run, not after it
            except (ValueError, OSError) as exc:
                from .main import os_error_text

                text = os_error_text(exc) if type(exc) in _PLAIN_OS_ERRORS else str(exc)
                print(f"gguf-construct fuzz: {text}", file=sys.stderr)
                return 2
            results = run(
                target,
                count=args.count,
                seed=args.seed,
                profile=args.profile,
                out_dir=args.out,
                minimize=not args.no_minimize,
                versions=versions,
                byte_orders=byte_orders,
                tensor_types=types,
                should_stop=interrupt.seen,
            )
            if interrupt.seen():
                raise KeyboardInterrupt
        except BaseException:
            if target is not None:
                target.close()
            if created and os.path.isdir(args.out):
                shutil.rmtree(args.out, ignore_errors=True)  # an interrupted run leaves no --out it made
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
    p = subparsers.add_parser(
        "fuzz",
        help="differential fuzzing of a GGUF reader against the spec",
        description="Generate valid and invalid GGUF files, run TARGET on each and report "
        "where it disagrees with the spec (false accepts/rejects, crashes, "
        "hangs, wrong values), with minimised reproducers.",
    )
    p.add_argument(
        "--target",
        required=True,
        help="gguf-py | ggml:LIBGGML_BASE_SO | llama:LIBLLAMA_SO (fed whole models; use --profile "
        "llama.cpp) | cmd:'PROGRAM ARGS {file}' | python:module:function",
    )
    p.add_argument("--count", type=int, default=1000, help="files to generate (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (runs are reproducible)")
    p.add_argument(
        "--profile",
        choices=("spec", "ggml", "llama.cpp"),
        default="spec",
        help="oracle verdicts: the spec's (default), ggml's reader's or llama.cpp's model loader's",
    )
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per file before a hang is declared")
    p.add_argument("--memory", type=int, default=2048, help="memory limit of the target in MiB (RLIMIT_AS)")
    p.add_argument(
        "--out",
        help="directory for reproducers (.gguf) and summary.json; must be new, empty or hold "
        "only an earlier run's output (which is replaced)",
    )
    p.add_argument("--no-minimize", action="store_true", help="keep reproducers as generated")
    p.add_argument(
        "--versions",
        metavar="LIST",
        help="GGUF versions the target reads, e.g. 2,3 (default: all); files of other versions are not generated",
    )
    p.add_argument("--byte-orders", metavar="LIST", help="byte orders the target reads: little, big or both")
    p.add_argument(
        "--types",
        metavar="LIST",
        help="tensor types the target decodes, e.g. F32,F16,Q8_0 (default: every current type)",
    )
    p.set_defaults(func=cli_main)
