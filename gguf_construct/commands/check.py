"""``gguf-construct check PATH...``: check files (directories are searched for *.gguf, ``-`` is standard input) and
print a report; project defaults come from pyproject.toml or .gguf-construct.toml (:mod:`.config`)."""

from __future__ import annotations

import contextlib
import glob
import os
import sys

from ..checker.config import ConfigError, find_config, load_config
from ..checker.core import check, files_under
from ..checker.formats import render_json, render_report_text, render_sarif, render_summary
from ..checker.report import Report
from ..rulebook.catalog import PROFILES, SEVERITY_RANK, catalog, matches
from ..checker.shards import check_plan
from ..checker.template_render import rendering
from ..base.jsonout import write_json
from ..base.processes import worker_pool
from ..base.text import printable
from ..base.remote import RemoteError, is_url, print_transfer_stats
from ..operations.sweep import is_pattern
from .pathhints import missing_hint

__all__ = ["add_cli", "run"]

STDIN = "-"
FAIL_ON = ("error", "warning", "info", "never")
DEFAULTS = {
    "profile": "spec",
    "format": "text",
    "select": [],
    "ignore": [],
    "fail-on": "error",
    "data": False,
    "jobs": 1,
    "max-per-rule": 100,
}


def add_cli(subparsers) -> None:
    """Register ``check`` on the sub-parsers of the main command line."""
    p = subparsers.add_parser(
        "check",
        help="check files against the conformance rules (every finding)",
        description="Report every conformance finding of GGUF files, with rule ID, severity, "
        "byte offset and field path. Defaults for the options come from a "
        "[tool.gguf-construct] table in pyproject.toml or a .gguf-construct.toml "
        "in this directory or a parent; options given here win.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="GGUF files, directories (searched for *.gguf), patterns such as 'models/**/*.gguf' (expanded here when "
        "the shell did not) or URLs (https://, hf://, s3://, ...); - "
        "reads standard input (after the files)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default=None,
        help="text for people (default), json for programs, sarif for code-scanning tools",
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        default=None,
        help="spec: gguf.md's verdicts (default); ggml: what ggml's reader accepts; llama.cpp: what "
        "llama.cpp's model loader accepts (container as mmap-ed by llama.cpp, plus the model rules)",
    )
    p.add_argument("--data", action="store_true", default=None, help="also look inside tensor data (non-finite values)")
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=None,
        help="exit 1 when a finding of this severity or worse exists (default: error; never: only "
        "unreadable paths fail)",
    )
    p.add_argument(
        "--select",
        action="append",
        default=None,
        metavar="RULES",
        help="check only these rules: IDs or ID prefixes, comma-separated (KV,META-SPLIT,TI-TYPE); repeatable",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=None,
        metavar="RULES",
        help="never report these rules (IDs or prefixes, comma-separated); repeatable",
    )
    p.add_argument(
        "--max-per-rule",
        type=int,
        default=None,
        metavar="N",
        help="list at most N findings of one rule per file, then '... and M more' (default 100; "
        "0: all); counts in JSON and SARIF are always exact",
    )
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="check files in N processes")
    p.add_argument(
        "--config", metavar="FILE", default=None, help="read defaults from this TOML file instead of looking for one"
    )
    p.add_argument("--no-config", action="store_true", help="ignore configuration files")
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the bytes and requests fetched for URLs (header-only unless --data) on stderr",
    )
    p.add_argument(
        "--no-render",
        action="store_true",
        help="scan chat templates without rendering them (parse-only; by default each template is also "
        "rendered in jinja2's sandbox in a limited worker process: TPL-ESCAPE, TPL-GADGET)",
    )
    p.set_defaults(func=run)


def _patterns(values) -> list[str]:
    out = []
    for v in values or ():
        out.extend(x.strip() for x in str(v).split(",") if x.strip())
    return out


def settings(args) -> dict:
    """The effective options: built-in defaults, then the configuration file, then the command line.  Raises
    :class:`ConfigError` for a bad file or value."""
    merged = dict(DEFAULTS)
    if not args.no_config:
        path = args.config or find_config()
        if args.config:
            from .main import regular_file_problem

            problem = regular_file_problem(args.config)
            if problem:
                raise ConfigError(problem)
        if path is not None:
            merged.update(load_config(path))
    for key in DEFAULTS:
        value = getattr(args, key.replace("-", "_"))
        if value is not None:
            merged[key] = value
    merged["select"], merged["ignore"] = _patterns(merged["select"]), _patterns(merged["ignore"])
    if merged["profile"] not in PROFILES:
        raise ConfigError(f"profile must be one of {', '.join(PROFILES)}")
    if merged["format"] not in ("text", "json", "sarif"):
        raise ConfigError("format must be text, json or sarif")
    if merged["fail-on"] not in FAIL_ON:
        raise ConfigError(f"fail-on must be one of {', '.join(FAIL_ON)}")
    if merged["jobs"] < 1:
        raise ConfigError("--jobs must be at least 1")
    if merged["max-per-rule"] < 0:
        raise ConfigError("--max-per-rule must be 0 (all) or more")
    for key in ("select", "ignore"):
        for pat in merged[key]:
            if not any(matches(rid, [pat]) for rid in catalog()):
                raise ConfigError(f"{key} {pat!r} matches no rule ID")
    return merged


def _one(job: tuple) -> tuple[Report | None, str | None]:
    path, opts = job
    try:
        return check(path, **opts), None
    except OSError as exc:
        return None, str(exc) if isinstance(exc, RemoteError) else f"{path}: {exc.strerror or exc}"


