"""Output formats of ``gguf-construct check``: text for people, JSON for scripts, SARIF 2.1.0 for code scanning."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

from .._version import __version__
from ..base.text import printable
from ..base.remote import is_url
from .report import Finding, Report
from ..rulebook.catalog import OFF, catalog, kept_per_rule
from .security import help_uri, security_tags

__all__ = ["render_text", "render_report_text", "render_summary", "render_json", "render_sarif", "FORMATS"]

_ORDER = ("error", "warning", "info")
_PLURAL = {"error": "errors", "warning": "warnings", "info": "info"}
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note", OFF: "none"}
URI_BASE = "SRCROOT"  # uriBaseId of relative artifact paths: the directory check ran in


def _where(f: Finding) -> str:
    at = f"@{f.offset} (0x{f.offset:x})" if f.offset is not None else "@-"
    return f"{at} {printable(f.path)}" if f.path else at


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[s]} {_PLURAL[s] if counts[s] != 1 else s}" for s in _ORDER if counts[s])


def render_report_text(r: Report, *, color: bool = False) -> str:
    """One file's findings grouped by severity under a heading, with offsets and field paths; a rule whose
    findings the per-rule cap cut short ends with "... and N more"."""
    lines = []
    summary = _counted(r.severity_counts())
    what = f"GGUF v{r.version} {r.byte_order}-endian" if r.version else "not readable as GGUF"
    verdict = "valid" if r.valid else "INVALID"
    if color:
        verdict = f"\033[32m{verdict}\033[0m" if r.valid else f"\033[31;1m{verdict}\033[0m"
    lines.append(
        f"{printable(r.file or '<bytes>')}: {verdict} under profile {r.profile} ({what}"
        f"{'; ' + summary if summary else '; no findings'})"
    )
    if r.profile == "ggml":
        errors = r.errors()
        lines.append(
            "  ggml's loader would accept this file"
            if not errors
            else f"  ggml's loader would reject this file: {errors[0].message} [{errors[0].rule}]"
        )
    omitted = r.omitted()
    for sev in _ORDER:
        group = [f for f in r.findings if f.severity == sev]
        if not group:
            continue
        lines.append(f"  {_PLURAL[sev]}:")
        for f in group:
            lines.append(f"    {f.rule:22s} {_where(f)}: {f.message}")
        for rule in dict.fromkeys(f.rule for f in group):
            if rule in omitted:
                lines.append(f"    {rule:22s} ... and {omitted[rule]} more ({_more_hint(r, rule)})")
    for note in r.notes:
        lines.append(f"  note: {note}")
    for err in r.internal_errors:
        lines.append(f"  internal error (please report): {err.strip().splitlines()[-1]}")
    return "\n".join(lines)


def _more_hint(r: Report, rule: str) -> str:
    """How to see more of a rule's findings: --max-per-rule 0 lists up to the spec's findings_per_rule, past
    which they are only counted."""
    ceiling = kept_per_rule(None)
    if sum(f.count for f in r.findings if f.rule == rule) >= ceiling:
        return f"counted, not kept: at most {ceiling} findings of one rule are kept per file"
    if r.counts.get(rule, 0) > ceiling:
        return f"--max-per-rule 0 lists the first {ceiling}"
    return "--max-per-rule 0 lists all"


def render_text(reports: Iterable[Report], *, color: bool = False) -> str:
    """The text report of every file, one after another."""
    return "\n".join(render_report_text(r, color=color) for r in reports)


def render_summary(reports: list[Report], io_errors: int = 0, fail_on: str | None = None) -> str:
    """One line across files: files checked, valid and invalid, findings per severity; with ``fail_on`` (the
    --fail-on level) it ends saying whether the run fails and why, since a valid file with warnings fails
    ``--fail-on warning``."""
    total = {s: 0 for s in _ORDER}
    for r in reports:
        for s, n in r.severity_counts().items():
            total[s] += n
    valid = sum(1 for r in reports if r.valid)
    line = (
        f"{len(reports)} file{'s' if len(reports) != 1 else ''} checked: {valid} valid, "
        f"{len(reports) - valid} invalid; {_counted(total) or 'no findings'}"
    )
    if io_errors:
        line += f"; {io_errors} could not be read"
    if fail_on is not None and fail_on != "never":
        rank = _ORDER.index(fail_on)
        failing = {s: (n if _ORDER.index(s) <= rank else 0) for s, n in total.items()}
        if any(failing.values()):
            line += f"; fails --fail-on {fail_on} ({_counted(failing)})"
        elif io_errors:
            line += "; fails (unreadable input)"
    return line


def render_json(reports: Iterable[Report]) -> str:
    """A JSON list with one object per file: file, valid, version, byte_order, findings, counts (and omitted)."""
    return json.dumps([r.to_dict() for r in reports], indent=1, ensure_ascii=False, default=str)


def _sarif_rule(rule, profile: str) -> dict:
    raw = rule.raw
    help_text = f"{rule.doc}\n\nSource: {rule.source}\nReference: {raw.get('doc_ref', '')}"
    if raw.get("notes"):
        help_text += f"\nNotes: {raw['notes']}"
    level = rule.severity(profile)
    config = {"level": _SARIF_LEVEL[level]}
    if level == OFF:
        config["enabled"] = False
    return {
        "id": rule.id,
        "name": "".join(w.capitalize() for w in rule.id.lower().split("-")),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.doc},
        "help": {"text": help_text},
        "defaultConfiguration": config,
        "properties": {
            "profiles": rule.profiles,
            "c_reader": raw.get("c_reader"),
            "gguf_py": raw.get("gguf_py"),
            **security_tags(rule.id),
        },
        **help_uri(rule.id),
    }


def _artifact_location(file: str | None) -> dict:
    """A relative path as a URI relative to :data:`URI_BASE`; an absolute one as a file: URI; a URL as itself."""
    if not file or file == "<stdin>":
        return {"uri": "stdin"}
    if is_url(file):
        return {"uri": file}
    if not os.path.isabs(file):
        rel = Path(os.path.normpath(file)).as_posix()
        if not rel.startswith("../"):
            return {"uri": "/".join(_quote(p) for p in rel.split("/")), "uriBaseId": URI_BASE}
    try:
        return {"uri": Path(os.path.abspath(file)).as_uri()}
    except ValueError:
        return {"uri": file}


def _quote(part: str) -> str:
    return quote(part, safe="-._~!$&'()*+,;=:@")


def _fingerprint(uri: str, f: Finding) -> str:
    """Stable across runs and offsets that move: the artifact, the rule, the field path and the message."""
    return hashlib.sha256(f"{uri}\0{f.rule}\0{f.path}\0{f.message}".encode("utf-8", "surrogatepass")).hexdigest()


def render_sarif(reports: Iterable[Report], *, profile: str | None = None) -> str:
    """A SARIF 2.1.0 log as GitHub code scanning takes it: the rule catalog with the levels of the profile in use
    as tool.driver.rules, one result per listed finding with a region (startLine 1 and the byte offset, for a binary
    file), partialFingerprints, artifact URIs relative to SRCROOT when the paths are relative, automationDetails,
    and each artifact's exact counts per rule in its properties."""
    reports = list(reports)
    profile = profile or (reports[0].profile if reports else "spec")
    rules = list(catalog().values())
    index = {r.id: i for i, r in enumerate(rules)}
    results = []
    artifacts = []
    relative = False
    for r in reports:
        where = _artifact_location(r.file)
        relative = relative or "uriBaseId" in where
        artifacts.append(
            {
                "location": where,
                "properties": {"counts": dict(sorted(r.counts.items())), "omitted": r.omitted(), "valid": r.valid},
            }
        )
        for f in r.findings:
            region = {
                "startLine": 1,
                "byteOffset": f.offset if f.offset is not None else 0,
                "byteLength": 1 if f.offset is not None else 0,
            }
            location: dict = {
                "physicalLocation": {"artifactLocation": dict(where, index=len(artifacts) - 1), "region": region}
            }
            if f.path:
                location["logicalLocations"] = [{"fullyQualifiedName": f.path, "kind": "member"}]
            result = {
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": _SARIF_LEVEL[f.severity],
                "message": {"text": f.message},
                "locations": [location],
                "partialFingerprints": {"ggufFinding/v1": _fingerprint(where["uri"], f)},
            }
            if f.count > 1:
                result["properties"] = {"count": f.count}
            results.append(result)
    run = {
        "tool": {
            "driver": {
                "name": "gguf-construct",
                "version": __version__,
                "informationUri": "https://github.com/ggml-org/ggml/blob/master/docs/gguf.md",
                "rules": [_sarif_rule(r, profile) for r in rules],
            }
        },
        "automationDetails": {"id": f"gguf-construct/check/{profile}/"},
        "artifacts": artifacts,
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    if relative:
        run["originalUriBaseIds"] = {URI_BASE: {"uri": Path(os.getcwd()).as_uri() + "/"}}
    log = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=1, ensure_ascii=False, default=str)


FORMATS = {"text": render_text, "json": render_json, "sarif": render_sarif}
