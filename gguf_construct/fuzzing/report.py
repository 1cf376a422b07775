"""Fuzzing results: findings, the summary table, reproducer files and the JSON summary."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, field

from ..base.text import printable

__all__ = ["CLASSES", "Disagreement", "Results", "ProgressBar", "prepare_out", "OutDirError", "SUMMARY"]

SUMMARY = "summary.json"

CLASSES = ("false_accept", "false_reject", "crash", "hang", "value_mismatch")
_TITLES = {
    "false_accept": "false accepts",
    "false_reject": "false rejects",
    "crash": "crashes",
    "hang": "hangs",
    "value_mismatch": "value mismatches",
}


@dataclass
class Disagreement:
    """One disagreement between the target and the oracle (the fuzzer's result; a rule's finding is
    :class:`gguf_construct.rulebook.catalog.Finding`)."""

    kind: str  # one of CLASSES
    signature: str  # what makes two findings the same bug
    detail: str
    oracle_rules: list[str]
    mutation: str
    size: int
    data: bytes = field(repr=False, default=b"")
    minimized: bytes | None = field(repr=False, default=None)
    diffs: list[dict] = field(default_factory=list)
    file: str | None = None
    count: int = 1  # generated files with the same signature
    location: str | None = None  # file:line of the target's frame that raised (Python targets)

    def to_dict(self) -> dict:
        """JSON data (without the bytes)."""
        out = asdict(self)
        out.pop("data")
        out.pop("minimized")
        out["minimized_size"] = len(self.minimized) if self.minimized is not None else None
        return out


@dataclass
class Results:
    """Everything one run found."""

    target: str
    profile: str
    seed: int
    generated: int = 0
    valid: int = 0
    seconds: float = 0.0
    per_class: dict = field(default_factory=lambda: {c: 0 for c in CLASSES})
    findings: dict = field(default_factory=dict)  # signature -> Disagreement (first seen)
    notes: list[str] = field(default_factory=list)

    def add(self, f: Disagreement) -> bool:
        """Count ``f``; True when its signature is new."""
        self.per_class[f.kind] += 1
        if f.signature in self.findings:
            self.findings[f.signature].count += 1
            return False
        self.findings[f.signature] = f
        return True

    def write(self, out_dir: str) -> str:
        """Write one ``.gguf`` reproducer per distinct finding and ``summary.json``; return the summary path.
        ``out_dir`` must be new, empty or hold only an earlier run's output (see :func:`prepare_out`)."""
        prepare_out(out_dir)
        for f in self.findings.values():
            data = f.minimized if f.minimized is not None else f.data
            digest = hashlib.sha1(data).hexdigest()[:10]
            cause = f.signature.split(":", 1)[1] if f.signature.startswith(f.kind + ":") else f.signature
            name = f"{f.kind}-{_slug(cause)}-{digest}.gguf"
            _write_atomic(os.path.join(out_dir, name), data)
            f.file = name
        summary = {
            "target": self.target,
            "profile": self.profile,
            "seed": self.seed,
            "generated": self.generated,
            "valid": self.valid,
            "seconds": round(self.seconds, 2),
            "per_class": self.per_class,
            "findings": [f.to_dict() for f in self.findings.values()],
            "notes": self.notes,
        }
        path = os.path.join(out_dir, SUMMARY)
        _write_atomic(path, (json.dumps(summary, indent=1, default=str) + "\n").encode())
        return path

    def table(self) -> str:
        """The console summary: one row per class (files, distinct findings), then the distinct findings."""
        lines = [
            f"target {self.target}, profile {self.profile}, seed {self.seed}: {self.generated} files "
            f"({self.valid} valid) in {self.seconds:.1f} s",
            f"  {'class':<18} {'files':>7} {'distinct':>9}",
        ]
        for c in CLASSES:
            distinct = sum(1 for f in self.findings.values() if f.kind == c)
            lines.append(f"  {_TITLES[c]:<18} {self.per_class[c]:>7} {distinct:>9}")
        if self.findings:
            lines.append("findings:")
            for f in sorted(self.findings.values(), key=lambda f: (CLASSES.index(f.kind), -f.count)):
                size = len(f.minimized) if f.minimized is not None else f.size
                where = f"  -> {f.file}" if f.file else ""
                lines.append(printable(f"  [{f.kind}] x{f.count} {f.signature} ({size} bytes){where}"))
                if f.location:
                    lines.append(f"      at {printable(f.location)}")
        for n in self.notes:
            lines.append(printable(f"note: {n}"))
        return "\n".join(lines)


def _write_atomic(path: str, data: bytes) -> None:
    """Write ``path`` through a temporary file in the same folder, renamed over it when complete."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class OutDirError(ValueError):
    """``--out`` holds files that an earlier run did not write."""


def prepare_out(out_dir: str) -> None:
    """Make ``out_dir`` ready for a run's output: create it, or remove an earlier run's reproducers and
    summary.json (the files its summary names).  Refuses (:class:`OutDirError`) a folder with other files, so
    that nothing of the user's is deleted and no stale reproducer is mixed into the new results."""
    os.makedirs(out_dir, exist_ok=True)
    names = set(os.listdir(out_dir))
    if not names:
        return
    ours: set[str] = set()
    summary = os.path.join(out_dir, SUMMARY)
    if SUMMARY in names:
        try:
            with open(summary) as fh:
                ours = {f["file"] for f in json.load(fh).get("findings", []) if f.get("file")}
        except (OSError, ValueError, TypeError, AttributeError):
            raise OutDirError(f"{out_dir}: {SUMMARY} is not a fuzz summary; choose an empty --out") from None
        ours.add(SUMMARY)
    foreign = sorted(names - ours)
    if foreign:
        raise OutDirError(
            f"{out_dir} already holds files this command did not write ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); choose an empty or new --out"
        )
    for name in ours & names:
        os.unlink(os.path.join(out_dir, name))


def _slug(text: str) -> str:
    keep = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text)
    return keep.strip("_")[:60] or "x"


class ProgressBar:
    """Progress on stderr: a redrawn one-line bar on a terminal; otherwise (a log, CI) a plain line at every tenth
    of the run, so that a long run shows it is alive."""

    def __init__(self, total: int, enabled: bool | None = None):
        self.total = max(1, total)
        self.tty = sys.stderr.isatty()
        self.enabled = True if enabled is None else enabled
        self.last = -1

    def update(self, done: int, text: str = "") -> None:
        """Redraw (or log) at ``done`` of ``total``."""
        if not self.enabled:
            return
        if not self.tty:
            tenth = 10 * done // self.total
            if tenth != self.last and (tenth > 0 or done == self.total):
                self.last = tenth
                sys.stderr.write(f"fuzz: {done}/{self.total} files, {text}\n")
                sys.stderr.flush()
            return
        pct = int(100 * done / self.total)
        if pct == self.last and done != self.total:
            return
        self.last = pct
        width = 30
        fill = width * done // self.total
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{self.total} {text}"[:120].ljust(80))
        sys.stderr.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled and self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()
