"""Triage of what a campaign found: reproduce a crash or an abort natively, minimise it, keep its trace.

:func:`reproduce` runs an input once through a target binary with aborts left fatal (no
``GGUF_HARNESS_ABORT_DIR``), so every abort, sanitizer report or signal ends the process with a report;
:func:`minimise` is the minimiser's native-crash path: the input shrinks -- first by records (KV pairs and tensor
infos dropped one at a time, the file written again by the byte-level model), then by delta debugging over bytes
(:func:`~gguf_construct.fuzzing.minimize.ddmin`) -- while the target still dies with the same stack signature.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from .campaign import DEFAULT_BIN, Target, binary, parse_report, runtime_env
from .minimize import ddmin

__all__ = ["reproduce", "minimise", "drop_records"]


def reproduce(
    target: Target, data: bytes, arm: str = "bytes", bin_dir: Path = DEFAULT_BIN, timeout: float = 60
) -> dict | None:
    """The report of the target dying on ``data`` (kind, message, frames, signature, trace), or None when it
    reads the input without dying."""
    with tempfile.NamedTemporaryFile(suffix=".gguf", delete=False) as fh:
        fh.write(data)
        path = fh.name
    try:
        env = runtime_env(arm)
        env.pop("GGUF_HARNESS_ABORT_DIR", None)
        try:
            proc = subprocess.run(
                [
                    str(binary(target, "bytes", bin_dir)),
                    "-timeout=20",
                    "-rss_limit_mb=4096",
                    f"-artifact_prefix={path}.",
                    path,
                ],
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                preexec_fn=lambda: os.nice(10),
            )
        except subprocess.TimeoutExpired:
            return {
                "kind": "timeout",
                "message": f"no answer in {timeout:.0f} s",
                "frames": [],
                "signature": "(timeout)",
                "trace": "",
            }
        if proc.returncode == 0:
            return None
        rec = parse_report(proc.stderr)
        rec["trace"] = _trace(proc.stderr)
        return rec
    finally:
        for leftover in Path(path).parent.glob(Path(path).name + "*"):
            leftover.unlink()


def _trace(stderr: str) -> str:
    """The report's lines from the first sanitizer/abort line on, without libFuzzer's chatter, paths shortened."""
    lines = stderr.splitlines()
    start = next(
        (
            i
            for i, line in enumerate(lines)
            if "ERROR:" in line or "runtime error" in line or "GGUF_HARNESS: abort" in line or "GGML_ASSERT" in line
        ),
        0,
    )
    keep = [
        line
        for line in lines[start:]
        if not line.startswith(("INFO:", "MS:", "NOTE:", "Running:"))
        and "libFuzzer has rudimentary" not in line
        and "Combine libFuzzer" not in line
    ]
    text = "\n".join(keep[:60])
    for mark in ("/vendor/llama.cpp/",):
        text = "\n".join(
            line.split("/tmp/", 1)[0] + line.split(mark, 1)[1] if mark in line else line for line in text.splitlines()
        )
    return text


def drop_records(data: bytes, keeps) -> bytes:
    """Drop KV pairs and tensor infos one at a time (the file written again each time) while ``keeps`` holds."""
    from ..breaking.crafted import RawFile

    try:
        raw = RawFile.from_bytes(data)
    except Exception:  # noqa: BLE001 - a head we cannot split: bytes only
        return data
    best = data
    for field in ("kvs", "tensors"):
        i = 0
        while i < len(getattr(raw, field)):
            trial = raw.copy()
            items = getattr(trial, field)
            del items[i]
            try:
                out = trial.to_bytes()
            except Exception:  # noqa: BLE001
                i += 1
                continue
            if len(out) < len(best) and keeps(out):
                raw, best = trial, out
            else:
                i += 1
    return best


def minimise(
    target: Target,
    data: bytes,
    signature: str,
    *,
    max_tests: int = 120,
    max_seconds: float = 90,
    bin_dir: Path = DEFAULT_BIN,
) -> bytes:
    """The smallest input found that still dies with ``signature`` (records first, then bytes)."""

    def keeps(candidate: bytes) -> bool:
        got = reproduce(target, candidate, bin_dir=bin_dir, timeout=30)
        return got is not None and got["signature"] == signature

    smaller = drop_records(data, keeps)
    return ddmin(smaller, keeps, max_tests=max_tests, max_seconds=max_seconds)
