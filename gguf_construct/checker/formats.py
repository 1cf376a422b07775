"""Output formats of ``gguf-construct check``: text for people, JSON for scripts, SARIF 2.1.0 for code scanning."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from .._version import __version__
from .report import Finding, Report
from .rules import catalog
from .security import help_uri, security_tags

__all__ = ["render_text", "render_json", "render_sarif", "FORMATS"]

_ORDER = ("error", "warning", "info")
_PLURAL = {"error": "errors", "warning": "warnings", "info": "info"}
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note", "off": "none"}


def _where(f: Finding) -> str:
    at = f"@{f.offset} (0x{f.offset:x})" if f.offset is not None else "@-"
    return f"{at} {f.path}" if f.path else at


def render_text(reports: Iterable[Report], *, color: bool = False) -> str:
    """Findings grouped by severity under one heading per file, with offsets and field paths."""
    lines = []
    for r in reports:
        counts = {s: sum(1 for f in r.findings if f.severity == s) for s in _ORDER}
        summary = ", ".join(f"{counts[s]} {_PLURAL[s] if counts[s] != 1 else s}" for s in _ORDER if counts[s])
        what = f"GGUF v{r.version} {r.byte_order}-endian" if r.version else "not readable as GGUF"
        verdict = "valid" if r.valid else "INVALID"
        if color:
            verdict = f"\033[32m{verdict}\033[0m" if r.valid else f"\033[31;1m{verdict}\033[0m"
        lines.append(f"{r.file or '<bytes>'}: {verdict} under profile {r.profile} ({what}"
                     f"{'; ' + summary if summary else '; no findings'})")
        if r.profile == "ggml":
            errors = r.errors()
            lines.append("  ggml's loader would accept this file" if not errors else
                         f"  ggml's loader would reject this file: {errors[0].message} [{errors[0].rule}]")
        for sev in _ORDER:
            group = [f for f in r.findings if f.severity == sev]
            if not group:
                continue
            lines.append(f"  {_PLURAL[sev]}:")
            for f in group:
                lines.append(f"    {f.rule:22s} {_where(f)}: {f.message}")
        for err in r.internal_errors:
            lines.append(f"  internal error (please report): {err.strip().splitlines()[-1]}")
    return "\n".join(lines)


def render_json(reports: Iterable[Report]) -> str:
    """A JSON list with one object per file: file, valid, version, byte_order, findings."""
    return json.dumps([r.to_dict() for r in reports], indent=1, ensure_ascii=False, default=str)


def _sarif_rule(rule) -> dict:
    raw = rule.raw
    help_text = f"{rule.doc}\n\nSource: {rule.source}\nReference: {raw.get('doc_ref', '')}"
    if raw.get("notes"):
        help_text += f"\nNotes: {raw['notes']}"
    return {
        "id": rule.id,
        "name": "".join(w.capitalize() for w in rule.id.lower().split("-")),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.doc},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity("spec")]},
        "properties": {"profiles": rule.profiles, "c_reader": raw.get("c_reader"), "gguf_py": raw.get("gguf_py"),
                       **security_tags(rule.id)},
        **help_uri(rule.id),
    }


def _uri(file: str | None) -> str:
    if not file:
        return "stdin"
    try:
        return Path(os.path.abspath(file)).as_uri()
    except ValueError:
        return file


def render_sarif(reports: Iterable[Report]) -> str:
    """A SARIF 2.1.0 log: the rule catalog as tool.driver.rules, one result per finding at its byte offset."""
    rules = list(catalog().values())
    index = {r.id: i for i, r in enumerate(rules)}
    results = []
    artifacts = []
    for r in reports:
        uri = _uri(r.file)
        artifacts.append({"location": {"uri": uri}})
        for f in r.findings:
            location: dict = {"physicalLocation": {"artifactLocation": {"uri": uri,
                                                                         "index": len(artifacts) - 1}}}
            if f.offset is not None:
                location["physicalLocation"]["region"] = {"byteOffset": f.offset}
            if f.path:
                location["logicalLocations"] = [{"fullyQualifiedName": f.path, "kind": "member"}]
            results.append({"ruleId": f.rule, "ruleIndex": index[f.rule], "level": _SARIF_LEVEL[f.severity],
                            "message": {"text": f.message}, "locations": [location]})
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "gguf-construct", "version": __version__,
                                "informationUri": "https://github.com/ggml-org/ggml/blob/master/docs/gguf.md",
                                "rules": [_sarif_rule(r) for r in rules]}},
            "artifacts": artifacts,
            "results": results,
        }],
    }
    return json.dumps(log, indent=1, ensure_ascii=False, default=str)


FORMATS = {"text": render_text, "json": render_json, "sarif": render_sarif}
