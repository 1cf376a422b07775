"""The differential runner: generate files, run the target on each, compare with the oracle, minimise.

Files come from a pool of valid carrier documents (drawn once with Hypothesis from
:func:`gguf_construct.strategies.documents`, seeded) that are either kept valid or broken by one or two
structural mutations (:mod:`gguf_construct.breaking.mutations`) chosen by a seeded :class:`random.Random`, so a
run is reproducible from its seed and fast.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from typing import Callable, Iterator

from ..breaking.rawfile import RawFile
from .minimize import ddmin, shrink_raw
from .oracle import Expectation, compare, expect
from .report import Disagreement, ProgressBar, Results
from .samples import Sample, carriers, generate, supported
from .targets import Outcome, Target

__all__ = ["Sample", "generate", "carriers", "supported", "classify", "signature", "normalize", "crash_location", "run"]


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


_VARIABLE = re.compile(r"""b?'[^']*'|b?"[^"]*"|0x[0-9a-fA-F]+|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\d+""")


def normalize(text: str) -> str:
    """The first line of an error message with what varies between files of the same bug (quoted names and bytes,
    numbers, hex values) replaced by ``#``, so that findings group by cause."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return re.sub(r"\s+", " ", _VARIABLE.sub("#", line))[:70]


def signature(kind: str, exp: Expectation, out: Outcome, diffs: list[dict]) -> str:
    """What identifies a bug: the class plus the oracle's rules, the normalized error, or the kind of
    difference."""
    if kind == "false_accept":
        return "false_accept:" + ",".join(exp.rules)
    if kind == "false_reject":
        return "false_reject:" + normalize(out.detail)
    if kind == "crash":  # where the target broke is the cause; without a location, what the file breaks
        where = crash_location(out)
        error = normalize(out.detail).split(":")[0]
        return f"crash:{error}@{where}" if where else f"crash:{error}:" + ",".join(exp.rules)
    if kind == "hang":
        return "hang:" + ",".join(exp.rules)
    whats = sorted({d["what"] for d in diffs})
    types = sorted({str(d["expected"]) for d in diffs if d["what"] in ("type", "tensor type")})[:3]
    return "value_mismatch:" + ",".join(whats) + (":" + ",".join(types) if types else "")


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def crash_location(out: Outcome) -> str | None:
    """``file:line`` of the innermost frame of a Python target's traceback (the target's own code), or None."""
    frames = _FRAME.findall(out.extra.get("traceback", "") if out.extra else "")
    frames = [f for f in frames if "gguf_construct/fuzzing/worker.py" not in f[0].replace(os.sep, "/")]
    if not frames:
        return None
    path, line, _ = frames[-1]
    return f"{os.path.basename(path)}:{line}"


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


def run(
    target: Target,
    *,
    count: int = 1000,
    seed: int = 0,
    profile: str = "spec",
    out_dir: str | None = None,
    minimize: bool = True,
    progress: bool | None = None,
    max_minimize: int = 40,
    versions=None,
    byte_orders=None,
    tensor_types=None,
    should_stop: Callable[[], bool] | None = None,
) -> Results:
    """Fuzz ``target`` with ``count`` files; returns the :class:`Results` (written to ``out_dir`` if given).

    ``versions``, ``byte_orders`` and ``tensor_types`` say what the target claims to read (None: everything the
    spec defines); files outside it are not generated.  ``progress``: a bar on a terminal, a line per tenth of the
    run otherwise (None: decide by stderr; False: quiet).  ``should_stop``: asked before each file and each
    minimisation step; True stops the run with KeyboardInterrupt (an interrupt that a callback swallowed)."""
    results = Results(target.name, profile, seed)
    bar = ProgressBar(count, progress)
    t0 = time.perf_counter()
    scratch = None
    stop = _stopper(should_stop)
    try:
        scratch = _Scratch()
        stream = (
            _model_stream(seed)
            if getattr(target, "models", False)
            else generate(seed, versions=versions, byte_orders=byte_orders, tensor_types=tensor_types)
        )
        for i in range(count):
            stop()
            sample = next(stream)
            stop()
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
                f = Disagreement(
                    kind,
                    sig,
                    out.detail[:500],
                    exp.rules,
                    sample.mutation,
                    len(sample.data),
                    sample.data,
                    diffs=diffs[:10],
                    location=crash_location(out),
                )
                if results.add(f) and minimize and len(results.findings) <= max_minimize and kind != "hang":
                    f.minimized = _minimize(target, scratch, f, profile, sample.raw, stop)
                    _remeasure(target, scratch, f, profile)
            bar.update(i + 1, f"{sum(results.per_class.values())} disagreements")
        stop()
    finally:
        bar.close()
        target.close()
        if scratch is not None:
            scratch.close()
    results.seconds = time.perf_counter() - t0
    if out_dir:
        results.write(out_dir)
    return results


def _stopper(should_stop: Callable[[], bool] | None) -> Callable[[], None]:
    """A check that raises KeyboardInterrupt once ``should_stop()`` says so (a no-op without it)."""

    def stop() -> None:
        if should_stop is not None and should_stop():
            raise KeyboardInterrupt

    return stop


def _minimize(
    target: Target,
    scratch: _Scratch,
    f: Disagreement,
    profile: str,
    raw: RawFile | None,
    stop: Callable[[], None] = lambda: None,
) -> bytes:
    """The smallest input found that still shows ``f``.  Hangs are not minimised (each test would cost the whole
    timeout), and the first candidate that hangs ends the search: a hang costs one timeout, not one per step."""
    hung = False

    def keeps(candidate: bytes) -> bool:
        nonlocal hung
        stop()
        if hung:
            return False
        exp = expect(candidate, profile)
        out = target.run(scratch.write(candidate))
        if out.status == "hang":
            hung = True
            return False
        kind, diffs = classify(exp, out)
        return kind == f.kind and signature(kind, exp, out, diffs) == f.signature

    data = shrink_raw(raw, keeps).encode()[0] if raw is not None else f.data
    return ddmin(data, keeps, max_tests=250, max_seconds=20.0)


def _remeasure(target: Target, scratch: _Scratch, f: Disagreement, profile: str) -> None:
    """Take the detail, crash location and value differences from the minimised reproducer (what a user running
    it will see), not from the file first generated."""
    if f.minimized is None or f.minimized == f.data:
        return
    exp = expect(f.minimized, profile)
    out = target.run(scratch.write(f.minimized))
    kind, diffs = classify(exp, out)
    if kind != f.kind:
        return
    f.detail = out.detail[:500]
    f.location = crash_location(out)
    f.diffs = diffs[:10]
