"""``gguf-construct suite``: write the conformance suite, score a reader on it, render the matrix of readers."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

__all__ = ["add_cli"]


def _cmd_write(args: argparse.Namespace) -> int:
    from ..suite.manifest import write_suite

    os.makedirs(args.dir, exist_ok=True)
    manifest = write_suite(args.dir, large=args.large)
    n = len(manifest["cases"])
    large = sum(1 for c in manifest["cases"] if c.get("large"))
    print(
        f"{n} cases{f' ({large} large)' if large else ''}, {manifest['total_bytes']:,} bytes of GGUF files, "
        f"digest {manifest['digest'][:16]} in {args.dir}"
    )
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from ..fuzzing.targets import make_target
    from ..suite.matrix import counts_line, record
    from ..suite.runner import load_manifest, progress_printer, run_suite, summarise

    try:
        manifest = load_manifest(args.dir)
        target = make_target(args.target, timeout=args.timeout, memory=args.memory << 20)
    except ValueError as exc:
        print(f"gguf-construct: {exc}", file=sys.stderr)
        return 2
    results = run_suite(
        args.dir, target, profile=args.profile, only=args.only, progress=None if args.quiet else progress_printer()
    )
    summary = summarise(results)
    failures = [r for r in results if r.result != "pass"]
    if args.json:
        from ..base.jsonout import write_json

        write_json(
            json.dumps(
                {"profile": args.profile, "summary": summary, "cases": [r.to_json() for r in results]},
                ensure_ascii=False,
                indent=1,
            )
        )
    else:
        for r in failures[: args.show]:
            extra = f": {r.differences[0]}" if r.differences else (f": {r.detail[:160]}" if r.detail else "")
            print(f"{r.result:13} {r.file} (expected {r.expected}, got {r.outcome}){extra}")
        if len(failures) > args.show:
            print(f"... and {len(failures) - args.show} more (--show N, or --json)")
        print(counts_line(summary))
    if args.record:
        record(
            args.results,
            args.record,
            version=args.reader_version,
            adapter=args.adapter or args.record,
            profile=args.profile,
            digest=manifest["digest"],
            cases=len(manifest["cases"]),
            results=results,
            notes=args.notes,
        )
    return 1 if failures else 0


def _cmd_matrix(args: argparse.Namespace) -> int:
    from .main import regular_file_problem

    for path in (args.results, args.compare):
        problem = path and regular_file_problem(path)
        if problem:
            print(f"gguf-construct: {problem}", file=sys.stderr)
            return 2
    try:
        return _matrix(args)
    except ValueError as exc:  # a results file that is no JSON (json.JSONDecodeError)
        print(f"gguf-construct: {exc}", file=sys.stderr)
        return 2


def _matrix(args: argparse.Namespace) -> int:
    from ..suite.matrix import check_matrix, compare_results, load_results, write_matrix

    if args.compare:
        differences = compare_results(load_results(args.results), load_results(args.compare))
        for line in differences:
            print(line)
        print(
            f"{len(differences)} differences from {args.results}"
            if differences
            else f"every reader gives the results recorded in {args.results}"
        )
        return 1 if differences else 0
    if args.check:
        stale = check_matrix(args.results, args.out)
        for path in stale:
            print(f"gguf-construct: {path} is stale: run `gguf-construct suite matrix`", file=sys.stderr)
        return 1 if stale else 0
    for path in write_matrix(args.results, args.out):
        print(path)
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``suite write``, ``suite run`` and ``suite matrix``."""
    p = subparsers.add_parser(
        "suite",
        help="the conformance suite for any GGUF reader",
        description="Write the conformance suite (plain files and manifest.json), score a "
        "reader on it, render the matrix of readers.",
    )
    sub = p.add_subparsers(dest="suite_command", required=True)
    w = sub.add_parser("write", help="write the suite's files and manifest.json into DIR")
    w.add_argument("dir")
    w.add_argument(
        "--large",
        action="store_true",
        help="also write the four files at and one past ggml's 2^30 limits (4 GiB, the arrays sparse; "
        'marked "large": true in the manifest)',
    )
    w.set_defaults(func=_cmd_write)
    r = sub.add_parser("run", help="score a reader on a written suite")
    r.add_argument("dir")
    r.add_argument(
        "--target",
        required=True,
        help="gguf-py, ggml:LIBGGML_BASE_SO, llama:LIBLLAMA_SO, cmd:TEMPLATE or python:MOD:FUNC",
    )
    r.add_argument("--profile", default="spec", choices=("spec", "ggml", "llama.cpp"))
    r.add_argument("--timeout", type=float, default=10.0, help="seconds per case (default 10)")
    r.add_argument("--memory", type=int, default=2048, help="memory limit of the reader in MiB (default 2048)")
    r.add_argument("--only", action="append", metavar="GLOB", help="only cases whose file matches (repeatable)")
    r.add_argument("--json", action="store_true", help="every case's result as JSON on stdout")
    r.add_argument("--show", type=int, default=30, help="failures listed (default 30)")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    r.add_argument("--record", metavar="NAME", help="store the run in --results under this reader name")
    r.add_argument("--results", default="readers/results.json", help="results file of --record")
    r.add_argument("--reader-version", default="unknown", help="the reader's version, for --record")
    r.add_argument("--adapter", default="", help="how the reader is run, for --record (no local paths)")
    r.add_argument("--notes", default="", help="a note on the reader, for --record")
    r.set_defaults(func=_cmd_run)
    m = sub.add_parser("matrix", help="render docs/readers.md and docs/readers.svg from the recorded results")
    m.add_argument("--results", default="readers/results.json")
    m.add_argument("--out", default="docs")
    m.add_argument("--check", action="store_true", help="fail when the pages differ from the recorded results")
    m.add_argument(
        "--compare",
        metavar="RERUN_JSON",
        help="fail when the readers recorded in RERUN_JSON (a fresh run_all.sh) differ from --results",
    )
    m.set_defaults(func=_cmd_matrix)