def _stdin(opts: dict) -> tuple[Report | None, str | None]:
    try:
        data = sys.stdin.buffer.read()
    except OSError as exc:
        return None, f"standard input: {exc.strerror or exc}"
    report = check(data, **opts)
    report.file = "<stdin>"
    return report, None


class _Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal: over files when there are several,
    over the data bytes of a single file's ``--data`` pass otherwise."""

    def __init__(self, total: int):
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()
        self.on = total > 1 and self.tty
        self.drawn = False
        self._last = -1

    def _draw(self, fraction: float, label: str) -> None:
        width = 30
        full = int(width * fraction)
        sys.stderr.write(f"\r[{'#' * full}{'.' * (width - full)}] {label[:50]:50s}")
        sys.stderr.flush()
        self.drawn = True

    def step(self, name: str) -> None:
        self.done += 1
        if self.on:
            self._draw(self.done / self.total, f"{self.done}/{self.total} {printable(os.path.basename(name))}")

    def data(self, name: str):
        """A ``check(progress=...)`` callback drawing the data pass of one file, or None when not on a terminal."""
        if not self.tty or self.total != 1:
            return None

        def report(done: int, total: int) -> None:
            pct = 100 * done // total if total else 100
            if pct != self._last:
                self._last = pct
                self._draw(
                    done / total if total else 1.0,
                    f"{pct:3d}% of the tensor data of {printable(os.path.basename(name))}",
                )

        return report

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r" + " " * 90 + "\r")
            sys.stderr.flush()
            self.drawn = False


def _expand_patterns(paths: list[str]) -> list[str]:
    """A pattern the shell left alone (quoted, or a shell that does not expand them) that names no file as written
    is expanded here, as the shell would (``**`` across folders); one that matches nothing stays, to be reported."""
    out: list[str] = []
    for p in paths:
        if p != STDIN and not is_url(p) and is_pattern(p) and not os.path.lexists(p):
            out.extend(sorted(glob.glob(p, recursive=True)) or [p])
        else:
            out.append(p)
    return out


def run(args) -> int:
    """Run the check sub-command; returns the exit status (0 clean, 1 findings, 2 usage or I/O errors)."""
    # --no-render is an environment variable while the command runs: --jobs processes inherit it
    with rendering(False) if getattr(args, "no_render", False) else contextlib.nullcontext():
        return _run(args)


def _run(args) -> int:
    try:
        cfg = settings(args)
    except ConfigError as exc:
        print(f"gguf-construct check: {exc}", file=sys.stderr)
        return 2
    opts = {
        "profile": cfg["profile"],
        "data": cfg["data"],
        "select": cfg["select"],
        "ignore": cfg["ignore"],
        "max_per_rule": cfg["max-per-rule"] or None,
    }
    text = cfg["format"] == "text"
    color = text and sys.stdout.isatty()
    named = _expand_patterns(args.paths)
    missing = [p for p in named if p != STDIN and not is_url(p) and not os.path.lexists(p)]
    for p in missing:
        why = "no file matches" if is_pattern(p) else "no such file or directory" + missing_hint(p)
        print(f"gguf-construct check: {printable(p)}: {why}", file=sys.stderr)
    paths = [p for p in named if p not in missing and p != STDIN]
    # a shard names its whole set, judged from the first; under llama.cpp a later shard named alone is refused
    plan = check_plan(files_under(paths), later_alone=cfg["profile"] == "llama.cpp")
    files = [f for f, _ in plan]
    member = dict(plan)
    progress = _Progress(len(files) + (STDIN in args.paths))
    reports: list[Report] = []
    io_errors = list(missing)

    def collect(report: Report | None, err: str | None) -> None:
        progress.clear()
        if err is not None:
            print(f"gguf-construct check: {printable(err)}", file=sys.stderr)
            io_errors.append(err)
            return
        reports.append(report)
        if text:  # streamed: each file's findings as soon as they are known
            print(render_report_text(report, color=color), flush=True)

    if cfg["jobs"] > 1 and len(files) > 1:
        with worker_pool(cfg["jobs"]) as pool:
            for path, result in zip(files, pool.map(_one, [(f, dict(opts, as_member=member[f])) for f in files])):
                progress.step(path)
                collect(*result)
    else:
        for path in files:
            result = _one((path, dict(opts, as_member=member[path], progress=progress.data(path))))
            progress.step(path)
            collect(*result)
    if STDIN in args.paths:  # after the files, so that their findings are out while the pipe is still filling
        collect(*_stdin(opts))
    progress.clear()
    if getattr(args, "stats", False):
        print_transfer_stats([r.transfer for r in reports if r.transfer], "check")
    if cfg["format"] == "json":
        write_json(render_json(reports))
    elif cfg["format"] == "sarif":
        write_json(render_sarif(reports, profile=cfg["profile"]))
    elif reports or io_errors:
        print(render_summary(reports, len(io_errors), cfg["fail-on"]))
    if io_errors or not reports:
        if not reports and not io_errors:
            where = ", ".join(printable(p) for p in paths) or "the given paths"
            print(f"gguf-construct check: no .gguf files found in {where}", file=sys.stderr)
        return 2
    if cfg["fail-on"] == "never":
        return 0
    rank = SEVERITY_RANK[cfg["fail-on"]]
    failed = any(SEVERITY_RANK[f.severity] >= rank for r in reports for f in r.findings)
    return 1 if failed else 0
