"""Scoring a reader against a written suite: run it on every case (any fuzz target: ``gguf-py``, ``ggml:LIB``,
``llama:LIB``, ``cmd:TEMPLATE``, ``python:MOD:FUNC``) and compare what it did with the manifest.

A case's result is one of:

* ``pass`` -- the expected outcome (any outcome but a crash or hang for ``either``), and for an accepted file
  the values it reported (if any) equal the manifest's;
* ``false-accept`` / ``false-reject`` -- the other outcome than the manifest's;
* ``wrong-values`` -- accepted, but a key, type, value, tensor name, type, shape, offset, data hash or decoded
  value differs;
* ``crash`` / ``hang`` -- the reader died or did not answer within the timeout (always a failure).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..fuzzing.oracle import compare
from ..fuzzing.targets import Outcome, Target

__all__ = ["RESULTS", "CaseResult", "load_manifest", "score_case", "run_suite", "summarise"]

RESULTS = ("pass", "false-accept", "false-reject", "wrong-values", "crash", "hang")


@dataclass
class CaseResult:
    """What one reader did with one case."""

    file: str
    group: str
    expected: str
    outcome: str
    result: str
    detail: str = ""
    differences: list = field(default_factory=list)
    values_compared: bool = False  # the reader reported values (keys, tensors) and they were compared

    def to_json(self) -> dict:
        """The record of results.json."""
        out = {
            "file": self.file,
            "group": self.group,
            "expected": self.expected,
            "outcome": self.outcome,
            "result": self.result,
        }
        if self.detail:
            out["detail"] = self.detail[:300]
        if self.differences:
            out["differences"] = self.differences[:5]
        return out


def load_manifest(directory: str) -> dict:
    """The manifest of a written suite (``DIR/manifest.json``)."""
    path = os.path.join(directory, "manifest.json")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise ValueError(
            f"{path}: cannot read the suite's manifest ({exc.strerror}); write one with "
            "`gguf-construct suite write DIR`"
        ) from None


def _f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    return None


def _values_equal(expected: list, got: Any) -> bool:
    if not isinstance(got, list) or len(got) != len(expected):
        return False
    for e, g in zip(expected, got):
        fe, fg = _num(e), _num(g)
        if fe is None or fg is None:
            return False
        if math.isnan(fe) or math.isnan(fg):
            if not (math.isnan(fe) and math.isnan(fg)):
                return False
        elif fe != fg and _f32(fe) != _f32(fg):
            return False
    return True


def _data_differences(expected: dict, got: dict) -> list[dict]:
    """Differences in what the reader says about tensor bytes: ``sha256`` and decoded ``values``, when given."""
    out = []
    theirs = {t.get("name"): t for t in got.get("tensors") or [] if isinstance(t, dict)}
    for t in expected.get("tensors", []):
        g = theirs.get(t["name"])
        if g is None:
            continue
        if "sha256" in g and str(g["sha256"]).lower() != t["sha256"]:
            out.append({"what": "tensor data", "where": t["name"], "expected": t["sha256"], "got": g["sha256"]})
        if "values" in g and "values" in t and not _values_equal(t["values"], g["values"]):
            out.append(
                {
                    "what": "tensor values",
                    "where": t["name"],
                    "expected": "the manifest's decoded values",
                    "got": "different values",
                }
            )
    return out


def _typed_items(ours: dict, value):
    """Plain nested lists of an untyped reader as the typed items of the manifest's nested array."""
    if ours.get("item_type") != "ARRAY" or not isinstance(value, list) or len(value) != len(ours["value"]):
        return value
    out = []
    for inner, got in zip(ours["value"], value):
        if isinstance(got, list):
            got = {"type": "ARRAY", "item_type": inner.get("item_type"), "value": _typed_items(inner, got)}
        out.append(got)
    return out


def _with_types(case: dict, summary: dict) -> dict:
    """The reader's answer with the manifest's value types filled in where it reports none (readers that return
    plain values, not GGUF types: then only their values are compared), and nested arrays given as plain lists
    taken as the typed items of the manifest's."""
    types = {m["key"]: m for m in case["metadata"]}
    metadata = []
    for m in summary.get("metadata") or []:
        ours = types.get(m.get("key")) if isinstance(m, dict) else None
        if ours is not None:
            m = dict(m)
            if "type" not in m:
                m["type"] = ours["type"]
                if ours["type"] == "ARRAY":
                    m.setdefault("item_type", ours["item_type"])
            if ours["type"] == "ARRAY" and "value" in m:
                m["value"] = _typed_items(ours, m["value"])
        metadata.append(m)
    return dict(summary, metadata=metadata)


