"""``gguf-construct check PATH...``: check files (directories are searched for *.gguf) and print a report."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor

from .rules import PROFILES
from .core import check, files_under
from .formats import render_json, render_sarif, render_text
from .report import Report
from .rules import SEVERITY_RANK
from .shards import check_sets, shard_siblings
from .._json import write_json
from ..remote import RemoteError, is_url, print_transfer_stats

__all__ = ["add_cli", "run"]


def add_cli(subparsers) -> None:
    """Register ``check`` on the sub-parsers of the main command line."""
    p = subparsers.add_parser("check", help="check files against the conformance rules (every finding)",
                              description="Report every conformance finding of GGUF files, with rule ID, severity, "
                                          "byte offset and field path.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="GGUF files, directories (searched for *.gguf) or URLs (https://, hf://, s3://, ...)")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                   help="text for people (default), json for programs, sarif for code-scanning tools")
    p.add_argument("--profile", choices=PROFILES, default="spec",
                   help="spec: gguf.md's verdicts (default); ggml: what ggml's reader accepts; llama.cpp: what "
                        "llama.cpp's model loader accepts (container as mmap-ed by llama.cpp, plus the model rules)")
    p.add_argument("--data", action="store_true", help="also look inside tensor data (non-finite values)")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="exit 1 when a finding of this severity or worse exists (default: error)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="check files in N processes")
    p.add_argument("--stats", action="store_true",
                   help="print the bytes and requests fetched for URLs (header-only unless --data) on stderr")
    p.set_defaults(func=run)


def _one(job: tuple[str, str, bool]) -> tuple[Report | None, str | None]:
    path, profile, data = job
    try:
        return check(path, profile=profile, data=data), None
    except OSError as exc:
        return None, str(exc) if isinstance(exc, RemoteError) else f"{path}: {exc.strerror or exc}"


class _Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal and there are several files."""

    def __init__(self, total: int):
        self.total = total
        self.done = 0
        self.on = total > 1 and sys.stderr.isatty()

    def step(self, name: str) -> None:
        self.done += 1
        if self.on:
            width = 30
            full = width * self.done // self.total
            sys.stderr.write(f"\r[{'#' * full}{'.' * (width - full)}] {self.done}/{self.total} "
                             f"{os.path.basename(name)[:40]:40s}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.on:
            sys.stderr.write("\r" + " " * 90 + "\r")
            sys.stderr.flush()


def run(args) -> int:
    """Run the check sub-command; returns the exit status (0 clean, 1 findings, 2 usage or I/O errors)."""
    if args.jobs < 1:
        print("gguf-construct check: --jobs must be at least 1", file=sys.stderr)
        return 2
    missing = [p for p in args.paths if not is_url(p) and not os.path.exists(p)]
    for p in missing:
        print(f"gguf-construct check: {p}: no such file or directory", file=sys.stderr)
    files = shard_siblings(files_under([p for p in args.paths if p not in missing]))
    jobs = [(f, args.profile, args.data) for f in files]
    progress = _Progress(len(jobs))
    reports: list[Report] = []
    io_errors = list(missing)
    if args.jobs > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            results = pool.map(_one, jobs)
            for (path, _, _), (report, err) in zip(jobs, results):
                progress.step(path)
                _collect(report, err, reports, io_errors)
    else:
        for job in jobs:
            report, err = _one(job)
            progress.step(job[0])
            _collect(report, err, reports, io_errors)
    progress.close()
    if getattr(args, "stats", False):
        print_transfer_stats([r.transfer for r in reports if r.transfer], "check")
    reports.extend(check_sets([r for r in reports], args.profile))
    if args.format in ("json", "sarif"):
        write_json((render_json if args.format == "json" else render_sarif)(reports))
    else:
        out = render_text(reports, color=sys.stdout.isatty())
        if out:
            print(out)
    if io_errors or (not reports and not files):
        if not files and not io_errors:
            print("gguf-construct check: no .gguf files found", file=sys.stderr)
        return 2
    rank = SEVERITY_RANK[args.fail_on]
    failed = any(SEVERITY_RANK[f.severity] >= rank for r in reports for f in r.findings)
    return 1 if failed else 0


def _collect(report, err, reports, io_errors) -> None:
    if err is not None:
        print(f"gguf-construct check: {err}", file=sys.stderr)
        io_errors.append(err)
    else:
        reports.append(report)
