"""``gguf-construct sweep``: check many local or remote files in parallel into a results table."""

from __future__ import annotations

import os
import sys

from ..operations.sweep import ENGINES, PROFILES, _output_problem, run_sweep

__all__ = ["add_cli"]


def add_cli(subparsers) -> None:
    """Register ``sweep`` on the sub-parsers of the main command line."""
    p = subparsers.add_parser(
        "sweep",
        help="check many files or URLs in parallel into a results table",
        description="Check many local or remote GGUF files in parallel, one row per file "
        "(Parquet or JSON Lines); files already in the output are skipped.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="LIST_OR_GLOB",
        help="files, directories, globs, URLs (globs too, via fsspec) or .txt lists of them",
    )
    p.add_argument("--out", required=True, help="results.parquet or results.jsonl")
    p.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default="local",
        help="local: a process pool; dask: a dask.distributed cluster (the cluster extra)",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler address (default: a LocalCluster)")
    p.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 2,
        metavar="N",
        help="processes (local) or LocalCluster workers (dask)",
    )
    p.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated profiles to check under")
    p.add_argument("--summary", action="store_true", help="also store each file's dump --json head")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per network read (URLs)")
    p.add_argument("--retries", type=int, default=3, help="retries of a failed network read (URLs)")
    p.set_defaults(func=_run_cli)


def _run_cli(args) -> int:
    profiles = tuple(p for p in args.profiles.split(",") if p)
    bad = [p for p in profiles if p not in PROFILES]
    if bad or not profiles or args.jobs < 1:
        print(
            f"gguf-construct sweep: profiles must be among {','.join(PROFILES)} and --jobs at least 1", file=sys.stderr
        )
        return 2
    problem = _output_problem(args.out)
    if problem:
        print(f"gguf-construct sweep: {problem}", file=sys.stderr)
        return 2
    totals = run_sweep(
        args.inputs,
        args.out,
        engine=args.engine,
        jobs=args.jobs,
        scheduler=args.scheduler,
        profiles=profiles,
        summary=args.summary,
        remote_options={"timeout": args.timeout, "retries": args.retries},
        progress=sys.stderr.isatty(),
    )
    print(
        f"gguf-construct sweep: {totals['done']} files checked, {totals['skipped']} already in {args.out}, "
        f"{totals['errors']} unreadable; {totals['files_per_second']:.2f} files/s, "
        f"{totals['bytes_per_file']:,.0f} bytes fetched per file",
        file=sys.stderr,
    )
    return 0 if totals["files"] else 2
