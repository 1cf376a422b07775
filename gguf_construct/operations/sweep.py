"""``gguf-construct sweep``: check many local or remote GGUF files in parallel, one result row per file.

Each file is one task: open it (header-only for URLs), check it under every profile, load its head for a summary,
and return a row (:data:`COLUMNS`).  ``--engine local`` runs the tasks in a process pool (no extra needed);
``--engine dask`` submits them to a dask.distributed cluster (``pip install "gguf-construct[cluster]"``): a
``LocalCluster`` of ``--jobs`` workers, or the scheduler at ``--scheduler ADDRESS``.  Rows are written as JSON
Lines (appended as they arrive) or Parquet (rewritten at checkpoints); a second run skips the files already in the
output, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import stat
import sys
import time
from concurrent.futures import as_completed
from typing import Any, Callable, Iterable, Iterator

from ..base.atomic import atomic_path
from ..base.extras import require
from ..base.processes import worker_pool
from ..base.errors import GGUFError
from ..base.remote import RemoteFile, is_url, open_remote
from ..format import keynames

__all__ = [
    "COLUMNS",
    "PROFILES",
    "sweep_one",
    "is_pattern",
    "expand_inputs",
    "read_rows",
    "write_rows",
    "run_sweep",
    "comparable",
]

PROFILES = ("spec", "ggml", "llama.cpp")
VOLATILE = ("seconds", "bytes_fetched", "requests")  # differ between runs and engines
CHECKPOINT_ROWS = 500


def _valid_column(profile: str) -> str:
    return "valid_" + profile.replace(".", "_")


# column -> (arrow type name, meaning); the order is the output's column order
COLUMNS: dict[str, tuple[str, str]] = {
    "path": ("string", "the file or URL as given"),
    "size": ("int64", "file size in bytes"),
    "version": ("int64", "GGUF version (null when unreadable)"),
    "byte_order": ("string", "little or big"),
    "architecture": ("string", keynames.GENERAL_ARCHITECTURE),
    "parameter_count": ("int64", "elements of all tensors"),
    "tensor_count": ("int64", "tensors in the file"),
    "kv_count": ("int64", "metadata keys"),
    "shard": (
        "string",
        "a split model's shard as 00002-of-00003 (null: a whole file); the first shard's verdicts "
        "judge the model with every shard's tensors, a later shard's only that file",
    ),
    "tensor_types": ("map", "tensor type -> number of tensors"),
    **{_valid_column(p): ("bool", f"no error finding under the {p} profile") for p in PROFILES},
    "findings": ("map", "rule ID -> number of findings (every profile's rules)"),
    "memory_bytes": (
        "map",
        "context size (4096, and train for the training context) -> bytes llama.cpp allocates on "
        "the CPU for it (gguf-construct estimate: weights, caches, outputs, compute estimate); "
        "empty when llama.cpp would not load the file",
    ),
    "error": ("string", "why the file could not be read (I/O), else null"),
    "summary": ("string", "dump --json of the head, long arrays cut (with --summary)"),
    "bytes_fetched": ("int64", "bytes transferred (URLs; the file size for local files)"),
    "requests": ("int64", "requests made (URLs; 0 for local files)"),
    "seconds": ("float64", "time the task took"),
}


def _empty_row(path: str) -> dict:
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row["path"] = path
    row["tensor_types"] = {}
    row["findings"] = {}
    row["memory_bytes"] = {}
    return row


def _shard(gguf) -> str | None:
    """``00002-of-00003`` for a shard of a split model, None for a whole file (:mod:`gguf_construct.format.splitset`)."""
    from ..format import splitset

    no, count = (
        gguf.metadata.get(k) if k in gguf.metadata else None for k in (splitset.SPLIT_NO, splitset.SPLIT_COUNT)
    )
    if splitset.role(no, count) == splitset.SINGLE or not isinstance(no, int) or isinstance(no, bool):
        return None
    return "-of-".join(splitset.shard_numbers(no, count))


def _memory_bytes(gguf) -> dict[str, int]:
    """``estimate``'s total for 4096 tokens and for the training context; {} when the model would not load."""
    from ..arch import from_file
    from ..arch.loader import plan_load
    from ..arch.memory import estimate

    meta, tensors = from_file(gguf)
    plan = plan_load(meta, tensors, vocab_only=False)
    if plan.problems or plan.kind != "model":
        return {}
    offsets = {t.name: (id(getattr(t, "file", None)), int(t.offset)) for t in gguf.tensors}
    try:
        return {
            label: estimate(meta, tensors, ctx, offsets=offsets, plan=plan).total_bytes
            for label, ctx in (("4096", 4096), ("train", 0))
        }
    except (ValueError, TypeError, KeyError):  # a special cache, or a context llama.cpp refuses
        return {}


