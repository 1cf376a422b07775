"""Findings and reports: what ``check`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..rulebook.catalog import SEVERITY_RANK, Finding

__all__ = ["Finding", "Report"]


@dataclass
class Report:
    """Everything the checker found in one file (the first shard of a split model: in the model, see
    :func:`gguf_construct.checker.check`)."""

    file: str | None
    profile: str = "spec"
    version: int | None = None
    byte_order: str | None = None
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # every occurrence per rule, also those not listed
    internal_errors: list[str] = field(default_factory=list)
    transfer: dict | None = field(default=None, compare=False)  # network cost when the file was a URL
    notes: list[str] = field(default_factory=list)  # facts worth a line that judge nothing (no rule, no severity)

    @property
    def valid(self) -> bool:
        """True when no finding is an error under the report's profile."""
        return not any(f.severity == "error" for f in self.findings)

    def rules(self) -> set[str]:
        """IDs of the rules that fired."""
        return {f.rule for f in self.findings}

    def at_least(self, severity: str) -> list[Finding]:
        """Findings of ``severity`` or worse."""
        rank = SEVERITY_RANK[severity]
        return [f for f in self.findings if SEVERITY_RANK[f.severity] >= rank]

    def errors(self) -> list[Finding]:
        """The error findings."""
        return self.at_least("error")

    def omitted(self) -> dict[str, int]:
        """Per rule, how many occurrences ``counts`` has that ``findings`` does not list (the per-rule cap)."""
        listed: dict[str, int] = {}
        for f in self.findings:
            listed[f.rule] = listed.get(f.rule, 0) + f.count
        return {r: n - listed.get(r, 0) for r, n in self.counts.items() if n > listed.get(r, 0)}

    def severity_counts(self) -> dict[str, int]:
        """Findings per severity, including those the per-rule cap left out of ``findings`` (a finding that stands
        for several places counts once)."""
        out = {s: 0 for s in SEVERITY_RANK}
        sev_of = {}
        for f in self.findings:
            out[f.severity] += 1
            sev_of[f.rule] = f.severity
        for rule, n in self.omitted().items():
            if rule in sev_of:
                out[sev_of[rule]] += n
        return out

    def sort(self) -> None:
        """Order findings by offset (findings without an offset last), then rule ID."""
        self.findings.sort(key=lambda f: (f.offset is None, f.offset or 0, f.rule))

    def to_dict(self) -> dict:
        """The JSON shape: file, valid, version, byte_order, findings, counts (every occurrence per rule), omitted
        when the per-rule cap left some out, transfer for URLs, and notes when there are any."""
        out: dict[str, Any] = {
            "file": self.file,
            "valid": self.valid,
            "version": self.version,
            "byte_order": self.byte_order,
            "findings": [f.to_dict() for f in self.findings],
            "counts": dict(sorted(self.counts.items())),
        }
        omitted = self.omitted()
        if omitted:
            out["omitted"] = omitted
        if self.internal_errors:
            out["internal_errors"] = list(self.internal_errors)
        if self.transfer is not None:
            out["transfer"] = dict(self.transfer)
        if self.notes:
            out["notes"] = list(self.notes)
        return out