def _value_digest(value: Any) -> tuple[int, str] | None:
    """Length and SHA-256 of a value a reader printed in full: a string's UTF-8 bytes, or a list of bytes."""
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogateescape")
        return len(data), hashlib.sha256(data).hexdigest()
    if isinstance(value, list) and all(isinstance(v, int) and 0 <= v < 256 for v in value):
        return len(value), hashlib.sha256(bytes(value)).hexdigest()
    return None


def _big_values(case: dict, answer: dict) -> tuple[list[dict], dict]:
    """Compare the keys the manifest gives by ``length`` and ``sha256`` (a large case's big value) with the
    reader's ``length``/``sha256`` or its full value; returns the differences and the answer with those values
    taken out (the rest is compared as usual)."""
    big = {m["key"]: m for m in case.get("metadata", []) if "value" not in m and "sha256" in m}
    if not big:
        return [], answer
    diffs, metadata = [], []
    for m in answer.get("metadata") or []:
        ours = big.get(m.get("key")) if isinstance(m, dict) else None
        if ours is not None:
            got = {k: m[k] for k in ("length", "sha256") if k in m}
            if "value" in m:
                digest = _value_digest(m["value"])
                got = dict(zip(("length", "sha256"), digest)) if digest else {"length": None}
            for k, v in got.items():
                if str(v).lower() != str(ours[k]).lower():
                    diffs.append(
                        {"what": "value", "where": ours["key"], "expected": f"{k} {ours[k]}", "got": f"{k} {v}"}
                    )
            m = {k: v for k, v in m.items() if k not in ("value", "length", "sha256")}
        metadata.append(m)
    return diffs, dict(answer, metadata=metadata)


def score_case(case: dict, outcome: Outcome, profile: str) -> CaseResult:
    """Compare a reader's outcome on one case with the manifest."""
    expected = case["expect"][profile]
    result = CaseResult(case["file"], case["group"], expected, outcome.status, "pass", outcome.detail)
    if outcome.status in ("crash", "hang"):
        result.result = outcome.status
        return result
    if outcome.status == "accept":
        if expected == "reject":
            result.result = "false-accept"
            return result
        if outcome.summary and "metadata" in case:
            result.values_compared = True
            diffs, answer = _big_values(case, _with_types(case, outcome.summary))
            diffs += compare({"metadata": case["metadata"], "tensors": case["tensors"]}, answer)
            diffs += _data_differences(case, answer)
            if diffs:
                result.result = "wrong-values"
                result.differences = diffs
        return result
    if expected == "accept":
        result.result = "false-reject"
    return result


def run_suite(
    directory: str,
    target: Target,
    *,
    profile: str = "spec",
    only: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[CaseResult]:
    """Run ``target`` on every case of the suite in ``directory`` (or those matching a glob of ``only``)."""
    manifest = load_manifest(directory)
    cases = [c for c in manifest["cases"] if not only or any(fnmatch.fnmatch(c["file"], p) for p in only)]
    results = []
    try:
        for i, case in enumerate(cases):
            outcome = target.run(os.path.join(directory, *case["file"].split("/")))
            results.append(score_case(case, outcome, profile))
            if progress is not None:
                progress(i + 1, len(cases))
    finally:
        target.close()
    return results


def summarise(results: list[CaseResult]) -> dict:
    """Counts per result, and the matrix columns: valid files accepted, invalid files rejected, accepted files
    read right, crashes, hangs (``either`` cases count in neither of the first two).  Values count only where the
    reader reported some: a reader that reports none has "values correct" 0/0, shown as "-", never all of them."""
    counts = {r: 0 for r in RESULTS}
    for r in results:
        counts[r.result] += 1
    valid = [r for r in results if r.expected == "accept"]
    invalid = [r for r in results if r.expected == "reject"]
    read = [r for r in results if r.outcome == "accept" and r.expected != "reject" and r.values_compared]
    return {
        "cases": len(results),
        "counts": counts,
        "accepted_valid": [sum(r.outcome == "accept" for r in valid), len(valid)],
        "rejected_invalid": [sum(r.outcome == "reject" for r in invalid), len(invalid)],
        "values_correct": [sum(r.result == "pass" for r in read), len(read)],
        "crashed": counts["crash"],
        "hung": counts["hang"],
    }


def progress_printer(stream=sys.stderr) -> Callable[[int, int], None]:
    """A progress callback that prints a line per tenth of the run."""
    start = time.monotonic()

    def show(done: int, total: int) -> None:
        if done == total or done % max(1, total // 10) == 0:
            print(f"  {done}/{total} cases, {time.monotonic() - start:.0f} s", file=stream, flush=True)

    return show