def sweep_one(
    path: str, profiles: tuple[str, ...] = PROFILES, summary: bool = False, remote_options: dict | None = None
) -> dict:
    """Check one file or URL under ``profiles`` and return its row; never raises (I/O errors go in ``error``)."""
    from ..checker import check
    from ..filemodel.dump import file_summary
    from ..filemodel.gguffile import load

    start = time.perf_counter()
    row = _empty_row(path)
    source: Any = path
    try:
        if is_url(path):
            source = open_remote(path, **(remote_options or {}))
            row["size"] = source.size
        else:
            row["size"] = os.path.getsize(path)
        findings: dict[str, int] = {}
        for profile in profiles:
            report = check(source, profile=profile, as_member=True)  # every shard is a row: the set is swept
            row[_valid_column(profile)] = report.valid
            row["version"], row["byte_order"] = report.version, report.byte_order
            per: dict[str, int] = {}
            for f in report.findings:
                per[f.rule] = per.get(f.rule, 0) + 1
            for rule, n in per.items():  # hits do not depend on the profile; it only turns rules off
                findings.setdefault(rule, n)
            if report.internal_errors:
                row["error"] = "internal error: " + report.internal_errors[0].strip().splitlines()[-1]
        row["findings"] = dict(sorted(findings.items()))
        try:
            gguf = load(source, shards=False)  # this file's facts; the model's are in its first shard's row
        except GGUFError:
            gguf = None
        if gguf is not None:
            arch = (
                gguf.metadata.get(keynames.GENERAL_ARCHITECTURE)
                if keynames.GENERAL_ARCHITECTURE in gguf.metadata
                else None
            )
            row["architecture"] = arch if isinstance(arch, str) else None
            row["parameter_count"] = sum(t.n_elements for t in gguf.tensors)
            row["tensor_count"], row["kv_count"] = len(gguf.tensors), len(gguf.metadata)
            row["shard"] = _shard(gguf)
            types: dict[str, int] = {}
            for t in gguf.tensors:
                types[t.type_name] = types.get(t.type_name, 0) + 1
            row["tensor_types"] = dict(sorted(types.items()))
            row["memory_bytes"] = _memory_bytes(gguf)
            if summary:
                head = file_summary(gguf)
                head.pop("transfer", None)
                row["summary"] = json.dumps(head, ensure_ascii=False, default=str)
            gguf.close()
    except OSError as exc:
        row["error"] = str(exc) if is_url(path) else f"{exc.strerror or exc}"
    except Exception as exc:  # noqa: BLE001 - one file's bug must not end a sweep of thousands
        row["error"] = f"internal error: {type(exc).__name__}: {exc}"
    finally:
        if isinstance(source, RemoteFile):
            stats = source.stats()
            row["bytes_fetched"], row["requests"] = stats["bytes_fetched"], stats["requests"]
            source.close()
        elif not is_url(path):
            row["bytes_fetched"], row["requests"] = row["size"], 0
    row["seconds"] = round(time.perf_counter() - start, 6)
    return row


# -- inputs ----------------------------------------------------------------------------------------------------
def is_pattern(path: str) -> bool:
    """``path`` has glob characters (``*``, ``?``, ``[``): a pattern a shell would expand."""
    return any(c in path for c in "*?[")


