"""The differential runner: generate files, run the target on each, compare with the oracle, minimise.

Files come from a pool of valid carrier documents (drawn once with Hypothesis from
:func:`gguf_construct.strategies.documents`, seeded) that are either kept valid or broken by one or two
structural mutations (:mod:`gguf_construct.fuzzing.mutations`) chosen by a seeded :class:`random.Random`, so a
run is reproducible from its seed and fast.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
import time
from dataclasses import dataclass
from typing import Iterator

from .minimize import ddmin, shrink_raw
from .mutations import MUTATIONS, RandomPick, Skip
from .oracle import Expectation, compare, expect
from .rawfile import RawFile, from_document
from .report import Finding, ProgressBar, Results
from .targets import Outcome, Target

__all__ = ["Sample", "generate", "carriers", "classify", "signature", "run"]


@dataclass
class Sample:
    """One generated file and how it was made."""

    data: bytes
    mutation: str  # "valid" when not mutated
    raw: RawFile | None = None


def carriers(seed: int, count: int = 120, *, max_kv: int = 4, max_tensors: int = 2) -> list:
    """A reproducible pool of valid :class:`~gguf_construct.strategies.Document` objects."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from ..strategies import documents

    pool: list = []

    @hseed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(documents(max_kv=max_kv, max_tensors=max_tensors))
    def collect(doc):
        pool.append(doc)

    collect()
    return pool


def generate(seed: int, *, valid_share: float = 0.25, pool: list | None = None) -> Iterator[Sample]:
    """An endless, reproducible stream of valid and broken files."""
    rng = random.Random(seed)
    pool = pool if pool is not None else carriers(seed)
    pick = RandomPick(rng)
    while True:
        raw = from_document(rng.choice(pool))
        if rng.random() < valid_share:
            yield Sample(raw.encode()[0], "valid", raw)
            continue
        names = []
        try:
            chosen = [rng.choice(MUTATIONS) for _ in range(1 if rng.random() < 0.85 else 2)]
            for m in sorted(chosen, key=lambda m: m.late):
                m.apply(raw, pick)
                names.append(m.name)
        except Skip:
            continue
        yield Sample(raw.encode()[0], "+".join(names), raw)


def _model_stream(seed: int) -> Iterator[Sample]:
    """Whole models for a model loader (the ``llama:`` target): see :func:`.llama_target.model_samples`."""
    from .llama_target import model_samples

    for data, how in model_samples(seed):
        yield Sample(data, how)


def classify(exp: Expectation, out: Outcome) -> tuple[str | None, list[dict]]:
    """The disagreement class of a target outcome (None when it agrees) and any value differences."""
    if out.status == "crash":
        return "crash", []
    if out.status == "hang":
        return "hang", []
    if out.status == "accept" and not exp.valid:
        return "false_accept", []
    if out.status == "reject" and exp.valid:
        return "false_reject", []
    if out.status == "accept" and exp.summary is not None and out.summary is not None:
        diffs = compare(exp.summary, out.summary)
        if diffs:
            return "value_mismatch", diffs
    return None, []


def _first_line(text: str) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line.split(":")[0][:60]


def signature(kind: str, exp: Expectation, out: Outcome, diffs: list[dict]) -> str:
    """What identifies a bug: the class plus the oracle's rules, the error type, or the kind of difference."""
    if kind == "false_accept":
        return "false_accept:" + ",".join(exp.rules)
    if kind == "false_reject":
        text = re.sub(r"\d+|'[^']*'|\"[^\"]*\"", "#", (out.detail or "").strip().splitlines()[0]
                      if (out.detail or "").strip() else "")
        return "false_reject:" + text[:70]
    if kind == "crash":
        return "crash:" + _first_line(out.detail) + ":" + ",".join(exp.rules)
    if kind == "hang":
        return "hang:" + ",".join(exp.rules)
    whats = sorted({d["what"] for d in diffs})
    types = sorted({str(d["expected"]) for d in diffs if d["what"] in ("type", "tensor type")})[:3]
    return "value_mismatch:" + ",".join(whats) + (":" + ",".join(types) if types else "")


class _Scratch:
    """A temporary file the target reads (rewritten for every input)."""

    def __init__(self):
        fd, self.path = tempfile.mkstemp(prefix="gguf-fuzz-", suffix=".gguf")
        os.close(fd)

    def write(self, data: bytes) -> str:
        with open(self.path, "wb") as fh:
            fh.write(data)
        return self.path

    def close(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


def run(target: Target, *, count: int = 1000, seed: int = 0, profile: str = "spec", out_dir: str | None = None,
        minimize: bool = True, progress: bool | None = None, max_minimize: int = 40) -> Results:
    """Fuzz ``target`` with ``count`` files; returns the :class:`Results` (written to ``out_dir`` if given)."""
    results = Results(target.name, profile, seed)
    scratch = _Scratch()
    bar = ProgressBar(count, progress)
    t0 = time.perf_counter()
    try:
        stream = _model_stream(seed) if getattr(target, "models", False) else generate(seed)
        for i in range(count):
            sample = next(stream)
            exp = expect(sample.data, profile)
            if exp.note:
                note = f"{exp.note} ({sample.mutation})"
                if note not in results.notes and len(results.notes) < 20:
                    results.notes.append(note)
            results.generated += 1
            results.valid += exp.valid
            out = target.run(scratch.write(sample.data))
            kind, diffs = classify(exp, out)
            if kind is not None:
                sig = signature(kind, exp, out, diffs)
                f = Finding(kind, sig, out.detail[:500], exp.rules, sample.mutation, len(sample.data),
                            sample.data, diffs=diffs[:10])
                if results.add(f) and minimize and len(results.findings) <= max_minimize:
                    f.minimized = _minimize(target, scratch, f, profile, sample.raw)
            bar.update(i + 1, f"{sum(results.per_class.values())} disagreements")
    finally:
        bar.close()
        target.close()
        scratch.close()
    results.seconds = time.perf_counter() - t0
    if out_dir:
        results.write(out_dir)
    return results


def _minimize(target: Target, scratch: _Scratch, f: Finding, profile: str, raw: RawFile | None) -> bytes:
    def keeps(candidate: bytes) -> bool:
        exp = expect(candidate, profile)
        out = target.run(scratch.write(candidate))
        kind, diffs = classify(exp, out)
        return kind == f.kind and signature(kind, exp, out, diffs) == f.signature

    if f.kind == "hang":  # every test of a hang costs the whole timeout
        data = shrink_raw(raw, keeps, max_tests=4).encode()[0] if raw is not None else f.data
        return ddmin(data, keeps, max_tests=4, max_seconds=60.0)
    data = shrink_raw(raw, keeps).encode()[0] if raw is not None else f.data
    return ddmin(data, keeps, max_tests=250, max_seconds=20.0)