def expand_inputs(inputs: Iterable[str]) -> list[str]:
    """Files and URLs to sweep: a directory gives its ``*.gguf`` files (recursively), a glob its matches (URL
    globs through fsspec), a ``.txt``/``.list`` file one path or URL per line (``#`` comments); the rest as is."""
    out: list[str] = []
    for item in inputs:
        if is_url(item):
            out.extend(_url_glob(item) if is_pattern(item) else [item])
        elif os.path.isdir(item):
            for root, _, names in os.walk(item):
                out.extend(os.path.join(root, n) for n in sorted(names) if n.lower().endswith(".gguf"))
        elif is_pattern(item):
            out.extend(sorted(glob.glob(item, recursive=True)))
        elif item.lower().endswith((".txt", ".list")) and os.path.isfile(item):
            with open(item, encoding="utf-8") as fh:
                lines = [ln.strip() for ln in fh]
            out.extend(expand_inputs([ln for ln in lines if ln and not ln.startswith("#")]))
        else:
            out.append(item)
    return list(dict.fromkeys(out))


def _url_glob(pattern: str) -> list[str]:
    import fsspec

    fs, path = fsspec.core.url_to_fs(pattern)
    protocol = pattern.split("://", 1)[0]
    return sorted(m if is_url(m) else f"{protocol}://{m}" for m in fs.glob(path))


# -- output ----------------------------------------------------------------------------------------------------
def _output_problem(out: str) -> str | None:
    """Why ``out`` cannot be a sweep's output (a spreadsheet format, which it does not write; a folder, pipe or
    device, which it cannot resume from), or None."""
    try:
        regular = stat.S_ISREG(os.stat(out).st_mode)
    except FileNotFoundError:
        regular = True
    except OSError as exc:
        return f"{out}: {exc.strerror or exc}"
    if not regular:
        return f"{out}: not a regular file (sweep appends rows to a .jsonl or rewrites a .parquet file)"
    if out.lower().endswith((".csv", ".tsv", ".xlsx")):
        return (
            f"{out}: sweep writes JSON Lines (results.jsonl) or Parquet (results.parquet), not "
            f"{out.rsplit('.', 1)[1].upper()}"
        )
    return None


def _is_parquet(out: str) -> bool:
    return out.lower().endswith((".parquet", ".pq"))


def _arrow_schema():
    import pyarrow as pa

    kinds = {
        "string": pa.string(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "float64": pa.float64(),
        "map": pa.map_(pa.string(), pa.int64()),
    }
    return pa.schema([(name, kinds[kind]) for name, (kind, _) in COLUMNS.items()])


def _normalise(row: dict) -> dict:
    out = {c: row.get(c) for c in COLUMNS}
    for c in ("tensor_types", "findings", "memory_bytes"):
        value = out[c] or {}
        out[c] = dict(sorted((dict(value) if not isinstance(value, dict) else value).items()))
    return out


def read_rows(out: str) -> list[dict]:
    """The rows already in ``out`` (JSON Lines or Parquet); [] when it does not exist.  A torn last JSON line
    (an interrupted run) is ignored."""
    if not os.path.exists(out):
        return []
    if _is_parquet(out):
        import pyarrow.parquet as pq

        return [_normalise(r) for r in pq.read_table(out).to_pylist()]
    rows = []
    with open(out, encoding="utf-8") as fh:
        for line in fh:
            try:
                rows.append(_normalise(json.loads(line)))
            except json.JSONDecodeError:
                continue
    return rows


def write_rows(out: str, rows: list[dict]) -> None:
    """Write ``rows`` (sorted by path) to ``out`` atomically, as Parquet or JSON Lines by the extension."""
    rows = sorted((_normalise(r) for r in rows), key=lambda r: r["path"])
    with atomic_path(out) as tmp:
        if _is_parquet(out):
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows, schema=_arrow_schema()), tmp)
        else:
            with open(tmp, "w", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def comparable(row: dict) -> dict:
    """A row without what differs between runs and engines (timings, transfer), keyed by file name: rows of the
    same files swept locally and over HTTP, or by two engines, compare equal."""
    out = {k: v for k, v in _normalise(row).items() if k not in VOLATILE and k != "path"}
    out["name"] = row["path"].rstrip("/").rsplit("/", 1)[-1]
    if out["error"] is not None:
        out["error"] = "error"
    return out


# -- engines ---------------------------------------------------------------------------------------------------
def _local_engine(paths: list[str], task: Callable[[str], dict], jobs: int, **_) -> Iterator[dict]:
    with worker_pool(jobs) as pool:
        futures = [pool.submit(task, p) for p in paths]
        for fut in as_completed(futures):
            yield fut.result()


def _dask_engine(
    paths: list[str], task: Callable[[str], dict], jobs: int, scheduler: str | None = None, **_
) -> Iterator[dict]:
    require("cluster", ("dask.distributed",), "--engine dask")
    from dask.distributed import Client, LocalCluster, as_completed as dask_completed

    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.CRITICAL
        )
        client = Client(cluster)
    try:
        futures = client.map(task, paths, pure=False)
        for fut in dask_completed(futures):
            yield fut.result()
    finally:
        quiet = logging.getLogger("distributed")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # workers report their own shutdown as errors
        try:
            client.close()
            if cluster is not None:
                cluster.close()
        finally:
            quiet.setLevel(level)


ENGINES = {"local": _local_engine, "dask": _dask_engine}


class _Task:
    """The picklable per-file task (a module-level function with its options bound)."""

    def __init__(self, profiles: tuple[str, ...], summary: bool, remote_options: dict):
        self.profiles, self.summary, self.remote_options = profiles, summary, remote_options

    def __call__(self, path: str) -> dict:
        return sweep_one(path, self.profiles, self.summary, self.remote_options)


def run_sweep(
    inputs: Iterable[str],
    out: str,
    *,
    engine: str = "local",
    jobs: int = 2,
    scheduler: str | None = None,
    profiles: tuple[str, ...] = PROFILES,
    summary: bool = False,
    remote_options: dict | None = None,
    progress: bool = False,
) -> dict:
    """Sweep ``inputs`` into ``out`` and return totals (files, skipped, errors, seconds, files/s overall and from
    the first result on, i.e. without the engine's start-up, bytes fetched).

    Files already in ``out`` without an error are skipped; the others are (re)done and the output rewritten."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {sorted(ENGINES)}")
    problem = _output_problem(out)
    if problem:
        raise ValueError(problem)
    if _is_parquet(out):
        require("cluster", ("pyarrow",), "a Parquet output (.parquet)")
    if engine == "dask":
        require("cluster", ("dask.distributed",), "--engine dask")
    paths = expand_inputs(inputs)
    old = {r["path"]: r for r in read_rows(out)}
    todo = [p for p in paths if p not in old or old[p]["error"] is not None]
    rows = {p: r for p, r in old.items() if r["error"] is None or p not in todo}
    task = _Task(tuple(profiles), summary, dict(remote_options or {}))
    parquet = _is_parquet(out)
    start = first = time.perf_counter()
    done, fetched, errors = 0, 0, 0
    log = None
    if not parquet:
        write_rows(out, list(rows.values()))
        log = open(out, "a", encoding="utf-8")
    try:
        for row in ENGINES[engine](todo, task, jobs, scheduler=scheduler) if todo else ():
            rows[row["path"]] = row
            done += 1
            if done == 1:
                first = time.perf_counter()
            fetched += row["bytes_fetched"] or 0
            errors += row["error"] is not None
            if log is not None:
                log.write(json.dumps(_normalise(row), ensure_ascii=False) + "\n")
                log.flush()
            elif done % CHECKPOINT_ROWS == 0:
                write_rows(out, list(rows.values()))
            if progress:
                rate = done / max(time.perf_counter() - start, 1e-9)
                sys.stderr.write(
                    f"\rsweep: {done}/{len(todo)} files, {rate:.1f} files/s, {fetched / max(done, 1):,.0f} bytes/file"
                )
                sys.stderr.flush()
    finally:
        if log is not None:
            log.close()
        write_rows(out, list(rows.values()))
        if progress and todo:
            sys.stderr.write("\n")
    end = time.perf_counter()
    seconds = end - start
    steady = (done - 1) / (end - first) if done > 1 and end > first else 0.0
    return {
        "files": len(paths),
        "done": done,
        "skipped": len(paths) - len(todo),
        "errors": errors,
        "seconds": seconds,
        "files_per_second": done / seconds if done and seconds else 0.0,
        "steady_files_per_second": steady,
        "bytes_fetched": fetched,
        "bytes_per_file": fetched / done if done else 0.0,
    }
